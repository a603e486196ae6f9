// PNG corners that dlprep's own encoder never writes (16-bit, sub-byte gray, palettes, tRNS,
// Adam7): the inputs are built here with libpng directly, so the test needs no fixture files.
#include <doctest/doctest.h>
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/codec.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

// What to write: `samples` holds one value per sample (row-major, 0..2^bit_depth-1), packed here.
struct PngSpec {
  uint32_t width = 1, height = 1;
  int bit_depth = 8;
  int color_type = PNG_COLOR_TYPE_GRAY;
  bool interlaced = false;
  std::vector<uint32_t> samples;
  std::vector<png_color> palette;
  std::vector<uint8_t> palette_alpha;  // tRNS for palette images
  bool trns_color = false;             // tRNS for gray / RGB images
  png_color_16 trns{};
};

int samples_per_pixel(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY:
    case PNG_COLOR_TYPE_PALETTE:
      return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    default:
      return 4;
  }
}

std::vector<uint8_t> pack_rows(const PngSpec& s, std::vector<png_bytep>& rows) {
  const size_t per_row = size_t{s.width} * samples_per_pixel(s.color_type);
  const size_t row_bytes = (per_row * s.bit_depth + 7) / 8;
  std::vector<uint8_t> packed(row_bytes * s.height, 0);
  for (uint32_t y = 0; y < s.height; ++y) {
    uint8_t* row = packed.data() + y * row_bytes;
    for (size_t i = 0; i < per_row; ++i) {
      const uint32_t v = s.samples[y * per_row + i];
      if (s.bit_depth == 16) {
        row[2 * i] = uint8_t(v >> 8), row[2 * i + 1] = uint8_t(v);
      } else if (s.bit_depth == 8) {
        row[i] = uint8_t(v);
      } else {
        const size_t bit = i * s.bit_depth;
        row[bit / 8] |= uint8_t(v << (8 - s.bit_depth - bit % 8));
      }
    }
  }
  rows.resize(s.height);
  for (uint32_t y = 0; y < s.height; ++y) rows[y] = packed.data() + y * row_bytes;
  return packed;
}

void on_write(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}
[[noreturn]] void on_error(png_structp png, png_const_charp) { png_longjmp(png, 1); }

// Only trivially destructible locals: libpng may longjmp out of it.
bool write_phase(png_structp png, png_infop info, const PngSpec* s, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, s->width, s->height, s->bit_depth, s->color_type,
               s->interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!s->palette.empty())
    png_set_PLTE(png, info, s->palette.data(), static_cast<int>(s->palette.size()));
  if (!s->palette_alpha.empty())
    png_set_tRNS(png, info, s->palette_alpha.data(), static_cast<int>(s->palette_alpha.size()),
                 nullptr);
  if (s->trns_color) png_set_tRNS(png, info, nullptr, 0, &s->trns);
  png_write_info(png, info);
  if (s->interlaced) png_set_interlace_handling(png);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

Bytes write_png(const PngSpec& s) {
  Bytes out;
  std::vector<png_bytep> rows;
  std::vector<uint8_t> packed = pack_rows(s, rows);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, on_error, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, on_write, nullptr);
  const bool ok = write_phase(png, info, &s, rows.data());
  png_destroy_write_struct(&png, &info);
  REQUIRE(ok);
  return out;
}

const Codec* png() { return find_codec("png"); }
ByteSpan span(const Bytes& b) { return {b.data(), b.size()}; }

std::vector<uint32_t> ramp(size_t n, uint32_t max, uint32_t step) {
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>((i * step) % (max + 1));
  return v;
}

TEST_CASE("16-bit png samples are scaled to 8 bits with rounding, for every 16-bit value") {
  if (!png()) return;
  PngSpec s;
  s.bit_depth = 16;
  s.width = 65536 / 8;
  s.height = 8;  // every value 0..65535 exactly once
  s.samples = ramp(size_t{s.width} * s.height, 65535, 1);
  const Image image = png()->decode(span(write_png(s)));
  REQUIRE(image.shape() == ImageShape{s.width, s.height, 1});
  int mismatches = 0;
  for (uint32_t v = 0; v < 65536; ++v)
    mismatches += image.data()[v] != static_cast<uint8_t>(std::lround(v / 257.0));
  CHECK(mismatches == 0);
  CHECK(png()->probe(span(write_png(s))).bits == 16);  // the file's depth, for the warnings
  s.bit_depth = 8;
  s.samples = ramp(size_t{s.width} * s.height, 255, 1);
  CHECK(png()->probe(span(write_png(s))).bits == 8);
}

