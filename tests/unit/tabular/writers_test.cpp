#include "tabular/writers.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "tabular/npy_format.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::tabular;
namespace fs = std::filesystem;

namespace {

fs::path fresh(const std::string& name) { return test_scratch::fresh("writers", name); }

// Table sizes above every ID write_rows() writes (int32 IDs in the split layout).
const std::vector<uint64_t> kWideTables(kNumSparse, uint64_t{1} << 20);

// `rows` rows with distinct values in every field, written in blocks of at most 3 rows.
void write_rows(DayWriter& w, size_t rows) {
  std::vector<int32_t> labels(rows), sparse(rows * kNumSparse);
  std::vector<uint32_t> dense(rows * kNumDense);
  std::iota(labels.begin(), labels.end(), 0);
  std::iota(sparse.begin(), sparse.end(), 1000);
  std::iota(dense.begin(), dense.end(), 0x3f800000u);
  for (size_t r = 0; r < rows; r += 3) {
    const size_t n = std::min<size_t>(3, rows - r);
    w.write(RowBlock{labels.data() + r, dense.data() + r * kNumDense,
                     sparse.data() + r * kNumSparse, n});
  }
}

}  // namespace

TEST_CASE("a day written without its row count is the same as one written with it") {
  for (OutputFormat format : {OutputFormat::npy, OutputFormat::dlrm, OutputFormat::split}) {
    for (size_t rows : {size_t{0}, size_t{1}, size_t{7}}) {
      CAPTURE(static_cast<int>(format));
      CAPTURE(rows);
      const fs::path known = fresh("known"), deferred = fresh("deferred");
      auto a = open_day_writer(format, known, "day_0", rows, kWideTables);
      write_rows(*a, rows);
      a->commit();
      auto b = open_day_writer(format, deferred, "day_0", std::nullopt, kWideTables);
      write_rows(*b, rows);
      CHECK(!fs::exists(output_files(format, deferred, "day_0")[0]));  // nothing before commit
      b->commit();
      const auto files = output_files(format, known, "day_0");
      const auto others = output_files(format, deferred, "day_0");
      REQUIRE(files.size() == others.size());
      for (size_t i = 0; i < files.size(); ++i) CHECK(read_file(files[i]) == read_file(others[i]));
      if (format == OutputFormat::npy) {
        NpyArray sparse = read_npy(deferred / "day_0_sparse.npy");
        CHECK(sparse.rows == rows);
        CHECK(sparse.cols == static_cast<uint64_t>(kNumSparse));
      }
    }
  }
}

TEST_CASE("a day whose rows differ from its announced count is not committed") {
  const fs::path dir = fresh("mismatch");
  auto w = open_day_writer(OutputFormat::npy, dir, "day_0", 5, {});
  write_rows(*w, 4);
  try {
    w->commit();
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()).find("5 rows counted first, 4 read later") != std::string::npos);
  }
  w.reset();
  CHECK(fs::is_empty(dir));
}

TEST_CASE("a finished day keeps its temporary names, and no descriptor, until committed") {
  const fs::path dir = fresh("finish");
  const auto open_descriptors = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  const size_t before = open_descriptors();
  auto w = open_day_writer(OutputFormat::split, dir, "day_0", std::nullopt, kWideTables);
  write_rows(*w, 3);
  CHECK(open_descriptors() == before + 2 + kNumSparse);
  w->finish();
  CHECK(open_descriptors() == before);
  const auto files = output_files(OutputFormat::split, dir, "day_0");
  for (const auto& f : files) CHECK_FALSE(fs::exists(f));
  w->commit();
  for (const auto& f : files) CHECK(fs::file_size(f) > 0);
  // Finished, then dropped: no file, and no temporary one left behind.
  auto d = open_day_writer(OutputFormat::npy, dir, "day_1", std::nullopt, {});
  write_rows(*d, 2);
  d->finish();
  d.reset();
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);  // day_0/
}

TEST_CASE("the split layout's ID types follow NVIDIA's rule for the table size") {
  // get_categorical_feature_type: the first of int8, int16, int32 whose maximum exceeds the size.
  CHECK(split_id_bytes(0) == 1);
  CHECK(split_id_bytes(126) == 1);
  CHECK(split_id_bytes(127) == 2);
  CHECK(split_id_bytes(32766) == 2);
  CHECK(split_id_bytes(32767) == 4);
  CHECK(split_id_bytes(uint64_t{1} << 40) == 4);
}

