// Transform geometry: WxH parsing and its limits, the centred crop box, max-side rounding, and
// what apply_transform leaves alone.
#include "image/transform.hpp"

#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

Errc parse_error(const std::string& text) {
  try {
    parse_size(text);
  } catch (const Error& e) {
    return e.code();
  }
  return Errc::internal;
}

Transform resize_to(uint32_t w, uint32_t h, bool crop) {
  Transform t;
  t.resize = {w, h};
  t.center_crop = crop;
  return t;
}

Transform max_side(uint32_t n) {
  Transform t;
  t.max_side = n;
  return t;
}

TEST_CASE("WxH parses and bad or huge sizes are refused as bad arguments") {
  CHECK(parse_size("1920x1080") == Size{1920, 1080});
  CHECK(parse_size("64X36") == Size{64, 36});
  CHECK(parse_size("1x1") == Size{1, 1});
  CHECK(parse_size("65535x16384") == Size{65535, 16384});  // exactly 2^30 pixels
  for (const char* bad : {"0x10", "10x0", "abc", "10x", "x10", "-1x5", "1920x1080x3", " 5x5",
                          "5x5 ", "5*5", "", "1.5x2", "100000x100000", "65536x1", "40000x40000",
                          "4294967296x1", "99999999999999999999x1"}) {
    CAPTURE(bad);
    CHECK(parse_error(bad) == Errc::invalid_argument);
  }
  try {
    parse_size("100000x100000");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "'100000x100000': larger than the limit of 65535 pixels per side");
  }
}

TEST_CASE("inconsistent transforms are refused") {
  Transform both = resize_to(10, 10, false);
  both.max_side = 5;
  CHECK_THROWS_AS(check_transform(both), Error);
  Transform crop_only;
  crop_only.center_crop = true;
  CHECK_THROWS_AS(check_transform(crop_only), Error);
  CHECK_THROWS_AS(check_transform(max_side(70000)), Error);
  CHECK_THROWS_AS(check_transform(resize_to(0, 10, false)), Error);
  CHECK_NOTHROW(check_transform(Transform{}));
  CHECK_NOTHROW(check_transform(resize_to(64, 36, true)));
}

TEST_CASE("the canonical text names what was asked") {
  CHECK(Transform{}.text().empty());
  CHECK(Transform{}.empty());
  CHECK(resize_to(1920, 1080, true).text() == "resize=1920x1080,center-crop");
  CHECK(resize_to(64, 36, false).text() == "resize=64x36");
  CHECK(max_side(1024).text() == "max-side=1024");
  Transform rgb = max_side(1024);
  rgb.channels = Channels::rgb;
  CHECK(rgb.text() == "max-side=1024,channels=rgb");
  rgb.max_side = 0;
  CHECK(rgb.text() == "channels=rgb");
  CHECK_FALSE(rgb.empty());
}

TEST_CASE("the canonical text parses back to its transform, and anything else is refused") {
  Transform rgb = max_side(1024);
  rgb.channels = Channels::rgb;
  for (const Transform& t :
       {Transform{}, resize_to(1920, 1080, true), resize_to(64, 36, false), max_side(1024), rgb})
    CHECK(parse_transform_text(t.text()) == t);
  for (const char* bad :
       {"max-side=0", "max-side=", "max-side=12x", "max-side=99999999999", "resize=0x5",
        "resize=64", "center-crop", "resize=64x36,max-side=5", "channels=gray", "max-side=64,",
        "size=5", "resize=64x48,resize=32x32", "channels=rgb,channels=rgb"}) {
    const std::string text = bad;
    CAPTURE(text);
    CHECK_THROWS_AS(parse_transform_text(bad), Error);
  }
}

