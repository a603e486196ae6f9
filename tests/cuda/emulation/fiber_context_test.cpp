// Fiber contexts (fiber_context.hpp): each side of a switch resumes where it left, with its
// callee-saved registers, its stack and its own floating-point rounding, over many switches.
#include "fiber_context.hpp"

#include <doctest/doctest.h>

#include <cfenv>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kRounds = 100000;

emu::FiberContext main_context, fiber_context;
uint64_t fiber_sum = 0;
int fiber_rounding = -1;

// Eight values live across each switch, in callee-saved registers where the compiler keeps them
// there (not under ASan; keeps_registers checks each register itself) and on the stack.
struct Values {
  uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8;
  void step(uint64_t i) {
    a = a * 3 + i, b = b * 5 ^ a, c = c * 7 + b, d = d * 11 ^ c;
    e = e * 13 + d, f = f * 17 ^ e, g = g * 19 + f, h = h * 23 ^ g;
  }
  uint64_t sum() const { return a + b + c + d + e + f + g + h; }
};

// The SSE rounding bits (fegetround reads only the x87 control word).
unsigned sse_rounding() {
#if defined(DLPREP_EMU_FIBER_SWITCH_X86_64)
  unsigned mxcsr = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  return mxcsr & 0x6000u;
#else
  return 0;
#endif
}

#if defined(DLPREP_EMU_FIBER_SWITCH_X86_64)
// keeps_registers(from, to, seed): fiber_context.cpp's emu_switch_stack(from, to) with seed + 1 ..
// seed + 6 in the callee-saved registers; 1 when they are all there again once it returns. (Values
// the compiler keeps may live on the stack instead, as they do under ASan.)
asm(R"(
  .pushsection .text
  .p2align 4
  .type keeps_registers, @function
keeps_registers:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  movq %rdx, (%rsp)
  leaq 1(%rdx), %rbx
  leaq 2(%rdx), %rbp
  leaq 3(%rdx), %r12
  leaq 4(%rdx), %r13
  leaq 5(%rdx), %r14
  leaq 6(%rdx), %r15
  call emu_switch_stack@PLT
  movq (%rsp), %rdx
  xorl %eax, %eax
  leaq 1(%rdx), %rcx
  cmpq %rcx, %rbx
  jne 1f
  leaq 2(%rdx), %rcx
  cmpq %rcx, %rbp
  jne 1f
  leaq 3(%rdx), %rcx
  cmpq %rcx, %r12
  jne 1f
  leaq 4(%rdx), %rcx
  cmpq %rcx, %r13
  jne 1f
  leaq 5(%rdx), %rcx
  cmpq %rcx, %r14
  jne 1f
  leaq 6(%rdx), %rcx
  cmpq %rcx, %r15
  jne 1f
  movl $1, %eax
1:
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size keeps_registers, .-keeps_registers
  .popsection
)");
extern "C" int keeps_registers(void** from, void* to, uint64_t seed);
#endif

void fiber_main() {
  std::fesetround(FE_UPWARD);
  Values v;
  for (int i = 0; i < kRounds; ++i) {
    v.step(static_cast<uint64_t>(i));
    emu::switch_fiber_context(fiber_context, main_context);
    fiber_sum = v.sum();  // what it kept across the switch
    emu::switch_fiber_context(fiber_context, main_context);
  }
  fiber_rounding = std::fegetround();
  emu::switch_fiber_context(fiber_context, main_context);
  std::abort();  // never resumed again
}

}  // namespace

#if defined(DLPREP_EMU_FIBER_SWITCH_X86_64)
namespace {
emu::FiberContext checker_context, checked_context;
int checked_ok = 0;

void checked_main() {
  for (;;)  // each side's registers, with the other side's set differently in between
    checked_ok +=
        keeps_registers(&checked_context.stack_pointer, checker_context.stack_pointer, 0x100);
}
}  // namespace

TEST_CASE("a switch keeps every callee-saved register of both sides") {
  std::vector<unsigned char> stack(size_t{64} << 10);
  emu::make_fiber_context(checked_context, stack.data(), stack.size(), checked_main);
  int ok = 0;
  for (int i = 0; i < 3; ++i)
    ok += keeps_registers(&checker_context.stack_pointer, checked_context.stack_pointer, 0x200);
  CHECK(ok == 3);
  CHECK(checked_ok == 2);  // its third switch back has not returned yet
}
#endif

TEST_CASE("a fiber and its caller switch back and forth, each with its own state") {
  std::vector<unsigned char> stack(size_t{256} << 10);
  emu::make_fiber_context(fiber_context, stack.data(), stack.size(), fiber_main);
  const int rounding = std::fegetround();
  const unsigned sse = sse_rounding();
  Values v;
  uint64_t mismatches = 0;
  for (int i = 0; i < kRounds; ++i) {
    v.step(static_cast<uint64_t>(i));
    emu::switch_fiber_context(main_context, fiber_context);  // the fiber steps
    emu::switch_fiber_context(main_context, fiber_context);  // and sums what it kept
    mismatches += fiber_sum != v.sum();                      // as this side does
  }
  CHECK(mismatches == 0);
  // The fiber's FE_UPWARD stayed with the fiber, in both units.
  CHECK(std::fegetround() == rounding);
  CHECK(sse_rounding() == sse);
  emu::switch_fiber_context(main_context, fiber_context);
  CHECK(fiber_rounding == FE_UPWARD);
}
