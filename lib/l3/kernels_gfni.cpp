// AVX2 + GFNI kernels (Ice Lake, Alder Lake, Zen 4 and later): kernels_x86.inl with the bit
// planes of a group transposed by one gf2p8affineqb, an 8x8 bit-matrix transpose per qword.
#define L3_SIMD __attribute__((target("avx2,gfni")))
#define L3_GFNI 1
#include "l3/kernels_x86.inl"

namespace dlprep::l3::detail {

const Kernels* gfni_kernels() {
  static const Kernels table = {"gfni",         adler32_simd,     decode_plane_simd,
                                store_hwc_simd, load_planes_simd, residuals_simd,
                                plan_row_simd,  choose_row_simd,  pack_row_simd};
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("gfni") ? &table : nullptr;
}

}  // namespace dlprep::l3::detail
