// Windows BMP, uncompressed, parsed by hand (no library).
//
// Read: BITMAPCOREHEADER (12 bytes) and BITMAPINFOHEADER..V5 (40-124 bytes); rows bottom-up
// (positive height) or top-down (negative height);
//  - 1, 4 and 8 bits per pixel with a palette, 8 and 4 also run-length encoded (BI_RLE8,
//    BI_RLE4; pixels the runs skip are index 0, as in Pillow): 1 channel when every palette entry
//    is gray (r == g == b), RGB otherwise; an index beyond the palette is corrupt data;
//  - 16 bits BI_RGB (5-5-5) and BI_BITFIELDS 5-5-5 or 5-6-5: RGB, each field v of n bits scaled as
//    Pillow does, v * 255 / (2^n - 1) truncated;
//  - 24 bits BI_RGB: RGB;
//  - 32 bits BI_RGB: RGB (the fourth byte is unused by the specification);
//  - 32 bits BI_BITFIELDS / BI_ALPHABITFIELDS with the standard masks (R 0xff0000, G 0xff00,
//    B 0xff): RGBA when the alpha mask is 0xff000000, RGB when it is 0.
// Other depths and masks, and JPEG/PNG-in-BMP, are unsupported.
// Write (bottom-up, as most readers expect): 1 channel as 8 bits with a gray palette, 3 as 24-bit
// BI_RGB, 4 as 32-bit BITMAPV4HEADER with BI_BITFIELDS and an alpha mask, so alpha survives in
// every reader that honours the V4 masks. 2 channels are unsupported.
#include <array>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "image/codec.hpp"

