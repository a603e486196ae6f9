// BMP corners: row order, the 32-bit variants, palettes and the core header, built byte by byte.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/codec.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

const Codec& bmp() { return *find_codec("bmp"); }
ByteSpan span(const Bytes& b) { return {b.data(), b.size()}; }
uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

// A BITMAPINFOHEADER file with the given bits per pixel, compression, palette (BGRA quads) and
// raw rows (already padded, in file order).
Bytes make_bmp(int32_t width, int32_t height, uint16_t bpp, uint32_t compression,
               const std::vector<uint8_t>& palette, const std::vector<uint8_t>& extra,
               const std::vector<uint8_t>& pixels) {
  const size_t offset = 54 + extra.size() + palette.size();
  Bytes f(offset + pixels.size(), 0);
  f[0] = 'B', f[1] = 'M';
  put32(&f[2], uint32_t(f.size()));
  put32(&f[10], uint32_t(offset));
  put32(&f[14], 40);
  put32(&f[18], uint32_t(width));
  put32(&f[22], uint32_t(height));
  f[26] = 1;
  f[28] = uint8_t(bpp);
  put32(&f[30], compression);
  put32(&f[46], uint32_t(palette.size() / 4));
  std::copy(extra.begin(), extra.end(), f.begin() + 54);
  std::copy(palette.begin(), palette.end(), f.begin() + 54 + extra.size());
  std::copy(pixels.begin(), pixels.end(), f.begin() + offset);
  return f;
}

TEST_CASE("bmp writes bottom-up and reads top-down files as the same image") {
  for (uint32_t c : {1u, 3u, 4u}) {
    const Image image = test::make_image({7, 5, c}, test::Pattern::random, c);
    const Bytes bottom_up = bmp().encode(image, EncodeOptions{});
    INFO(c, " channels");
    REQUIRE(static_cast<int32_t>(le32(&bottom_up[22])) == 5);
    // Make the top-down twin: negative height, rows in the opposite order.
    const uint32_t offset = le32(&bottom_up[10]);
    const size_t stride = (7 * c * 8 + 31) / 32 * 4;
    Bytes top_down = bottom_up;
    put32(&top_down[22], uint32_t(-5));
    for (size_t y = 0; y < 5; ++y)
      std::copy_n(&bottom_up[offset + y * stride], stride, &top_down[offset + (4 - y) * stride]);
    CHECK(bmp().decode(span(bottom_up)).same_pixels(image));
    CHECK(bmp().decode(span(top_down)).same_pixels(image));
    CHECK(bmp().probe(span(top_down)).shape == image.shape());
  }
}

TEST_CASE("bmp stores 4 channels with an alpha mask so alpha reads back, even when opaque") {
  Image image = test::make_image({3, 2, 4}, test::Pattern::random);
  for (size_t i = 3; i < image.size_bytes(); i += 4) image.data()[i] = 255;
  const Bytes file = bmp().encode(image, EncodeOptions{});
  CHECK(le32(&file[14]) == 108);  // BITMAPV4HEADER
  CHECK(le32(&file[30]) == 3);    // BI_BITFIELDS
  CHECK(le32(&file[66]) == 0xff000000u);
  CHECK(bmp().decode(span(file)).same_pixels(image));
}

TEST_CASE("32-bit BI_RGB bmp is read as RGB, its fourth byte ignored") {
  const std::vector<uint8_t> pixels = {1, 2, 3, 99, 4, 5, 6, 0};  // BGRX, one row of two pixels
  const Image image = bmp().decode(span(make_bmp(2, 1, 32, 0, {}, {}, pixels)));
  REQUIRE(image.shape() == ImageShape{2, 1, 3});
  const uint8_t expected[] = {3, 2, 1, 6, 5, 4};
  CHECK(std::equal(expected, expected + 6, image.data()));
}

TEST_CASE("32-bit BI_BITFIELDS bmp with standard masks after a 40-byte header is read") {
  std::vector<uint8_t> masks(12);
  put32(&masks[0], 0xff0000), put32(&masks[4], 0xff00), put32(&masks[8], 0xff);
  const std::vector<uint8_t> pixels = {1, 2, 3, 4};
  const Image rgb = bmp().decode(span(make_bmp(1, 1, 32, 3, {}, masks, pixels)));
  REQUIRE(rgb.shape() == ImageShape{1, 1, 3});
  CHECK((rgb.data()[0] == 3 && rgb.data()[2] == 1));
  put32(&masks[0], 0xff);  // swapped masks: not supported, said so
  CHECK_THROWS_AS(bmp().decode(span(make_bmp(1, 1, 32, 3, {}, masks, pixels))), Error);
}

