#include "dataset/target_spec.hpp"

#include <doctest/doctest.h>

#include "core/error.hpp"
#include "image/codec.hpp"

using namespace dlprep;
using namespace dlprep::dataset;

TEST_CASE("target specs parse into formats and encoder options") {
  auto l3 = parse_target("l3");
  CHECK(l3.format == "l3");
  CHECK_FALSE(l3.has_options);
  CHECK(l3.text == "l3");
  CHECK(parse_target("l3:64").options.patch == 64);
  CHECK(parse_target("bmp").format == "bmp");
  CHECK_THROWS_WITH_AS(parse_target("pgm"), doctest::Contains("ppm writes gray images as PGM"),
                       Error);
  if (image::find_codec("png")) {
    auto png = parse_target("png:9");
    CHECK(png.options.level == 9);
    CHECK(png.has_options);
    CHECK(png.text == "png:9");
  }
  if (image::find_codec("jpeg")) {
    auto jpeg = parse_target("jpg:85");
    CHECK(jpeg.format == "jpeg");
    CHECK(jpeg.options.quality == 85);
    CHECK(jpeg.text == "jpeg:85");
  }
  if (image::find_codec("webp")) {
    CHECK(parse_target("webp:lossless").options.lossless);
    auto lossy = parse_target("webp:80");
    CHECK_FALSE(lossy.options.lossless);
    CHECK(lossy.options.quality == 80);
    // l3 bench's spellings name the same targets, recorded as the same text.
    CHECK(parse_target("webp-lossless").text == "webp:lossless");
    CHECK(parse_target("webp-lossless").options.lossless);
    CHECK(parse_target("webp-lossy:80").text == "webp:80");
    CHECK(parse_target("webp-lossy").text == "webp:90");
    CHECK_FALSE(parse_target("webp-lossy").options.lossless);
    auto mix = parse_mix("webp-lossy:75:1,png:1");
    CHECK(mix[0].target.text == "webp:75");
    CHECK_THROWS_AS(parse_target("webp-lossless:5"), Error);  // an effort: l3 bench's only
    CHECK_THROWS_AS(parse_target("webp-lossy:0"), Error);
    CHECK_THROWS_AS(parse_target("webp-lossy:lossless"), Error);
  }
}

TEST_CASE("bad target specs are usage errors") {
  for (const char* bad : {"", "gif", "png:10", "png:-1", "png:", "jpeg:0", "jpeg:101", "webp:x",
                          "l3:7", "l3:512", "bmp:3", "ppm:1", "png:9:1"}) {
    INFO(bad);
    try {
      parse_target(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::invalid_argument);
    }
  }
}

TEST_CASE("mixes parse, normalise their ratios and keep options") {
  auto mix = parse_mix("l3:0.6,bmp:0.4");
  REQUIRE(mix.size() == 2);
  CHECK(mix[0].target.format == "l3");
  CHECK(mix[0].ratio == doctest::Approx(0.6));
  CHECK(mix[1].ratio == doctest::Approx(0.4));
  auto weights = parse_mix("l3:7,bmp:3");
  CHECK(weights[0].ratio == doctest::Approx(0.7));
  CHECK(mix_text(weights) == "l3:0.7,bmp:0.3");
  if (image::find_codec("png")) {
    auto opts = parse_mix("png:9:1,bmp:1");
    CHECK(opts[0].target.text == "png:9");
    CHECK(opts[0].ratio == doctest::Approx(0.5));
  }
}

TEST_CASE("bad mixes are usage errors") {
  for (const char* bad : {"", "l3", "l3:0.5,", "l3:x", "l3:-1,bmp:1", "l3:0,bmp:0", "l3:0.5,l3:0.5",
                          "gif:1", "l3:inf"}) {
    INFO(bad);
    try {
      parse_mix(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::invalid_argument);
    }
  }
}
