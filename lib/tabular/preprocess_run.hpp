// Internal to lib/tabular: one criteo-preprocess run, whose pipeline preprocess.cpp outlines.
// Its steps: preprocess.cpp (the options checked, the run's setup and its order of passes),
// preprocess_passes.cpp (the passes over the inputs), preprocess_inputs.cpp (the readers of a day:
// its file, its preloaded copy, its kept mapping or its decode cache), preprocess_state.cpp (what a
// run leaves for the next: checkpoints, state.json, the vocabulary, stale outputs removed) and
// preprocess_stats.cpp (stats.json).
#pragma once

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/host_buffer.hpp"
#include "tabular/input_reader.hpp"
#include "tabular/memory_guard.hpp"
#include "tabular/parse_tsv.hpp"
#include "tabular/preprocess_backend.hpp"
#include "tabular/vocab.hpp"
#include "tabular/writers.hpp"

namespace dlprep::tabular::preprocess_detail {
namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Adds the duration of a scope to a phase total of stats.json.
class PhaseTimer {
 public:
  explicit PhaseTimer(double& total) : total_(total), start_(Clock::now()) {}
  ~PhaseTimer() { total_ += seconds_since(start_); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double& total_;
  Clock::time_point start_;
};

/// What a checkpoint records of an input to know it again: its absolute path, size and mtime.
json file_identity(const fs::path& p);
/// Size of a regular file; 0 for anything else (a pipe, /dev/null), which is still readable.
uint64_t regular_file_size(const fs::path& p);
const char* bad_row_policy_name(BadRowPolicy p);

/// One run: the whole state of criteo-preprocess's pipeline, so that the passes read as a
/// sequence of steps.
class Run {
 public:
  /// `backend`: the Preprocessor's, made here when empty and dropped when the run fails.
  Run(const PreprocessOptions& o, std::unique_ptr<PreprocessBackend>& backend)
      : o_(o), guard_(o.max_memory_bytes), backend_(backend) {}
  ~Run() {
    if (!finished_) backend_.reset();  // first: it may still be copying from the buffers below
    for (int fd : cache_fds_)
      if (fd >= 0) ::close(fd);
  }
  PreprocessStats run();