namespace dlprep::image {
namespace {

constexpr size_t kFileHeader = 14;
constexpr uint32_t kBiRgb = 0, kBiRle8 = 1, kBiRle4 = 2, kBiBitfields = 3, kBiAlphaBitfields = 6;
constexpr uint32_t kV4HeaderSize = 108;
constexpr uint32_t kLcsSrgb = 0x73524742;  // 'sRGB'
// Run-length encoded bitmaps can stand for any number of pixels in a few bytes (end of bitmap,
// deltas): above Pillow's decompression-bomb limit (2 x 89,478,485 pixels) they are refused.
constexpr uint64_t kMaxRlePixels = 178956970;

uint32_t le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
void put16(uint8_t* p, uint32_t v) { p[0] = uint8_t(v), p[1] = uint8_t(v >> 8); }
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

[[noreturn]] void truncated(const char* what, uint64_t need, uint64_t offset, uint64_t size) {
  const uint64_t have = offset < size ? size - offset : 0;
  throw Error(Errc::corrupt_data, std::string("truncated bmp ") + what + ": need " +
                                      std::to_string(need) + " bytes at offset " +
                                      std::to_string(offset) + ", have " + std::to_string(have));
}

// palette: 1, 4 or 8-bit indices (rle: run-length encoded); rgb555/rgb565: 16-bit pixels.
enum class Layout { palette, rle, rgb555, rgb565, bgr24, bgrx32, bgra32 };

// Everything the header says, validated against the file size (nothing is allocated yet).
struct Header {
  ImageShape shape;
  Layout layout = Layout::bgr24;
  uint32_t bits = 24;  // per pixel
  bool gray = false;   // palette layouts: every entry gray, so 1 channel
  bool top_down = false;
  uint64_t pixel_offset = 0;
  uint64_t stride = 0;
  std::array<uint8_t, 256 * 3> palette{};  // RGB triplets
  uint32_t palette_entries = 0;
};

Header parse(ByteSpan file) {
  const uint8_t* d = file.data();
  const uint64_t size = file.size();
  if (size < kFileHeader + 4) truncated("header", kFileHeader + 4, 0, size);
  if (d[0] != 'B' || d[1] != 'M')
    throw Error(Errc::corrupt_data, "not a bmp file (no 'BM' at offset 0)");
  Header h;
  h.pixel_offset = le32(d + 10);
  const uint32_t dib = le32(d + kFileHeader);
  int64_t width = 0, height = 0;
  uint32_t planes = 0, bpp = 0, compression = kBiRgb, colors_used = 0;
  uint32_t palette_entry_bytes = 4;
  if (dib == 12) {  // BITMAPCOREHEADER: 16-bit unsigned dimensions, 3-byte palette entries
    if (size < kFileHeader + 12) truncated("header", 12, kFileHeader, size);
    width = le16(d + 18);
    height = le16(d + 20);
    planes = le16(d + 22);
    bpp = le16(d + 24);
    palette_entry_bytes = 3;
  } else if (dib >= 40 && dib <= 124) {
    if (size < kFileHeader + dib) truncated("header", dib, kFileHeader, size);
    width = static_cast<int32_t>(le32(d + 18));
    height = static_cast<int32_t>(le32(d + 22));
    planes = le16(d + 26);
    bpp = le16(d + 28);
    compression = le32(d + 30);
    colors_used = le32(d + 46);
  } else {
    throw Error(Errc::unsupported, "bmp info header of " + std::to_string(dib) +
                                       " bytes at offset 14 (expected 12 or 40 to 124)");
  }
  if (planes != 1)
    throw Error(Errc::corrupt_data, "bmp has " + std::to_string(planes) + " planes (must be 1)");
  // 1, 2 RLE; 4 JPEG; 5 PNG: real but unsupported. Anything beyond 6 is not a BMP compression.
  if (compression > kBiAlphaBitfields)
    throw Error(Errc::corrupt_data,
                "invalid bmp compression " + std::to_string(compression) + " at offset 30");
  if (height < 0) {
    h.top_down = true;
    height = -height;
  }
  if (width <= 0 || height <= 0 || width > UINT32_MAX || height > UINT32_MAX)
    throw Error(Errc::corrupt_data, "bmp has an empty or negative size (" + std::to_string(width) +
                                        "x" + std::to_string(height) + ")");
  const uint64_t mask_offset = kFileHeader + 40;  // right after (or, V2+, inside) the 40-byte part
  h.bits = bpp;
  switch (bpp) {
    case 1:
    case 4:
    case 8: {
      const bool rle = (bpp == 8 && compression == kBiRle8) || (bpp == 4 && compression == kBiRle4);
      if (compression != kBiRgb && !rle)
        throw Error(Errc::unsupported, "compressed " + std::to_string(bpp) +
                                           "-bit bmp (compression " + std::to_string(compression) +
                                           ") is not supported");
      if (rle && h.top_down)
        throw Error(Errc::corrupt_data, "run-length encoded bmp with a negative (top-down) height");
      if (colors_used > 256)
        throw Error(Errc::corrupt_data,
                    "bmp palette of " + std::to_string(colors_used) + " entries (at most 256)");
      h.palette_entries = colors_used == 0 ? 1u << bpp : colors_used;
      const uint64_t palette_offset = kFileHeader + dib;
      const uint64_t palette_bytes = uint64_t{h.palette_entries} * palette_entry_bytes;
      if (palette_offset + palette_bytes > size)
        truncated("palette", palette_bytes, palette_offset, size);
      bool gray = true;
      for (uint32_t i = 0; i < h.palette_entries; ++i) {
        const uint8_t* e = d + palette_offset + uint64_t{i} * palette_entry_bytes;  // B, G, R
        h.palette[i * 3 + 0] = e[2];
        h.palette[i * 3 + 1] = e[1];
        h.palette[i * 3 + 2] = e[0];
        gray = gray && e[0] == e[1] && e[1] == e[2];
      }
      h.layout = rle ? Layout::rle : Layout::palette;
      h.gray = gray;
      h.shape.channels = gray ? 1 : 3;
      break;
    }
    case 16: {
      uint32_t r = 0x7c00, g = 0x03e0, b = 0x001f;
      if (compression == kBiBitfields) {
        // The masks follow BITMAPINFOHEADER, or lie at the same offset inside a V2+ header.
        if (mask_offset + 12 > size) truncated("colour masks", 12, mask_offset, size);
        r = le32(d + mask_offset);
        g = le32(d + mask_offset + 4);
        b = le32(d + mask_offset + 8);
      } else if (compression != kBiRgb) {
        throw Error(Errc::unsupported, "compressed 16-bit bmp (compression " +
                                           std::to_string(compression) + ") is not supported");
      }
      if (r == 0x7c00 && g == 0x03e0 && b == 0x001f) {
        h.layout = Layout::rgb555;
      } else if (r == 0xf800 && g == 0x07e0 && b == 0x001f) {
        h.layout = Layout::rgb565;
      } else {
        throw Error(Errc::unsupported,
                    "16-bit bmp with colour masks other than 5-5-5 and 5-6-5 is not supported");
      }
      h.shape.channels = 3;
      break;
    }
    case 24:
      if (compression != kBiRgb)
        throw Error(Errc::unsupported, "compressed 24-bit bmp (compression " +
                                           std::to_string(compression) + ") is not supported");
      h.layout = Layout::bgr24;
      h.shape.channels = 3;
      break;
    case 32:
      if (compression == kBiRgb) {
        h.layout = Layout::bgrx32;
        h.shape.channels = 3;
      } else if (compression == kBiBitfields || compression == kBiAlphaBitfields) {
        // BITMAPINFOHEADER keeps the masks right after the header (3, or 4 with ALPHABITFIELDS);
        // V2 (52 bytes) and later headers hold them at the same offset, inside the header.
        const uint64_t mask_count =
            dib > 40 ? (dib >= 56 ? 4 : 3) : (compression == kBiAlphaBitfields ? 4 : 3);
        if (mask_offset + mask_count * 4 > size)
          truncated("colour masks", mask_count * 4, mask_offset, size);
        const uint32_t r = le32(d + mask_offset), g = le32(d + mask_offset + 4),
                       b = le32(d + mask_offset + 8);
        const uint32_t a = mask_count == 4 ? le32(d + mask_offset + 12) : 0;
        if (r != 0x00ff0000 || g != 0x0000ff00 || b != 0x000000ff || (a != 0 && a != 0xff000000))
          throw Error(Errc::unsupported,
                      "32-bit bmp with non-standard colour masks is not supported");
        h.layout = a ? Layout::bgra32 : Layout::bgrx32;
        h.shape.channels = a ? 4 : 3;
      } else {
        throw Error(Errc::unsupported, "compressed 32-bit bmp (compression " +
                                           std::to_string(compression) + ") is not supported");
      }
      break;
    default:
      throw Error(Errc::unsupported,
                  "bmp with " + std::to_string(bpp) +
                      " bits per pixel is not supported (1, 4, 8, 16, 24, 32 are)");
  }
  h.shape.width = static_cast<uint32_t>(width);
  h.shape.height = static_cast<uint32_t>(height);
  check_shape(h.shape);
  h.stride = (uint64_t{h.shape.width} * bpp + 31) / 32 * 4;
  // Every row, the last one included, is padded to 4 bytes; a file without the final padding is
  // treated as truncated (strict, so that any truncation is reported). Runs are checked as they
  // are decoded.
  if (h.layout == Layout::rle && uint64_t{h.shape.width} * h.shape.height > kMaxRlePixels)
    throw Error(Errc::limit_exceeded,
                "run-length encoded bmp of " + std::to_string(h.shape.width) + "x" +
                    std::to_string(h.shape.height) + " pixels: more than " +
                    std::to_string(kMaxRlePixels) +
                    ", which its runs could fill from a few bytes (Pillow refuses it too)");
  const uint64_t need = h.layout == Layout::rle ? 2 : h.stride * h.shape.height;
  if (h.pixel_offset > size || need > size - h.pixel_offset)
    truncated("pixel data", need, h.pixel_offset, size);
  return h;
}

// Pillow's scaling of an n-bit field: v * 255 / (2^n - 1), truncated.
uint8_t scale_field(uint32_t v, uint32_t max) { return static_cast<uint8_t>(v * 255 / max); }

// Palette entry `index` into `dst` (1 or 3 bytes); an index beyond the palette is corrupt data.
void put_palette_entry(const Header& h, uint32_t index, uint8_t* dst, uint32_t row) {
  if (index >= h.palette_entries)
    throw Error(Errc::corrupt_data, "bmp palette index " + std::to_string(index) + " in row " +
                                        std::to_string(row) +
                                        " (from the bottom) is beyond the palette of " +
                                        std::to_string(h.palette_entries) + " entries");
  if (h.gray) {
    dst[0] = h.palette[index * 3];
  } else {
    std::memcpy(dst, &h.palette[index * 3], 3);
  }
}

// A BI_RLE8 / BI_RLE4 bitmap straight into `image` (rows from the bottom up), as Pillow reads
// one: pixels the runs skip (end of line, delta, end of bitmap) are palette entry 0, pixels past
// a row's end are dropped, and the runs end at the end-of-bitmap mark or once the last row is
// full.
void decode_rle(const Header& h, ByteSpan file, Image& image) {
  const uint32_t w = h.shape.width, rows = h.shape.height, c = h.shape.channels;
  for (uint32_t y = 0; y < rows; ++y)
    for (uint32_t x = 0; x < w; ++x) put_palette_entry(h, 0, image.row(y) + size_t{x} * c, y);
  const bool rle4 = h.bits == 4;
  const uint8_t* d = file.data();
  const uint64_t size = file.size();
  uint64_t at = h.pixel_offset;
  uint64_t x = 0, y = 0;  // y counts rows from the bottom, as the runs go
  auto need = [&](uint64_t n, const char* what) {
    if (n > size - at) truncated(what, n, at, size);
  };
  auto put = [&](uint32_t index) {
    if (x < w)
      put_palette_entry(h, index, image.row(rows - 1 - static_cast<uint32_t>(y)) + x * c,
                        static_cast<uint32_t>(y));
    ++x;
  };
  while (y < rows && !(y == rows - 1 && x >= w)) {
    need(2, "run");
    const uint32_t count = d[at], value = d[at + 1];
    at += 2;
    if (count > 0) {  // a run of `count` pixels: the index, or rle4's two nibbles in turn
      for (uint32_t i = 0; i < count; ++i)
        put(rle4 ? (i % 2 == 0 ? value >> 4 : value & 15) : value);
    } else if (value == 0) {  // end of line
      x = 0;
      ++y;
    } else if (value == 1) {  // end of bitmap
      break;
    } else if (value == 2) {  // delta: right and up
      need(2, "run delta");
      x += d[at];
      y += d[at + 1];
      at += 2;
    } else {  // absolute: `value` literal pixels, padded to a 16-bit boundary
      const uint64_t bytes = rle4 ? (value + 1) / 2 : value;
      need(bytes + (bytes & 1), "literal run");
      for (uint32_t i = 0; i < value; ++i)
        put(rle4 ? (i % 2 == 0 ? d[at + i / 2] >> 4 : d[at + i / 2] & 15u) : d[at + i]);
      at += bytes + (bytes & 1);
    }
  }
}

class BmpCodec final : public Codec {
 public:
  std::string_view name() const override { return "bmp"; }
  std::string extension(uint32_t) const override { return "bmp"; }
  bool sniff(ByteSpan head) const override {
    // "BM" alone is too weak a magic for two bytes of text; require a known info-header size.
    if (head.size() < 18 || head[0] != 'B' || head[1] != 'M') return false;
    const uint32_t dib = le32(head.data() + 14);
    return dib == 12 || dib == 40 || dib == 52 || dib == 56 || dib == 108 || dib == 124;
  }
  bool lossless() const override { return true; }
  bool round_trips(uint32_t channels) const override {
    return channels != 2 && channels <= 4 && channels >= 1;
  }

