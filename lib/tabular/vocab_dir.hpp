// A run's vocabulary directory (OUTDIR/vocab), what --vocab-from and a resumed run read: per
// sparse column C1..C26 its values (uint32, in order of first appearance) and their counts
// (uint64) as .npy files, and vocab.json (schema "dlprep.criteo-vocab/1": modulus and
// cardinality per column, the run's conventions, and the fields of the pass-1 checkpoint that
// preprocess.cpp keeps there), written last.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "tabular/criteo_preprocess.hpp"
#include "tabular/vocab.hpp"

namespace dlprep::tabular {

/// vocab.json of a directory given to --vocab-from: DIR/vocab.json, or DIR/vocab/vocab.json.
std::filesystem::path vocab_json_of(const std::filesystem::path& where);

/// Writes each column's values and counts into `dir` (created), then vocab.json: `fields` with
/// the schema, `modulus`, the cardinalities and `options`' conventions added. An earlier
/// vocab.json is removed first and the new one written last, so that a crash in between leaves
/// arrays without a vocab.json: no vocabulary, never one of mixed arrays.
void write_vocab_dir(const std::filesystem::path& dir,
                     const std::array<uint32_t, kNumSparse>& modulus,
                     const std::vector<ColumnVocab>& vocab, const PreprocessOptions& options,
                     nlohmann::json fields);

/// Records `options`' conventions in `dir`'s vocab.json (left as it is when they are there): a
/// rerun that reuses the vocabulary for arrays made another way. Throws Error(io | corrupt_data).
void update_vocab_conventions(const std::filesystem::path& dir, const PreprocessOptions& options);

/// Removes what write_vocab_dir writes in `dir`, and `dir` when that leaves it empty; returns the
/// files removed.
std::vector<std::filesystem::path> remove_vocab_dir(const std::filesystem::path& dir);

/// A vocabulary read back: each column's modulus, and the columns (values and counts).
struct SavedVocab {
  std::array<uint32_t, kNumSparse> modulus{};
  std::vector<ColumnVocab> columns;
};

/// Reads the vocabulary of `where` (as vocab_json_of finds it). Throws Error(io | corrupt_data)
/// naming the file: not a dlprep vocabulary, lists or arrays of the wrong shape or type, arrays
/// that do not match vocab.json, repeated values.
/// About the memory the vocabulary of `where` takes loaded (ColumnVocab::bytes_for of vocab.json's
/// cardinalities; 0 when it records none). Throws Error(io | corrupt_data) naming the file.
uint64_t vocab_dir_bytes(const std::filesystem::path& where);

/// With a guard, the columns are made with it, and a vocabulary that vocab.json's cardinalities
/// say would not fit is refused (Error limit_exceeded) before any array is read.
SavedVocab read_vocab_dir(const std::filesystem::path& where, MemoryGuard* guard = nullptr);

}  // namespace dlprep::tabular
