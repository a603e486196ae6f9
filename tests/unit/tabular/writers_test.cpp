#include "tabular/writers.hpp"

#include <doctest/doctest.h>

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
      auto a = open_day_writer(format, known, "day_0", rows);
      write_rows(*a, rows);
      a->commit();
      auto b = open_day_writer(format, deferred, "day_0", std::nullopt);
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
  auto w = open_day_writer(OutputFormat::npy, dir, "day_0", 5);
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
  auto w = open_day_writer(OutputFormat::split, dir, "day_0", std::nullopt);
  write_rows(*w, 3);
  CHECK(open_descriptors() == before + 2 + kNumSparse);
  w->finish();
  CHECK(open_descriptors() == before);
  const auto files = output_files(OutputFormat::split, dir, "day_0");
  for (const auto& f : files) CHECK_FALSE(fs::exists(f));
  w->commit();
  for (const auto& f : files) CHECK(fs::file_size(f) > 0);
  // Finished, then dropped: no file, and no temporary one left behind.
  auto d = open_day_writer(OutputFormat::npy, dir, "day_1", std::nullopt);
  write_rows(*d, 2);
  d->finish();
  d.reset();
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);  // day_0/
}