TEST_CASE("16-bit gray+alpha, RGB and RGBA png keep their channels") {
  if (!png()) return;
  for (int type : {PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA}) {
    PngSpec s;
    s.bit_depth = 16;
    s.color_type = type;
    s.width = 7;
    s.height = 5;
    s.samples = ramp(size_t{7} * 5 * samples_per_pixel(type), 65535, 4099);
    const Image image = png()->decode(span(write_png(s)));
    INFO("colour type ", type);
    REQUIRE(image.channels() == static_cast<uint32_t>(samples_per_pixel(type)));
    for (size_t i = 0; i < image.size_bytes(); ++i)
      CHECK(image.data()[i] == std::lround(s.samples[i] / 257.0));
  }
}

TEST_CASE("1, 2 and 4-bit gray png is expanded to the full 8-bit range") {
  if (!png()) return;
  for (int bits : {1, 2, 4}) {
    PngSpec s;
    s.bit_depth = bits;
    s.width = 13;  // not a multiple of the samples per byte
    s.height = 3;
    const uint32_t max = (1u << bits) - 1;
    s.samples = ramp(13 * 3, max, 1);
    const Image image = png()->decode(span(write_png(s)));
    INFO(bits, " bits");
    REQUIRE(image.shape() == ImageShape{13, 3, 1});
    for (size_t i = 0; i < image.size_bytes(); ++i)
      CHECK(image.data()[i] == s.samples[i] * 255 / max);
  }
}

TEST_CASE("palette png decodes to RGB, and to RGBA when it has tRNS") {
  if (!png()) return;
  const std::vector<png_color> palette = {{10, 20, 30}, {200, 100, 0}, {0, 0, 0}, {255, 255, 255}};
  for (int bits : {2, 4, 8}) {
    for (bool with_alpha : {false, true}) {
      PngSpec s;
      s.bit_depth = bits;
      s.color_type = PNG_COLOR_TYPE_PALETTE;
      s.width = 11;
      s.height = 4;
      s.samples = ramp(11 * 4, 3, 1);
      s.palette = palette;
      if (with_alpha) s.palette_alpha = {0, 128};  // entries 2 and 3 stay opaque
      const Image image = png()->decode(span(write_png(s)));
      INFO(bits, " bits, tRNS ", with_alpha);
      const uint32_t c = with_alpha ? 4 : 3;
      REQUIRE(image.shape() == ImageShape{11, 4, c});
      for (size_t i = 0; i < s.samples.size(); ++i) {
        const png_color& e = palette[s.samples[i]];
        const uint8_t* px = image.data() + i * c;
        CHECK((px[0] == e.red && px[1] == e.green && px[2] == e.blue));
        if (with_alpha) CHECK(px[3] == (s.samples[i] < 2 ? s.palette_alpha[s.samples[i]] : 255));
      }
    }
  }
}

TEST_CASE("tRNS on gray and RGB png becomes an alpha channel") {
  if (!png()) return;
  PngSpec g;
  g.width = 6;
  g.samples = {0, 5, 9, 5, 255, 5};
  g.trns_color = true;
  g.trns.gray = 5;
  Image image = png()->decode(span(write_png(g)));
  REQUIRE(image.shape() == ImageShape{6, 1, 2});
  const uint8_t expected_ga[] = {0, 255, 5, 0, 9, 255, 5, 0, 255, 255, 5, 0};
  CHECK(std::equal(expected_ga, expected_ga + 12, image.data()));

  PngSpec rgb;
  rgb.color_type = PNG_COLOR_TYPE_RGB;
  rgb.width = 2;
  rgb.samples = {1, 2, 3, 4, 5, 6};
  rgb.trns_color = true;
  rgb.trns.red = 4, rgb.trns.green = 5, rgb.trns.blue = 6;
  image = png()->decode(span(write_png(rgb)));
  REQUIRE(image.shape() == ImageShape{2, 1, 4});
  const uint8_t expected_rgba[] = {1, 2, 3, 255, 4, 5, 6, 0};
  CHECK(std::equal(expected_rgba, expected_rgba + 8, image.data()));
}

