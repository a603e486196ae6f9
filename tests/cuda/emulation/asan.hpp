// Whether the emulation is built with AddressSanitizer (gcc and clang spell it differently), and
// its interface when it is: the fibers' stack switches and the poisoning of device memory.
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
#define DLPREP_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)  // gcc
#define DLPREP_EMU_ASAN 1
#endif

#if defined(DLPREP_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define DLPREP_EMU_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define DLPREP_EMU_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define DLPREP_EMU_POISON(p, n) ((void)(p), (void)(n))
#define DLPREP_EMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
