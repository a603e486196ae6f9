// One Criteo text row, parsed byte by byte within its line: the row decoder of the CUDA backend
// (one thread per line) and the plain statement of the format that the CPU's SWAR decoder
// (parse_tsv.cpp) is tested against. Both accept and reject exactly the same lines, produce the
// same 40 words and the same fault (tests/unit/tabular/parse_row_test.cpp). Plain C++ that g++
// and nvcc both compile (DLPREP_HD).
#pragma once

#include <cstdint>

#include "tabular/criteo_schema.hpp"

namespace dlprep::tabular {

/// The shortest valid line: 40 empty fields, 39 tabs and '\n'. So the starts of two valid rows
/// are at least this far apart, and start / kMinRowBytes numbers them in order without gaps
/// between equal numbers (the CUDA backend's row slots and first-appearance keys).
inline constexpr uint32_t kMinRowBytes = kNumFields;

/// What is wrong with a malformed line (parse_tsv.cpp words it: describe_row_fault).
enum class RowProblem : uint8_t {
  none,
  too_few,       ///< the line ended before field 40
  too_many,      ///< a tab after field 40
  bad_char,      ///< a character that is not a digit (dense) / hex digit (sparse), or a lone '\r'
  overlong,      ///< more than kMaxDecimalDigits / kMaxHexDigits digits
  out_of_range,  ///< a dense value outside int32
  lone_minus     ///< '-' without digits
};

struct RowFault {
  RowProblem problem = RowProblem::none;
  uint8_t field = 0;        ///< 0-based field index
  uint8_t ch = 0;           ///< the offending character (bad_char)
  uint8_t fields_seen = 0;  ///< fields started (too_few)
};

/// The fault of field `f` (before the last) ending at `at` on something other than its tab: at a
/// line end ('\n', or '\r' then '\n') too few fields, otherwise a bad character. The CPU parser
/// (parse_tsv.cpp) reports through it too, so that both backends name the same problem.
DLPREP_HD inline void field_not_ended(const uint8_t* at, int f, RowFault& fault) {
  const uint8_t c = *at;
  fault.field = static_cast<uint8_t>(f);
  fault.ch = c;
  fault.fields_seen = static_cast<uint8_t>(f + 1);
  const bool line_end = c == '\n' || (c == '\r' && at[1] == '\n');
  fault.problem = line_end ? RowProblem::too_few : RowProblem::bad_char;
}

/// Parses the line [p, nl], where *nl is its '\n' and the only '\n' in it; never reads past nl.
/// Returns true and sets row[0..39] (label and I1..I13 as int32 bit patterns, C1..C26 as raw hex
/// values, empty fields 0) for a valid row; otherwise false with `fault` set (row[] then holds
/// the fields parsed so far). The rules, in parse_tsv.cpp's order of checks:
///  - label, I1..I13: optional '-', decimal digits, then a tab. The terminator is checked first
///    ('\n' or "\r\n": too few fields; anything else: bad character), then more than 10 digits,
///    then '-' alone, then the int32 range. Empty: 0.
///  - C1..C25: hex digits of either case, then a tab; C26: then '\n' or "\r\n" (a tab: too many
///    fields). More than 8 digits is reported before the terminator. Empty: 0.
DLPREP_HD inline bool parse_row(const uint8_t* p, const uint8_t* nl, uint32_t* row,
                                RowFault& fault) {
  (void)nl;  // the '\n' at nl ends every scan below; it is only named for the contract
  for (int f = 0; f < kFirstSparseField; ++f) {
    bool neg = false;
    if (*p == '-') {
      neg = true;
      ++p;
    }
    const uint8_t* s = p;
    uint64_t v = 0;  // wraps for absurdly long digit runs, which are reported as overlong
    while (*p >= '0' && *p <= '9') {
      v = v * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
    }
    const auto n = static_cast<uint64_t>(p - s);
    if (*p != '\t') {
      field_not_ended(p, f, fault);
      return false;
    }
    if (n > static_cast<uint64_t>(kMaxDecimalDigits)) {
      fault = RowFault{RowProblem::overlong, static_cast<uint8_t>(f), 0, 0};
      return false;
    }
    if (neg && n == 0) {
      fault = RowFault{RowProblem::lone_minus, static_cast<uint8_t>(f), 0, 0};
      return false;
    }
    if (v > (neg ? uint64_t{2147483648u} : uint64_t{2147483647u})) {
      fault = RowFault{RowProblem::out_of_range, static_cast<uint8_t>(f), 0, 0};
      return false;
    }
    row[f] = static_cast<uint32_t>(neg ? 0 - v : v);
    ++p;  // the tab
  }
  for (int f = kFirstSparseField; f < kNumFields; ++f) {
    const uint8_t* s = p;
    uint64_t v = 0;
    for (;;) {
      uint8_t c = *p;
      uint32_t d;
      if (c >= '0' && c <= '9')
        d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = static_cast<uint32_t>(c - 'A' + 10);
      else
        break;
      v = (v << 4) | d;
      ++p;
    }
    if (p - s > kMaxHexDigits) {
      fault = RowFault{RowProblem::overlong, static_cast<uint8_t>(f), 0, 0};
      return false;
    }
    row[f] = static_cast<uint32_t>(v);
    const uint8_t c = *p;
    if (f < kNumFields - 1) {
      if (c != '\t') {
        field_not_ended(p, f, fault);
        return false;
      }
      ++p;
    } else {
      if (c == '\n' || (c == '\r' && p[1] == '\n')) return true;
      fault.field = static_cast<uint8_t>(f);
      fault.ch = c;
      fault.fields_seen = 0;
      fault.problem = c == '\t' ? RowProblem::too_many : RowProblem::bad_char;
      return false;
    }
  }
  return true;  // unreachable: the last field returns
}

}  // namespace dlprep::tabular