TEST_CASE("interlaced png decodes exactly like the same image non-interlaced") {
  if (!png()) return;
  struct Case {
    int type, bits;
    uint32_t max;
  };
  for (Case k : {Case{PNG_COLOR_TYPE_GRAY, 1, 1}, Case{PNG_COLOR_TYPE_GRAY, 8, 255},
                 Case{PNG_COLOR_TYPE_RGB, 8, 255}, Case{PNG_COLOR_TYPE_RGB_ALPHA, 16, 65535},
                 Case{PNG_COLOR_TYPE_PALETTE, 4, 3}}) {
    for (auto [w, h] : {std::pair{1u, 1u}, {13u, 11u}, {3u, 9u}, {64u, 65u}}) {
      PngSpec s;
      s.color_type = k.type;
      s.bit_depth = k.bits;
      s.width = w;
      s.height = h;
      s.samples = ramp(size_t{w} * h * samples_per_pixel(k.type), k.max, 37);
      if (k.type == PNG_COLOR_TYPE_PALETTE)
        s.palette = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {250, 0, 1}};
      const Image plain = png()->decode(span(write_png(s)));
      s.interlaced = true;
      const Bytes interlaced_file = write_png(s);
      CHECK(interlaced_file[28] == 1);  // the IHDR interlace byte: Adam7
      INFO("colour type ", k.type, ", ", k.bits, " bits, ", w, "x", h);
      CHECK(png()->decode(span(interlaced_file)).same_pixels(plain));
      CHECK(png()->probe(span(interlaced_file)).shape == plain.shape());
    }
  }
}

TEST_CASE("png encode honours the compression level and rejects levels outside 0..9") {
  if (!png()) return;
  const Image image = test::make_image({96, 64, 3}, test::Pattern::gradient);
  EncodeOptions stored, best;
  stored.level = 0;
  best.level = 9;
  const Bytes a = png()->encode(image, stored), b = png()->encode(image, best);
  CHECK(a.size() > image.size_bytes());
  CHECK(b.size() < a.size() / 4);
  CHECK(png()->decode(span(a)).same_pixels(image));
  CHECK(png()->decode(span(b)).same_pixels(image));
  EncodeOptions bad;
  bad.level = 10;
  CHECK_THROWS_AS(png()->encode(image, bad), Error);
}

// Rewrites IHDR's width and height and its CRC.
void set_ihdr_size(Bytes& file, uint32_t width, uint32_t height) {
  for (int i = 0; i < 4; ++i) {
    file[16 + i] = uint8_t(width >> (24 - 8 * i));
    file[20 + i] = uint8_t(height >> (24 - 8 * i));
  }
  const uLong crc = crc32(crc32(0, nullptr, 0), &file[12], 17);
  for (int i = 0; i < 4; ++i) file[29 + i] = uint8_t(crc >> (24 - 8 * i));
}