 private:
  PreprocessStats execute();
  void validate();
  /// The number of days pass 1 can skip thanks to a matching checkpoint (all of them when it is
  /// complete; then the vocabulary is loaded), 0 when there is none.
  size_t try_resume_vocab(const json& pass1_fp);
  /// Opens --emit-binary's FILE after a checkpoint of `done` days (try_resume_vocab): returns the
  /// days pass 1 can still skip. FILE as the complete checkpoint recorded it needs no writing;
  /// a partial checkpoint's kept temp file is continued; otherwise every day is read again (0).
  size_t open_emit(size_t done);
  /// Appends decoded rows to --emit-binary's FILE.
  void emit_rows(const void* rows, uint64_t count);
  /// What a checkpoint records of --emit-binary's FILE: the temp file kept for a rerun to continue
  /// while it is written, FILE's identity once it is complete.
  json emit_record() const;
  /// With --vocab-from: whether state.json records FILE as a run on these inputs completed it,
  /// so that a rerun leaves it as it is; with `restore_counts`, only if it records the days'
  /// counts too, restored into stats_.days (a run that writes nothing else reads no input).
  bool emit_complete_in_state(bool restore_counts);
  /// Renames FILE into place once every row is in it.
  void commit_emit();
  /// With --output-format none: FILE, complete, added to state.json, whose days (an earlier
  /// run's, in another format, still in OUTDIR) stay recorded.
  void add_emit_to_state();
  void load_vocab_from(const fs::path& dir);
  void preload();
  /// The reader of day `day`: its preloaded memory, its decode cache (`cached`) or its file.
  InputReader& open_reader(std::optional<InputReader>& storage, size_t day, bool cached);
  InputChunk next_chunk(InputReader& reader);
  void pass1(bool build_vocab, size_t first_day = 0);
  /// Every chunk of day `day` from `reader` through `process`, then the backend's flush; progress
  /// in the day's input bytes (`cached`: the decode cache's share of them).
  void read_day(InputReader& reader, size_t day, const char* pass, bool cached,
                const std::function<void(const InputChunk&)>& process);
  /// Whether a partial checkpoint is due after day `day`.
  bool checkpoint_due(size_t day) const;
  /// The partial checkpoint after day `day`; `outputs` as save_vocab's.
  void checkpoint_after(size_t day, const json& outputs);
  void pass2();
  /// Whether the options and the backend allow a single pass (see the top of this file).
  bool single_pass_allowed() const;
  /// Whether a partial checkpoint of `done` days lets a single pass continue after them: it was
  /// written by one with these output settings, and their outputs are all there.
  bool single_pass_resumable(size_t done) const;
  void single_pass(size_t first_day);
  /// The single pass of --vocab-from: pass 2 alone, the IDs being known before any row is read.
  void vocab_single_pass();
  /// Day `day` of a single pass: its files opened (a split day's rows counted first), each chunk
  /// given to `process` with the sink that counts its rows and writes them, the files finished
  /// under their temporary names; nullptr with discard_outputs.
  std::unique_ptr<DayWriter> single_pass_day(
      size_t day, const std::function<void(const InputChunk&, const PieceSink&)>& process);
  /// Gives each finished day's files their names.
  void publish(std::vector<std::unique_ptr<DayWriter>>& finished);
  /// The IDs: each column's vocabulary finalised (min_freq, id_base, OOV).
  void finalize_vocab();
  /// The rows of day `day`, counted before a single pass reads it (see the top).
  uint64_t count_rows(size_t day);
  /// The writer of day `day`'s files; `rows` (needed by a split last day) when known.
  std::unique_ptr<DayWriter> open_writer(size_t day, std::optional<uint64_t> rows);
  Pass2Setup pass2_setup() const;
  /// What a day's outputs depend on beside the inputs and the vocabulary (state.json's "pass2").
  json pass2_fingerprint() const;
  /// The settings of a single pass's outputs, recorded in its partial checkpoints.
  json single_pass_outputs() const;
  std::vector<std::string> day_stems(size_t day) const;
  /// The files of day `day` (both halves of a split last day).
  std::vector<fs::path> day_files(size_t day) const;
  /// What a checkpoint records of a day's files (size, mtime; null where one is missing),
  /// and whether they are still those: a file replaced since (by a run with other settings that
  /// stopped before its own checkpoint) is not taken for the day's.
  json day_files_identity(size_t day) const;
  bool day_files_match(size_t day, const json& recorded) const;
  /// Before a checkpoint: what it vouches for (the files of `days`, FILE of --emit-binary or its
  /// kept temp file) written to storage, so that a power loss cannot leave one naming lost bytes.
  void flush_outputs(const std::vector<size_t>& days) const;
  /// Every day's counts (rows, bad rows, input bytes), as state.json records them.
  json day_counts() const;
  /// OUTDIR/state.json, null where there is none or it cannot be read.
  json read_state() const;
  /// state.json's records of complete --emit-binary FILEs, by their absolute names: those of
  /// `state` (an earlier one) whose FILE is still as recorded, and this run's once FILE is
  /// complete. Several runs into one OUTDIR (one with arrays, others with none) keep theirs.
  json emit_files(const json& state) const;
  /// state.json: the days complete under `fp2`, with every day's counts, and emit_files().
  void save_state(const json& fp2, const std::vector<size_t>& days_done);
  /// The days state.json records as complete under `fp2` whose files are all there. With
  /// `restore_counts`, only those whose counts it records too, restored into stats_.days (a
  /// single pass has no pass 1 to count them).
  std::vector<size_t> days_done(const json& fp2, bool restore_counts);
  /// `outputs`: a single pass's settings when the days before days_done have their outputs.
  void save_vocab(const json& pass1_fp, size_t days_done, const json& outputs = json());
  void check_memory(const char* where);
  /// The days an earlier run into OUTDIR recorded (stats.json, state.json, vocab/vocab.json):
  /// 0 where none did, and OUTDIR's files are no run's.
  size_t earlier_run_days() const;
  /// Removes the outputs of days that an earlier run wrote and this run does not, and an
  /// OUTDIR/vocab that is not its vocabulary (stats' removed_outputs); a reused one gets the
  /// run's conventions.
  void remove_stale_outputs();
  /// Before the first day file is committed: records in OUTDIR how many days this run may write,
  /// where no earlier record covers them.
  void record_days();
  /// Each pass reads every input: done_bytes_ of passes_ times their size, and counted_bytes_.
  void report_progress(const char* pass, size_t day) const {
    if (o_.progress)
      o_.progress(ProgressEvent{pass, done_bytes_, total_input_bytes_ * passes_ + counted_bytes_,
                                o_.inputs[day].string()});
  }
  std::string stem(size_t day) const { return "day_" + std::to_string(day); }
  void report_bad_rows(size_t day, const TsvPieceResult& r, uint64_t line_base);
  /// Pass 1 (or a single pass): a piece's bad row reported, its lines after `lines` (the day's so
  /// far, advanced), its rows and bad rows counted in the day's stats.
  void count_piece(size_t day, const TsvPieceResult& r, uint64_t& lines);
  void open_cache(size_t day);
  void write_cache(size_t day, const uint8_t* data, size_t bytes);

