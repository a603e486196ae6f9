// Counting a day's rows before reading it: a split last day in a single pass needs its row count
// for the halves' files before its first row is written (preprocess.cpp, Run::count_rows).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

namespace dlprep::tabular {

/// The lines of a text chunk (whole lines, the last one given its '\n' by the reader).
uint64_t count_lines(std::span<const char> text);

/// The lines of a plain text file, counted over its mapping in `threads` parts (no copy); a last
/// line without '\n' counts too, as InputReader gives it one. nullopt when it cannot be mapped
/// (not a regular file, or mmap failed): then the caller reads it.
std::optional<uint64_t> count_file_lines(const std::filesystem::path& path, unsigned threads);

/// The rows of a text chunk that decode (malformed ones skipped), decoded in `threads` parts cut
/// at line ends. As for decode_tsv, the text ends with '\n' and kTsvReadPadding readable bytes
/// follow it (InputReader's chunks).
uint64_t valid_rows(std::span<const char> text, unsigned threads);

}  // namespace dlprep::tabular
