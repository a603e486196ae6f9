// The check of the CUDA test executables. They are plain programs rather than doctest suites so
// that they can exit 77 (ctest: skipped) before any case when there is no GPU; a failed EXPECT
// prints where and why, counts, and lets the suite go on to report every difference.
#pragma once

#include <cstdio>

namespace dlprep::testing {
inline int failures = 0;
}  // namespace dlprep::testing

#define EXPECT(cond, ...)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ++::dlprep::testing::failures;                                       \
      std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                   \
      std::fprintf(stderr, "\n");                                          \
    }                                                                      \
  } while (0)
