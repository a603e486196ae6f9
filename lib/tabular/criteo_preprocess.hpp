// Criteo/DLRM click-log preprocessing (PIPER's pipeline): Decode (UTF-8 TSV, gzip, or binary rows)
// -> FillMissing -> Hex2Int -> Modulus -> GenVocab (pass 1) -> ApplyVocab (pass 2) -> Neg2Zero ->
// Logarithm -> write. The public entry point of lib/tabular.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/progress.hpp"
#include "tabular/criteo_schema.hpp"

namespace dlprep::tabular {

/// How input files are read. `auto_detect` looks at the first bytes: gzip magic -> gzip-compressed
/// text, the binary magic -> binary rows, anything else -> tab-separated text.
enum class InputFormat { auto_detect, tsv, bin };

/// Output layouts (see man/dlprep-criteo-preprocess.1):
///  npy   TorchRec/MLPerf-v2 per day: day_D_dense.npy float32 (N,13), day_D_sparse.npy int32
///        (N,26), day_D_labels.npy int32 (N,1).
///  dlrm  DLRM/MLPerf-v1 binary per day: day_D.bin, int32 x 40 per row (label, I1..I13 after
///        Neg2Zero, C1..C26 IDs), no header. Needs apply_log = false (the loader takes the log).
///  split NVIDIA split layout per day: day_D/label.bin (int32), day_D/numerical.bin (float32 x 13),
///        day_D/cat_J.bin (int32), J = 0..25, no headers.
///  none  only the vocabulary and stats.json (pass 1 alone).
enum class OutputFormat { npy, dlrm, split, none };

/// Whether pass 1 keeps the decoded rows (160 bytes each) in an unnamed temporary file in the
/// output directory, so that pass 2 reads them instead of decoding (and decompressing) the text
/// again. auto: on for text input when the estimate is at most 1 GiB (larger caches cost more in
/// kernel writeback than they save) and the output file system has room for twice that.
/// With CUDA, on and auto keep each day's decoded rows in device memory instead, while they fit
/// (half the free device memory); off re-reads the input in pass 2.
enum class DecodeCache { auto_select, on, off };

/// Which backend runs the compute core (preprocess_backend.hpp): the CPU reference, CUDA (when
/// built and a device is present), FPGA (a separate issue: always Error(device_unavailable) for
/// now). auto_select: CUDA when usable, else the CPU. Every backend writes byte-identical outputs.
enum class Device { cpu, cuda, fpga, auto_select };

/// What a malformed row does: stop with an error naming file and line, or be counted and dropped.
enum class BadRowPolicy { error, skip };

/// How the last input is split when `split_last` is set: DLRM writes the test half first, then
/// validation; TorchRec/MLPerf-v2 validation first, then test. Outputs are named test_* / val_*.
enum class SplitLast { none, test_val, val_test };

struct PreprocessOptions {
  std::vector<std::filesystem::path> inputs;  ///< one file per day, in day order
  std::filesystem::path out_dir;
  InputFormat input_format = InputFormat::auto_detect;
  OutputFormat output_format = OutputFormat::npy;
  Device device = Device::cpu;
  /// Modulus per sparse column (DLRM's max_ind_range); 0 = none (full 32-bit values).
  std::array<uint32_t, kNumSparse> modulus{};
  /// Values seen fewer than min_freq times in pass 1 map to the OOV ID (0 or 1 = keep every value).
  uint64_t min_freq = 1;
  /// ID of the first kept value of each column; IDs are contiguous in first-appearance order.
  int64_t id_base = 0;
  /// OOV ID; default: id_base - 1 when id_base >= 1, else one past the column's last ID.
  std::optional<int64_t> oov_id;
  bool apply_log = true;  ///< store log(max(x,0) + log_offset); false: store max(x,0)
  double log_offset = kDefaultLogOffset;
  /// Apply the vocabulary saved in this directory instead of building one (train/test consistency;
  /// apply_vocab_conventions() takes the rest of that run's conventions).
  std::optional<std::filesystem::path> vocab_from;
  SplitLast split_last = SplitLast::none;
  BadRowPolicy on_bad_row = BadRowPolicy::error;
  DecodeCache decode_cache = DecodeCache::auto_select;
  /// Also write every decoded row, in the binary row format, to this file (one file for all days).
  std::optional<std::filesystem::path> emit_binary;
  /// Refuse (Error limit_exceeded) rather than use more memory than this; 0 = no limit.
  uint64_t max_memory_bytes = 0;
  /// Reuse a matching vocabulary checkpoint (complete, or partial: written after a day when a
  /// minute has passed since the last) and completed day outputs from an earlier run.
  bool resume = true;
  /// Seconds between partial pass-1 checkpoints (tests set 0 to checkpoint after every day).
  double checkpoint_seconds = 60.0;
  bool write_vocab = true;  ///< write vocab/ (values and counts per column)
  unsigned threads = 0;     ///< 0 = all hardware threads
  /// Input bytes decoded per step (bounds memory); 0 = the backend's default (16 MiB on the CPU,
  /// 64 MiB with CUDA).
  size_t chunk_bytes = 0;
  /// Benchmarks: read every input whole into host memory (pinned for CUDA) before the passes, so
  /// that the passes start from memory (stats: preload_seconds apart). Needs the inputs' size in
  /// memory (decompressed); turns the host decode cache off.
  bool preload_inputs = false;
  /// Benchmarks: run pass 2 to the arrays in host memory but write no output files (nor
  /// state.json); the vocabulary and stats.json are still written.
  bool discard_outputs = false;
  /// Read the inputs once where every ID is final when its value is first seen: min_freq <= 1 on
  /// a backend whose pass 1 assigns IDs (CPU, CUDA), or vocab_from (see preprocess.cpp for a
  /// split last day). Same outputs; false keeps two passes (benchmarks, tests).
  bool single_pass = true;
  ProgressCallback progress;
  WarningCallback warning;
};

struct DayStats {
  std::string input;
  uint64_t rows = 0;      ///< rows written (bad rows excluded)
  uint64_t bad_rows = 0;  ///< rows dropped by --on-bad-row skip
  uint64_t input_bytes = 0;
  bool skipped = false;  ///< outputs were already complete (resume)
};

struct PreprocessStats {
  std::vector<DayStats> days;
  uint64_t rows = 0;
  /// Rows of the days this run wrote (not those up to date): what a rate is measured over.
  uint64_t rows_written() const;
  uint64_t bad_rows = 0;
  std::array<uint64_t, kNumSparse> cardinality{};  ///< distinct values per column (pass 1)
  std::array<uint64_t, kNumSparse> kept{};         ///< of which kept (count >= min_freq)
  /// Rows of each column's embedding table: its largest ID, the OOV ID included, plus one
  /// (TorchRec's num_embeddings_per_feature).
  std::array<uint64_t, kNumSparse> num_embeddings{};
  double pass1_seconds = 0;
  double pass2_seconds = 0;
  double total_seconds = 0;
  bool vocab_reused = false;         ///< the checkpoint (or --vocab-from) replaced pass 1
  size_t days_resumed_in_pass1 = 0;  ///< days a partial pass-1 checkpoint let pass 1 skip
  /// Files of an earlier run into OUTDIR, in this run's layout, for days this run does not have
  /// (it had more inputs, or split its last day differently): removed at the end, relative paths.
  std::vector<std::string> removed_outputs;
  bool single_pass = false;          ///< the inputs were read once (PreprocessOptions::single_pass)
  /// Pass 2 read pass 1's decoded rows instead of the inputs (binary inputs: the mapping pass 1
  /// made, kept for it).
  bool decode_cache = false;
  uint64_t peak_rss_bytes = 0;
  unsigned threads = 0;
  std::string gzip_backend;    ///< "isal" or "zlib"
  std::string device = "cpu";  ///< the backend that ran: "cpu" or "cuda"
  // Phases of pass1_seconds + pass2_seconds (stats.json "phases"):
  double preload_seconds = 0;  ///< preload_inputs: reading the inputs into memory (before pass 1)
  double read_seconds = 0;     ///< waiting for input chunks (reading, gzip) during the passes
  double write_seconds = 0;    ///< writing outputs, the vocabulary and checkpoints
  /// The rest: decoding, vocabularies and transforms, with every host<->device copy (the CPU's
  /// writes overlap its decoding, so there the phases overlap too).
  double compute_seconds = 0;
  // CUDA only (stats.json "cuda"): sums of CUDA-event intervals over overlapping streams.
  double h2d_seconds = 0;
  double kernel_seconds = 0;
  double d2h_seconds = 0;
  double alloc_seconds = 0;  ///< host time (not events) allocating device and pinned buffers
  uint64_t allocations = 0;  ///< buffers allocated or grown for it (fewer on a reused backend)
  double wait_seconds = 0;   ///< host time blocked on the device while chunks go through
  double setup_seconds = 0;  ///< host time setting up the passes and reading the vocabulary back
  uint64_t device_chunks = 0;
  uint64_t log_values_on_host = 0;  ///< dense logs the host recomputed (float rounding too close)
  /// The stats.json document ("schema": "dlprep.criteo-preprocess/1").
  std::string to_json() const;
};

/// Runs the whole pipeline and writes the outputs, the vocabulary and stats.json into out_dir.
/// Memory is bounded by the vocabularies and chunk_bytes, not by the number of rows.
/// Throws Error: invalid_argument (bad options), io, corrupt_data (a malformed row, message
/// "file:line: problem"), limit_exceeded (max_memory_bytes), device_unavailable (cuda without
/// CUDA or a device, fpga), device_failure (the device failed).
PreprocessStats preprocess(const PreprocessOptions& options);

class PreprocessBackend;

/// Runs one preprocess job after another on a backend it keeps between them, as a long-lived
/// process (a trainer, a service) would: the CUDA backend's streams, device and pinned buffers
/// and its memory pool (whose device memory holds the rows kept for pass 2) stay allocated, so a
/// run after the first allocates almost nothing. preprocess(o) is Preprocessor().run(o). Each
/// run's outputs are the same as preprocess()'s. The backend is made again when a run asks for
/// another device or thread count, and after a run that threw. Holds the backend's memory until
/// destroyed; not thread-safe.
class Preprocessor {
 public:
  Preprocessor();
  ~Preprocessor();
  Preprocessor(const Preprocessor&) = delete;
  Preprocessor& operator=(const Preprocessor&) = delete;

