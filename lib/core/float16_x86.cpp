// floats_to_halves on x86-64 (float16.hpp): VCVTPS2PH where the CPU has F16C. With the
// rounding given in the instruction (nearest even) it is the IEEE conversion float_to_half_bits
// spells out, subnormals included (the MXCSR's DAZ, which would flush subnormal inputs, is never
// set here); the tests compare the two.
#include <cpuid.h>
#include <immintrin.h>

#include "core/float16.hpp"

namespace dlprep {
namespace {

__attribute__((target("avx,f16c"))) void convert_f16c(const uint32_t* float_bits, uint16_t* halves,
                                                      size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v =
        _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(float_bits + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(halves + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  floats_to_halves_one_by_one(float_bits + i, halves + i, n - i);
}

// CPUID leaf 1, ECX bit 29. (Clang 14's __builtin_cpu_supports does not know "f16c".)
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

}  // namespace

void floats_to_halves(const uint32_t* float_bits, uint16_t* halves, size_t n) {
  // "avx" also checks that the OS saves the YMM registers.
  static const bool f16c = __builtin_cpu_supports("avx") && cpu_has_f16c();
  if (f16c)
    convert_f16c(float_bits, halves, n);
  else
    floats_to_halves_one_by_one(float_bits, halves, n);
}

}  // namespace dlprep
