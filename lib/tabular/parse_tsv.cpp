// The hot loop of UTF-8 decoding: one pass over each byte, table-driven, no strtol and no
// per-character bounds check (the text ends with '\n', which stops every field scan).
#include "tabular/parse_tsv.hpp"

#include <cctype>
#include <cstring>

#include "tabular/criteo_schema.hpp"
#include "tabular/parse_row.hpp"

namespace dlprep::tabular {
namespace {

// Character classes. Digits map to their value (0..15 for hex, 0..9 for decimal).
constexpr uint8_t kTab = 16, kNewline = 17, kReturn = 18, kOther = 19, kMinus = 20;

struct Tables {
  uint8_t hex[256];
  uint8_t dec[256];
  constexpr Tables() : hex(), dec() {
    for (int c = 0; c < 256; ++c) {
      uint8_t cls = kOther;
      if (c == '\t') cls = kTab;
      if (c == '\n') cls = kNewline;
      if (c == '\r') cls = kReturn;
      hex[c] = cls;
      dec[c] = c == '-' ? kMinus : cls;
    }
    for (int c = '0'; c <= '9'; ++c) hex[c] = dec[c] = static_cast<uint8_t>(c - '0');
    for (int c = 'a'; c <= 'f'; ++c) hex[c] = static_cast<uint8_t>(c - 'a' + 10);
    for (int c = 'A'; c <= 'F'; ++c) hex[c] = static_cast<uint8_t>(c - 'A' + 10);
  }
};
constexpr Tables kTables;

// True when all 8 bytes are ASCII hex digits (either case). SWAR range checks: for bytes below
// 0x80, adding 0x80 - lo sets bit 7 exactly when the byte is >= lo.
inline bool all_hex(uint64_t x) {
  constexpr uint64_t k = 0x0101010101010101ull;
  constexpr uint64_t high = 0x80 * k;
  if (x & high) return false;
  // Digits are tested on x itself: folding first would also turn the control bytes 0x10-0x19
  // into '0'-'9' (found by tests/fuzz/fuzz_criteo_tsv).
  uint64_t digit = ((x + (0x80 - 0x30) * k) & ~(x + (0x80 - 0x3A) * k)) & high;
  uint64_t l = x | (0x20 * k);  // upper case to lower case: only 'A'-'F' fold onto 'a'-'f'
  uint64_t letter = ((l + (0x80 - 0x61) * k) & ~(l + (0x80 - 0x67) * k)) & high;
  return (digit | letter) == high;
}

// The value of 8 hex digits (the first digit most significant), already validated by all_hex.
inline uint32_t hex8_value(uint64_t x) {
  constexpr uint64_t k = 0x0101010101010101ull;
  // Each byte to its nibble: '0'-'9' -> c & 15; letters (bit 6 set) -> (c & 15) + 9.
  uint64_t v = (x & (0x0F * k)) + 9 * ((x >> 6) & k);
  v = ((v << 4) + (v >> 8)) & 0x00FF00FF00FF00FFull;    // pairs of digits
  v = ((v << 8) + (v >> 16)) & 0x0000FFFF0000FFFFull;   // quads
  v = ((v << 16) + (v >> 32)) & 0x00000000FFFFFFFFull;  // all eight
  return static_cast<uint32_t>(v);
}

// Bit 7 of each byte of the result is set where the byte of x is not an ASCII digit.
inline uint64_t non_digit_mask(uint64_t x) {
  constexpr uint64_t k = 0x0101010101010101ull;
  constexpr uint64_t high = 0x80 * k;
  uint64_t low7 = x & ~high;  // so that the additions below cannot carry across bytes
  uint64_t digit = ((low7 + (0x80 - 0x30) * k) & ~(low7 + (0x80 - 0x3A) * k)) & ~x & high;
  return ~digit & high;
}

// The value of the first n (1..7) bytes of x, all ASCII digits (Lemire's eight-digit SWAR after
// shifting the digits to the end of the word and filling the front with '0').
inline uint32_t dec8_value(uint64_t x, unsigned n) {
  constexpr uint64_t k = 0x0101010101010101ull;
  unsigned shift = 8 * (8 - n);
  uint64_t v = (x << shift) | ((0x30 * k) & ((uint64_t{1} << shift) - 1));
  v -= 0x30 * k;
  v = (v * 10) + (v >> 8);
  v = (((v & 0x000000FF000000FFull) * 0x000F424000000064ull) +
       (((v >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull)) >>
      32;
  return static_cast<uint32_t>(v);
}

using Problem = RowProblem;  // shared with parse_row.hpp, which the CUDA decoder uses
using Fault = RowFault;

// Parses one line at p into row[40]. Returns the position after the terminator of the last field
// parsed (on success: after the '\n'); on failure fills `fault` and returns where it stopped.
inline const uint8_t* parse_line(const uint8_t* p, uint32_t* row, Fault& fault) {
  const uint8_t* dec = kTables.dec;
  const uint8_t* hex = kTables.hex;
  for (int f = 0; f < kFirstSparseField; ++f) {
    // Fast path: 0 to 7 digits then a tab (nearly every label and dense field), without a
    // per-character loop whose exit would be mispredicted at every field.
    {
      uint64_t w;
      std::memcpy(&w, p, 8);
      uint64_t nondigit = non_digit_mask(w);
      if (nondigit != 0) {
        unsigned n = static_cast<unsigned>(__builtin_ctzll(nondigit)) >> 3;
        if (p[n] == '\t') {
          row[f] = n == 0 ? static_cast<uint32_t>(kMissingDense) : dec8_value(w, n);
          p += n + 1;
          continue;
        }
      }
    }
    bool neg = false;
    if (*p == '-') {
      neg = true;
      ++p;
    }
    const uint8_t* s = p;
    uint64_t v = 0;
    uint8_t d;
    while ((d = dec[*p]) < 10) {
      v = v * 10 + d;
      ++p;
    }
    size_t n = static_cast<size_t>(p - s);
    if (d != kTab) {
      field_not_ended(p, f, fault);
      return p;
    }
    if (n > static_cast<size_t>(kMaxDecimalDigits)) {
      fault = {Problem::overlong, static_cast<uint8_t>(f), 0, 0};
      return p;
    }
    if (neg && n == 0) {
      fault = {Problem::lone_minus, static_cast<uint8_t>(f), 0, 0};
      return p;
    }
    if (v > (neg ? uint64_t{2147483648u} : uint64_t{2147483647u})) {
      fault = {Problem::out_of_range, static_cast<uint8_t>(f), 0, 0};
      return p;
    }
    row[f] = static_cast<uint32_t>(neg ? 0 - v : v);
    ++p;  // the tab
  }
  for (int f = kFirstSparseField; f < kNumFields; ++f) {
    // Fast paths for the two shapes of nearly every categorical field: empty, or exactly 8 hex
    // digits (SWAR: one 8-byte load, validated and converted without a loop). The 8 bytes may
    // run past the line; the buffer has kTsvReadPadding readable bytes after its end.
    uint8_t d;
    if (*p == '\t' && f < kNumFields - 1) {
      row[f] = kMissingSparse;
      ++p;
      continue;
    }
    uint64_t w;
    std::memcpy(&w, p, 8);
    if (all_hex(w) && (d = hex[p[8]]) >= 16) {
      row[f] = hex8_value(w);
      p += 8;
      if (f < kNumFields - 1 && d == kTab) {
        ++p;
        continue;
      }
      if (f == kNumFields - 1) {
        if (d == kNewline) return p + 1;
        if (d == kReturn && p[1] == '\n') return p + 2;
      }
      // Anything else (a wrong terminator): the general path below reports it.
      p -= 8;
    }
    const uint8_t* s = p;
    uint64_t v = 0;
    while ((d = hex[*p]) < 16) {
      v = (v << 4) | d;
      ++p;
    }
    size_t n = static_cast<size_t>(p - s);
    if (n > static_cast<size_t>(kMaxHexDigits)) {
      fault = {Problem::overlong, static_cast<uint8_t>(f), 0, 0};
      return p;
    }
    row[f] = static_cast<uint32_t>(v);
    if (f < kNumFields - 1) {
      if (d != kTab) {
        field_not_ended(p, f, fault);
        return p;
      }
      ++p;
    } else {
      if (d == kNewline) return p + 1;
      if (d == kReturn && p[1] == '\n') return p + 2;
      fault.field = static_cast<uint8_t>(f);
      fault.ch = *p;
      fault.problem = d == kTab ? Problem::too_many : Problem::bad_char;
      return p;
    }
  }
  return p;  // unreachable
}

}  // namespace

std::string describe_row_fault(const RowFault& fault) {
  std::string where =
      "field " + std::to_string(fault.field + 1) + " (" + field_name(fault.field) + ")";
  // Criteo's Kaggle test.txt has no label: its rows are 39 fields, the first hex field where
  // I13 should be. Say so rather than leave the user with a bad character in I13.
  const std::string no_label =
      "; rows without the label column? (Criteo's test.txt has none; every row needs one)";
  switch (fault.problem) {
    case Problem::too_few:
      return "too few fields (" + std::to_string(fault.fields_seen) + ", expected 40)" +
             (fault.fields_seen == 39 ? no_label : "");
    case Problem::too_many:
      return "too many fields (more than 40)";
    case Problem::bad_char: {
      char buf[8];
      uint8_t c = fault.ch;
      if (c >= 0x20 && c < 0x7f && c != '\'')
        std::snprintf(buf, sizeof buf, "'%c'", c);
      else
        std::snprintf(buf, sizeof buf, "0x%02x", c);
      const bool hex_in_i13 =
          fault.field == kFirstSparseField - 1 && std::isxdigit(c) && !std::isdigit(c);
      // Two common wrong inputs, named: a file saved with a BOM, and CSV (DeepCTR's sample).
      const char* hint = hex_in_i13                      ? no_label.c_str()
                         : c == 0xef && fault.field == 0 ? "; a UTF-8 byte-order mark? (remove it)"
                         : c == ','                      ? "; comma-separated? (Criteo rows are "
                                                           "tab-separated)"
                                                         : "";
      return where + ": invalid character " + buf +
             (fault.field < kFirstSparseField ? " (expected a decimal integer)"
                                              : " (expected hex digits)") +
             hint;
    }
    case Problem::overlong:
      return where + ": field too long (at most " +
             std::to_string(fault.field < kFirstSparseField ? kMaxDecimalDigits : kMaxHexDigits) +
             " digits)";
    case Problem::out_of_range:
      return where + ": value outside the 32-bit signed range";
    case Problem::lone_minus:
      return where + ": '-' without digits";
    case Problem::none:
      break;
  }
  return "malformed row";
}

std::string field_name(int field) {
  if (field == 0) return "label";
  if (field < kFirstSparseField) return "I" + std::to_string(field);
  return "C" + std::to_string(field - kFirstSparseField + 1);
}

TsvPieceResult decode_tsv(const char* begin, const char* end, bool stop_at_error,
                          std::vector<uint32_t>& rows) {
  TsvPieceResult r;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(begin);
  const uint8_t* e = reinterpret_cast<const uint8_t*>(end);
  size_t used = 0;
  // Room for the likely row count (rows are at least 40 bytes of text; most about 243).
  size_t want = (static_cast<size_t>(e - p) / 128 + 1) * kNumFields;
  if (rows.size() < want) rows.resize(want);
  while (p < e) {
    if (used + kNumFields > rows.size()) rows.resize(rows.size() * 2);
    Fault fault;
    const uint8_t* next = parse_line(p, rows.data() + used, fault);
    ++r.lines;
    if (fault.problem == Problem::none) {
      used += kNumFields;
      ++r.rows;
      p = next;
      continue;
    }
    ++r.bad_rows;
    if (r.first_bad_line < 0) {
      r.first_bad_line = static_cast<int64_t>(r.lines - 1);
      r.first_problem = describe_row_fault(fault);
    }
    if (stop_at_error) break;
    // Resynchronise at the next line (the sentinel guarantees there is one).
    p = static_cast<const uint8_t*>(std::memchr(next, '\n', static_cast<size_t>(e - next))) + 1;
  }
  return r;
}

}  // namespace dlprep::tabular
