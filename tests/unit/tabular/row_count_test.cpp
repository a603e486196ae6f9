// Counting a day's rows before it is read (row_count.hpp): what a split last day's halves are
// sized by in a single pass, so every count must equal what the reader and decoder deliver.
#include "tabular/row_count.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/file_io.hpp"
#include "criteo_test_rows.hpp"
#include "tabular/parse_tsv.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::tabular;
using testing::make_row;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& p, const std::string& s) {
  write_file_atomic(p, ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

}  // namespace

TEST_CASE("count_file_lines counts a last line without a newline, in any number of parts") {
  const fs::path dir = test_scratch::fresh("row_count", "files");
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(i) + "\n";
  put(dir / "a.tsv", text);
  put(dir / "b.tsv", text + "no newline");
  put(dir / "empty.tsv", "");
  for (unsigned threads : {1u, 2u, 3u, 7u}) {
    INFO("threads " << threads);
    CHECK(count_file_lines(dir / "a.tsv", threads) == std::optional<uint64_t>(1000));
    CHECK(count_file_lines(dir / "b.tsv", threads) == std::optional<uint64_t>(1001));
    CHECK(count_file_lines(dir / "empty.tsv", threads) == std::optional<uint64_t>(0));
  }
  CHECK_FALSE(count_file_lines(dir, 2).has_value());  // not a regular file: the caller reads it
  CHECK_FALSE(count_file_lines(dir / "missing.tsv", 2).has_value());
  CHECK(count_lines(text) == 1000);
  CHECK(count_lines({}) == 0);
}

TEST_CASE("valid_rows counts the rows that decode, wherever the parts are cut") {
  const std::string good = make_row("1", {"5", "", "-3"}, {"68fd1e64", "", "AbCdEf01"}) + "\n";
  std::string text;
  uint64_t expected = 0;
  for (int i = 0; i < 200; ++i) {
    if (i % 7 == 3) {
      text += "1\t2\t3\n";  // too few fields
    } else if (i % 11 == 5) {
      text += make_row("1", {"x"}, {}) + "\n";  // not a number
    } else {
      text += good;
      ++expected;
    }
  }
  // decode_tsv's padding after the text, as InputReader's chunks have it.
  const std::string padded = text + std::string(kTsvReadPadding, '\0');
  const std::span<const char> chunk(padded.data(), text.size());
  for (unsigned threads : {1u, 2u, 3u, 16u}) {
    INFO("threads " << threads);
    CHECK(valid_rows(chunk, threads) == expected);
    CHECK(valid_rows({}, threads) == 0);
  }
}
