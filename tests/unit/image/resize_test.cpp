// The Lanczos-3 resampler: exact output sizes, flat images stay flat, ramps stay monotone,
// channels are independent, the crop box is honoured, and small cases equal Pillow's output.
#include "image/resize.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

using test::make_image;
using test::Pattern;

// 9x7 gray, a mix of ramps and a pattern, the input of the Pillow references below.
Image reference_input() {
  Image im(9, 7, 1);
  for (uint32_t y = 0; y < 7; ++y)
    for (uint32_t x = 0; x < 9; ++x)
      im.row(y)[x] = uint8_t((x * 37 + y * 91 + (x * y) % 13 * 7) & 255);
  return im;
}

std::vector<uint8_t> pixels(const Image& im) { return {im.data(), im.data() + im.size_bytes()}; }

// One plane of an interleaved image as a gray image.
Image plane(const Image& im, uint32_t k) {
  Image out(im.width(), im.height(), 1);
  for (size_t i = 0; i < out.size_bytes(); ++i) out.data()[i] = im.data()[i * im.channels() + k];
  return out;
}

TEST_CASE("small resizes equal Pillow's Image.resize(LANCZOS) exactly") {
  // Generated with Pillow 9.4 (Debian 12): Image.frombytes("L", (9, 7), px).resize(size,
  // Image.LANCZOS), px as in reference_input().
  const Image in = reference_input();
  CHECK(pixels(resize_lanczos(in, 4, 3)) ==
        std::vector<uint8_t>{98, 123, 135, 133, 129, 135, 138, 153, 110, 113, 132, 118});
  CHECK(pixels(resize_lanczos(in, 1, 1)) == std::vector<uint8_t>{128});
  CHECK(pixels(resize_lanczos(in, 9, 2)) == std::vector<uint8_t>{83, 133, 109, 143, 119, 141, 153,
                                                                 116, 160, 111, 105, 157, 107, 96,
                                                                 188, 123, 75, 194});
  const std::vector<uint8_t> up = {
      0,   10,  40,  60,  80,  117, 163, 182, 237, 223, 37,  0,   39,  32,  45,  89,  140, 192, 154,
      69,  81,  134, 137, 77,  79,  112, 129, 161, 178, 153, 204, 150, 9,   27,  92,  129, 167, 208,
      229, 176, 233, 201, 42,  40,  100, 119, 152, 204, 232, 200, 216, 251, 64,  99,  108, 69,  109,
      196, 253, 255, 176, 79,  86,  142, 170, 10,  45,  132, 196, 181, 158, 174, 186, 108, 23,  62,
      119, 135, 114, 133, 201, 240, 120, 7,   19,  58,  125, 158, 125, 155, 202, 225, 118, 39,  109,
      65,  46,  118, 153, 209, 198, 39,  124, 255, 134, 78,  47,  114, 143, 105, 91,  209, 238, 117,
      11,  100, 205, 10,  63,  154, 200, 232, 109, 0,   183, 216, 46,  43,  101, 133};
  CHECK(pixels(resize_lanczos(in, 13, 10)) == up);
}

TEST_CASE("outputs have exactly the requested size, down, up, mixed and extreme") {
  const std::vector<std::pair<uint32_t, uint32_t>> sizes = {
      {1, 1}, {2, 1}, {1, 2}, {7, 5}, {64, 36}, {200, 3}, {3, 200}, {1000, 1}, {1, 1000}};
  for (uint32_t c = 1; c <= 4; ++c) {
    for (auto [iw, ih] : sizes) {
      const Image in = make_image({iw, ih, c}, Pattern::random, iw * 7 + ih);
      for (auto [ow, oh] : sizes) {
        CAPTURE(c);
        CAPTURE(iw);
        CAPTURE(ih);
        CAPTURE(ow);
        CAPTURE(oh);
        const Image out = resize_lanczos(in, ow, oh);
        CHECK(out.shape() == ImageShape{ow, oh, c});
      }
    }
  }
}

