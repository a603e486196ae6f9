// parse_row (the CUDA backend's row decoder, one thread per line) against decode_tsv (the CPU's
// SWAR decoder): on every line they must accept and reject the same rows, produce the same 40
// words and report the same fault, worded identically.
#include "tabular/parse_row.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "tabular/criteo_schema.hpp"
#include "tabular/parse_tsv.hpp"
#include "criteo_test_rows.hpp"

using namespace dlprep;
using namespace dlprep::tabular;
using testing::make_row;
using testing::gunzip;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  bool ok = false;
  std::vector<uint32_t> row;
  std::string problem;
};

// One line (ending with '\n') through the CPU decoder.
Outcome cpu(const std::string& line) {
  std::string text = line;
  text.append(kTsvReadPadding, '\0');
  std::vector<uint32_t> rows;
  TsvPieceResult r = decode_tsv(text.data(), text.data() + line.size(), true, rows);
  Outcome o;
  o.ok = r.rows == 1;
  if (o.ok) o.row.assign(rows.begin(), rows.begin() + kNumFields);
  o.problem = r.first_problem;
  return o;
}

// The same line through parse_row, bounded by its '\n' (no padding: it must not read past it).
Outcome device_rules(const std::string& line) {
  std::vector<uint8_t> bytes(line.begin(), line.end());  // exactly the line, for ASan
  uint32_t row[kNumFields] = {};
  RowFault fault;
  Outcome o;
  o.ok = parse_row(bytes.data(), bytes.data() + bytes.size() - 1, row, fault);
  if (o.ok) o.row.assign(row, row + kNumFields);
  if (!o.ok) o.problem = describe_row_fault(fault);
  return o;
}

// Checks every line of `text` (lines end with '\n'); returns how many were malformed.
size_t check_lines(const std::string& text) {
  size_t start = 0, bad = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    REQUIRE(nl != std::string::npos);
    std::string line = text.substr(start, nl - start + 1);
    Outcome a = cpu(line), b = device_rules(line);
    INFO("line: " << line);
    CHECK(a.ok == b.ok);
    CHECK(a.row == b.row);
    CHECK(a.problem == b.problem);
    bad += a.ok ? 0 : 1;
    start = nl + 1;
  }
  return bad;
}

std::string slurp(const fs::path& p) {
  Bytes b = read_file(p);
  return std::string(b.begin(), b.end());
}

}  // namespace

TEST_CASE("parse_row decodes the real Criteo sample rows exactly as decode_tsv") {
  const fs::path s = fs::path(DLPREP_SAMPLE_DATA) / "criteo";
  CHECK(check_lines(slurp(s / "deepctr_200.tsv")) == 0);
  CHECK(check_lines(gunzip(s / "nvtabular_day_0.gz")) == 0);
  std::string edge = slurp(s / "edge_cases.tsv");
  if (edge.back() != '\n') edge += '\n';
  check_lines(edge);
}

TEST_CASE("parse_row reports each kind of fault with the CPU's wording") {
  std::string ok = make_row("1", {"-5", "2147483647", "-2147483648"}, {"ffffffff", "ABCDEF01"});
  std::vector<std::string> lines = {
      ok + "\n",
      ok + "\r\n",
      ok + "\r\r\n",                                  // a lone '\r' in the last field
      ok + "\t\n",                                    // too many fields
      ok + "\tx\n",                                   // too many, with text after
      "1\t2\t3\n",                                    // too few
      "1\t2\t3\r\n",                                  // too few, CRLF
      "1\t2\r3\n",                                    // '\r' inside a field
      "\n",                                           // empty line
      "\r\n",                                         //
      make_row("1", {"12345678901"}, {}) + "\n",      // 11 digits
      make_row("1", {"12345678901x"}, {}) + "\n",     // the terminator first
      make_row("1", {"-"}, {}) + "\n",                // '-' alone
      make_row("1", {"--1"}, {}) + "\n",              //
      make_row("1", {"2147483648"}, {}) + "\n",       // out of range
      make_row("1", {"-2147483649"}, {}) + "\n",      //
      make_row("1", {"-0"}, {}) + "\n",               // valid: 0
      make_row("1", {"0000000001"}, {}) + "\n",       // valid: 10 digits
      make_row("1", {}, {"123456789"}) + "\n",        // 9 hex digits
      make_row("1", {}, {"123456789g"}) + "\n",       // overlong before the terminator
      make_row("1", {}, {"12g"}) + "\n",              // bad hex
      make_row("1", {}, {"G"}) + "\n",                //
      make_row("1", {}, {"", "", "abc\xff"}) + "\n",  // a high byte
      make_row("1", {"1\x80"}, {}) + "\n",            //
      make_row("1", {"'"}, {}) + "\n",                // the quote is printed in hex
      make_row("1", {}, std::vector<std::string>(26, "00000000")) + "\n",
      make_row("1", {}, std::vector<std::string>(26, "0000000")) + "\n",
      make_row("", {}, {}) + "\n",                                  // all 40 fields empty
      make_row("1", {}, {}) + "\t\n",                               // an empty 41st field
      make_row("1", {}, std::vector<std::string>(25, "1")) + "\n",  // C26 empty: valid
      std::string(39, '\t') + "1234abcd\r\n",
      std::string(38, '\t') + "\n",  // 39 fields
  };
  std::string all;
  for (const auto& l : lines) all += l;
  CHECK(check_lines(all) > 15);
}

TEST_CASE("parse_row agrees with decode_tsv on 20,000 mutated rows") {
  testing::RowMutations m;
  m.seed = 987654321;
  m.alphabet = "0123456789abcdefABCDEFgG-\t\r +x\xff\x13\x19";
  m.dense = {"",          "0",          "1",           "-1",         "42", "1234567",     "12345678",
             "999999999", "2147483647", "-2147483648", "2147483648", "-",  "00000000001", "--3"};
  m.sparse = {"",         "0",       "a",        "ffffffff",  "FFFFFFFF",
              "0123abcd", "1234567", "00000000", "123456789", "xyz"};
  std::string text = testing::mutated_rows(m);
  size_t bad = check_lines(text);
  CHECK(bad > 1000);
  CHECK(bad < 15000);
}

TEST_CASE("whole_lines_prefix cuts at the last line end that fits, or after one long line") {
  std::string t = "aa\nbbbb\ncc\n";
  CHECK(whole_lines_prefix(t.data(), t.size(), 100) == t.size());
  CHECK(whole_lines_prefix(t.data(), t.size(), 8) == 8);  // "aa\nbbbb\n"
  CHECK(whole_lines_prefix(t.data(), t.size(), 7) == 3);  // "aa\n"
  CHECK(whole_lines_prefix(t.data(), t.size(), 2) == 3);  // the first line is longer: whole
  CHECK(whole_lines_prefix(t.data() + 3, t.size() - 3, 2) == 5);
  CHECK(kMinRowBytes == 40);
  // The shortest valid row is kMinRowBytes long: 40 empty fields.
  std::string empty_row = std::string(39, '\t') + "\n";
  CHECK(empty_row.size() == kMinRowBytes);
  CHECK(device_rules(empty_row).ok);
}