TEST_CASE("the split layout writes bool labels, float16 values and narrow IDs") {
  const fs::path dir = fresh("split_types");
  std::vector<uint64_t> tables(kNumSparse);
  for (size_t j = 0; j < tables.size(); ++j)
    tables[j] = j % 3 == 0 ? 126 : j % 3 == 1 ? 127 : 32767;
  const std::vector<int32_t> labels = {0, 1, 7, -1};
  std::vector<int32_t> sparse(4 * kNumSparse);
  for (size_t r = 0; r < 4; ++r)
    for (size_t j = 0; j < static_cast<size_t>(kNumSparse); ++j)
      sparse[r * kNumSparse + j] = static_cast<int32_t>(tables[j] - 1 - r);  // the largest IDs
  // The values cycle through 0, 1, ln 2 (rounded to a half) and a tie between two halves.
  const float values[4] = {0.0f, 1.0f, 0.69314718f, 1.0f + 1.0f / 2048};
  const uint16_t halves[4] = {0x0000, 0x3C00, 0x398C, 0x3C00};  // the tie rounds to even
  std::vector<uint32_t> dense(4 * kNumDense);
  for (size_t i = 0; i < dense.size(); ++i) std::memcpy(&dense[i], &values[i % 4], 4);
  auto w = open_day_writer(OutputFormat::split, dir, "day_0", 4, tables);
  w->write(RowBlock{labels.data(), dense.data(), sparse.data(), 2});
  w->write(
      RowBlock{labels.data() + 2, dense.data() + 2 * kNumDense, sparse.data() + 2 * kNumSparse, 2});
  w->commit();
  CHECK(read_file(dir / "day_0" / "label.bin") == std::vector<uint8_t>{0, 1, 1, 1});
  const std::vector<uint8_t> numerical = read_file(dir / "day_0" / "numerical.bin");
  REQUIRE(numerical.size() == 4 * kNumDense * 2);
  for (size_t i = 0; i < dense.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, &numerical[2 * i], 2);
    CHECK(h == halves[i % 4]);
  }
  for (size_t j = 0; j < static_cast<size_t>(kNumSparse); ++j) {
    const std::vector<uint8_t> cat =
        read_file(dir / "day_0" / ("cat_" + std::to_string(j) + ".bin"));
    const size_t bytes = static_cast<size_t>(split_id_bytes(tables[j]));
    REQUIRE(cat.size() == 4 * bytes);
    for (size_t r = 0; r < 4; ++r) {
      int32_t id = 0;
      std::memcpy(&id, &cat[r * bytes], bytes);  // little-endian, non-negative IDs
      CHECK(id == sparse[r * kNumSparse + j]);
    }
  }
}

TEST_CASE("the split layout refuses to open without the table sizes") {
  const fs::path dir = fresh("split_no_tables");
  CHECK_THROWS_AS(open_day_writer(OutputFormat::split, dir, "day_0", 1, {}), Error);
  CHECK(fs::is_empty(dir));
}

TEST_CASE("the table sizes go where each layout's loaders read them") {
  std::vector<uint64_t> sizes(kNumSparse);
  for (size_t j = 0; j < sizes.size(); ++j) sizes[j] = 100 + j;
  const fs::path dlrm = fresh("sizes_dlrm"), split = fresh("sizes_split"), npy = fresh("sizes_npy");
  write_table_sizes(OutputFormat::dlrm, dlrm, sizes);
  write_table_sizes(OutputFormat::split, split, sizes);
  write_table_sizes(OutputFormat::npy, npy, sizes);
  CHECK(fs::is_empty(npy));
  CHECK(fs::file_size(dlrm / "day_fea_count.npz") > 26 * 4);
  // Column order, not the sorted order of JSON objects ("cat_10" before "cat_2").
  const std::vector<uint8_t> bytes = read_file(split / "model_size.json");
  const std::string text(bytes.begin(), bytes.end());
  size_t at = 0;
  for (size_t j = 0; j < sizes.size(); ++j) {
    const std::string entry = "\"cat_" + std::to_string(j) + "\": " + std::to_string(sizes[j]);
    const size_t found = text.find(entry, at);
    REQUIRE(found != std::string::npos);
    at = found + entry.size();
  }
}