  ImageInfo probe(ByteSpan file) const override { return {"bmp", parse(file).shape}; }

  Image decode(ByteSpan file) const override {
    const Header h = parse(file);
    Image image(h.shape);
    if (h.layout == Layout::rle) {
      decode_rle(h, file, image);
      return image;
    }
    const uint32_t w = h.shape.width;
    for (uint32_t y = 0; y < h.shape.height; ++y) {
      const uint32_t file_row = h.top_down ? y : h.shape.height - 1 - y;
      const uint64_t row_offset = h.pixel_offset + h.stride * file_row;
      const uint8_t* src = file.data() + row_offset;
      uint8_t* dst = image.row(y);
      switch (h.layout) {
        case Layout::palette:
          for (uint32_t x = 0; x < w; ++x) {
            const uint32_t index = h.bits == 8   ? src[x]
                                   : h.bits == 4 ? (src[x / 2] >> (x % 2 ? 0 : 4)) & 15u
                                                 : (src[x / 8] >> (7 - x % 8)) & 1u;
            put_palette_entry(h, index, dst + size_t{x} * h.shape.channels, file_row);
          }
          break;
        case Layout::rle:  // decoded above
          break;
        case Layout::rgb555:
        case Layout::rgb565:
          for (uint32_t x = 0; x < w; ++x, src += 2, dst += 3) {
            const uint32_t v = le16(src);
            if (h.layout == Layout::rgb555) {
              dst[0] = scale_field((v >> 10) & 31, 31);
              dst[1] = scale_field((v >> 5) & 31, 31);
            } else {
              dst[0] = scale_field((v >> 11) & 31, 31);
              dst[1] = scale_field((v >> 5) & 63, 63);
            }
            dst[2] = scale_field(v & 31, 31);
          }
          break;
        case Layout::bgr24:
          for (uint32_t x = 0; x < w; ++x, src += 3, dst += 3)
            dst[0] = src[2], dst[1] = src[1], dst[2] = src[0];
          break;
        case Layout::bgrx32:
          for (uint32_t x = 0; x < w; ++x, src += 4, dst += 3)
            dst[0] = src[2], dst[1] = src[1], dst[2] = src[0];
          break;
        case Layout::bgra32:
          for (uint32_t x = 0; x < w; ++x, src += 4, dst += 4)
            dst[0] = src[2], dst[1] = src[1], dst[2] = src[0], dst[3] = src[3];
          break;
      }
    }
    return image;
  }

