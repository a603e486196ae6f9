// float_to_half_bits (core/float16.hpp) against the compiler's own IEEE conversion.
#include "core/float16.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

namespace dlprep {
namespace {

uint16_t reference_half(float f) {
  const _Float16 h = static_cast<_Float16>(f);  // the compiler's IEEE conversion (nearest even)
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TEST_CASE("float_to_half_bits rounds to nearest even like the compiler's _Float16") {
  // A sweep over all bit patterns (every 997th), then the neighbourhood of each half value.
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 997) {
    const float f = from_bits(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;  // NaN payloads may differ; NaN-ness is checked below
    REQUIRE(float_to_half_bits(f) == reference_half(f));
  }
  // Around every finite half: the value, the midpoint to the next (a tie), one float ulp either
  // side of the midpoint, for both signs.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    _Float16 lo, hi;
    const uint16_t lo_bits = static_cast<uint16_t>(h), hi_bits = static_cast<uint16_t>(h + 1);
    std::memcpy(&lo, &lo_bits, 2);
    std::memcpy(&hi, &hi_bits, 2);
    const float a = static_cast<float>(lo), mid = (a + static_cast<float>(hi)) / 2;  // exact
    for (float g : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)})
      for (float s : {1.0f, -1.0f}) REQUIRE(float_to_half_bits(s * g) == reference_half(s * g));
  }
  CHECK(float_to_half_bits(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(float_to_half_bits(-std::numeric_limits<float>::infinity()) == 0xFC00);
  CHECK(float_to_half_bits(65520.0f) == 0x7C00);  // the midpoint to infinity rounds up (even)
  CHECK(float_to_half_bits(65519.996f) == 0x7BFF);
  const uint16_t nan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7C00) == 0x7C00);
  CHECK((nan & 0x03FF) != 0);
}

TEST_CASE("floats_to_halves (F16C where the CPU has it) equals float_to_half_bits") {
  // The same sweep and neighbourhoods, in arrays whose lengths leave a tail of every size.
  std::vector<uint32_t> bits;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 997)
    if (!std::isnan(from_bits(static_cast<uint32_t>(b)))) bits.push_back(static_cast<uint32_t>(b));
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    _Float16 x;
    const uint16_t hb = static_cast<uint16_t>(h);
    std::memcpy(&x, &hb, 2);
    uint32_t fb;
    const float f = static_cast<float>(x);
    std::memcpy(&fb, &f, 4);
    for (uint32_t d : {0u, 0x0FFFu, 0x1000u, 0x1001u}) bits.push_back(fb + d);  // ties: + 0x1000
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, bits.size()}) {
    std::vector<uint16_t> out(n + 1, 0xABCD);
    floats_to_halves(bits.data(), out.data(), n);
    for (size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, &bits[i], 4);
      REQUIRE(out[i] == float_to_half_bits(f));
    }
    CHECK(out[n] == 0xABCD);  // nothing written past n
  }
}

}  // namespace
}  // namespace dlprep