  /// As preprocess(options).
  PreprocessStats run(const PreprocessOptions& options);

 private:
  std::unique_ptr<PreprocessBackend> backend_;
  Device device_ = Device::cpu;  ///< what backend_ was made for
  unsigned threads_ = 0;
};

/// The layout's name as the CLI spells it: npy, dlrm, split or none.
std::string output_format_name(OutputFormat format);

/// Parses "5000" (every column) or "5000,0,1000000,..." (26 values) into per-column moduli.
/// Throws Error(invalid_argument).
std::array<uint32_t, kNumSparse> parse_modulus_list(const std::string& text);

/// Where every input is named after its day (day_N, day_N.gz, day_N.tsv ...) and the days do not
/// increase in the order given, as a shell glob sorts them (day_10 before day_2): a sentence
/// saying so, for a warning (the inputs are read in the order given, which decides the IDs and
/// which day is last). Empty otherwise.
std::string day_order_problem(const std::vector<std::filesystem::path>& inputs);

/// Applies a named preset ("dlrm", "torchrec", "piper") to options; throws on an unknown name.
void apply_preset(const std::string& name, PreprocessOptions& options);

/// Applies the conventions that the run which wrote the vocabulary in `vocab_from` (its OUTDIR or
/// OUTDIR/vocab) recorded in its vocab.json: min_freq, id_base, oov_id, apply_log, log_offset and
/// the output format (unless that run wrote none), so that a --vocab-from run's IDs and arrays
/// match that run's. Leaves options as they are for a vocabulary that recorded none. Throws
/// Error(io | corrupt_data) naming the file.
void apply_vocab_conventions(const std::filesystem::path& vocab_from, PreprocessOptions& options);

}  // namespace dlprep::tabular
