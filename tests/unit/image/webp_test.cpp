// WebP specifics: lossy mode, gray stored as RGB, alpha kept on opaque images, effort levels.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "image/codec.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

const Codec* webp() { return find_codec("webp"); }
ByteSpan span(const Bytes& b) { return {b.data(), b.size()}; }

EncodeOptions lossy(int quality = -1) {
  EncodeOptions o;
  o.lossless = false;
  o.quality = quality;
  return o;
}

TEST_CASE("lossy webp keeps the shape of RGB and RGBA images and stays close") {
  if (!webp()) return;
  for (uint32_t c : {3u, 4u}) {
    for (auto [w, h] : {std::pair{1u, 1u}, {17u, 13u}, {64u, 64u}}) {
      const Image image = test::make_image({w, h, c}, test::Pattern::gradient);
      const Bytes file = webp()->encode(image, lossy());
      const Image back = webp()->decode(span(file));
      INFO(test::shape_str(image.shape()));
      REQUIRE(back.shape() == image.shape());
      CHECK(webp()->probe(span(file)).shape == image.shape());
      CHECK(test::psnr(image, back) > 30.0);
    }
  }
  CHECK_THROWS_AS(webp()->encode(test::make_image({4, 4, 3}, test::Pattern::flat), lossy(0)),
                  Error);
}

TEST_CASE("an opaque RGBA image comes back with 4 channels, lossless and lossy") {
  if (!webp()) return;
  const Image image = test::make_image({9, 7, 4}, test::Pattern::flat);  // alpha 220: set to 255
  Image opaque = image.clone();
  for (size_t i = 3; i < opaque.size_bytes(); i += 4) opaque.data()[i] = 255;
  CHECK(webp()->decode(span(webp()->encode(opaque, EncodeOptions{}))).same_pixels(opaque));
  const Image back = webp()->decode(span(webp()->encode(opaque, lossy())));
  REQUIRE(back.shape() == opaque.shape());
  for (size_t i = 3; i < back.size_bytes(); i += 4) CHECK(back.data()[i] == 255);
}

TEST_CASE("webp stores gray as RGB and gray+alpha as RGBA") {
  if (!webp()) return;
  for (uint32_t c : {1u, 2u}) {
    const Image image = test::make_image({5, 4, c}, test::Pattern::random);
    const Image back = webp()->decode(span(webp()->encode(image, EncodeOptions{})));
    REQUIRE(back.shape() == ImageShape{5, 4, c + 2});
    for (size_t p = 0; p < 20; ++p) {
      const uint8_t* px = back.data() + p * (c + 2);
      CHECK((px[0] == image.data()[p * c] && px[1] == px[0] && px[2] == px[0]));
      if (c == 2) CHECK(px[3] == image.data()[p * c + 1]);
    }
  }
}

TEST_CASE("webp lossless keeps RGB under fully transparent pixels at every effort level") {
  if (!webp()) return;
  Image image = test::make_image({16, 16, 4}, test::Pattern::random, 9);
  for (size_t i = 3; i < image.size_bytes(); i += 8) image.data()[i] = 0;
  for (int level : {0, 3, 9}) {
    EncodeOptions o;
    o.level = level;
    INFO("level ", level);
    CHECK(webp()->decode(span(webp()->encode(image, o))).same_pixels(image));
  }
  EncodeOptions bad;
  bad.level = 10;
  CHECK_THROWS_AS(webp()->encode(image, bad), Error);
}

}  // namespace
}  // namespace dlprep::image
