// The seam between criteo-preprocess's pipeline and its compute backends.
//
// preprocess.cpp owns everything that is the same on every device: options, reading the inputs
// in chunks (InputReader), resume fingerprints, vocabulary checkpoints, ID assignment
// (ColumnVocab::finalize), the writers, bad-row reporting and stats.json. A backend owns the
// compute core of a chunk: Decode (text or binary rows) -> Modulus -> GenVocab in pass 1;
// Decode -> Modulus -> ApplyVocab -> Neg2Zero -> Logarithm in pass 2. It hands its results back
// through sinks, in input order, so that one code path counts lines, reports file:line and
// writes every output file for all backends.
//
// Backends: preprocess_cpu.cpp (the reference), cuda/tabular/preprocess_cuda.cu (wrapped in
// preprocess_registry.cpp, the only file that knows which backends were built). No CUDA type
// appears here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tabular/criteo_preprocess.hpp"
#include "tabular/host_buffer.hpp"
#include "tabular/input_reader.hpp"
#include "tabular/parse_tsv.hpp"
#include "tabular/vocab.hpp"
#include "tabular/writers.hpp"

namespace dlprep::tabular {

/// A backend's result for a run of consecutive lines of a chunk (the CPU's 256 KiB pieces, a
/// CUDA device chunk), delivered in input order.
struct PieceOutput {
  /// Lines, rows and bad rows of the piece; first_bad_line counts from the piece's first line
  /// and first_problem is decode_tsv's wording. With stop_at_error the piece ends at its first
  /// malformed row.
  TsvPieceResult result;
  /// Pass 1 (or a single pass) with Pass1Setup::want_rows, pass 2 with Pass2Setup::want_rows: the
  /// result.rows decoded rows (40 words each, the binary row format); nullptr otherwise.
  const uint32_t* rows = nullptr;
  /// Pass 2, or pass 1 with Pass1Setup::assign_ids: the transformed rows (block.rows ==
  /// result.rows).
  RowBlock block;
};

/// Receives each piece; may throw (a malformed row under --on-bad-row error), which ends the pass.
using PieceSink = std::function<void(const PieceOutput&)>;
/// Pass 1 with Pass1Setup::index_rows: decoded rows whose 26 sparse words were replaced by the
/// values' first-appearance indices (the CPU decode cache), in input order.
using IndexRowsSink = std::function<void(const uint32_t* rows, size_t n)>;

struct Pass2Setup {
  std::array<uint32_t, kNumSparse> modulus{};
  bool stop_at_error = true;
  /// PieceOutput::rows too (pass 2 alone, with a given vocabulary: --emit-binary); not read in
  /// Pass1Setup::transform, whose rows Pass1Setup::want_rows asks for.
  bool want_rows = false;
  bool int_dense = false;  ///< the dlrm layout: int32 max(x, 0), no log
  bool apply_log = true;   ///< float log(max(x, 0) + log_offset); false: float max(x, 0)
  double log_offset = kDefaultLogOffset;
};

struct Pass1Setup {
  std::array<uint32_t, kNumSparse> modulus{};  ///< per column, 0 = none
  bool build_vocab = true;    ///< GenVocab; false: decode, validate and count only (--vocab-from)
  bool stop_at_error = true;  ///< --on-bad-row error
  bool want_rows = false;     ///< PieceOutput::rows (--emit-binary, the decode cache of raw rows)
  bool index_rows = false;    ///< call the IndexRowsSink (needs host_decode_cache())
  /// The backend may keep each day's decoded rows for pass 2 (kept_day()); the CUDA backend
  /// keeps them in device memory while they fit.
  bool keep_rows = false;
  /// A single pass (only when single_pass()): the chunks are also transformed as by pass 2 with
  /// `transform`, each value's ID being id_base plus its first-appearance index, which is final
  /// as soon as the value is first seen when no frequency threshold or given vocabulary applies;
  /// the blocks come back in PieceOutput::block (with want_rows, beside the decoded rows). Needs
  /// build_vocab; not with index_rows or keep_rows.
  bool assign_ids = false;
  int32_t id_base = 0;
  Pass2Setup transform;
};

/// Where a backend's time went (CUDA: sums of CUDA-event intervals over both streams, which
/// overlap; zeros for the CPU).
struct BackendTimings {
  double h2d_seconds = 0;           ///< input chunks to the device
  double kernel_seconds = 0;        ///< decode, vocabulary and transform kernels
  double d2h_seconds = 0;           ///< outputs (and decoded rows when asked) back to host memory
  double alloc_seconds = 0;         ///< host time allocating device and pinned host buffers
  uint64_t allocations = 0;         ///< allocations (growths, pool allocations) among them
  double wait_seconds = 0;          ///< host time blocked on the device while chunks go through
  double setup_seconds = 0;         ///< host time setting up the passes, reading the vocabulary
  uint64_t chunks = 0;              ///< device chunks processed, both passes
  uint64_t kept_rows = 0;           ///< rows kept on the device from pass 1 for pass 2
  uint64_t log_values_on_host = 0;  ///< dense logs too close to a float rounding boundary,
                                    ///< recomputed on the host (log_rounding_is_safe)
};

/// The compute core of criteo-preprocess on one device. Called from one thread. Serves one run
/// after another (a Preprocessor's), each from begin_pass1 to its last flush(); not reusable
/// after a sink threw (destroy it).
class PreprocessBackend {
 public:
  virtual ~PreprocessBackend() = default;
  /// "cpu" or "cuda" (stats.json's "device"; tests check it against DLPREP_FORCE_DEVICE).
  virtual std::string_view device_name() const = 0;
  /// Input bytes per chunk when PreprocessOptions::chunk_bytes is 0.
  virtual size_t default_chunk_bytes() const = 0;
  /// Whether pass 1 can produce index rows (Pass1Setup::index_rows) for a decode cache file.
  virtual bool host_decode_cache() const = 0;
  /// Whether pass 1 can also transform (Pass1Setup::assign_ids), so that the inputs are read once.
  virtual bool single_pass() const { return false; }
  /// Host memory for input chunks and preloaded inputs (pinned for a GPU backend).
  virtual HostBuffer allocate_host(size_t bytes) = 0;

