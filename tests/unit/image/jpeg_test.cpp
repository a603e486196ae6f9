// JPEG specifics: lossy round trips, subsampling, quality, and what is rejected.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "image/codec.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

const Codec* jpeg() { return find_codec("jpeg"); }
ByteSpan span(const Bytes& b) { return {b.data(), b.size()}; }

TEST_CASE("jpeg keeps gray as 1 channel and RGB as 3, close to the original") {
  if (!jpeg()) return;
  for (uint32_t c : {1u, 3u}) {
    const Image image = test::make_image({64, 48, c}, test::Pattern::gradient);
    const Image back = jpeg()->decode(span(jpeg()->encode(image, EncodeOptions{})));
    INFO(c, " channels");
    REQUIRE(back.shape() == image.shape());
    CHECK(test::psnr(image, back) > 35.0);
  }
}

TEST_CASE("jpeg quality trades size for fidelity and is checked") {
  if (!jpeg()) return;
  const Image image = test::make_image({64, 64, 3}, test::Pattern::random, 3);
  EncodeOptions low, high;
  low.quality = 20;
  high.quality = 98;
  const Bytes a = jpeg()->encode(image, low), b = jpeg()->encode(image, high);
  CHECK(a.size() < b.size());
  CHECK(test::psnr(image, jpeg()->decode(span(a))) < test::psnr(image, jpeg()->decode(span(b))));
  EncodeOptions bad;
  bad.quality = 101;
  CHECK_THROWS_AS(jpeg()->encode(image, bad), Error);
}

TEST_CASE("jpeg refuses 2 and 4 channels and reports a cut-off file as corrupt") {
  if (!jpeg()) return;
  for (uint32_t c : {2u, 4u}) {
    try {
      (void)jpeg()->encode(test::make_image({8, 8, c}, test::Pattern::flat), EncodeOptions{});
      FAIL("encoded ", c, " channels");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::unsupported);
    }
  }
  const Bytes file =
      jpeg()->encode(test::make_image({64, 64, 3}, test::Pattern::random), EncodeOptions{});
  try {
    (void)jpeg()->decode(ByteSpan(file.data(), file.size() / 2));
    FAIL("decoded half a file");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()).rfind("corrupt jpeg data: ", 0) == 0);
  }
}

}  // namespace
}  // namespace dlprep::image
