// Round trips of the L3 codec: every channel count, awkward sizes around patch and group
// multiples, every patch size, content from flat to noise, threads and caller row strides.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

using testing::Content;
using testing::make_image;

void check_round_trip(const Image& image, uint32_t patch = 0, unsigned threads = 1) {
  CAPTURE(image.width());
  CAPTURE(image.height());
  CAPTURE(image.channels());
  CAPTURE(patch);
  const Bytes file = encode(image, {patch, threads});
  const Image back = decode(file, threads);
  REQUIRE(back.same_pixels(image));
}

TEST_CASE("noise of every channel count decodes bit-exactly") {
  for (uint32_t c = 1; c <= 4; ++c) check_round_trip(make_image(100, 70, c, Content::noise, c));
}

TEST_CASE("flat, gradient, noise, black, white and mixed images round-trip") {
  const Content contents[] = {Content::flat,  Content::gradient, Content::noise,
                              Content::black, Content::white,    Content::mixed};
  for (Content content : contents)
    for (uint32_t c = 1; c <= 4; ++c) check_round_trip(make_image(150, 90, c, content, 3));
}

TEST_CASE("1x1, 1xN and Nx1 images round-trip with every patch size") {
  for (uint32_t patch : {8u, 16u, 32u, 64u, 128u, 256u})
    for (uint32_t c = 1; c <= 4; ++c) {
      check_round_trip(make_image(1, 1, c, Content::noise, c), patch);
      check_round_trip(make_image(1, 300, c, Content::mixed, c), patch);
      check_round_trip(make_image(300, 1, c, Content::mixed, c), patch);
    }
}

TEST_CASE("sizes just below, at and above patch and group multiples round-trip") {
  uint32_t seed = 10;
  for (uint32_t patch : {8u, 16u, 32u, 64u, 128u, 256u}) {
    for (uint32_t delta : {0u, 1u, 2u}) {
      const uint32_t below = patch - delta, above = patch + delta + 1;
      for (uint32_t c : {1u, 3u, 4u}) {
        check_round_trip(make_image(below, above, c, Content::mixed, seed++), patch);
        check_round_trip(make_image(above, below, c, Content::noise, seed++), patch);
        check_round_trip(make_image(2 * patch + 15 + delta, patch + 17, c, Content::mixed, seed++),
                         patch);
      }
    }
  }
  check_round_trip(make_image(17, 33, 2, Content::mixed, 99), 16);
}

TEST_CASE("the automatic patch size follows the pixel count of HD and FHD") {
  CHECK(auto_patch_size(1, 1) == 32);
  CHECK(auto_patch_size(1280, 720) == 32);
  CHECK(auto_patch_size(1281, 720) == 64);
  CHECK(auto_patch_size(1920, 1080) == 64);
  CHECK(auto_patch_size(1921, 1080) == 128);
  CHECK(auto_patch_size(65535, 16384) == 128);
  const Image image = make_image(1300, 720, 1, Content::gradient);
  CHECK(inspect(encode(image)).patch == 64);
}

TEST_CASE("a patch size that is not a power of two from 8 to 256 is rejected") {
  const Image image = make_image(10, 10, 1, Content::flat);
  for (uint32_t patch : {1u, 4u, 12u, 48u, 512u}) {
    CAPTURE(patch);
    try {
      (void)encode(image, {patch, 1});
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::invalid_argument);
    }
  }
}

TEST_CASE("threads change neither the file nor the pixels") {
  const Image image = make_image(333, 200, 3, Content::mixed, 7);
  const Bytes one = encode(image, {32, 1});
  const Bytes four = encode(image, {32, 4});
  REQUIRE(one == four);
  REQUIRE(decode(one, 3).same_pixels(image));
}

TEST_CASE("decode_into writes rows at the caller's stride and leaves the padding alone") {
  const Image image = make_image(45, 30, 3, Content::mixed, 8);
  const Bytes file = encode(image, {16, 1});
  const size_t stride = 45 * 3 + 7;
  std::vector<uint8_t> out(stride * 30, 0xAB);
  decode_into(file, out.data(), stride, 2);
  for (uint32_t y = 0; y < 30; ++y) {
    REQUIRE(std::memcmp(out.data() + y * stride, image.row(y), 45 * 3) == 0);
    for (size_t x = 45 * 3; x < stride; ++x) REQUIRE(out[y * stride + x] == 0xAB);
  }
  CHECK_THROWS_AS(decode_into(file, out.data(), 45 * 3 - 1, 1), Error);
}

TEST_CASE("a large image at the automatic patch size round-trips on two threads") {
  // A smooth textured image takes every path of the SIMD kernels at the automatic patch size.
  const Image image = make_image(1000, 260, 3, Content::mixed, 12);
  check_round_trip(image, 0, 2);
}

}  // namespace
}  // namespace dlprep::l3
