// libFuzzer target for the Criteo TSV row decoder of lib/tabular (tabular::decode_tsv; built with
// DLPREP_BUILD_FUZZERS and clang), or, in a normal build, the function that replay_main.cpp runs
// over every file of corpus/criteo_tsv/.
//
// The input is the text of a piece of a file: a final '\n' is added when missing (decode_tsv's
// sentinel) and the buffer is allocated with exactly kTsvReadPadding bytes after it, so that ASan
// sees any read beyond the documented padding. decode_tsv is then checked against a plain
// reference parser written from the grammar (parse_tsv.hpp, criteo_schema.hpp): same lines, rows,
// bad rows, first bad line and row words, with skipping and with stop_at_error; and the padding's
// contents, which the decoder may read but must ignore, must not change the result.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tabular/criteo_schema.hpp"
#include "tabular/parse_tsv.hpp"

namespace {

using namespace dlprep::tabular;

// One field of the reference grammar. Dense (label, I1..I13): empty (0) or an optional '-' and 1
// to kMaxDecimalDigits digits within the int32 range. Sparse (C1..C26): 0 to kMaxHexDigits hex
// digits of either case (empty is 0).
bool ref_field(const uint8_t* s, size_t n, int field, uint32_t& out) {
  if (field < kFirstSparseField) {
    if (n == 0) {
      out = static_cast<uint32_t>(kMissingDense);
      return true;
    }
    bool neg = s[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n || n - i > static_cast<size_t>(kMaxDecimalDigits)) return false;
    uint64_t v = 0;
    for (; i < n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    if (v > (neg ? uint64_t{2147483648u} : uint64_t{2147483647u})) return false;
    out = static_cast<uint32_t>(neg ? 0 - v : v);
    return true;
  }
  if (n > static_cast<size_t>(kMaxHexDigits)) return false;
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = s[i];
    uint32_t d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    v = (v << 4) | d;
  }
  out = v;
  return true;
}

// One line without its '\n' (a '\r' before the '\n' ends the line too): 40 tab-separated fields.
bool ref_line(const uint8_t* s, size_t n, uint32_t* row) {
  if (n > 0 && s[n - 1] == '\r') --n;
  int field = 0;
  size_t start = 0;
  for (size_t i = 0; i <= n; ++i) {
    if (i < n && s[i] != '\t') continue;
    if (field >= kNumFields) return false;
    if (!ref_field(s + start, i - start, field, row[field])) return false;
    ++field;
    start = i + 1;
  }
  return field == kNumFields;
}

struct RefResult {
  uint64_t lines = 0, rows = 0, bad_rows = 0;
  int64_t first_bad_line = -1;
  std::vector<uint32_t> words;
};

RefResult ref_decode(const uint8_t* p, const uint8_t* e, bool stop_at_error) {
  RefResult r;
  while (p < e) {
    const uint8_t* nl = static_cast<const uint8_t*>(std::memchr(p, '\n', e - p));
    uint32_t row[kNumFields];
    ++r.lines;
    if (ref_line(p, static_cast<size_t>(nl - p), row)) {
      r.words.insert(r.words.end(), row, row + kNumFields);
      ++r.rows;
    } else {
      ++r.bad_rows;
      if (r.first_bad_line < 0) r.first_bad_line = static_cast<int64_t>(r.lines - 1);
      if (stop_at_error) break;
    }
    p = nl + 1;
  }
  return r;
}

void check(const std::vector<uint8_t>& text, bool stop_at_error, uint8_t pad) {
  const size_t n = text.size();
  // Exactly the documented padding, on the heap, so that a longer over-read is an ASan report.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[n + kTsvReadPadding]);
  std::memcpy(buf.get(), text.data(), n);
  std::memset(buf.get() + n, pad, kTsvReadPadding);
  const char* begin = reinterpret_cast<const char*>(buf.get());
  std::vector<uint32_t> rows;
  const TsvPieceResult got = decode_tsv(begin, begin + n, stop_at_error, rows);
  const RefResult want = ref_decode(buf.get(), buf.get() + n, stop_at_error);
  if (got.lines != want.lines || got.rows != want.rows || got.bad_rows != want.bad_rows ||
      got.first_bad_line != want.first_bad_line)
    std::abort();
  if ((got.first_bad_line >= 0) == got.first_problem.empty()) std::abort();
  if (got.rows * kNumFields > rows.size()) std::abort();
  if (!std::equal(want.words.begin(), want.words.end(), rows.begin())) std::abort();
  // Reusing the row buffer (as the pipeline does) gives the same rows.
  const TsvPieceResult again = decode_tsv(begin, begin + n, stop_at_error, rows);
  if (again.rows != got.rows || !std::equal(want.words.begin(), want.words.end(), rows.begin()))
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> text(data, data + size);
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  // Padding that looks like more of a line (hex digits, a tab, a newline) must not leak in.
  for (uint8_t pad : {uint8_t{0}, uint8_t{'a'}, uint8_t{'\t'}, uint8_t{'\n'}, uint8_t{'7'}}) {
    check(text, false, pad);
    check(text, true, pad);
  }
  return 0;
}