TEST_CASE("8-bit bmp with a gray palette gives 1 channel, with a colour palette RGB") {
  std::vector<uint8_t> gray_palette, colour_palette;
  for (int i = 0; i < 4; ++i) {
    const uint8_t g = uint8_t(i * 80);
    gray_palette.insert(gray_palette.end(), {g, g, g, 0});
    colour_palette.insert(colour_palette.end(), {uint8_t(i), uint8_t(10 + i), uint8_t(20 + i), 0});
  }
  const std::vector<uint8_t> pixels = {0, 1, 2, 3, 3, 2, 0, 0};  // 3 wide (+1 pad), 2 rows
  const Image gray = bmp().decode(span(make_bmp(3, -2, 8, 0, gray_palette, {}, pixels)));
  REQUIRE(gray.shape() == ImageShape{3, 2, 1});
  const uint8_t expected_gray[] = {0, 80, 160, 240, 160, 0};
  CHECK(std::equal(expected_gray, expected_gray + 6, gray.data()));
  const Image colour = bmp().decode(span(make_bmp(3, -2, 8, 0, colour_palette, {}, pixels)));
  REQUIRE(colour.shape() == ImageShape{3, 2, 3});
  CHECK((colour.data()[3] == 21 && colour.data()[4] == 11 && colour.data()[5] == 1));
  // Index 3 is beyond a 3-entry palette.
  gray_palette.resize(12);
  try {
    (void)bmp().decode(span(make_bmp(3, -2, 8, 0, gray_palette, {}, pixels)));
    FAIL("accepted an index beyond the palette");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()).find("palette index 3") != std::string::npos);
  }
}

TEST_CASE("bmp rejects unsupported depths, compression and 2 channels with clear errors") {
  const std::vector<uint8_t> row(4, 0);
  // 2 bits; RLE on 24 bits, RLE4 on 8 and RLE8 on 4 bits; JPEG-in-BMP.
  for (auto [bpp, compression] : {std::pair{2, 0}, {24, 1}, {8, 2}, {4, 1}, {24, 4}}) {
    INFO(bpp, " bpp, compression ", compression);
    try {
      (void)bmp().decode(span(make_bmp(1, 1, uint16_t(bpp), uint32_t(compression),
                                       std::vector<uint8_t>(bpp <= 8 ? 8 : 0, 0), {}, row)));
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::unsupported);
    }
  }
  // 16-bit masks other than 5-5-5 and 5-6-5.
  const std::vector<uint8_t> masks = {0x0f, 0, 0, 0, 0xf0, 0, 0, 0, 0, 0x0f, 0, 0};
  CHECK_THROWS_WITH_AS(bmp().decode(span(make_bmp(1, 1, 16, 3, {}, masks, row))),
                       doctest::Contains("other than 5-5-5 and 5-6-5"), Error);
  CHECK_THROWS_AS(bmp().encode(test::make_image({2, 2, 2}, test::Pattern::flat), EncodeOptions{}),
                  Error);
}

TEST_CASE("1 and 4-bit bmp read their indices from the high bits first") {
  std::vector<uint8_t> palette;  // 16 colours: index i is (i, 2i, 3i)
  for (uint8_t i = 0; i < 16; ++i)
    palette.insert(palette.end(), {uint8_t(3 * i), uint8_t(2 * i), i, 0});
  // 5 pixels wide, 1 row: 4 bits 0x12 0x34 0x50 (+ pad); 1 bit 0b10110 (+ pad).
  const Image four = bmp().decode(span(make_bmp(5, 1, 4, 0, palette, {}, {0x12, 0x34, 0x50, 0})));
  REQUIRE(four.shape() == ImageShape{5, 1, 3});
  for (uint32_t x = 0; x < 5; ++x) {
    CAPTURE(x);
    CHECK(four.data()[3 * x] == x + 1);
    CHECK(four.data()[3 * x + 1] == 2 * (x + 1));
  }
  palette.resize(8);
  const Image one = bmp().decode(span(make_bmp(5, 1, 1, 0, palette, {}, {0xB0, 0, 0, 0})));
  const uint8_t expected[] = {1, 0, 1, 1, 0};
  for (uint32_t x = 0; x < 5; ++x) CHECK(one.data()[3 * x] == expected[x]);
  // A 1-bit file whose palette is black and white is gray: 1 channel of 0 and 255.
  const Image bw =
      bmp().decode(span(make_bmp(5, 1, 1, 0, {0, 0, 0, 0, 255, 255, 255, 0}, {}, {0xB0, 0, 0, 0})));
  REQUIRE(bw.shape() == ImageShape{5, 1, 1});
  CHECK((bw.data()[0] == 255 && bw.data()[1] == 0 && bw.data()[4] == 0));
}

