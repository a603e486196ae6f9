// A fiber's saved context on the host thread: what the emulation switches between (every CUDA
// thread that waits at a barrier is a fiber). On x86-64 a switch saves the callee-saved registers
// on the stack it leaves; elsewhere it is a ucontext. swapcontext costs two system calls a switch
// (the signal mask) and, under ASan, a clear of the shadow of the whole stack it enters: three
// quarters of an emulated kernel's time.
#pragma once

#include <cstddef>

#if defined(__x86_64__) && defined(__LP64__)  // (not x32)
#define DLPREP_EMU_FIBER_SWITCH_X86_64 1
#else
#include <ucontext.h>
#endif

namespace emu {

struct FiberContext {
#if defined(DLPREP_EMU_FIBER_SWITCH_X86_64)
  void* stack_pointer = nullptr;
#else
  ucontext_t context;
#endif
};

/// Prepares `context` to run `entry` on [stack, stack + bytes) when it is first switched to;
/// `entry` must never return.
void make_fiber_context(FiberContext& context, void* stack, size_t bytes, void (*entry)());

/// Saves what runs now in `from` and resumes `to`; returns when something switches back to `from`.
void switch_fiber_context(FiberContext& from, FiberContext& to);

}  // namespace emu
