#include "tabular/parse_tsv.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <climits>
#include <string>
#include <vector>

#include "tabular/criteo_schema.hpp"
#include "criteo_test_rows.hpp"

using namespace dlprep::tabular;
using testing::make_row;

namespace {

// A row of 40 fields from the given label, dense and sparse texts (missing ones empty).
struct Decoded {
  TsvPieceResult result;
  std::vector<uint32_t> rows;
};

Decoded decode(std::string text, bool stop = true) {
  Decoded d;
  text.append(kTsvReadPadding, '\0');
  size_t n = text.size() - kTsvReadPadding;
  d.result = decode_tsv(text.data(), text.data() + n, stop, d.rows);
  d.rows.resize(d.result.rows * kNumFields);
  return d;
}

}  // namespace

TEST_CASE("hex fields of any case up to 0xFFFFFFFF decode exactly, missing ones as 0") {
  std::vector<std::string> sparse = {"ffffffff", "FFFFFFFF", "0",        "00000000", "AbCdEf01",
                                     "abcdef01", "7fffffff", "80000000", "",         "1",
                                     "a",        "12345678", "9ABCDEF0"};
  Decoded d = decode(make_row("1", {}, sparse) + "\n");
  REQUIRE(d.result.rows == 1);
  const uint32_t* s = d.rows.data() + kFirstSparseField;
  CHECK(s[0] == 0xffffffffu);
  CHECK(s[1] == 0xffffffffu);
  CHECK(s[2] == 0);
  CHECK(s[3] == 0);
  CHECK(s[4] == 0xabcdef01u);
  CHECK(s[5] == 0xabcdef01u);
  CHECK(s[6] == 0x7fffffffu);
  CHECK(s[7] == 0x80000000u);
  CHECK(s[8] == kMissingSparse);
  CHECK(s[9] == 1);
  CHECK(s[10] == 10);
  CHECK(s[11] == 0x12345678u);
  CHECK(s[12] == 0x9abcdef0u);
  CHECK(s[25] == 0);
  CHECK(d.rows[0] == 1);
}

TEST_CASE("dense fields: negatives, int32 extremes, long and missing values") {
  Decoded d = decode(make_row("0",
                              {"-1", "2147483647", "-2147483648", "", "0", "1234567", "12345678",
                               "123456789", "-7", "65536", "007"},
                              {}) +
                     "\n");
  REQUIRE(d.result.rows == 1);
  auto v = [&](int k) { return static_cast<int32_t>(d.rows[kFirstDenseField + k]); };
  CHECK(v(0) == -1);
  CHECK(v(1) == 2147483647);
  CHECK(v(2) == INT32_MIN);
  CHECK(v(3) == kMissingDense);
  CHECK(v(4) == 0);
  CHECK(v(5) == 1234567);
  CHECK(v(6) == 12345678);
  CHECK(v(7) == 123456789);
  CHECK(v(8) == -7);
  CHECK(v(9) == 65536);
  CHECK(v(10) == 7);
  CHECK(v(12) == 0);
}

TEST_CASE("CRLF line ends and several rows decode like LF") {
  std::string a = make_row("1", {"3"}, {"0000abcd"});
  std::string b = make_row("0", {"", "4"}, {"", "ffff0000"});
  Decoded lf = decode(a + "\n" + b + "\n");
  Decoded crlf = decode(a + "\r\n" + b + "\r\n");
  CHECK(lf.result.rows == 2);
  CHECK(crlf.result.rows == 2);
  CHECK(lf.rows == crlf.rows);
}

TEST_CASE("malformed rows are reported with the field and the problem") {
  auto problem = [](const std::string& line) {
    Decoded d = decode(line + "\n");
    CHECK(d.result.rows == 0);
    CHECK(d.result.bad_rows == 1);
    CHECK(d.result.first_bad_line == 0);
    return d.result.first_problem;
  };
  CHECK(problem(make_row("0", {}, {"123456789"})).find("C1") != std::string::npos);
  CHECK(problem(make_row("0", {}, {"123456789"})).find("too long") != std::string::npos);
  CHECK(problem(make_row("0", {}, {"1234567g"})).find("invalid character 'g'") !=
        std::string::npos);
  CHECK(problem(make_row("0", {"260.0"}, {})).find("I1") != std::string::npos);
  CHECK(problem(make_row("0", {"2147483648"}, {})).find("32-bit") != std::string::npos);
  CHECK(problem(make_row("0", {"-"}, {})).find("'-' without digits") != std::string::npos);
  CHECK(problem(make_row("0", {"12345678901"}, {})).find("too long") != std::string::npos);
  CHECK(problem(make_row("0", {}, {}) + "\textra").find("too many fields") != std::string::npos);
  CHECK(problem("0\t1\t2").find("too few fields (3, expected 40)") != std::string::npos);
  CHECK(problem("").find("too few fields") != std::string::npos);
  // A row of Criteo's test.txt: no label, so C1's hex is read as I13, or 39 fields in all.
  const std::string no_label = "rows without the label column? (Criteo's test.txt has none";
  const std::string test_row = make_row("", {}, {"68fd1e64", "80e26c9b"}).substr(1);
  CHECK(problem(test_row).find("field 14 (I13): invalid character 'f'") != std::string::npos);
  CHECK(problem(test_row).find(no_label) != std::string::npos);
  const std::string digits_row = make_row("", {}, {"12345678"}).substr(1);
  CHECK(problem(digits_row).find("too few fields (39, expected 40); " + no_label) !=
        std::string::npos);
  CHECK(problem(make_row("0", {"12"}, {}).substr(0, 4) + "x").find(no_label) == std::string::npos);
  CHECK(problem("0\t1\t2").find(no_label) == std::string::npos);
  CHECK(problem(make_row("0", {"1\r2"}, {})).find("0x0d") != std::string::npos);
  // A byte-order mark and comma-separated rows are named.
  CHECK(problem("\xef\xbb\xbf" + make_row("0", {}, {})).find("byte-order mark") !=
        std::string::npos);
  CHECK(problem("0,1,2,3").find("comma-separated?") != std::string::npos);
  // Control bytes 0x10-0x19 in an 8-character field once passed the fast path as '0'-'9'
  // (found by fuzz_criteo_tsv): every non-hex byte at every position must be rejected.
  for (int pos = 0; pos < 8; ++pos)
    for (int byte : {0x10, 0x12, 0x19, 0x3a, 0x40, 0x47, 0x60, 0x67, 0x80, 0xff}) {
      std::string field = "b28479f6";
      field[pos] = static_cast<char>(byte);
      CHECK(problem(make_row("0", {}, {field})).find("C1") != std::string::npos);
    }
}

