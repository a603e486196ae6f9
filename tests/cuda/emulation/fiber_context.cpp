// Fiber contexts (fiber_context.hpp).
#include "fiber_context.hpp"

#include <cstdint>

#if defined(DLPREP_EMU_FIBER_SWITCH_X86_64)

// emu_switch_stack(from, to): pushes the registers the System V ABI has a callee keep (rbp, rbx,
// r12-r15, and the MXCSR and x87 control words), stores the stack pointer in *from, takes `to`
// as the stack pointer and pops the same from it. `ret` then returns into the code that switched
// away from `to`, or, the first time, into the entry make_fiber_context left there. (A switch by
// `ret` is not one a shadow stack allows: tests/cuda/CMakeLists.txt does not mark this file fit.)
asm(R"(
  .pushsection .text
  .p2align 4
  .globl emu_switch_stack
  .hidden emu_switch_stack
  .type emu_switch_stack, @function
emu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr 8(%rsp)
  fldcw (%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch_stack, .-emu_switch_stack
  .popsection
)");

extern "C" void emu_switch_stack(void** from, void* to);

namespace emu {

void make_fiber_context(FiberContext& context, void* stack, size_t bytes, void (*entry)()) {
  // From the 16-byte aligned top down: a null return address for `entry` (it never returns),
  // `entry` for emu_switch_stack's `ret`, six zero registers (a zero rbp ends frame-pointer
  // unwinding here), then the MXCSR and x87 control words of the thread that makes it. `entry`
  // starts with the stack pointer 8 past a multiple of 16, as after a call.
  auto* top =
      reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t{15});
  uint64_t* sp = top - 10;
  for (int i = 0; i < 10; ++i) sp[i] = 0;
  top[-2] = reinterpret_cast<uint64_t>(entry);
  uint32_t mxcsr = 0;
  uint16_t control = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(control));
  sp[1] = mxcsr;
  sp[0] = control;
  context.stack_pointer = sp;
}

void switch_fiber_context(FiberContext& from, FiberContext& to) {
  emu_switch_stack(&from.stack_pointer, to.stack_pointer);
}

}  // namespace emu

#else  // another architecture: ucontext

namespace emu {

void make_fiber_context(FiberContext& context, void* stack, size_t bytes, void (*entry)()) {
  getcontext(&context.context);
  context.context.uc_stack.ss_sp = stack;
  context.context.uc_stack.ss_size = bytes;
  context.context.uc_link = nullptr;
  makecontext(&context.context, entry, 0);
}

void switch_fiber_context(FiberContext& from, FiberContext& to) {
  swapcontext(&from.context, &to.context);
}

}  // namespace emu

#endif
