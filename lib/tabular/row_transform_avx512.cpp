// The AVX-512 row kernels (Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4 and later): the modulus
// of 8 or 16 values at a time with FastMod's own exact product, the flat vocabulary tables and the
// log table read by gathers. Per-function target attributes and a run-time check (row_transform.cpp
// picks): the library still runs on any x86-64.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused source of their masked
// builtins, which -Wmaybe-uninitialized reports at every use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "tabular/row_transform.hpp"

#define ROW_SIMD __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

namespace dlprep::tabular {
namespace {

// FastMod's high and low 32 bits of m and its divisor, per 64-bit lane; `none` marks the lanes
// without a modulus (d == 0: the value passes through).
struct ModLanes {
  __m512i m_lo, m_hi, d;
  __mmask8 none;
};

ROW_SIMD ModLanes mod_lanes(const FastMod* mods, int lanes) {
  alignas(64) uint64_t lo[8] = {}, hi[8] = {}, d[8] = {};
  __mmask8 none = 0;
  for (int i = 0; i < lanes; ++i) {
    lo[i] = mods[i].m & 0xFFFFFFFFu;
    hi[i] = mods[i].m >> 32;
    d[i] = mods[i].d;
    if (mods[i].d == 0) none = static_cast<__mmask8>(none | (1u << i));
  }
  return {_mm512_load_si512(lo), _mm512_load_si512(hi), _mm512_load_si512(d), none};
}

// FastMod of 8 uint32 values in 64-bit lanes: low = m * a mod 2^64, then the high 64 bits of
// low * d, as low_hi * d + (low_lo * d >> 32) (no overflow: d < 2^32), shifted down 32.
ROW_SIMD inline __m512i fastmod8(__m512i a, const ModLanes& k) {
  __m512i low = _mm512_add_epi64(_mm512_mul_epu32(k.m_lo, a),
                                 _mm512_slli_epi64(_mm512_mul_epu32(k.m_hi, a), 32));
  __m512i t = _mm512_srli_epi64(_mm512_mul_epu32(low, k.d), 32);
  __m512i u = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(low, 32), k.d), t);
  return _mm512_mask_blend_epi64(k.none, _mm512_srli_epi64(u, 32), a);
}

ROW_SIMD void modulus_columns_avx512(const uint32_t* rows, size_t n,
                                     const std::array<FastMod, kNumSparse>& mods, uint32_t* cols,
                                     size_t stride) {
  // Column j of 16 rows at a time: a gather down the rows, the modulus, one store.
  const __m512i row_offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(kNumFields));
  ModLanes lanes[kNumSparse];
  for (int j = 0; j < kNumSparse; ++j) {
    FastMod same[8];
    for (FastMod& f : same) f = mods[j];
    lanes[j] = mod_lanes(same, 8);
  }
  size_t r = 0;
  for (; r + 16 <= n; r += 16) {
    const uint32_t* base = rows + r * kNumFields + kFirstSparseField;
    for (int j = 0; j < kNumSparse; ++j) {
      __m512i v = _mm512_i32gather_epi32(row_offsets, base + j, 4);
      __m512i lo = fastmod8(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(v)), lanes[j]);
      __m512i hi = fastmod8(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(v, 1)), lanes[j]);
      __m512i m = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(lo)),
                                     _mm512_cvtepi64_epi32(hi), 1);
      _mm512_storeu_si512(cols + j * stride + r, m);
    }
  }
  if (r < n)
    kScalarRowKernels.modulus_columns(rows + r * kNumFields, n - r, mods, cols + r, stride);
}

// The sparse columns in groups of 8 (the last group has 2): per lane, the table's address.
constexpr int kGroups = (kNumSparse + 7) / 8;
constexpr __mmask8 group_mask(int g) {
  return static_cast<__mmask8>(g + 1 < kGroups ? 0xFF : (1u << (kNumSparse - 8 * g)) - 1);
}

template <RowTransform::Dense kDense, RowTransform::Sparse kSparse>
ROW_SIMD void transform_rows_as(const uint32_t* rows, size_t n, const RowTransform& t,
                                int32_t* labels, uint32_t* dense, int32_t* sparse) {
  using Dense = RowTransform::Dense;
  using Sparse = RowTransform::Sparse;
  ModLanes mod[kGroups];
  __m512i table[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    const int lanes = __builtin_popcount(group_mask(g));
    mod[g] = mod_lanes(t.mods.data() + 8 * g, lanes);
    alignas(64) uint64_t addr[8] = {};
    for (int i = 0; i < lanes; ++i) addr[i] = reinterpret_cast<uintptr_t>(t.ids[8 * g + i]);
    table[g] = _mm512_load_si512(addr);
  }
  const __mmask16 dense_lanes = (1u << kNumDense) - 1;
  const __m512i zero = _mm512_setzero_si512();
  const __m512i table_size = _mm512_set1_epi32(kLogTableSize);
  for (size_t r = 0; r < n; ++r) {
    const uint32_t* row = rows + r * kNumFields;
    labels[r] = static_cast<int32_t>(row[0]);
    uint32_t* d = dense + r * kNumDense;
    __m512i x =
        _mm512_max_epi32(_mm512_maskz_loadu_epi32(dense_lanes, row + kFirstDenseField), zero);
    if constexpr (kDense == Dense::integer) {
      _mm512_mask_storeu_epi32(d, dense_lanes, x);
    } else if constexpr (kDense == Dense::plain) {
      _mm512_mask_storeu_ps(d, dense_lanes, _mm512_cvtepi32_ps(x));
    } else {
      __mmask16 small = _mm512_mask_cmplt_epi32_mask(dense_lanes, x, table_size);
      __m512 f = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), small, x, t.log_table, 4);
      _mm512_mask_storeu_ps(d, dense_lanes, f);
      for (unsigned big = dense_lanes & ~small; big; big &= big - 1) {
        int k = __builtin_ctz(big);
        float v = dense_log(static_cast<int32_t>(row[kFirstDenseField + k]), t.log_offset);
        std::memcpy(&d[k], &v, 4);
      }
    }
    if constexpr (kSparse == Sparse::none) continue;
    const uint32_t* v = row + kFirstSparseField;
    int32_t* s = sparse + r * kNumSparse;
    for (int g = 0; g < kGroups; ++g) {
      const __mmask8 lanes = group_mask(g);
      __m512i a = _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(lanes, v + 8 * g));
      if constexpr (kSparse == Sparse::flat) a = fastmod8(a, mod[g]);
      __m512i addr = _mm512_add_epi64(table[g], _mm512_slli_epi64(a, 2));
      __m256i id = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), lanes, addr, nullptr, 1);
      _mm256_mask_storeu_epi32(s + 8 * g, lanes, id);
    }
  }
}

ROW_SIMD void transform_rows_avx512(const uint32_t* rows, size_t n, const RowTransform& t,
                                    int32_t* labels, uint32_t* dense, int32_t* sparse) {
  with_row_modes(t, [&]<RowTransform::Dense kDense, RowTransform::Sparse kSparse>() {
    // Hash columns (moduli above kFlatMaxModulus, or none) probe one value at a time anyway.
    if constexpr (kSparse == RowTransform::Sparse::lookup)
      kScalarRowKernels.transform_rows(rows, n, t, labels, dense, sparse);
    else
      transform_rows_as<kDense, kSparse>(rows, n, t, labels, dense, sparse);
  });
}

}  // namespace

const RowKernels* avx512_row_kernels() {
  static const RowKernels table = {"avx512", modulus_columns_avx512, transform_rows_avx512};
  const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return ok ? &table : nullptr;
}

}  // namespace dlprep::tabular
