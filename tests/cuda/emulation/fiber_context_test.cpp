// Fiber contexts (fiber_context.hpp): each side of a switch resumes where it left, with the
// values it keeps in registers and its own floating-point rounding, over many switches.
#include "fiber_context.hpp"

#include <doctest/doctest.h>

#include <cfenv>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kRounds = 100000;

emu::FiberContext main_context, fiber_context;
uint64_t fiber_value = 0;
int fiber_rounding = -1;

// What both sides compute, so that each checks the other's values survived the switches.
uint64_t step(uint64_t x, int i) { return x * 6364136223846793005u + static_cast<uint64_t>(i); }

void fiber_main() {
  std::fesetround(FE_UPWARD);
  uint64_t x = 1;
  for (int i = 0; i < kRounds; ++i) {
    x = step(x, i);
    fiber_value = x;
    emu::switch_fiber_context(fiber_context, main_context);
  }
  fiber_rounding = std::fegetround();
  emu::switch_fiber_context(fiber_context, main_context);
  std::abort();  // never resumed again
}

}  // namespace

TEST_CASE("a fiber and its caller switch back and forth, each with its own state") {
  std::vector<unsigned char> stack(size_t{256} << 10);
  emu::make_fiber_context(fiber_context, stack.data(), stack.size(), fiber_main);
  const int rounding = std::fegetround();
  uint64_t x = 1, mismatches = 0;
  for (int i = 0; i < kRounds; ++i) {
    emu::switch_fiber_context(main_context, fiber_context);
    x = step(x, i);
    mismatches += fiber_value != x;
  }
  CHECK(mismatches == 0);
  CHECK(std::fegetround() == rounding);  // the fiber's FE_UPWARD stayed with the fiber
  emu::switch_fiber_context(main_context, fiber_context);
  CHECK(fiber_rounding == FE_UPWARD);
}
