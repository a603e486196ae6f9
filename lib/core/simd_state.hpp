// The upper halves of the AVX registers, left dirty by hand-written assembly.
#pragma once

#include <optional>

namespace dlprep {

/// Clears the upper halves of the vector registers (VZEROUPPER) on an x86-64 CPU with AVX; does
/// nothing elsewhere. Call it after a call into a library whose assembly uses AVX2 or AVX-512 and
/// returns without doing so itself (ISA-L 2.30's isal_inflate; its CRC kernels were checked and
/// do not): until then every SSE instruction the thread runs pays for the dirty state. Measured
/// on the 2026-11 build machine, an Intel VM: a scalar float loop 20% slower after one
/// isal_inflate call, and binary-row preprocessing 0.18 s instead of 0.13 s in a process whose
/// main thread had inflated gzip once. Compilers clear it themselves after their own AVX code.
void clear_upper_simd_state();

/// Whether this thread's upper vector state is in use (XGETBV with ECX = 1: the upper halves of
/// the YMM or ZMM registers 0-15), for the tests that check the call sites above; nullopt where
/// the CPU cannot tell.
std::optional<bool> upper_simd_state_in_use();

}  // namespace dlprep