Errc decode_error(const Bytes& file, std::string* message = nullptr) {
  try {
    (void)png()->decode(span(file));
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  FAIL("decoded an impossible header");
  return Errc::internal;
}

TEST_CASE("a png header claiming more pixels than deflate can hold is rejected before allocating") {
  if (!png()) return;
  PngSpec s;
  s.width = 4;
  s.height = 4;
  s.samples = ramp(16, 255, 1);
  Bytes file = write_png(s);
  // 60000 x 10000 gray is within the size limits, but not in a file of ~80 bytes.
  set_ihdr_size(file, 60000, 10000);
  std::string message;
  CHECK(decode_error(file, &message) == Errc::corrupt_data);
  CHECK(message.find("too small") != std::string::npos);
  // Wider than the 65535 limit (libpng itself would accept up to 2^31 - 1).
  set_ihdr_size(file, 100000, 1);
  CHECK(decode_error(file) == Errc::limit_exceeded);
  set_ihdr_size(file, 0x7fffffff, 0x7fffffff);
  CHECK(decode_error(file) == Errc::limit_exceeded);
}

TEST_CASE("libpng errors become lower-case corrupt-data errors with an offset") {
  if (!png()) return;
  Bytes file = png()->encode(test::make_image({20, 20, 3}, test::Pattern::random), EncodeOptions{});
  file[file.size() - 20] ^= 0x40;  // inside IDAT: its CRC no longer matches
  try {
    (void)png()->decode(span(file));
    FAIL("decoded a damaged IDAT");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(msg.find("offset") != std::string::npos);
    CHECK(std::none_of(msg.begin(), msg.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
  }
  try {
    (void)png()->decode(ByteSpan(file.data(), 40));
    FAIL("decoded a truncated file");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("truncated png: need") != std::string::npos);
  }
}

TEST_CASE("a bad CRC in an ancillary chunk fails the file before the image data, as in Pillow") {
  if (!png()) return;
  const Image image = test::make_image({20, 20, 3}, test::Pattern::random);
  const Bytes file = png()->encode(image, EncodeOptions{});
  // A tEXt chunk inserted right after IHDR (offset 33) or right before IEND (12 bytes).
  const auto with_text = [&](size_t at, bool good_crc) {
    const std::string body = std::string("tEXtComment") + '\0' + "hello";
    Bytes chunk = {0, 0, 0, static_cast<uint8_t>(body.size() - 4)};
    chunk.insert(chunk.end(), body.begin(), body.end());
    uLong crc = crc32(0, chunk.data() + 4, static_cast<uInt>(body.size()));
    if (!good_crc) crc ^= 1;
    for (int i = 0; i < 4; ++i) chunk.push_back(static_cast<uint8_t>(crc >> (24 - 8 * i)));
    Bytes out = file;
    out.insert(out.begin() + static_cast<ptrdiff_t>(at), chunk.begin(), chunk.end());
    return out;
  };
  for (const size_t at : {size_t{33}, file.size() - 12}) {
    CAPTURE(at);
    CHECK(png()->decode(span(with_text(at, true))).same_pixels(image));
  }
  CHECK(decode_error(with_text(33, false)) == Errc::corrupt_data);
  // After the image data Pillow reads no chunk, and libpng drops the damaged one.
  CHECK(png()->decode(span(with_text(file.size() - 12, false))).same_pixels(image));
}

#ifdef PNG_IGNORE_ADLER32  // libpng 1.6.26 and later
TEST_CASE("damaged compressed data is caught by the IDAT CRC; zlib's Adler-32 is not checked again") {
  if (!png()) return;
  const Image image = test::make_image({20, 20, 3}, test::Pattern::random);
  Bytes file = png()->encode(image, EncodeOptions{});
  // Find the last IDAT: its data ends with the zlib stream's Adler-32, then the chunk's CRC.
  size_t idat = 0;
  for (size_t at = 8; at + 12 <= file.size();) {
    const size_t length = (size_t{file[at]} << 24) | (size_t{file[at + 1]} << 16) |
                          (size_t{file[at + 2]} << 8) | file[at + 3];
    if (std::equal(file.begin() + at + 4, file.begin() + at + 8, "IDAT")) idat = at;
    at += 12 + length;
  }
  REQUIRE(idat != 0);
  const size_t length = (size_t{file[idat]} << 24) | (size_t{file[idat + 1]} << 16) |
                        (size_t{file[idat + 2]} << 8) | file[idat + 3];
  file[idat + 8 + length - 1] ^= 0x01;  // the Adler-32's last byte
  const uLong crc = crc32(0, file.data() + idat + 4, static_cast<uInt>(4 + length));
  for (int i = 0; i < 4; ++i)
    file[idat + 8 + length + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  CHECK(png()->decode(span(file)).same_pixels(image));
  file[idat + 8] ^= 0x40;  // the compressed data itself, the CRC left as it is
  CHECK(decode_error(file) == Errc::corrupt_data);
}
#endif

}  // namespace
}  // namespace dlprep::image