  /// Starts pass 1. `vocab` (26 columns, kept by reference until the pass ends) holds the
  /// vocabulary so far: empty, or restored from a checkpoint. With build_vocab the chunks extend
  /// it in input order; it is up to date after sync_vocab().
  virtual void begin_pass1(const Pass1Setup& setup, std::vector<ColumnVocab>& vocab) = 0;
  /// Processes one chunk of day `day` (days in order, chunks in order). The sinks are called once
  /// per piece, in input order, during this call or a later one (a backend may pipeline chunks),
  /// at the latest in flush(). The chunk's memory is not read after the call returns.
  virtual void pass1_chunk(size_t day, const InputChunk& chunk, const PieceSink& sink,
                           const IndexRowsSink& index_sink) = 0;
  /// Makes every pending sink call (the end of a day).
  virtual void flush() = 0;
  /// Brings the vocabulary given to begin_pass1 up to date (after flush()).
  virtual void sync_vocab() = 0;
  /// After pass 1: whether the backend kept day `day`'s decoded rows (Pass1Setup::keep_rows), so
  /// that pass 2 calls pass2_kept_day() instead of reading the input again.
  virtual bool kept_day(size_t day) const {
    (void)day;
    return false;
  }

  /// Starts pass 2 with the finalised vocabulary (ColumnVocab::finalize done).
  virtual void begin_pass2(const Pass2Setup& setup, const std::vector<ColumnVocab>& vocab) = 0;
  /// Transforms one chunk; sinks as in pass1_chunk. With sparse_are_indices the rows come from
  /// the CPU decode cache and hold first-appearance indices instead of values.
  virtual void pass2_chunk(const InputChunk& chunk, bool sparse_are_indices,
                           const PieceSink& sink) = 0;
  /// Transforms the rows kept for `day` in pass 1 (only when kept_day(day)).
  virtual void pass2_kept_day(size_t day, const PieceSink& sink);

  virtual BackendTimings timings() const { return {}; }
  /// Zeroes timings() at the start of a run (a Preprocessor runs many on one backend).
  virtual void reset_timings() {}
};

/// The CPU backend (the reference): `threads` worker threads.
std::unique_ptr<PreprocessBackend> make_preprocess_backend_cpu(unsigned threads);

/// The backend for `device` (preprocess_registry.cpp). DLPREP_FORCE_DEVICE=cpu|cuda|fpga|auto
/// overrides it (other values throw Error(invalid_argument)). auto: CUDA when it was built and a
/// device is usable, else the CPU. cuda or fpga when unavailable: Error(device_unavailable) with
/// the reason.
std::unique_ptr<PreprocessBackend> make_preprocess_backend(Device device, unsigned cpu_threads);

/// Empty when criteo-preprocess can run on CUDA here; otherwise why not. Never throws.
std::string criteo_cuda_unavailable_reason();

}  // namespace dlprep::tabular
