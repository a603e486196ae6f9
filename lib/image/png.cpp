// PNG through libpng's full read/write API.
//
// Decode rules (documented in dlprep(1)):
// - every colour type and bit depth is accepted: palette -> RGB (RGBA with tRNS), gray below 8 bits
//   -> 8-bit gray, tRNS -> an alpha channel, Adam7 interlacing handled by libpng;
// - 16-bit samples are scaled to 8 bits with rounding (png_set_scale_16: (v * 255 + 32895) >> 16),
//   not truncated, so 0xFFFF -> 255 and 0x8080 -> 128;
// - no gamma, colour-space or background transforms: the stored sample values come out;
// - a CRC error before the image data, in an ancillary chunk too, is corrupt data (as Pillow has
//   it; after the image data, libpng drops such a chunk, and Pillow does not read it).
// The result is 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA) channels; encode() writes the same
// four colour types at 8 bits, so all four round-trip bit-exactly.
//
// libpng reports errors with longjmp. setjmp() lives only in the small "phase" functions below,
// whose locals are all trivially destructible; every C++ object (the Image, the row-pointer vector,
// the output bytes, the png_struct guard) lives in the caller's frame, which longjmp never leaves.
// Callbacks never let a C++ exception cross libpng's C frames.
#include <png.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/codec.hpp"

namespace dlprep::image {
namespace {

constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
// Deflate cannot expand data by more than 1032:1 (a 258-byte match in 2 bits), so a file whose
// header claims more raw sample bytes than this many times its size is corrupt; checking it before
// allocating stops a 100-byte file from reserving gigabytes.
constexpr uint64_t kMaxDeflateRatio = 1032;

// State shared with libpng's callbacks: the input (or output) and the first error message.
struct PngIo {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  Bytes* out = nullptr;
  char message[256] = {};
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* io = static_cast<PngIo*>(png_get_error_ptr(png));
  if (io->message[0] == '\0') {
    std::snprintf(io->message, sizeof io->message, "%s", msg ? msg : "unknown libpng error");
    for (char* p = io->message; *p; ++p) *p = static_cast<char>(std::tolower(*p));
  }
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // warnings are ignored by design

void read_fn(png_structp png, png_bytep dst, size_t length) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (length > io->size - io->pos) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "truncated png: need %zu bytes at offset %zu, have %zu", length,
                  io->pos, io->size - io->pos);
    png_error(png, msg);
  }
  std::memcpy(dst, io->data + io->pos, length);
  io->pos += length;
}

void write_fn(png_structp png, png_bytep src, size_t length) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  bool ok = true;
  try {
    io->out->insert(io->out->end(), src, src + length);
  } catch (...) {
    ok = false;
  }
  if (!ok) png_error(png, "out of memory while writing png");  // outside the catch block
}

void flush_fn(png_structp) {}

// Owns the libpng read structures; lives in the C++ frame, outside any setjmp.
struct ReadStruct {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngIo io;
  explicit ReadStruct(ByteSpan file) {
    io.data = file.data();
    io.size = file.size();
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning);
    if (png) info = png_create_info_struct(png);
    if (!info) {  // the destructor does not run when the constructor throws
      png_destroy_read_struct(&png, nullptr, nullptr);
      throw Error(Errc::internal, "png: cannot create the libpng read structures");
    }
    png_set_read_fn(png, &io, read_fn);
#ifdef PNG_IGNORE_ADLER32
    // The CRC-32 of every IDAT chunk, which libpng checks, already covers the compressed bytes;
    // zlib's Adler-32 over the decompressed ones costs ~5% of a photo's decode.
    png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
#endif
    // Dimensions are checked by check_shape() with our own limits and messages.
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    // A bad CRC before the image data fails the file, ancillary chunks included, as in Pillow
    // (whose loaders would then fail on a dataset that copied it); libpng's default only
    // discards an ancillary chunk that has one.
    png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  }
  ~ReadStruct() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
  ReadStruct(const ReadStruct&) = delete;
  ReadStruct& operator=(const ReadStruct&) = delete;

  [[noreturn]] void fail() const {
    std::string msg = io.message;
    if (msg.rfind("truncated", 0) != 0)
      msg = "corrupt png near offset " + std::to_string(io.pos) + ": " + msg;
    throw Error(Errc::corrupt_data, msg);
  }
};

struct Header {
  uint32_t width = 0, height = 0, channels = 0;
  int bit_depth = 0, color_type = 0, file_channels = 0;
  size_t row_bytes = 0;
};

// Phase 1: reads the chunks up to the image data. Only trivially destructible locals (see the
// file comment). Returns false after a libpng error.
bool read_info(png_structp png, png_infop info, Header* h) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  // Pillow checks the CRCs of the chunks before the image data only: after it, a damaged
  // ancillary chunk is dropped again, as libpng does by default.
  png_set_crc_action(png, PNG_CRC_NO_CHANGE, PNG_CRC_WARN_DISCARD);
  h->width = png_get_image_width(png, info);
  h->height = png_get_image_height(png, info);
  h->bit_depth = png_get_bit_depth(png, info);
  h->color_type = png_get_color_type(png, info);
  h->file_channels = png_get_channels(png, info);
  return true;
}

