// dataset verify: every indexed sample exists, has its recorded size and checksum, is in its
// recorded format and decodes to its recorded shape; data/ holds no file the index does not name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "dataset/manifest.hpp"

namespace dlprep::dataset {

/// The files a verify thread holds open at once (the tar shard it reads, or the file it is
/// mapping; a mapping keeps none): for clamp_workers_to_fd_limit.
inline constexpr unsigned kVerifyFilesPerThread = 1;

struct VerifyOptions {
  std::filesystem::path dataset;
  unsigned threads = 1;
  ProgressCallback progress;
  /// Called (from worker threads, serialised) for each sample that differs or fails, with an
  /// Error(mismatch) for a difference from the index, or the decoder's error when a file whose
  /// bytes match the index does not decode. The message names the file.
  std::function<void(const Error&)> problem;
};

struct VerifyResult {
  Manifest manifest;
  uint64_t samples = 0;  ///< records in the index
  uint64_t ok = 0;
  uint64_t mismatched = 0;  ///< missing, different size, checksum, format or shape
  uint64_t failed = 0;      ///< bytes as recorded but the file does not decode
  /// Differences in the dataset as a whole (incomplete, counts that disagree with the index),
  /// reported through `problem` too.
  uint64_t dataset_problems = 0;
};

/// Verifies a dataset, streaming its index. Throws Error(io | corrupt_data) when the manifest or
/// the index cannot be read, and Error(io) when the process runs out of file descriptors (a
/// limit, not damage: nothing is counted as failed for it); differences are counted, not thrown.
VerifyResult verify_dataset(const VerifyOptions& options);

}  // namespace dlprep::dataset