TEST_CASE("skipping resynchronises at the next line and counts every bad row") {
  std::string good = make_row("1", {"5"}, {"abcdef12"});
  std::string text =
      good + "\nbad line\n" + good + "\n" + make_row("0", {"x"}, {}) + "\n" + good + "\n";
  Decoded skip = decode(text, false);
  CHECK(skip.result.rows == 3);
  CHECK(skip.result.bad_rows == 2);
  CHECK(skip.result.lines == 5);
  CHECK(skip.result.first_bad_line == 1);
  Decoded stop = decode(text, true);
  CHECK(stop.result.rows == 1);
  CHECK(stop.result.bad_rows == 1);
}

TEST_CASE("field names follow the Criteo columns") {
  CHECK(field_name(0) == "label");
  CHECK(field_name(1) == "I1");
  CHECK(field_name(13) == "I13");
  CHECK(field_name(14) == "C1");
  CHECK(field_name(39) == "C26");
}

TEST_CASE("the transform constants: FastMod is exact and dense_log rounds once") {
  for (uint32_t d : {1u, 2u, 3u, 7u, 5000u, 1000000u, 4294967295u}) {
    FastMod m(d);
    for (uint32_t a : {0u, 1u, 4999u, 5000u, 123456789u, 0x80000000u, 0xfffffffeu, 0xffffffffu})
      CHECK(m(a) == a % d);
  }
  CHECK(FastMod(0)(0xdeadbeefu) == 0xdeadbeefu);
  CHECK(dense_log(-5, 1.0) == 0.0f);
  CHECK(dense_log(0, 3.0) == static_cast<float>(std::log(3.0)));
  CHECK(neg2zero(-3) == 0);
  CHECK(neg2zero(4) == 4);
}

namespace {

// The format written out as plainly as possible: the reference the fast decoder must agree with.
bool reference_row(std::string line, std::vector<uint32_t>& out) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    fields.push_back(
        line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  if (fields.size() != static_cast<size_t>(kNumFields)) return false;
  std::vector<uint32_t> row;
  for (int f = 0; f < kNumFields; ++f) {
    const std::string& s = fields[static_cast<size_t>(f)];
    if (f < kFirstSparseField) {
      std::string digits = !s.empty() && s[0] == '-' ? s.substr(1) : s;
      if (s == "-" || digits.size() > 10) return false;
      for (char c : digits)
        if (c < '0' || c > '9') return false;
      long long v = digits.empty() ? 0 : std::stoll(digits);
      if (s[0] == '-') v = -v;
      if (v < INT32_MIN || v > INT32_MAX) return false;
      row.push_back(static_cast<uint32_t>(static_cast<int32_t>(v)));
    } else {
      if (s.size() > 8) return false;
      for (char c : s)
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
      row.push_back(s.empty() ? 0 : static_cast<uint32_t>(std::stoul(s, nullptr, 16)));
    }
  }
  out.insert(out.end(), row.begin(), row.end());
  return true;
}

}  // namespace

TEST_CASE("the fast decoder agrees with a plain reference on 20,000 mutated rows") {
  testing::RowMutations m;
  m.seed = 12345;
  m.alphabet = "0123456789abcdefABCDEFgG-\t\r +x\xff";
  // Valid field values, then (picked rarely) invalid ones.
  m.dense = {"",          "0",          "1",           "-1",         "42", "1234567",    "12345678",
             "999999999", "2147483647", "-2147483648", "2147483648", "-",  "00000000001"};
  m.sparse = {"",         "0",       "a",        "ffffffff", "FFFFFFFF",
              "0123abcd", "1234567", "00000000", "123456789"};
  m.rare_invalid = 500;
  std::string text = testing::mutated_rows(m);
  std::vector<uint32_t> expected;
  uint64_t expected_bad = 0, lines = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (!reference_row(text.substr(start, nl - start), expected)) ++expected_bad;
    ++lines;
    start = nl + 1;
  }
  Decoded d = decode(text, false);
  CHECK(d.result.lines == lines);
  CHECK(d.result.bad_rows == expected_bad);
  CHECK(d.result.rows * kNumFields == expected.size());
  CHECK(d.rows == expected);
  CHECK(expected_bad > 1000);  // the mutations do produce malformed rows
  CHECK(expected.size() > 1000 * kNumFields);
}