TEST_CASE("a flat image stays flat at every size and channel count") {
  for (uint32_t c = 1; c <= 4; ++c) {
    const Image in = make_image({37, 23, c}, Pattern::flat);
    for (auto [ow, oh] : std::vector<std::pair<uint32_t, uint32_t>>{
             {1, 1}, {10, 6}, {37, 5}, {5, 23}, {80, 50}, {200, 4}, {3, 90}}) {
      const Image out = resize_lanczos(in, ow, oh);
      CAPTURE(c);
      CAPTURE(ow);
      CAPTURE(oh);
      for (uint32_t y = 0; y < oh; ++y)
        for (uint32_t x = 0; x < ow; ++x)
          for (uint32_t k = 0; k < c; ++k) REQUIRE(out.row(y)[x * c + k] == in.data()[k]);
    }
  }
}

TEST_CASE("a 1x1 image becomes a flat image of any size") {
  Image in(1, 1, 3);
  in.data()[0] = 0, in.data()[1] = 128, in.data()[2] = 255;
  const Image out = resize_lanczos(in, 17, 9);
  for (size_t i = 0; i < out.size_bytes(); ++i) REQUIRE(out.data()[i] == in.data()[i % 3]);
}

TEST_CASE("a smooth ramp stays monotone when shrunk or enlarged") {
  Image in(300, 4, 1);
  for (uint32_t y = 0; y < 4; ++y)
    for (uint32_t x = 0; x < 300; ++x) in.row(y)[x] = uint8_t(x * 255 / 299);
  for (uint32_t ow : {1u, 7u, 64u, 299u, 301u, 1000u}) {
    const Image out = resize_lanczos(in, ow, 3);
    CAPTURE(ow);
    for (uint32_t y = 0; y < 3; ++y)
      for (uint32_t x = 1; x < ow; ++x) REQUIRE(out.row(y)[x - 1] <= out.row(y)[x]);
    if (ow >= 64) {  // the ends stay near the ends (an end pixel averages a few inputs)
      CHECK(out.row(0)[0] <= 6);
      CHECK(out.row(0)[ow - 1] >= 249);
    }
  }
}

TEST_CASE("channels, alpha included, are resampled independently") {
  const Image in = make_image({41, 29, 4}, Pattern::random, 3);
  for (auto [ow, oh] : std::vector<std::pair<uint32_t, uint32_t>>{{20, 14}, {60, 50}, {70, 9}}) {
    const Image out = resize_lanczos(in, ow, oh);
    for (uint32_t k = 0; k < 4; ++k)
      CHECK(plane(out, k).same_pixels(resize_lanczos(plane(in, k), ow, oh)));
  }
}

TEST_CASE("a box is resampled as if it had been cropped out first") {
  const Image in = make_image({50, 40, 3}, Pattern::random, 5);
  const Rect box{7, 3, 31, 22};
  Image cropped(box.width, box.height, 3);
  for (uint32_t y = 0; y < box.height; ++y)
    std::memcpy(cropped.row(y), in.row(box.y + y) + box.x * 3, cropped.row_bytes());
  CHECK(resize_lanczos(in, box, 31, 22).same_pixels(cropped));  // same size: a plain crop
  CHECK(resize_lanczos(in, box, 12, 9).same_pixels(resize_lanczos(cropped, 12, 9)));
  CHECK(resize_lanczos(in, box, 64, 30).same_pixels(resize_lanczos(cropped, 64, 30)));
}

TEST_CASE("bad boxes and sizes are refused before anything is allocated") {
  const Image in = make_image({10, 10, 1}, Pattern::gradient);
  auto code_of = [&](Rect box, uint32_t w, uint32_t h) {
    try {
      resize_lanczos(in, box, w, h);
    } catch (const Error& e) {
      return e.code();
    }
    return Errc::internal;
  };
  CHECK(code_of({0, 0, 0, 10}, 5, 5) == Errc::invalid_argument);
  CHECK(code_of({5, 0, 6, 10}, 5, 5) == Errc::invalid_argument);
  CHECK(code_of({0, 0, 10, 11}, 5, 5) == Errc::invalid_argument);
  CHECK(code_of({0xffffffffu, 0, 2, 2}, 5, 5) == Errc::invalid_argument);
  CHECK(code_of({0, 0, 10, 10}, 0, 5) == Errc::invalid_argument);
  CHECK(code_of({0, 0, 10, 10}, 70000, 1) == Errc::limit_exceeded);
  CHECK(code_of({0, 0, 10, 10}, 65535, 65535) == Errc::limit_exceeded);
}

}  // namespace
}  // namespace dlprep::image
