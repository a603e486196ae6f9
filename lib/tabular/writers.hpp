// The output layouts of one day (or one half of the split last day), written through AtomicFile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tabular/criteo_preprocess.hpp"

namespace dlprep::tabular {

/// A block of transformed rows, row-major: labels[n], dense[n*13] (float32 bit patterns, or int32
/// for the dlrm layout), sparse[n*26] IDs.
struct RowBlock {
  const int32_t* labels = nullptr;
  const uint32_t* dense = nullptr;
  const int32_t* sparse = nullptr;
  size_t rows = 0;
};

/// Writes one day's outputs. When the row count is known in advance (two passes: from pass 1),
/// commit() checks that exactly that many rows arrived; otherwise (a single pass) it completes the
/// .npy headers with the count, which never changes their 128 bytes. Then it renames every file.
class DayWriter {
 public:
  virtual ~DayWriter() = default;
  virtual void write(const RowBlock& block) = 0;
  /// Completes the files (row counts, .npy headers) and closes them, still under temporary
  /// names, so that a finished day can wait for its turn to appear without a descriptor per file.
  void finish() {
    if (finished_) return;
    finish_files();
    finished_ = true;
  }
  /// finish(), then gives every file its name. Destroyed without it, the day leaves no file.
  void commit() {
    finish();
    publish_files();
  }

 protected:
  virtual void finish_files() = 0;
  virtual void publish_files() = 0;

 private:
  bool finished_ = false;
};

/// Files that `stem` ("day_0", "test", "val") produces in `format` inside out_dir.
std::vector<std::filesystem::path> output_files(OutputFormat format,
                                                const std::filesystem::path& out_dir,
                                                const std::string& stem);

/// Bytes of one ID in the split layout's cat_J.bin, from the column's embedding table size
/// (PreprocessStats::num_embeddings): NVIDIA's get_categorical_feature_type, which its loaders
/// apply to the same size: int8 below 127, int16 below 32767, else int32.
int split_id_bytes(uint64_t table_size);

/// Opens the writer of `format` for `rows` rows (nullopt: as many as arrive). The split layout
/// needs the 26 columns' table sizes (the other layouts ignore them). Throws Error(io).
/// The split layout is NVIDIA's (DeepLearningExamples' DLRM, TorchRec's NVTabular loader):
/// label.bin bool (one byte, 0 or 1), numerical.bin float16 x 13 (the float32 values rounded to
/// nearest even), cat_J.bin int8/int16/int32 as split_id_bytes says.
std::unique_ptr<DayWriter> open_day_writer(OutputFormat format,
                                           const std::filesystem::path& out_dir,
                                           const std::string& stem, std::optional<uint64_t> rows,
                                           std::span<const uint64_t> table_sizes);

/// The embedding table sizes (PreprocessStats::num_embeddings) where the layout's loaders read
/// them: OUTDIR/day_fea_count.npz for dlrm, OUTDIR/model_size.json ("cat_0" .. "cat_25" in
/// column order) for split; nothing for the other layouts. Throws Error(io).
void write_table_sizes(OutputFormat format, const std::filesystem::path& out_dir,
                       std::span<const uint64_t> sizes);

/// Sends the first `first_rows` rows to `first` and the rest to `second` (the split last day).
std::unique_ptr<DayWriter> split_writer(std::unique_ptr<DayWriter> first,
                                        std::unique_ptr<DayWriter> second, uint64_t first_rows);

}  // namespace dlprep::tabular
