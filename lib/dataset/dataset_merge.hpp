// dataset merge: joins the shards of one conversion (convert-dataset --shard K/N, run as N
// independent jobs) into one dataset equal to what an unsharded run would have written.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/progress.hpp"
#include "dataset/manifest.hpp"

namespace dlprep::dataset {

struct MergeOptions {
  std::vector<std::filesystem::path> inputs;  ///< the shard datasets, any order
  std::filesystem::path output;               ///< the merged dataset (created or updated)
  std::string tool;                           ///< recorded in dataset.json
  ProgressCallback progress;
};

struct MergeResult {
  Manifest manifest;     ///< the merged dataset's
  uint64_t removed = 0;  ///< files of OUTPUT's previous merge that its new index does not name
  bool up_to_date = false;  ///< OUTPUT was this merge already: no file of it was touched
};

/// Checks that the inputs are the complete, distinct shards 0..N-1 of one conversion (same
/// source, mix, options and seed), then merges their indices in source order (a streaming
/// N-way merge) and hard-links each data file into OUTPUT/data (copying when a link is not
/// possible, e.g. across file systems). An index with fewer or more records than its
/// dataset.json counts is corrupt. The data files of an earlier merge into OUTPUT that the new
/// index does not name (samples since removed, another shard count's tar shards) are removed
/// once it is in place. Throws Error(invalid_argument) for inputs that do not belong together,
/// naming what differs, Error(io | corrupt_data) otherwise.
MergeResult merge_datasets(const MergeOptions& options);

}  // namespace dlprep::dataset