  Bytes encode(const Image& image, const EncodeOptions&) const override {
    check_shape(image.shape());
    const uint32_t c = image.channels(), w = image.width(), h = image.height();
    if (c == 2) throw Error(Errc::unsupported, "bmp cannot store gray+alpha (2 channels)");
    const uint32_t bpp = c * 8;
    const uint32_t dib = c == 4 ? kV4HeaderSize : 40;
    const uint32_t palette_bytes = c == 1 ? 256 * 4 : 0;
    const uint64_t stride = (uint64_t{w} * bpp + 31) / 32 * 4;
    const uint64_t offset = kFileHeader + dib + palette_bytes;
    const uint64_t total = offset + stride * h;
    if (total > UINT32_MAX)
      throw Error(Errc::limit_exceeded, "image too large for bmp's 32-bit file size field");
    Bytes out(total, 0);
    uint8_t* d = out.data();
    d[0] = 'B', d[1] = 'M';
    put32(d + 2, static_cast<uint32_t>(total));
    put32(d + 10, static_cast<uint32_t>(offset));
    put32(d + 14, dib);
    put32(d + 18, w);
    put32(d + 22, h);  // positive: bottom-up
    put16(d + 26, 1);
    put16(d + 28, bpp);
    put32(d + 30, c == 4 ? kBiBitfields : kBiRgb);
    put32(d + 34, static_cast<uint32_t>(stride * h));
    put32(d + 38, 2835);  // 72 dpi in pixels per metre
    put32(d + 42, 2835);
    put32(d + 46, c == 1 ? 256 : 0);
    if (c == 4) {
      put32(d + 54, 0x00ff0000);
      put32(d + 58, 0x0000ff00);
      put32(d + 62, 0x000000ff);
      put32(d + 66, 0xff000000);
      put32(d + 70, kLcsSrgb);
    }
    if (c == 1) {
      for (uint32_t i = 0; i < 256; ++i) {
        uint8_t* e = d + kFileHeader + dib + 4 * i;
        e[0] = e[1] = e[2] = static_cast<uint8_t>(i);
      }
    }
    for (uint32_t y = 0; y < h; ++y) {
      const uint8_t* src = image.row(y);
      uint8_t* dst = d + offset + stride * (h - 1 - y);
      switch (c) {
        case 1:
          std::memcpy(dst, src, w);
          break;
        case 3:
          for (uint32_t x = 0; x < w; ++x, src += 3, dst += 3)
            dst[0] = src[2], dst[1] = src[1], dst[2] = src[0];
          break;
        default:
          for (uint32_t x = 0; x < w; ++x, src += 4, dst += 4)
            dst[0] = src[2], dst[1] = src[1], dst[2] = src[0], dst[3] = src[3];
          break;
      }
    }
    return out;
  }
};

}  // namespace

const Codec& bmp_codec() {
  static const BmpCodec codec;
  return codec;
}

}  // namespace dlprep::image