TEST_CASE("16-bit bmp scales each field as Pillow does, v * 255 / max truncated") {
  // 2 pixels: white, and R = 1, G = 2, B = 3 in the field widths.
  const std::vector<uint8_t> p555 = {0xff, 0x7f, 0x43, 0x04};  // 1 << 10 | 2 << 5 | 3
  const std::vector<uint8_t> p565 = {0xff, 0xff, 0x43, 0x08};  // 1 << 11 | 2 << 5 | 3
  const std::vector<uint8_t> m565 = {0, 0xf8, 0, 0, 0xe0, 0x07, 0, 0, 0x1f, 0, 0, 0};
  const std::vector<uint8_t> m555 = {0, 0x7c, 0, 0, 0xe0, 0x03, 0, 0, 0x1f, 0, 0, 0};
  for (const auto& [file, green] :
       {std::pair{make_bmp(2, 1, 16, 0, {}, {}, p555), 2 * 255 / 31},
        std::pair{make_bmp(2, 1, 16, 3, {}, m555, p555), 2 * 255 / 31},
        std::pair{make_bmp(2, 1, 16, 3, {}, m565, p565), 2 * 255 / 63}}) {
    const Image image = bmp().decode(span(file));
    REQUIRE(image.shape() == ImageShape{2, 1, 3});
    const uint8_t* d = image.data();
    CHECK((d[0] == 255 && d[1] == 255 && d[2] == 255));
    CHECK(d[3] == 255 / 31);
    CHECK(d[4] == green);
    CHECK(d[5] == 3 * 255 / 31);
  }
}

TEST_CASE("run-length encoded bmp: runs, literals, end of line, delta and end of bitmap") {
  std::vector<uint8_t> palette;  // gray: index i is 10 i
  for (uint8_t i = 0; i < 16; ++i)
    palette.insert(palette.end(), {uint8_t(10 * i), uint8_t(10 * i), uint8_t(10 * i), 0});
  // 6 x 3, rows from the bottom. RLE8: row 0: a run of 4 x 5 and a literal 1 2 3 (padded), its
  // last pixel past the row's end and dropped; end of line; row 1: a run of 2 x 4, a delta of
  // (1, 1) to x = 3 of row 2, a run of 2 x 9; end of bitmap. What the runs skip is index 0.
  const std::vector<uint8_t> rle8 = {4, 5, 0, 3, 1, 2, 3, 0, 0, 0, 2, 4, 0, 2, 1, 1, 2, 9, 0, 1};
  const uint8_t expected[] = {0,  0,  0,  90, 90, 0,    // the top row, y = 2
                              40, 40, 0,  0,  0,  0,    //
                              50, 50, 50, 50, 10, 20};  // y = 0
  const Image eight = bmp().decode(span(make_bmp(6, 3, 8, 1, palette, {}, rle8)));
  REQUIRE(eight.shape() == ImageShape{6, 3, 1});
  CHECK(std::equal(expected, expected + 18, eight.data()));
  // The same picture in RLE4: nibble pairs, and an odd literal of 3 pixels in 2 bytes (padded).
  const std::vector<uint8_t> rle4 = {4,    0x55, 0, 3, 0x12, 0x30, 0,    0, 2,
                                     0x44, 0,    2, 1, 1,    2,    0x99, 0, 1};
  const Image four = bmp().decode(span(make_bmp(6, 3, 4, 2, palette, {}, rle4)));
  CHECK(std::equal(expected, expected + 18, four.data()));
  // As Pillow: runs end once the last row is full, without an end-of-bitmap mark, and what comes
  // after (runs below the last row) is not read.
  const std::vector<uint8_t> full = {6, 7, 0, 0, 6, 8, 0, 0, 6, 9, 0, 0, 6, 1, 6, 1};
  const Image filled = bmp().decode(span(make_bmp(6, 3, 8, 1, palette, {}, full)));
  CHECK((filled.data()[0] == 90 && filled.data()[17] == 70));
  const std::vector<uint8_t> no_end = {6, 7, 0, 0, 6, 8, 0, 0, 6, 9};
  CHECK(bmp().decode(span(make_bmp(6, 3, 8, 1, palette, {}, no_end))).same_pixels(filled));
  // Hostile streams: cut short, a palette index beyond the palette, a top-down RLE file, and a
  // few bytes that claim a bitmap of a billion pixels.
  const std::vector<uint8_t> cut = {3, 5, 0, 6, 1, 2};
  CHECK_THROWS_WITH_AS(bmp().decode(span(make_bmp(6, 3, 8, 1, palette, {}, cut))),
                       doctest::Contains("truncated bmp literal run"), Error);
  const std::vector<uint8_t> beyond = {2, 200, 0, 1};
  CHECK_THROWS_WITH_AS(bmp().decode(span(make_bmp(6, 3, 8, 1, palette, {}, beyond))),
                       doctest::Contains("palette index 200"), Error);
  CHECK_THROWS_WITH_AS(bmp().decode(span(make_bmp(6, -3, 8, 1, palette, {}, rle8))),
                       doctest::Contains("top-down"), Error);
  try {
    (void)bmp().probe(span(make_bmp(32768, 32768, 8, 1, palette, {}, {0, 1})));
    FAIL("accepted an RLE bomb");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::limit_exceeded);
  }
}

TEST_CASE("truncated bmp pixel data is reported with the sizes and the offset") {
  const Bytes file =
      bmp().encode(test::make_image({10, 10, 3}, test::Pattern::flat), EncodeOptions{});
  try {
    (void)bmp().decode(ByteSpan(file.data(), 100));
    FAIL("accepted a truncated file");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "truncated bmp pixel data: need 320 bytes at offset 54, have 46");
  }
}

}  // namespace
}  // namespace dlprep::image
