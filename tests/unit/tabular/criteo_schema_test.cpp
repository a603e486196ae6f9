// The transform constants shared by the CPU and the CUDA backend (criteo_schema.hpp): the rule
// that lets the GPU use its own double log and still produce the CPU's floats bit for bit.
#include "tabular/criteo_schema.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>

using namespace dlprep::tabular;

namespace {

double step(double e, int ulps) {
  for (; ulps > 0; --ulps) e = std::nextafter(e, HUGE_VAL);
  for (; ulps < 0; ++ulps) e = std::nextafter(e, -HUGE_VAL);
  return e;
}

// For one dense value: a device whose double log is up to 3 ulps off the host's (CUDA documents
// 1 ulp) keeps its float only when log_rounding_is_safe, and that float must be dense_log's.
// Returns how many of the 7 simulated device results were sent to the host.
int check_value(int32_t x, double offset) {
  const double g = std::log(static_cast<double>(x) + offset);  // the host's double
  const float want = dense_log(x, offset);
  int unsafe = 0;
  for (int d = -3; d <= 3; ++d) {
    const double e = step(g, d);
    const float f = static_cast<float>(e);
    if (log_rounding_is_safe(e, f)) {
      if (f != want) {
        FAIL_CHECK("x " << x << " offset " << offset << " error " << d << " ulps: kept a float "
                        << f << " that differs from dense_log's " << want);
      }
    } else {
      ++unsafe;
    }
  }
  return unsafe;
}

}  // namespace

TEST_CASE("a device log within 3 ulps keeps only floats that equal dense_log's") {
  uint64_t values = 0, unsafe = 0;
  for (double offset : {1.0, 3.0, 0.5, 1e-3, 1e6}) {
    // Every value of the first 2^18 above the table, then random ones up to INT32_MAX.
    for (int32_t x = kLogTableSize; x < kLogTableSize + (1 << 18); ++x, ++values)
      unsafe += static_cast<uint64_t>(check_value(x, offset));
    std::mt19937 rng(7);
    for (int i = 0; i < 50000; ++i, ++values) {
      auto x = static_cast<int32_t>(kLogTableSize + rng() % (uint32_t{INT32_MAX} - kLogTableSize));
      unsafe += static_cast<uint64_t>(check_value(x, offset));
    }
    unsafe += static_cast<uint64_t>(check_value(INT32_MAX, offset));
  }
  // The host recomputes about 2^-25 of the values; allow far more, but not a real fraction.
  MESSAGE(unsafe << " of " << values * 7 << " simulated device results sent to the host");
  CHECK(unsafe * 100000 < values * 7);
}

TEST_CASE("a result at or next to a float rounding boundary is never kept") {
  // The midpoint between two neighbouring floats, and values a few ulps around it.
  for (float f : {11.5f, 12.345678f, 20.0f, 16.0f, 709.0f}) {
    const float up = std::nextafter(f, HUGE_VALF);
    const double mid = (static_cast<double>(f) + static_cast<double>(up)) / 2;
    for (int d = -8; d <= 8; ++d) {
      const double e = step(mid, d);
      CHECK_FALSE(log_rounding_is_safe(e, static_cast<float>(e)));
    }
    // Well inside the interval: safe.
    CHECK(log_rounding_is_safe(static_cast<double>(f), f));
  }
  // Outside the moderate range, or not finite: always the host's.
  CHECK_FALSE(log_rounding_is_safe(HUGE_VAL, HUGE_VALF));
  CHECK_FALSE(log_rounding_is_safe(std::nan(""), std::nanf("")));
  CHECK_FALSE(log_rounding_is_safe(0.0, 0.0f));
  CHECK_FALSE(log_rounding_is_safe(1e-300, 0.0f));
}

TEST_CASE("whenever a result is kept, every double within 3 ulps rounds to the same float") {
  // The rule's contract, probed where it matters: around the rounding boundaries of random
  // floats in the range of logs of int32 values (about 11 to 22 for offsets near 1).
  std::mt19937 rng(3);
  uint64_t kept = 0, sent = 0;
  for (int i = 0; i < 20000; ++i) {
    const float f = std::uniform_real_distribution<float>(11.0f, 700.0f)(rng);
    const double mid =
        (static_cast<double>(f) + static_cast<double>(std::nextafter(f, HUGE_VALF))) / 2;
    for (int d = -24; d <= 24; ++d) {
      const double e = step(mid, d);
      const float fe = static_cast<float>(e);
      if (!log_rounding_is_safe(e, fe)) {
        ++sent;
        CHECK(std::abs(d) <= 9);  // only values next to the boundary go to the host
        continue;
      }
      ++kept;
      for (int g = -3; g <= 3; ++g) CHECK(static_cast<float>(step(e, g)) == fe);
    }
  }
  CHECK(kept > 0);
  CHECK(sent > 0);
}

TEST_CASE("the log table covers the values below kLogTableSize with dense_log itself") {
  // Both backends fill their table with dense_log; spot-check the boundary and negatives.
  CHECK(dense_log(kLogTableSize - 1, 1.0) == static_cast<float>(std::log(65535.0 + 1.0)));
  CHECK(dense_log(-7, 3.0) == dense_log(0, 3.0));
  CHECK(neg2zero(INT32_MIN) == 0);
  FastMod m(5000);
  CHECK(m(0xFFFFFFFFu) == 0xFFFFFFFFu % 5000);
}