// Phase 2, once the size is known to be sane: sets up the transforms to 8-bit samples. libpng
// allocates its row buffers here, which is why the size is checked first.
bool set_transforms(png_structp png, png_infop info, Header* h) {
  if (setjmp(png_jmpbuf(png))) return false;
  if (h->color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (h->color_type == PNG_COLOR_TYPE_GRAY && h->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (h->bit_depth == 16) png_set_scale_16(png);  // rounds, see the file comment
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  h->channels = png_get_channels(png, info);
  h->row_bytes = png_get_rowbytes(png, info);
  return true;
}

// Phase 3: decodes every row straight into the caller's rows and reads the trailing chunks, so a
// file truncated anywhere is reported.
bool read_pixels(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

Header read_and_check_header(ReadStruct& rs) {
  Header h;
  if (!read_info(rs.png, rs.info, &h)) rs.fail();
  check_shape({h.width, h.height, 1});  // the channel count after the transforms is at most 4
  const uint64_t raw_bits = uint64_t{h.width} * h.height * h.bit_depth * h.file_channels;
  if (raw_bits / 8 > kMaxDeflateRatio * rs.io.size)
    throw Error(Errc::corrupt_data,
                "png header claims " + std::to_string(h.width) + "x" + std::to_string(h.height) +
                    " but the file (" + std::to_string(rs.io.size) +
                    " bytes) is too small to hold it even at deflate's maximum ratio");
  if (!set_transforms(rs.png, rs.info, &h)) rs.fail();
  check_shape({h.width, h.height, h.channels});
  if (png_get_bit_depth(rs.png, rs.info) != 8 || h.row_bytes != size_t{h.width} * h.channels)
    throw Error(Errc::internal, "png: transforms did not produce 8-bit samples");
  return h;
}

// Phase for encoding: the whole libpng write sequence. Trivially destructible locals only.
bool write_all(png_structp png, png_infop info, uint32_t width, uint32_t height, int color_type,
               int level, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, width, height, 8, color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, level);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

struct WriteStruct {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngIo io;
  explicit WriteStruct(Bytes* out) {
    io.out = out;
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning);
    if (png) info = png_create_info_struct(png);
    if (!info) {
      png_destroy_write_struct(&png, nullptr);
      throw Error(Errc::internal, "png: cannot create the libpng write structures");
    }
    png_set_write_fn(png, &io, write_fn, flush_fn);
  }
  ~WriteStruct() { png_destroy_write_struct(&png, info ? &info : nullptr); }
  WriteStruct(const WriteStruct&) = delete;
  WriteStruct& operator=(const WriteStruct&) = delete;
};

class PngCodec final : public Codec {
 public:
  std::string_view name() const override { return "png"; }
  std::string extension(uint32_t) const override { return "png"; }
  bool sniff(ByteSpan head) const override {
    return head.size() >= sizeof kSignature &&
           std::memcmp(head.data(), kSignature, sizeof kSignature) == 0;
  }
  bool lossless() const override { return true; }
  bool round_trips(uint32_t channels) const override { return channels >= 1 && channels <= 4; }

  ImageInfo probe(ByteSpan file) const override {
    check_signature(file);
    ReadStruct rs(file);
    const Header h = read_and_check_header(rs);
    return {"png", {h.width, h.height, h.channels}, h.bit_depth == 16 ? 16u : 8u};
  }

  Image decode(ByteSpan file) const override {
    check_signature(file);
    ReadStruct rs(file);
    const Header h = read_and_check_header(rs);
    Image image(h.width, h.height, h.channels);
    std::vector<png_bytep> rows(h.height);
    for (uint32_t y = 0; y < h.height; ++y) rows[y] = image.row(y);
    if (!read_pixels(rs.png, rs.info, rows.data())) rs.fail();
    return image;
  }

  Bytes encode(const Image& image, const EncodeOptions& options) const override {
    static constexpr int kColorType[5] = {-1, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                          PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    check_shape(image.shape());
    const int level = options.level < 0 ? 6 : options.level;
    if (level > 9)
      throw Error(Errc::invalid_argument,
                  "png compression level " + std::to_string(options.level) + " is not in 0..9");
    Bytes out;
    out.reserve(image.size_bytes() / 2 + 1024);
    WriteStruct ws(&out);
    std::vector<png_bytep> rows(image.height());
    // libpng's write API takes non-const rows but does not modify them.
    for (uint32_t y = 0; y < image.height(); ++y) rows[y] = const_cast<png_bytep>(image.row(y));
    if (!write_all(ws.png, ws.info, image.width(), image.height(), kColorType[image.channels()],
                   level, rows.data()))
      throw Error(Errc::internal, std::string("png encode failed: ") + ws.io.message);
    return out;
  }

 private:
  static void check_signature(ByteSpan file) {
    if (file.size() < sizeof kSignature)
      throw Error(Errc::corrupt_data, "truncated png: need 8 signature bytes at offset 0, have " +
                                          std::to_string(file.size()));
    if (std::memcmp(file.data(), kSignature, sizeof kSignature) != 0)
      throw Error(Errc::corrupt_data, "not a png file (bad signature at offset 0)");
  }
};

}  // namespace

const Codec& png_codec() {
  static const PngCodec codec;
  return codec;
}

}  // namespace dlprep::image
