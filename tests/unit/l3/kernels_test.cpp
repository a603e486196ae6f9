// The SIMD kernels against the scalar reference: identical files from the encoder, identical
// pixels from the decoder, on every backend this CPU supports.
#include "l3/kernels.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

std::vector<const detail::Kernels*> simd_backends() {
  std::vector<const detail::Kernels*> all;
  if (const auto* k = detail::avx2_kernels()) all.push_back(k);
  if (const auto* k = detail::gfni_kernels()) all.push_back(k);
  return all;
}

TEST_CASE("every SIMD backend encodes and decodes bit-identically to the scalar reference") {
  const auto backends = simd_backends();
  MESSAGE("SIMD backends on this CPU: " << backends.size());
  uint32_t seed = 1;
  for (uint32_t patch : {8u, 16u, 32u, 64u, 128u, 256u}) {
    for (uint32_t c = 1; c <= 4; ++c) {
      const uint32_t w = patch + 7 + c * 13, h = patch / 2 + 5 + c;
      const Image image = testing::make_image(w, h, c, testing::Content::mixed, seed++);
      const Bytes reference = detail::encode_with(image, {patch, 1}, detail::kScalarKernels);
      Image decoded(image.shape());
      detail::decode_into_with(reference, decoded.data(), decoded.row_bytes(), 1,
                               detail::kScalarKernels);
      REQUIRE(decoded.same_pixels(image));
      for (const auto* k : backends) {
        CAPTURE(k->name);
        CAPTURE(patch);
        CAPTURE(c);
        const Bytes file = detail::encode_with(image, {patch, 1}, *k);
        REQUIRE(file == reference);
        Image out(image.shape());
        detail::decode_into_with(reference, out.data(), out.row_bytes(), 1, *k);
        REQUIRE(out.same_pixels(image));
      }
    }
  }
}

TEST_CASE("the backends agree on flat, gradient, noise, black and white images") {
  const testing::Content contents[] = {testing::Content::flat, testing::Content::gradient,
                                       testing::Content::noise, testing::Content::black,
                                       testing::Content::white};
  for (const auto* k : simd_backends()) {
    for (testing::Content content : contents) {
      const Image image = testing::make_image(77, 45, 3, content, 9);
      const Bytes reference = detail::encode_with(image, {32, 1}, detail::kScalarKernels);
      CAPTURE(k->name);
      REQUIRE(detail::encode_with(image, {32, 1}, *k) == reference);
      Image out(image.shape());
      detail::decode_into_with(reference, out.data(), out.row_bytes(), 1, *k);
      REQUIRE(out.same_pixels(image));
    }
  }
}

TEST_CASE("the active kernels are the best the CPU supports unless DLPREP_L3_ISA caps them") {
  const char* env = std::getenv("DLPREP_L3_ISA");
  const std::string_view cap = env != nullptr ? env : "";
  const char* expected = detail::gfni_kernels() && cap != "avx2" && cap != "scalar" ? "gfni"
                         : detail::avx2_kernels() && cap != "scalar"                ? "avx2"
                                                                                    : "scalar";
  CHECK(kernels_name() == expected);
}

TEST_CASE("the SIMD Adler-32 equals the scalar one at every length and alignment") {
  std::mt19937 rng(5);
  std::vector<uint8_t> data(20000 + 8);  // the longest length at the largest offset
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (const auto* k : simd_backends()) {
    for (size_t len : {0, 1, 31, 32, 33, 100, 5535, 5536, 5537, 11072, 19999}) {
      for (size_t off : {0, 1, 7}) {
        CAPTURE(len);
        REQUIRE(k->adler32(1, data.data() + off, len) ==
                detail::kScalarKernels.adler32(1, data.data() + off, len));
      }
    }
    // All 0xFF maximises every accumulator.
    std::vector<uint8_t> ones(100000, 0xFF);
    REQUIRE(k->adler32(1, ones.data(), ones.size()) ==
            detail::kScalarKernels.adler32(1, ones.data(), ones.size()));
  }
}

}  // namespace
}  // namespace dlprep::l3
