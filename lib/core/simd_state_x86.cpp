// clear_upper_simd_state and upper_simd_state_in_use on x86-64 (simd_state.hpp).
#include <cpuid.h>
#include <immintrin.h>

#include <cstdint>

#include "core/simd_state.hpp"

namespace dlprep {
namespace {

__attribute__((target("avx"))) void vzeroupper() { _mm256_zeroupper(); }

// XINUSE bits (Intel SDM vol. 1, 13.6): 2 the upper halves of YMM0-15, 6 bits 511:256 of ZMM0-15.
constexpr uint64_t kUpperStateBits = (uint64_t{1} << 2) | (uint64_t{1} << 6);

}  // namespace

void clear_upper_simd_state() {
  static const bool avx = __builtin_cpu_supports("avx");  // VZEROUPPER needs it
  if (avx) vzeroupper();
}

std::optional<bool> upper_simd_state_in_use() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  // The OS enabled XSAVE (CPUID.1:ECX.OSXSAVE[27]) and XGETBV takes ECX = 1 (CPUID.(0DH,1):EAX[2]).
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return std::nullopt;
  if (__get_cpuid_max(0, nullptr) < 0xD) return std::nullopt;
  __cpuid_count(0xD, 1, a, b, c, d);
  if (!(a & (1u << 2))) return std::nullopt;
  uint32_t lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return ((uint64_t{hi} << 32 | lo) & kUpperStateBits) != 0;
}

}  // namespace dlprep
