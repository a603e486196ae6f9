// The CUDA backend of criteo-preprocess (mirrors lib/tabular/preprocess_cpu.cpp). No CUDA type
// appears here: lib/tabular/preprocess_registry.cpp includes it to wrap it as a
// tabular::PreprocessBackend. It depends on dlprep_core and lib/tabular's plain-data headers
// (criteo_schema.hpp, parse_row.hpp, vocab_table.hpp) only, never on dlprep_tabular.
//
// Work is cut into device chunks (at most the chunk size, whole lines or rows). Slots, each with
// its stream and device buffers, take them in turn (two for text, three for rows): while chunk i's
// kernels run, chunk i+1 is copied in and chunk i-1's results go back and to the caller. Results
// reach the caller in input order through a sink.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tabular/criteo_schema.hpp"

namespace dlprep::cuda {

inline constexpr int kCriteoColumns = tabular::kNumSparse;

/// Page-locked host memory (cudaHostAlloc, portable): chunks in it reach the device by DMA.
/// Throws Error(device_failure).
uint8_t* criteo_alloc_pinned(size_t bytes);
void criteo_free_pinned(uint8_t* p) noexcept;

/// One device chunk's result, delivered in input order.
struct CriteoChunkResult {
  uint64_t lines = 0;     ///< lines (text) or rows (binary) of the chunk
  uint64_t rows = 0;      ///< valid rows
  uint64_t bad_rows = 0;  ///< malformed lines
  /// The first malformed line, counted from the chunk's first line; -1 when none. With
  /// stop_at_error the caller reports it and stops (the counts above are then not meaningful).
  int64_t first_bad_line = -1;
  /// That line's bytes with its '\n' (the caller words the message with the CPU parser).
  std::string_view first_bad_text;
  /// With want_rows (either pass, or a single pass): `rows` decoded rows (40 words, the binary
  /// row format).
  const uint32_t* decoded = nullptr;
  /// Pass 2: `rows` labels, rows x 13 dense words (float bits, or int32 for int_dense), rows x 26
  /// IDs, in pinned host memory, valid during the sink call.
  const int32_t* labels = nullptr;
  const uint32_t* dense = nullptr;
  const int32_t* sparse = nullptr;
};
using CriteoChunkSink = std::function<void(const CriteoChunkResult&)>;

struct CriteoPass1Setup {
  std::array<uint32_t, kCriteoColumns> modulus{};  ///< per column; flat table when 0 < M <= 2^22
  bool build_vocab = true;
  bool stop_at_error = true;
  bool want_rows = false;
  bool keep_rows =
      false;  ///< keep each day's valid rows in device memory for pass 2, while they fit
  /// A single pass (every ID final at first sight: no frequency threshold, no vocabulary given):
  /// each chunk is also transformed as in pass 2, a value's ID being id_base plus its
  /// first-appearance index, and its arrays are delivered as pass 2's are (with want_rows,
  /// beside the decoded rows). Needs build_vocab; not with keep_rows.
  bool assign_ids = false;
  int32_t id_base = 0;
  bool int_dense = false;  ///< with assign_ids, as CriteoPass2Setup's
  bool apply_log = true;
  double log_offset = tabular::kDefaultLogOffset;
  /// The vocabulary so far per column (values in first-appearance order and their counts); empty
  /// vectors for a fresh run. Read during begin_pass1 only.
  std::array<const std::vector<uint32_t>*, kCriteoColumns> seed_values{};
  std::array<const std::vector<uint64_t>*, kCriteoColumns> seed_counts{};
};

struct CriteoPass2Setup {
  std::array<uint32_t, kCriteoColumns> modulus{};
  bool stop_at_error = true;
  bool want_rows = false;  ///< CriteoChunkResult::decoded too (pass 2 alone, --emit-binary)
  bool int_dense = false;
  bool apply_log = true;
  double log_offset = tabular::kDefaultLogOffset;
  /// The finalised vocabulary per column: values in first-appearance order, the ID of each
  /// (ColumnVocab::index_ids) and the OOV ID. Read during begin_pass2 only.
  std::array<const std::vector<uint32_t>*, kCriteoColumns> values{};
  std::array<const std::vector<int32_t>*, kCriteoColumns> ids{};
  std::array<int32_t, kCriteoColumns> oov{};
};

/// Where the time went (sums of CUDA-event intervals; the slots' streams overlap).
struct CriteoCudaTimings {
  double h2d_ms = 0;
  double kernel_ms = 0;
  double d2h_ms = 0;
  double alloc_ms = 0;  ///< host time spent allocating device and pinned host buffers
  uint64_t allocations = 0;  ///< buffer growths and pool allocations (kept rows) among them
  double wait_ms = 0;   ///< host time blocked on the device while chunks go through
  double setup_ms = 0;  ///< host time in begin_pass1, read_vocab and begin_pass2
  uint64_t chunks = 0;
  uint64_t kept_rows = 0;
  uint64_t log_values_on_host = 0;
};

/// The CUDA preprocessor. Owns three streams, device buffers that grow to the largest chunk, the
/// vocabulary tables (pass 1) and lookup tables (pass 2). Runs may follow one another (each
/// begins with begin_pass1), reusing the buffers. Not thread-safe. After an exception (from a
/// sink or the device) only destruction is allowed.
class CriteoPreprocessorCuda {
 public:
  /// Throws Error(device_failure) when the device cannot be used.
  explicit CriteoPreprocessorCuda(size_t chunk_bytes);
  ~CriteoPreprocessorCuda();
  CriteoPreprocessorCuda(const CriteoPreprocessorCuda&) = delete;
  CriteoPreprocessorCuda& operator=(const CriteoPreprocessorCuda&) = delete;

  /// Device chunk size by default (the caller's chunk size when it has none).
  static size_t default_chunk_bytes();

  void begin_pass1(const CriteoPass1Setup& setup);
  /// Text of whole lines ending with '\n' (the caller may reuse the memory after the call).
  void pass1_text(size_t day, const char* text, size_t bytes, const CriteoChunkSink& sink);
  /// Binary rows (40 words each). `stable`: the rows stay as they are until the next flush(),
  /// so the call returns without waiting for their copy to the device.
  void pass1_rows(size_t day, const uint32_t* rows, size_t count, const CriteoChunkSink& sink,
                  bool stable = false);
  /// Delivers every pending result.
  void flush();
  /// After flush(): the vocabulary per column, values in first-appearance order with counts.
  void read_vocab(std::array<std::vector<uint32_t>, kCriteoColumns>& values,
                  std::array<std::vector<uint64_t>, kCriteoColumns>& counts);
  /// Whether all of day `day`'s valid rows were kept in device memory in pass 1.
  bool kept_day(size_t day) const;

  void begin_pass2(const CriteoPass2Setup& setup);
  void pass2_text(const char* text, size_t bytes, const CriteoChunkSink& sink);
  void pass2_rows(const uint32_t* rows, size_t count, const CriteoChunkSink& sink,
                  bool stable = false);
  /// Transforms the rows kept for `day` (then frees them).
  void pass2_kept_day(size_t day, const CriteoChunkSink& sink);

  CriteoCudaTimings timings() const;
  void reset_timings();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlprep::cuda
