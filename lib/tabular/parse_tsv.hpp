// Decode: Criteo tab-separated text -> binary rows (criteo_schema.hpp), exact and total.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tabular/parse_row.hpp"

namespace dlprep::tabular {

/// Bytes after the end of the text that the decoder may read (and ignore): it loads 8 bytes at a
/// time. Buffers handed to decode_tsv must have this many readable bytes past `end`.
inline constexpr size_t kTsvReadPadding = 16;

/// What decoding one piece of text found.
struct TsvPieceResult {
  uint64_t lines = 0;           ///< lines consumed (rows + bad rows)
  uint64_t rows = 0;            ///< rows appended
  uint64_t bad_rows = 0;        ///< malformed rows (dropped when skipping)
  int64_t first_bad_line = -1;  ///< 0-based line index of the first malformed row in the piece
  std::string
      first_problem;  ///< what was wrong with it, e.g. "field 15 (C1): invalid character 'g'"
};

/// Decodes the lines of [begin, end) into rows of 40 uint32 words written to `rows` from index 0
/// (grown when too small, never shrunk: reuse it across calls; result.rows says how many) (label
/// and I1..I13 as int32 bit patterns, C1..C26 as raw hex values; empty fields 0). The text must end
/// with '\n' (end[-1] == '\n'): the parser relies on it as a sentinel. CRLF line ends are accepted.
/// With stop_at_error, decoding stops after the first malformed row (the caller reports it);
/// otherwise malformed rows are counted and skipped.
TsvPieceResult decode_tsv(const char* begin, const char* end, bool stop_at_error,
                          std::vector<uint32_t>& rows);

/// Name of field i (0..39): "label", "I1".."I13", "C1".."C26".
std::string field_name(int field);

/// The message of a malformed row, e.g. "field 15 (C1): invalid character 'g' (expected hex
/// digits)": what decode_tsv puts in first_problem, for faults from it or from parse_row.
std::string describe_row_fault(const RowFault& fault);

/// The length of the longest prefix of text[0, size) that is whole lines and at most max_bytes
/// long; when the first line alone is longer, that line. `text` ends with '\n'. For cutting a
/// chunk into pieces that fit a fixed buffer (the CUDA backend's device chunks).
inline size_t whole_lines_prefix(const char* text, size_t size, size_t max_bytes) {
  if (size <= max_bytes) return size;
  const void* last = ::memrchr(text, '\n', max_bytes);
  if (last != nullptr) return static_cast<size_t>(static_cast<const char*>(last) - text) + 1;
  const void* first = std::memchr(text + max_bytes, '\n', size - max_bytes);
  return static_cast<size_t>(static_cast<const char*>(first) - text) + 1;
}

}  // namespace dlprep::tabular
