// IEEE binary16 from float, rounded to nearest even, the same bits on the host and on the device:
// the L3 decoder's half tensors (l3/batch_output.hpp) and the Criteo split layout's numerical.bin
// (tabular/writers.cpp). The host version is checked against the compiler's _Float16 and NumPy's
// astype(float16) by the tests. Plain C++17, so that nvcc compiles it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define DLPREP_F16_HD __host__ __device__ __forceinline__
#else
#define DLPREP_F16_HD inline
#endif

namespace dlprep {

/// The IEEE binary16 bits of f rounded to nearest even: overflow gives infinity, tiny values
/// become subnormals or zero, NaN stays NaN (quiet, payload truncated).
DLPREP_F16_HD uint16_t float_to_half_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a >= 0x7F800000u)  // infinity or NaN
    return static_cast<uint16_t>(sign | 0x7C00u |
                                 (a > 0x7F800000u ? 0x0200u | ((a >> 13) & 0x03FFu) : 0u));
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: infinity
  if (a >= 0x38800000u) {  // a normal half: rebias the exponent (127 -> 15), round 13 bits away
    const uint32_t rebased = a - 0x38000000u;
    return static_cast<uint16_t>(sign | ((rebased + 0x0FFFu + ((rebased >> 13) & 1u)) >> 13));
  }
  if (a < 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: rounds to (signed) zero
  // A subnormal half counts units of 2^-24: the 24-bit significand shifted right by
  // 126 - exponent (between 14 and 24 bits), rounded to nearest even.
  const uint32_t exponent = a >> 23;
  const uint32_t significand = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent;
  const uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half_way = 1u << (shift - 1u);
  const uint32_t rounded =
      kept + ((rest > half_way || (rest == half_way && (kept & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(sign | rounded);
#endif
}

/// float_to_half_bits of n floats given as their bits, one at a time (host code).
inline void floats_to_halves_one_by_one(const uint32_t* float_bits, uint16_t* halves, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, &float_bits[i], sizeof f);
    halves[i] = float_to_half_bits(f);
  }
}

/// float_to_half_bits of n floats given as their bits, on the host: with F16C's conversion where
/// the CPU has it (the same IEEE rounding), else one by one (float16_x86.cpp, float16_none.cpp).
void floats_to_halves(const uint32_t* float_bits, uint16_t* halves, size_t n);

}  // namespace dlprep
