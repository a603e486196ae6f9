// The per-row arithmetic of the CPU backend, in a scalar and an AVX-512 version chosen at run time
// (row_transform.cpp): pass 1's Modulus with the transpose to columns, and pass 2's Neg2Zero,
// Logarithm, Modulus and ApplyVocab. Every version writes the same bytes (row_transform_test).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tabular/criteo_schema.hpp"
#include "tabular/vocab.hpp"

namespace dlprep::tabular {

/// Pass 2's per-row work and the tables it reads.
struct RowTransform {
  enum class Dense { integer, plain, log } dense = Dense::log;
  /// none: the sparse IDs are left to the caller (a single pass has them in columns already).
  enum class Sparse { indices, flat, lookup, none } sparse = Sparse::flat;
  double log_offset = 1;
  const float* log_table = nullptr;  ///< log: dense_log of 0 .. kLogTableSize-1
  /// indices: first-appearance index -> ID per column; flat: value -> ID per column.
  std::array<const int32_t*, kNumSparse> ids{};
  std::array<FastMod, kNumSparse> mods{};           ///< flat, lookup
  const std::vector<ColumnVocab>* vocab = nullptr;  ///< lookup: the hash columns
};

/// Calls f.template operator()<dense, sparse>() with t's modes as template arguments, so that a
/// kernel's row loop is compiled per mode with no branch on them.
template <class F>
void with_row_modes(const RowTransform& t, F&& f) {
  using Dense = RowTransform::Dense;
  using Sparse = RowTransform::Sparse;
  auto sparse = [&]<Dense kDense>() {
    switch (t.sparse) {
      case Sparse::indices:
        return f.template operator()<kDense, Sparse::indices>();
      case Sparse::flat:
        return f.template operator()<kDense, Sparse::flat>();
      case Sparse::lookup:
        return f.template operator()<kDense, Sparse::lookup>();
      case Sparse::none:
        return f.template operator()<kDense, Sparse::none>();
    }
  };
  switch (t.dense) {
    case Dense::integer:
      return sparse.template operator()<Dense::integer>();
    case Dense::plain:
      return sparse.template operator()<Dense::plain>();
    case Dense::log:
      return sparse.template operator()<Dense::log>();
  }
}

/// One version of the kernels.
struct RowKernels {
  std::string_view name;
  /// Pass 1: cols[j * stride + r] = mods[j](sparse value j of row r), for n rows of kNumFields.
  void (*modulus_columns)(const uint32_t* rows, size_t n,
                          const std::array<FastMod, kNumSparse>& mods, uint32_t* cols,
                          size_t stride);
  /// Pass 2: labels[n], dense[n * kNumDense] (float bits, or int32 for Dense::integer) and
  /// sparse[n * kNumSparse] IDs of n rows.
  void (*transform_rows)(const uint32_t* rows, size_t n, const RowTransform& t, int32_t* labels,
                         uint32_t* dense, int32_t* sparse);
};

extern const RowKernels kScalarRowKernels;
/// The AVX-512 version (F, BW, DQ, VL), or nullptr when the CPU lacks it or the build is not x86.
const RowKernels* avx512_row_kernels();

/// The best version the CPU runs, chosen once; DLPREP_CRITEO_ISA=scalar forces the scalar one
/// (tests, benchmarks).
const RowKernels& active_row_kernels();

}  // namespace dlprep::tabular