  const PreprocessOptions& o_;
  json pass1_fp_;
  Clock::time_point last_checkpoint_ = Clock::now();
  unsigned threads_ = 1;
  size_t chunk_bytes_ = 0;
  std::vector<FileKind> kinds_;
  std::array<uint32_t, kNumSparse> modulus_{};
  MemoryGuard guard_;  // before vocab_, whose columns announce their growth to it
  std::vector<ColumnVocab> vocab_;
  PreprocessStats stats_;
  uint64_t total_input_bytes_ = 0, done_bytes_ = 0;
  int warnings_ = 0;
  std::optional<OutputDirectory> out_dir_;  // created by the run
  std::optional<DirectoryLock> out_lock_;
  std::optional<DirectoryLock> vocab_from_lock_;  // shared, until the vocabulary is read
  size_t earlier_run_days_ = 0;  // read before this run writes a file
  bool days_recorded_ = false;   // record_days() wrote its record
  std::optional<AtomicFile> emit_;
  std::vector<int> cache_fds_;  // per day: unnamed temp file of decoded rows, -1 if none
  bool use_cache_ = false;
  // Binary inputs: each day's mapping, kept from pass 1 for pass 2 (keep_maps_), else empty.
  std::vector<std::shared_ptr<const RowFileMapping>> kept_maps_;
  bool keep_maps_ = false;
  bool cache_has_indices_ = false;  // the decode cache holds first-appearance indices
  bool keep_rows_ = false;          // the backend may keep pass 1's rows for pass 2
  uint64_t passes_ = 2;             // over the inputs: 1 for a single pass
  uint64_t counted_bytes_ = 0;      // read to count a split last day's rows (a single pass)
  json resumed_outputs_;            // the partial checkpoint's single-pass output settings
  json resumed_files_;              // and the identities of those days' files
  mutable std::set<size_t> flushed_days_;  // days whose files flush_outputs wrote to storage
  json resumed_emit_;               // the checkpoint's emit_record()
  uint64_t emit_bytes_ = 0;         // written into emit_
  bool emit_in_place_ = false;      // FILE written in place (/dev/stdout): nothing to flush
  bool emit_unrecorded_ = false;    // FILE committed, and no state.json written since names it
  bool emit_committed_ = false;     // this run wrote FILE whole
  double read_seconds_ = 0, write_seconds_ = 0;
  // Memory the backend lent (pinned for a GPU); the backend is destroyed before them (~Run).
  ReadBuffers read_buffers_;  // lent to every InputReader in turn
  std::vector<HostBuffer> preloaded_;
  std::vector<size_t> preloaded_bytes_;
  std::unique_ptr<PreprocessBackend>& backend_;
  bool finished_ = false;   // the backend is idle and may serve the next run
  bool ids_final_ = false;  // finalize_vocab() ran
};

}  // namespace dlprep::tabular::preprocess_detail
