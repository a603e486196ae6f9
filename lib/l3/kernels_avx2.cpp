// AVX2 kernels (Haswell and later, Zen 1 and later): kernels_x86.inl with the plane expansion
// done by pshufb + pand + pcmpeqb, two planes per 256-bit step.
#define L3_SIMD __attribute__((target("avx2")))
#define L3_GFNI 0
#include "l3/kernels_x86.inl"

namespace dlprep::l3::detail {

const Kernels* avx2_kernels() {
  static const Kernels table = {"avx2",         adler32_simd,     decode_plane_simd,
                                store_hwc_simd, load_planes_simd, residuals_simd,
                                plan_row_simd,  choose_row_simd,  pack_row_simd};
  return __builtin_cpu_supports("avx2") ? &table : nullptr;
}

}  // namespace dlprep::l3::detail