TEST_CASE("the centre crop is the largest centred region of the target's aspect ratio") {
  const Transform fhd = resize_to(1920, 1080, true);
  // Already 16:9: nothing cropped.
  auto p = plan_transform(fhd, {3840, 2160});
  CHECK(p.crop == Rect{0, 0, 3840, 2160});
  CHECK(p.output == Size{1920, 1080});
  CHECK_FALSE(p.identity);
  // 16:10 loses rows, as tests/bench/make_photo_sets.py's centre_crop_16_9 (h = w * 9 // 16).
  CHECK(plan_transform(fhd, {2560, 1600}).crop == Rect{0, 80, 2560, 1440});
  // Wider than 16:9 loses columns (w = h * 16 // 9).
  CHECK(plan_transform(fhd, {5000, 2000}).crop == Rect{722, 0, 3555, 2000});
  CHECK(plan_transform(fhd, {1000, 1000}).crop == Rect{0, 219, 1000, 562});
  // Extreme ratios keep at least one pixel.
  CHECK(plan_transform(fhd, {1, 1000}).crop == Rect{0, 499, 1, 1});
  CHECK(plan_transform(resize_to(1, 1000, true), {1000, 1}).crop == Rect{499, 0, 1, 1});
  // Exactly the target: identity.
  CHECK(plan_transform(fhd, {1920, 1080}).identity);
  // Without the crop the whole image is stretched.
  p = plan_transform(resize_to(64, 36, false), {100, 100});
  CHECK(p.crop == Rect{0, 0, 100, 100});
  CHECK(p.output == Size{64, 36});
}

TEST_CASE("max-side shrinks the longer side to N, rounds the other, and never enlarges") {
  CHECK(plan_transform(max_side(1000), {4000, 3000}).output == Size{1000, 750});
  CHECK(plan_transform(max_side(1000), {3000, 4000}).output == Size{750, 1000});
  CHECK(plan_transform(max_side(1000), {2000, 5}).output == Size{1000, 3});  // 2.5 rounds up
  CHECK(plan_transform(max_side(1000), {2000, 4}).output == Size{1000, 2});
  CHECK(plan_transform(max_side(1000), {1001, 3}).output == Size{1000, 3});
  CHECK(plan_transform(max_side(10), {65535, 1}).output == Size{10, 1});  // at least 1
  CHECK(plan_transform(max_side(1000), {1000, 1000}).identity);
  CHECK(plan_transform(max_side(1000), {100, 50}).identity);
  CHECK(plan_transform(max_side(1000), {100, 50}).output == Size{100, 50});
}

TEST_CASE("apply_transform resizes, and leaves an image alone when there is nothing to do") {
  Image im = test::make_image({80, 60, 3}, test::Pattern::gradient);
  const Image before = im.clone();
  CHECK_FALSE(apply_transform(Transform{}, im));
  CHECK_FALSE(apply_transform(max_side(80), im));
  CHECK_FALSE(apply_transform(resize_to(80, 60, true), im));
  CHECK(im.same_pixels(before));
  CHECK(apply_transform(resize_to(16, 9, true), im));
  CHECK(im.shape() == ImageShape{16, 9, 3});
  Image im2 = before.clone();
  CHECK(apply_transform(max_side(40), im2));
  CHECK(im2.shape() == ImageShape{40, 30, 3});
  CHECK(im2.same_pixels(resize_lanczos(before, 40, 30)));
}

TEST_CASE(
    "channels rgb replicates gray and drops alpha, as PIL's convert('RGB'), before resizing") {
  Transform rgb;
  rgb.channels = Channels::rgb;
  for (uint32_t channels : {1u, 2u, 3u, 4u}) {
    INFO(channels);
    const Image source = test::make_image({7, 5, channels}, test::Pattern::random);
    Image im = source.clone();
    CHECK(apply_transform(rgb, im) == (channels != 3));
    REQUIRE(im.shape() == ImageShape{7, 5, 3});
    CHECK(rgb.output_channels(channels) == 3);
    for (size_t i = 0; i < 7 * 5; ++i) {
      const uint8_t* in = source.data() + i * channels;
      const uint8_t* out = im.data() + i * 3;
      const bool gray = channels < 3;
      CHECK(out[0] == in[0]);
      CHECK(out[1] == in[gray ? 0 : 1]);
      CHECK(out[2] == in[gray ? 0 : 2]);
    }
  }
  Image rgba = test::make_image({80, 60, 4}, test::Pattern::gradient);
  Image dropped = rgba.clone();
  Transform both = max_side(40);
  both.channels = Channels::rgb;
  CHECK(apply_transform(both, rgba));
  apply_transform(rgb, dropped);
  CHECK(rgba.same_pixels(resize_lanczos(dropped, 40, 30)));
  CHECK(Transform{}.output_channels(4) == 4);
}

}  // namespace
}  // namespace dlprep::image
