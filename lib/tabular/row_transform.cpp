// The scalar row kernels (the reference; every CPU runs them) and the choice of version.
#include "tabular/row_transform.hpp"

#include <cstdlib>
#include <cstring>

namespace dlprep::tabular {
namespace {

void modulus_columns_scalar(const uint32_t* rows, size_t n,
                            const std::array<FastMod, kNumSparse>& mods_in, uint32_t* cols,
                            size_t stride) {
  const std::array<FastMod, kNumSparse> mods = mods_in;  // in registers, not behind a reference
  for (size_t r = 0; r < n; ++r) {
    const uint32_t* s = rows + r * kNumFields + kFirstSparseField;
    for (int j = 0; j < kNumSparse; ++j) cols[j * stride + r] = mods[j](s[j]);
  }
}

// The tables arrive by value, so that the row loop keeps them in registers (stores to the outputs
// could alias a reference).
template <RowTransform::Dense kDense, RowTransform::Sparse kSparse>
void transform_rows_as(const uint32_t* rows, size_t n, const RowTransform t, int32_t* labels,
                       uint32_t* dense, int32_t* sparse) {
  using Dense = RowTransform::Dense;
  using Sparse = RowTransform::Sparse;
  for (size_t r = 0; r < n; ++r) {
    const uint32_t* row = rows + r * kNumFields;
    labels[r] = static_cast<int32_t>(row[0]);
    uint32_t* d = dense + r * kNumDense;
    for (int k = 0; k < kNumDense; ++k) {
      int32_t x = static_cast<int32_t>(row[kFirstDenseField + k]);
      if constexpr (kDense == Dense::integer) {
        d[k] = static_cast<uint32_t>(neg2zero(x));
      } else {
        float f;
        if constexpr (kDense == Dense::plain)
          f = static_cast<float>(neg2zero(x));
        else
          f = x < kLogTableSize ? t.log_table[neg2zero(x)] : dense_log(x, t.log_offset);
        std::memcpy(&d[k], &f, 4);
      }
    }
    if constexpr (kSparse == Sparse::none) continue;
    const uint32_t* v = row + kFirstSparseField;
    int32_t* s = sparse + r * kNumSparse;
    for (int j = 0; j < kNumSparse; ++j) {
      if constexpr (kSparse == Sparse::indices)
        s[j] = t.ids[j][v[j]];
      else if constexpr (kSparse == Sparse::flat)
        s[j] = t.ids[j][t.mods[j](v[j])];
      else
        s[j] = (*t.vocab)[j].lookup(t.mods[j](v[j]));
    }
  }
}

void transform_rows_scalar(const uint32_t* rows, size_t n, const RowTransform& t, int32_t* labels,
                           uint32_t* dense, int32_t* sparse) {
  with_row_modes(t, [&]<RowTransform::Dense kDense, RowTransform::Sparse kSparse>() {
    transform_rows_as<kDense, kSparse>(rows, n, t, labels, dense, sparse);
  });
}

}  // namespace

const RowKernels kScalarRowKernels = {"scalar", modulus_columns_scalar, transform_rows_scalar};

const RowKernels& active_row_kernels() {
  static const RowKernels* chosen = [] {
    const char* env = std::getenv("DLPREP_CRITEO_ISA");
    if (env != nullptr && std::string_view(env) == "scalar") return &kScalarRowKernels;
    if (const RowKernels* k = avx512_row_kernels()) return k;
    return &kScalarRowKernels;
  }();
  return *chosen;
}

}  // namespace dlprep::tabular
