// The AVX-512 row kernels write exactly the scalar kernels' bytes, in every mode: integer, plain
// and log dense values (negatives, table edge, large values), sparse indices, flat tables and hash
// lookups, moduli from none and 1 up to 2^32 - 1, every row count around the 16-row step.
#include "tabular/row_transform.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

using namespace dlprep::tabular;

namespace {

std::vector<uint32_t> random_rows(size_t n, std::mt19937& rng) {
  std::vector<uint32_t> rows(n * kNumFields);
  for (size_t r = 0; r < n; ++r) {
    uint32_t* row = rows.data() + r * kNumFields;
    row[0] = rng() & 1;
    for (int k = 0; k < kNumDense; ++k) {
      const int32_t edges[] = {-1, 0, 1, kLogTableSize - 1, kLogTableSize, INT32_MAX, INT32_MIN};
      const uint32_t kind = rng() % 4;
      row[kFirstDenseField + k] = kind == 0   ? static_cast<uint32_t>(edges[rng() % 7])
                                  : kind == 1 ? rng()  // large and negative
                                              : rng() % 1000;
    }
    for (int j = 0; j < kNumSparse; ++j)
      row[kFirstSparseField + j] = rng() % 3 == 0 ? 0xFFFFFFFFu - rng() % 4 : rng();
  }
  return rows;
}

const RowKernels* simd_or_skip() {
  const RowKernels* k = avx512_row_kernels();
  if (!k) MESSAGE("skipped: this CPU has no AVX-512 (F, BW, DQ, VL), only the scalar kernels run");
  return k;
}

}  // namespace

TEST_CASE("the AVX-512 modulus and transpose equals the scalar one") {
  const RowKernels* simd = simd_or_skip();
  if (!simd) return;
  std::mt19937 rng(11);
  // No modulus, the smallest, flat-table sizes, and the largest (products near 2^64).
  const std::vector<uint32_t> moduli = {
      0, 1, 2, 3, 5000, 65536, 1000000, kFlatMaxModulus, 0x80000001u, 0xFFFFFFFFu};
  std::array<FastMod, kNumSparse> mods{};
  for (int j = 0; j < kNumSparse; ++j) mods[j] = FastMod(moduli[(j + rng()) % moduli.size()]);
  for (size_t n : {0, 1, 15, 16, 17, 31, 1024, 1037}) {
    CAPTURE(n);
    std::vector<uint32_t> rows = random_rows(n, rng);
    const size_t stride = n + 16;
    std::vector<uint32_t> want(stride * kNumSparse, 7), got(stride * kNumSparse, 7);
    kScalarRowKernels.modulus_columns(rows.data(), n, mods, want.data(), stride);
    simd->modulus_columns(rows.data(), n, mods, got.data(), stride);
    REQUIRE(got == want);
  }
}

TEST_CASE("the AVX-512 row transform equals the scalar one in every mode") {
  const RowKernels* simd = simd_or_skip();
  if (!simd) return;
  using Dense = RowTransform::Dense;
  using Sparse = RowTransform::Sparse;
  std::mt19937 rng(12);
  const size_t n = 999;
  std::vector<uint32_t> rows = random_rows(n, rng);
  std::vector<float> log_table(kLogTableSize);
  for (int32_t x = 0; x < kLogTableSize; ++x) log_table[x] = dense_log(x, 3);
  // Flat columns (moduli up to kFlatMaxModulus, some without) and their tables.
  std::vector<ColumnVocab> vocab;
  std::vector<std::vector<int32_t>> tables(kNumSparse);
  RowTransform flat;
  for (int j = 0; j < kNumSparse; ++j) {
    const uint32_t m = j % 5 == 4 ? 1 : j % 3 == 0 ? kFlatMaxModulus : 5000 + j;
    flat.mods[j] = FastMod(m);
    tables[j].resize(m);
    for (auto& id : tables[j]) id = static_cast<int32_t>(rng() >> 1);
    flat.ids[j] = tables[j].data();
  }
  // Hash columns: no modulus, the rows' own values in the vocabulary, and some values unseen.
  RowTransform lookup;
  lookup.sparse = Sparse::lookup;
  for (int j = 0; j < kNumSparse; ++j) {
    vocab.emplace_back(0);
    for (size_t r = 0; r < n; r += 2)
      vocab[j].add(&rows[r * kNumFields + kFirstSparseField + j], 1);
    vocab[j].finalize(1, 2, 1);
  }
  lookup.vocab = &vocab;
  // Indices: rows whose sparse values are first-appearance indices below 5000.
  std::vector<uint32_t> index_rows = rows;
  for (size_t r = 0; r < n; ++r)
    for (int j = 0; j < kNumSparse; ++j) index_rows[r * kNumFields + kFirstSparseField + j] %= 5000;
  RowTransform indices;
  indices.sparse = Sparse::indices;
  std::vector<std::vector<int32_t>> index_tables(kNumSparse, std::vector<int32_t>(5000));
  for (int j = 0; j < kNumSparse; ++j) {
    for (auto& id : index_tables[j]) id = static_cast<int32_t>(rng() >> 1);
    indices.ids[j] = index_tables[j].data();
  }
  // None: the sparse outputs are left as they are (a single pass writes them itself).
  RowTransform none;
  none.sparse = Sparse::none;
  for (Dense dense : {Dense::integer, Dense::plain, Dense::log}) {
    for (const RowTransform* base : {&flat, &lookup, &indices, &none}) {
      RowTransform t = *base;
      t.dense = dense;
      t.log_offset = 3;
      t.log_table = log_table.data();
      CAPTURE(static_cast<int>(dense));
      CAPTURE(static_cast<int>(t.sparse));
      const uint32_t* in = t.sparse == Sparse::indices ? index_rows.data() : rows.data();
      for (size_t count : {size_t{0}, size_t{1}, n}) {
        std::vector<int32_t> la(count + 1, -7), lb(count + 1, -7), sa(count * kNumSparse + 1, -7),
            sb(count * kNumSparse + 1, -7);
        std::vector<uint32_t> da(count * kNumDense + 1, 7), db(count * kNumDense + 1, 7);
        kScalarRowKernels.transform_rows(in, count, t, la.data(), da.data(), sa.data());
        simd->transform_rows(in, count, t, lb.data(), db.data(), sb.data());
        REQUIRE(la == lb);
        REQUIRE(da == db);
        REQUIRE(sa == sb);
        if (t.sparse == Sparse::none) CHECK(sa == std::vector<int32_t>(sa.size(), -7));
      }
    }
  }
}

TEST_CASE("the active row kernels are AVX-512 where the CPU has it, unless capped") {
  const char* env = std::getenv("DLPREP_CRITEO_ISA");
  const bool scalar = env != nullptr && std::string_view(env) == "scalar";
  CHECK(active_row_kernels().name == (avx512_row_kernels() && !scalar ? "avx512" : "scalar"));
}
