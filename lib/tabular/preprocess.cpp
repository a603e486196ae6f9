// criteo-preprocess's pipeline: everything that is the same on every backend. It reads the
// inputs in chunks, keeps the resume state and the vocabulary checkpoints (their directory:
// vocab_dir.cpp), assigns the IDs,
// counts lines, reports malformed rows as file:line, writes every output and stats.json; the
// compute core of each chunk runs on a PreprocessBackend (preprocess_backend.hpp: the CPU
// reference in preprocess_cpu.cpp, CUDA in cuda/tabular/), chosen by preprocess_registry.cpp.
//
//   pass 1  for each day, for each chunk of whole lines: the backend decodes, applies the modulus
//           and extends the vocabulary in input order (GenVocab); its pieces come back in order
//           (bad rows, counts, --emit-binary, the decode cache)
//           -> the vocabulary checkpoint (vocab/), reused by a rerun (resume)
//   pass 2  for each day: the backend decodes (or uses the rows it kept from pass 1), applies
//           Modulus, ApplyVocab, Neg2Zero and Logarithm; the blocks come back in order and are
//           written through AtomicFile; the row count is known from pass 1, so .npy headers go
//           first.
//
// A single pass replaces both where every ID is final when its value is first seen: id_base
// plus the first-appearance index, with no --min-freq above 1, on a backend whose GenVocab
// assigns it (CPU, CUDA); or the ID of a --vocab-from vocabulary, by pass 2 alone (whose
// checkpoint is then state.json, with the counts of the days it lists). Either way the pieces
// also carry their decoded rows for --emit-binary. The split layout takes two passes all the
// same (or a --vocab-from single pass): NVIDIA's types for its cat_J.bin files come from each
// column's final table size, which the first day's files need. A split last day needs
// its row count first: it is counted before it is read (its lines under --on-bad-row error,
// where every line is a row or the run stops; its valid rows, decoded on the host, under skip,
// and then only when that day is at most half of the input). Each day is then transformed as it
// is read and its files completed at its end, under temporary names; they appear with the next
// partial checkpoint, which records that the days before it have their outputs (so that a rerun
// continues after them), or at the end of the run. A run that fails on a malformed row before
// its first checkpoint thus leaves no output, as two passes do.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "core/utf8.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/input_reader.hpp"
#include "tabular/json_file.hpp"
#include "tabular/parse_tsv.hpp"
#include "tabular/preprocess_backend.hpp"
#include "tabular/row_count.hpp"
#include "tabular/vocab.hpp"
#include "tabular/vocab_dir.hpp"
#include "tabular/writers.hpp"

namespace dlprep::tabular {
namespace fs = std::filesystem;
using json = nlohmann::json;
namespace {

using Clock = std::chrono::steady_clock;

// Largest decode cache --decode-cache auto uses (see Run::run for the measurement behind it).
constexpr uint64_t kAutoCacheMaxBytes = uint64_t{1} << 30;
// Bad rows reported one by one through the warning callback (the rest only counted).
constexpr int kMaxBadRowWarnings = 5;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// "N MiB", or "N bytes" below a MiB (--max-memory 1K is no "0 MiB").
std::string memory_text(uint64_t bytes) {
  return bytes < (1u << 20) ? std::to_string(bytes) + " bytes"
                            : std::to_string(bytes >> 20) + " MiB";
}

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
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

std::string input_format_name(InputFormat f) {
  switch (f) {
    case InputFormat::tsv:
      return "tsv";
    case InputFormat::bin:
      return "bin";
    case InputFormat::auto_detect:
      break;
  }
  return "auto";
}

const char* bad_row_policy_name(BadRowPolicy p) {
  return p == BadRowPolicy::skip ? "skip" : "error";
}

json file_identity(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) throw Error(Errc::io, p.string() + ": cannot stat");
  int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return json{{"path", escape_invalid_utf8(fs::absolute(p).lexically_normal().string())},
              {"size_bytes", static_cast<uint64_t>(st.st_size)},
              {"mtime_ns", mtime_ns}};
}

// Size of a regular file; 0 for anything else (a pipe, /dev/null), which is still readable.
uint64_t regular_file_size(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) throw Error(Errc::io, p.string() + ": cannot stat");
  return S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
}

std::string binary_header() {
  std::string h(kBinaryHeaderBytes, '\0');
  std::memcpy(h.data(), kBinaryMagic, 8);
  uint32_t version = kBinaryVersion, row_bytes = kBinaryRowBytes, fields = kNumFields;
  std::memcpy(h.data() + 8, &version, 4);
  std::memcpy(h.data() + 12, &row_bytes, 4);
  std::memcpy(h.data() + 16, &fields, 4);
  return h;
}

// The whole run's state, so that the passes read as a sequence of steps.
class Run {
 public:
  /// `backend`: the Preprocessor's, made here when empty and dropped when the run fails.
  Run(const PreprocessOptions& o, std::unique_ptr<PreprocessBackend>& backend)
      : o_(o), backend_(backend) {}
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
  bool outputs_exist(size_t day) const;
  /// state.json: the days complete under `fp2`, with every day's counts.
  void save_state(const json& fp2, const std::vector<size_t>& days_done);
  /// The days state.json records as complete under `fp2` whose files are all there. With
  /// `restore_counts`, only those whose counts it records too, restored into stats_.days (a
  /// single pass has no pass 1 to count them).
  std::vector<size_t> days_done(const json& fp2, bool restore_counts);
  /// `outputs`: a single pass's settings when the days before days_done have their outputs.
  void save_vocab(const json& pass1_fp, size_t days_done, const json& outputs = json());
  void check_memory(const char* where);
  /// Removes the outputs of days this run does not write (stats' removed_outputs).
  void remove_stale_outputs();
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
  std::vector<ColumnVocab> vocab_;
  PreprocessStats stats_;
  uint64_t total_input_bytes_ = 0, done_bytes_ = 0;
  int warnings_ = 0;
  std::optional<OutputDirectory> out_dir_;  // created by the run
  std::optional<DirectoryLock> out_lock_;
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
  double read_seconds_ = 0, write_seconds_ = 0;
  // Memory the backend lent (pinned for a GPU); the backend is destroyed before them (~Run).
  ReadBuffers read_buffers_;  // lent to every InputReader in turn
  std::vector<HostBuffer> preloaded_;
  std::vector<size_t> preloaded_bytes_;
  std::unique_ptr<PreprocessBackend>& backend_;
  bool finished_ = false;  // the backend is idle and may serve the next run
  bool ids_final_ = false;  // finalize_vocab() ran
};

void Run::validate() {
  if (o_.inputs.empty()) throw Error(Errc::invalid_argument, "no input files");
  if (o_.out_dir.empty()) throw Error(Errc::invalid_argument, "no output directory (-o)");
  for (const fs::path& in : o_.inputs) {
    // A pipe could be read only once, and not even sniffed for its format without losing bytes.
    struct stat st {};
    if (::stat(in.c_str(), &st) != 0)
      throw Error(Errc::io, in.string() + ": cannot open: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      throw Error(Errc::invalid_argument,
                  in.string() + ": not a regular file (a pipe or a device): the inputs are read " +
                      "more than once and resumed by size and time; save it to a file first " +
                      "(gzip files are read as they are)");
  }
  if (o_.id_base < 0 || o_.id_base > INT32_MAX)
    throw Error(Errc::invalid_argument, "--id-base must be in [0, 2^31)");
  // num_embeddings, the OOV ID plus one at least, is stored as int32 (day_fea_count.npz).
  if (o_.oov_id && (*o_.oov_id < 0 || *o_.oov_id >= INT32_MAX))
    throw Error(Errc::invalid_argument, "--oov-id must be in [0, 2^31 - 1)");
  if (o_.apply_log && !(o_.log_offset > 0 && std::isfinite(o_.log_offset)))
    throw Error(Errc::invalid_argument,
                "--log-offset must be finite and > 0 (log(0) is undefined)");
  if (o_.output_format == OutputFormat::dlrm && o_.apply_log)
    throw Error(Errc::invalid_argument,
                "--output-format dlrm stores integer dense values: add --no-log (the DLRM "
                "loader takes log(x+1))");
  if (o_.output_format == OutputFormat::split && !o_.apply_log)
    throw Error(Errc::invalid_argument,
                "--output-format split stores the dense values as float16 after the log (NVIDIA's "
                "layout): drop --no-log (or, where a --vocab-from run's conventions bring it, give "
                "--log-offset), or use --output-format npy or dlrm for integer values");
  if (o_.chunk_bytes != 0 && o_.chunk_bytes < (size_t{64} << 10))
    throw Error(Errc::invalid_argument, "chunk size must be at least 64 KiB");
  if (o_.vocab_from) {
    // Its run's own outputs sit next to the vocabulary: day files of the same names would
    // replace them.
    const fs::path& from = *o_.vocab_from;
    std::error_code ec;
    if (fs::equivalent(from, o_.out_dir, ec) || fs::equivalent(from, o_.out_dir / "vocab", ec))
      throw Error(Errc::invalid_argument,
                  "-o " + o_.out_dir.string() +
                      " holds the --vocab-from vocabulary: its run's "
                      "outputs would be replaced; write to another directory");
    // A partial checkpoint (its run interrupted, or still running) is not that run's vocabulary:
    // values first seen in its later days would get the OOV ID, which the whole vocabulary gives
    // to a value.
    const fs::path vocab_json = vocab_json_of(from);
    const json v = read_json_file(vocab_json);
    if (v.is_object() && v.contains("days") && v["days"].is_array() &&
        v.value("days_done", json()).is_number_unsigned() &&
        v["days_done"].get<uint64_t>() < v["days"].size())
      throw Error(Errc::invalid_argument,
                  "--vocab-from " + vocab_json.string() + ": a partial vocabulary (" +
                      std::to_string(v["days_done"].get<uint64_t>()) + " of " +
                      std::to_string(v["days"].size()) +
                      " days): its run was interrupted or is still running; finish it first");
  }
  if (o_.emit_binary)
    for (const fs::path& in : o_.inputs) {
      std::error_code ec;
      if (fs::equivalent(in, *o_.emit_binary, ec))
        throw Error(Errc::invalid_argument, "--emit-binary " + o_.emit_binary->string() +
                                                " is an input: it would be replaced by its rows");
    }
  if (o_.warning)
    if (const std::string w = day_order_problem(o_.inputs); !w.empty()) o_.warning(w);
}

void Run::check_memory(const char* where) {
  if (o_.max_memory_bytes == 0) return;
  uint64_t rss = peak_rss_bytes();
  if (rss > o_.max_memory_bytes) {
    throw Error(Errc::limit_exceeded, std::string(where) + ": memory use " + memory_text(rss) +
                                          " exceeds --max-memory " +
                                          memory_text(o_.max_memory_bytes));
  }
}

// An earlier run into OUTDIR with more days (or a split last day where this run has none, or the
// reverse) left day files that belong to its vocabulary, not this one's; a loader that lists
// OUTDIR (TorchRec's day_*.npy, --days) would take them for this run's. Only this run's layout
// is cleaned: another layout's files are another run's choice.
void Run::remove_stale_outputs() {
  std::set<std::string> current, stale;
  for (size_t d = 0; d < o_.inputs.size(); ++d)
    for (const std::string& s : day_stems(d)) current.insert(s);
  for (const char* s : {"test", "val"})
    if (!current.count(s)) stale.insert(s);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o_.out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    size_t end = 4;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
    if (name.rfind("day_", 0) == 0 && end > 4 && !current.count(name.substr(0, end)))
      stale.insert(name.substr(0, end));
  }
  for (const std::string& s : stale) {
    for (const fs::path& f : output_files(o_.output_format, o_.out_dir, s))
      if (fs::remove(f, ec)) stats_.removed_outputs.push_back(f.lexically_relative(o_.out_dir));
    if (o_.output_format == OutputFormat::split && fs::is_directory(o_.out_dir / s, ec) &&
        fs::is_empty(o_.out_dir / s, ec))
      fs::remove(o_.out_dir / s, ec);
  }
}

void Run::report_bad_rows(size_t day, const TsvPieceResult& r, uint64_t line_base) {
  if (r.first_bad_line < 0) return;
  std::string msg = o_.inputs[day].string() + ":" +
                    std::to_string(line_base + static_cast<uint64_t>(r.first_bad_line) + 1) + ": " +
                    r.first_problem;
  if (o_.on_bad_row == BadRowPolicy::error) throw Error(Errc::corrupt_data, msg);
  if (o_.warning && warnings_ < kMaxBadRowWarnings) {
    ++warnings_;
    o_.warning(msg + " (row skipped)");
  }
}

void Run::count_piece(size_t day, const TsvPieceResult& r, uint64_t& lines) {
  report_bad_rows(day, r, lines);
  lines += r.lines;
  stats_.days[day].rows += r.rows;
  stats_.days[day].bad_rows += r.bad_rows;
}

void Run::open_cache(size_t day) {
  // O_TMPFILE: a file without a name, freed by the kernel when closed, even after SIGKILL; a
  // file system without it gets a named file unlinked at once.
  int fd = ::open(o_.out_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::string pattern = (o_.out_dir / ".decode-cache.XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    fd = ::mkstemp(buf.data());
    if (fd < 0)
      throw Error(Errc::io, o_.out_dir.string() +
                                ": cannot create the decode cache: " + std::strerror(errno));
    ::unlink(buf.data());
  }
  cache_fds_[day] = fd;
}

void Run::write_cache(size_t day, const uint8_t* data, size_t bytes) {
  while (bytes > 0) {
    ssize_t n = ::write(cache_fds_[day], data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(Errc::io, o_.out_dir.string() + ": writing the decode cache failed: " +
                                std::strerror(errno) + " (--decode-cache off avoids it)");
    data += n;
    bytes -= static_cast<size_t>(n);
  }
}

void Run::preload() {
  // Each day whole, decompressed, in memory from the backend (pinned for a GPU): the passes then
  // start from host memory, as BENCHMARKS.md counts the CUDA figures.
  preloaded_.resize(o_.inputs.size());
  preloaded_bytes_.assign(o_.inputs.size(), 0);
  for (size_t day = 0; day < o_.inputs.size(); ++day) {
    InputReader reader(o_.inputs[day], kinds_[day], chunk_bytes_, &read_buffers_);
    std::vector<uint8_t> grown;  // gzip: the size is known only at the end
    HostBuffer buf;
    size_t used = 0;
    const uint64_t file_size = regular_file_size(o_.inputs[day]);
    if (kinds_[day] != FileKind::tsv_gzip && file_size > 0)
      buf = backend_->allocate_host(file_size + 1 + kTsvReadPadding);
    for (;;) {
      InputChunk chunk = reader.next();
      if (chunk.empty()) break;
      const auto* src = chunk.text.empty() ? reinterpret_cast<const uint8_t*>(chunk.rows.data())
                                           : reinterpret_cast<const uint8_t*>(chunk.text.data());
      size_t n = chunk.text.empty() ? chunk.rows.size_bytes() : chunk.text.size();
      if (buf && used + n + 1 + kTsvReadPadding <= buf.size()) {
        std::memcpy(buf.data() + used, src, n);
      } else {
        if (buf) {  // the file grew while being read: continue in the vector
          grown.assign(buf.data(), buf.data() + used);
          buf.reset();
        }
        grown.insert(grown.end(), src, src + n);
      }
      used += n;
    }
    if (!buf) {
      buf = backend_->allocate_host(used + 1 + kTsvReadPadding);
      if (used) std::memcpy(buf.data(), grown.data(), used);
    }
    std::memset(buf.data() + used, 0, 1 + kTsvReadPadding);  // the text decoder's padding
    preloaded_[day] = std::move(buf);
    preloaded_bytes_[day] = used;
  }
}

InputReader& Run::open_reader(std::optional<InputReader>& storage, size_t day, bool cached) {
  PhaseTimer t(read_seconds_);
  if (cached) {
    storage.emplace(cache_fds_[day], o_.inputs[day].string() + " (decoded)", chunk_bytes_,
                    &read_buffers_);
  } else if (day < kept_maps_.size() && kept_maps_[day]) {
    storage.emplace(kept_maps_[day], o_.inputs[day].string(), chunk_bytes_);
  } else if (!preloaded_.empty()) {
    FileKind kind = kinds_[day] == FileKind::bin ? FileKind::bin : FileKind::tsv;
    storage.emplace(std::span<const uint8_t>(preloaded_[day].data(), preloaded_bytes_[day]), kind,
                    chunk_bytes_, regular_file_size(o_.inputs[day]));
  } else {
    storage.emplace(o_.inputs[day], kinds_[day], chunk_bytes_, &read_buffers_);
  }
  return *storage;
}

InputChunk Run::next_chunk(InputReader& reader) {
  PhaseTimer t(read_seconds_);
  return reader.next();
}

void Run::pass1(bool build_vocab, size_t first_day) {
  Pass1Setup setup;
  setup.modulus = modulus_;
  setup.build_vocab = build_vocab;
  setup.stop_at_error = o_.on_bad_row == BadRowPolicy::error;
  setup.want_rows = emit_.has_value() || (use_cache_ && !build_vocab);
  setup.index_rows = use_cache_ && build_vocab;
  setup.keep_rows = keep_rows_;
  backend_->begin_pass1(setup, vocab_);
  cache_has_indices_ = build_vocab;
  for (size_t day = first_day; day < o_.inputs.size(); ++day) {
    std::optional<InputReader> reader_storage;
    InputReader& reader = open_reader(reader_storage, day, false);
    if (keep_maps_ && kinds_[day] == FileKind::bin) kept_maps_[day] = reader.keep_mapping();
    DayStats& ds = stats_.days[day];
    ds.rows = ds.bad_rows = 0;
    if (use_cache_ && kinds_[day] != FileKind::bin) open_cache(day);
    const bool cache = use_cache_ && cache_fds_[day] >= 0;
    uint64_t lines = 0;
    // In file order: the line numbers of errors, the counts, the decoded-row files.
    PieceSink sink = [&](const PieceOutput& p) {
      count_piece(day, p.result, lines);
      if (p.result.rows == 0 || p.rows == nullptr) return;
      PhaseTimer t(write_seconds_);
      const auto* bytes = reinterpret_cast<const uint8_t*>(p.rows);
      if (cache && !build_vocab) write_cache(day, bytes, p.result.rows * kBinaryRowBytes);
      if (emit_) emit_->write(ByteSpan(bytes, p.result.rows * kBinaryRowBytes));
    };
    IndexRowsSink index_sink;
    if (cache && build_vocab) {
      index_sink = [&](const uint32_t* rows, size_t n) {
        PhaseTimer t(write_seconds_);
        write_cache(day, reinterpret_cast<const uint8_t*>(rows), n * kBinaryRowBytes);
      };
    }
    read_day(reader, day, "pass 1", false,
             [&](const InputChunk& chunk) { backend_->pass1_chunk(day, chunk, sink, index_sink); });
    if (build_vocab && checkpoint_due(day)) checkpoint_after(day, json());
  }
  if (build_vocab) backend_->sync_vocab();
}

void Run::read_day(InputReader& reader, size_t day, const char* pass, bool cached,
                   const std::function<void(const InputChunk&)>& process) {
  DayStats& ds = stats_.days[day];
  // A decode cache holds pass 1's rows, 160 bytes each: its bytes stand for the input's.
  const double input_per_cache_byte =
      static_cast<double>(ds.input_bytes) /
      static_cast<double>(std::max<uint64_t>(ds.rows * kBinaryRowBytes, 1));
  uint64_t last_bytes = 0;
  const auto advance = [&](uint64_t now) {
    if (now <= last_bytes) return;
    done_bytes_ += now - last_bytes;
    last_bytes = now;
  };
  for (;;) {
    InputChunk chunk = next_chunk(reader);
    if (chunk.empty()) break;
    process(chunk);
    advance(cached ? std::min(static_cast<uint64_t>(static_cast<double>(reader.file_bytes()) *
                                                    input_per_cache_byte),
                              ds.input_bytes)
                   : reader.file_bytes());
    check_memory(pass);
    report_progress(pass, day);
  }
  backend_->flush();
  if (!cached) ds.input_bytes = reader.file_bytes();
  if (last_bytes < ds.input_bytes) {
    advance(ds.input_bytes);
    report_progress(pass, day);
  }
}

bool Run::checkpoint_due(size_t day) const {
  // At most once every checkpoint_seconds, so that a rerun after a crash continues with the next
  // day (short runs never pay for it). With --vocab-from it is state.json alone.
  return o_.resume && (o_.write_vocab || o_.vocab_from) && day + 1 < o_.inputs.size() &&
         seconds_since(last_checkpoint_) >= o_.checkpoint_seconds;
}

void Run::checkpoint_after(size_t day, const json& outputs) {
  backend_->sync_vocab();
  PhaseTimer t(write_seconds_);
  save_vocab(pass1_fp_, day + 1, outputs);
  last_checkpoint_ = Clock::now();
}

Pass2Setup Run::pass2_setup() const {
  Pass2Setup setup;
  setup.modulus = modulus_;
  setup.stop_at_error = o_.on_bad_row == BadRowPolicy::error;
  setup.int_dense = o_.output_format == OutputFormat::dlrm;
  setup.apply_log = o_.apply_log && !setup.int_dense;
  setup.log_offset = o_.log_offset;
  return setup;
}

json Run::pass2_fingerprint() const {
  json fp2 = {{"cardinality", stats_.cardinality},
              {"output_format", output_format_name(o_.output_format)},
              {"min_freq", o_.min_freq},
              {"id_base", o_.id_base},
              {"oov_id", o_.oov_id ? *o_.oov_id : -1},
              {"apply_log", o_.apply_log},
              {"log_offset", o_.log_offset},
              {"split_last", static_cast<int>(o_.split_last)},
              {"on_bad_row", bad_row_policy_name(o_.on_bad_row)},
              {"vocab_from", o_.vocab_from ? escape_invalid_utf8(o_.vocab_from->string()) : ""}};
  if (!o_.vocab_from) {
    // The vocabulary built from the inputs, as far as its size tells.
    uint64_t rows = 0;
    for (const auto& d : stats_.days) rows += d.rows;
    fp2["vocab_rows"] = rows;
  } else {
    // A rebuilt vocabulary at the same path must not reuse outputs made with the old one.
    fp2["vocab_from_id"] = file_identity(vocab_json_of(*o_.vocab_from));
  }
  json inputs = json::array();
  for (const auto& p : o_.inputs) inputs.push_back(file_identity(p));
  fp2["inputs"] = inputs;
  return fp2;
}

std::vector<std::string> Run::day_stems(size_t day) const {
  if (day + 1 < o_.inputs.size() || o_.split_last == SplitLast::none) return {stem(day)};
  return o_.split_last == SplitLast::test_val ? std::vector<std::string>{"test", "val"}
                                              : std::vector<std::string>{"val", "test"};
}

bool Run::outputs_exist(size_t day) const {
  for (const auto& s : day_stems(day))
    for (const auto& f : output_files(o_.output_format, o_.out_dir, s))
      if (!fs::exists(f)) return false;
  return true;
}

void Run::save_state(const json& fp2, const std::vector<size_t>& days_done) {
  json days = json::array();
  for (const auto& d : stats_.days)
    days.push_back({{"rows", d.rows}, {"bad_rows", d.bad_rows}, {"input_bytes", d.input_bytes}});
  json st = {{"schema", "dlprep.criteo-state/1"},
             {"pass2", fp2},
             {"days_done", days_done},
             {"days", days}};
  PhaseTimer t(write_seconds_);
  write_json_file(o_.out_dir / "state.json", st);
}

std::vector<size_t> Run::days_done(const json& fp2, bool restore_counts) {
  std::vector<size_t> done;
  const fs::path path = o_.out_dir / "state.json";
  if (!o_.resume || o_.discard_outputs || !fs::exists(path)) return done;
  try {
    const json st = read_json_file(path);
    if (st.value("pass2", json()) != fp2) return done;
    const json days = st.value("days", json::array());
    for (const json& d : st.at("days_done")) {
      const auto day = d.get<size_t>();
      if (day >= o_.inputs.size() || !outputs_exist(day)) continue;
      if (restore_counts) {
        if (!days.is_array() || day >= days.size()) continue;
        const json& c = days[day];
        // Checked before get<>(), which would wrap a negative count.
        const auto count = [&](const char* key) {
          if (!c.at(key).is_number_unsigned()) throw Error(Errc::corrupt_data, "bad count");
          return c.at(key).get<uint64_t>();
        };
        DayStats& ds = stats_.days[day];
        ds.rows = count("rows");
        ds.bad_rows = count("bad_rows");
        ds.input_bytes = count("input_bytes");
      }
      done.push_back(day);
    }
  } catch (const Error&) {
    done.clear();  // an unreadable state file only means nothing is reused
  } catch (const json::exception&) {
    done.clear();
  }
  return done;
}

void Run::pass2() {
  backend_->begin_pass2(pass2_setup(), vocab_);
  const bool discard = o_.discard_outputs;
  // Pass-2 resume state: which days are complete under these exact output settings.
  const json fp2 = pass2_fingerprint();
  const std::vector<size_t> done_days = days_done(fp2, false);
  std::vector<size_t> completed;

  for (size_t day = 0; day < o_.inputs.size(); ++day) {
    DayStats& ds = stats_.days[day];
    if (std::find(done_days.begin(), done_days.end(), day) != done_days.end()) {
      ds.skipped = true;
      completed.push_back(day);
      done_bytes_ += ds.input_bytes;
      continue;
    }
    std::unique_ptr<DayWriter> writer;
    if (!discard) {
      PhaseTimer t(write_seconds_);
      writer = open_writer(day, ds.rows);
    }
    uint64_t lines = 0, rows = 0;
    PieceSink sink = [&](const PieceOutput& p) {
      report_bad_rows(day, p.result, lines);
      lines += p.result.lines;
      rows += p.result.rows;
      if (p.result.rows == 0 || !writer) return;
      PhaseTimer t(write_seconds_);
      writer->write(p.block);
    };
    const bool cached = use_cache_ && cache_fds_[day] >= 0;
    if (backend_->kept_day(day)) {
      backend_->pass2_kept_day(day, sink);
      backend_->flush();
      done_bytes_ += ds.input_bytes;
      report_progress("pass 2", day);
    } else {
      std::optional<InputReader> reader_storage;
      InputReader& reader = open_reader(reader_storage, day, cached);
      const bool indices = cached && cache_has_indices_;
      read_day(reader, day, "pass 2", cached,
               [&](const InputChunk& chunk) { backend_->pass2_chunk(chunk, indices, sink); });
    }
    if (day < kept_maps_.size()) kept_maps_[day].reset();  // unmapped once its reader is gone
    if (discard && rows != ds.rows) {
      // What the writers check at commit (writers.cpp), when there are none.
      throw Error(Errc::corrupt_data, stem(day) + ": the input changed between the passes (" +
                                          std::to_string(ds.rows) + " rows in pass 1, " +
                                          std::to_string(rows) + " in pass 2)");
    }
    if (writer) {
      PhaseTimer t(write_seconds_);
      writer->commit();
    }
    if (cached) {
      ::close(cache_fds_[day]);  // frees the decoded rows of this day at once
      cache_fds_[day] = -1;
    }
    if (discard) continue;
    completed.push_back(day);
    save_state(fp2, completed);
  }
}

bool Run::single_pass_allowed() const {
  // IDs up to id_base + 2^30 - 1 (a hash column's table holds at most 2^30 values), and that
  // plus one (num_embeddings), fit in int32.
  constexpr int64_t kMaxIdBase = (int64_t{1} << 30) - 1;
  // Under --on-bad-row skip a split last day is decoded twice (once to count its rows): worth it
  // while that day is at most half of the input, else two passes decode it twice at most too.
  const bool split_counted = o_.split_last == SplitLast::none ||
                             o_.on_bad_row == BadRowPolicy::error ||
                             2 * regular_file_size(o_.inputs.back()) <= total_input_bytes_;
  // Every ID is final at first sight: from a given vocabulary (pass 2 alone, which every
  // backend has), or from the first-appearance index (the backend's GenVocab assigns it).
  // The split layout's ID types come from the final table sizes (see the top).
  const bool ids_known =
      o_.vocab_from || (backend_->single_pass() && o_.min_freq <= 1 && o_.id_base <= kMaxIdBase &&
                        o_.output_format != OutputFormat::split);
  return o_.single_pass && ids_known && o_.output_format != OutputFormat::none && split_counted;
}

uint64_t Run::count_rows(size_t day) {
  if (kinds_[day] == FileKind::tsv && preloaded_.empty() && o_.on_bad_row == BadRowPolicy::error) {
    if (const std::optional<uint64_t> lines = count_file_lines(o_.inputs[day], threads_)) {
      done_bytes_ += regular_file_size(o_.inputs[day]);
      report_progress("counting rows", day);
      return *lines;
    }
  }
  std::optional<InputReader> storage;
  InputReader& reader = open_reader(storage, day, false);
  uint64_t rows = 0, last_bytes = 0;
  for (;;) {
    const InputChunk chunk = next_chunk(reader);
    if (chunk.empty()) break;
    done_bytes_ += reader.file_bytes() - last_bytes;
    last_bytes = reader.file_bytes();
    report_progress("counting rows", day);
    rows += chunk.rows.size() / kNumFields;  // binary rows are all valid
    if (chunk.text.empty()) continue;
    rows += o_.on_bad_row == BadRowPolicy::skip ? valid_rows(chunk.text, threads_)
                                                : count_lines(chunk.text);
  }
  return rows;
}

std::unique_ptr<DayWriter> Run::open_writer(size_t day, std::optional<uint64_t> rows) {
  const std::vector<std::string> stems = day_stems(day);
  if (o_.output_format == OutputFormat::split && !ids_final_)
    throw Error(Errc::internal, "the split layout's files need the final table sizes");
  const auto open = [&](const std::string& stem, std::optional<uint64_t> n) {
    return open_day_writer(o_.output_format, o_.out_dir, stem, n, stats_.num_embeddings);
  };
  if (stems.size() == 1) return open(stems[0], rows);
  if (!rows) throw Error(Errc::internal, "a split day's files need its row count");
  const uint64_t first = (*rows + 1) / 2;  // numpy.array_split: the first half gets the extra
  return split_writer(open(stems[0], first), open(stems[1], *rows - first), first);
}

json Run::single_pass_outputs() const {
  return {{"output_format", output_format_name(o_.output_format)},
          {"id_base", o_.id_base},
          {"apply_log", o_.apply_log},
          {"log_offset", o_.log_offset}};
}

bool Run::single_pass_resumable(size_t done) const {
  if (done == 0) return true;
  if (resumed_outputs_ != single_pass_outputs()) return false;
  for (size_t day = 0; day < done; ++day)
    if (!outputs_exist(day)) return false;
  return true;
}

void Run::single_pass(size_t first_day) {
  passes_ = 1;
  Pass1Setup setup;
  setup.modulus = modulus_;
  setup.stop_at_error = o_.on_bad_row == BadRowPolicy::error;
  setup.assign_ids = true;
  setup.want_rows = emit_.has_value();
  setup.id_base = static_cast<int32_t>(o_.id_base);
  setup.transform = pass2_setup();
  backend_->begin_pass1(setup, vocab_);
  const bool discard = o_.discard_outputs;
  for (size_t day = 0; day < first_day; ++day) stats_.days[day].skipped = true;
  if (!discard && day_stems(o_.inputs.size() - 1).size() == 2)
    counted_bytes_ = regular_file_size(o_.inputs.back());
  std::vector<std::unique_ptr<DayWriter>> finished;  // complete days, not yet under their names
  for (size_t day = first_day; day < o_.inputs.size(); ++day) {
    if (auto writer = single_pass_day(day, [&](const InputChunk& chunk, const PieceSink& sink) {
          backend_->pass1_chunk(day, chunk, sink, IndexRowsSink());
        }))
      finished.push_back(std::move(writer));
    if (checkpoint_due(day)) {
      publish(finished);  // first: the checkpoint records that the days before it have their files
      checkpoint_after(day, discard ? json() : single_pass_outputs());
    }
  }
  publish(finished);
  backend_->sync_vocab();
}

void Run::vocab_single_pass() {
  passes_ = 1;
  Pass2Setup setup = pass2_setup();
  setup.want_rows = emit_.has_value();
  backend_->begin_pass2(setup, vocab_);
  const json fp2 = pass2_fingerprint();
  // The checkpoint is state.json, which also records the counts of the days it lists.
  // --emit-binary's file holds every day's rows: then no day is skipped.
  const std::vector<size_t> done = emit_ ? std::vector<size_t>() : days_done(fp2, true);
  const auto is_done = [&](size_t day) {
    return std::find(done.begin(), done.end(), day) != done.end();
  };
  const size_t last = o_.inputs.size() - 1;
  if (!o_.discard_outputs && day_stems(last).size() == 2 && !is_done(last))
    counted_bytes_ = regular_file_size(o_.inputs.back());
  std::vector<size_t> completed, finished_days;
  std::vector<std::unique_ptr<DayWriter>> finished;
  const auto checkpoint = [&] {
    publish(finished);
    completed.insert(completed.end(), finished_days.begin(), finished_days.end());
    finished_days.clear();
    save_state(fp2, completed);
    last_checkpoint_ = Clock::now();
  };
  for (size_t day = 0; day < o_.inputs.size(); ++day) {
    if (is_done(day)) {
      stats_.days[day].skipped = true;
      completed.push_back(day);
      done_bytes_ += stats_.days[day].input_bytes;
      continue;
    }
    if (auto writer = single_pass_day(day, [&](const InputChunk& chunk, const PieceSink& sink) {
          backend_->pass2_chunk(chunk, false, sink);
        })) {
      finished.push_back(std::move(writer));
      finished_days.push_back(day);
    }
    if (o_.discard_outputs) continue;  // no state either
    if (checkpoint_due(day)) checkpoint();
  }
  if (!o_.discard_outputs) checkpoint();
}

std::unique_ptr<DayWriter> Run::single_pass_day(
    size_t day, const std::function<void(const InputChunk&, const PieceSink&)>& process) {
  DayStats& ds = stats_.days[day];
  ds.rows = ds.bad_rows = 0;
  std::unique_ptr<DayWriter> writer;
  if (!o_.discard_outputs) {
    const std::optional<uint64_t> rows =
        day_stems(day).size() == 2 ? std::optional<uint64_t>(count_rows(day)) : std::nullopt;
    PhaseTimer t(write_seconds_);
    writer = open_writer(day, rows);
  }
  std::optional<InputReader> reader_storage;
  InputReader& reader = open_reader(reader_storage, day, false);
  uint64_t lines = 0;
  const PieceSink sink = [&](const PieceOutput& p) {
    count_piece(day, p.result, lines);
    if (p.result.rows == 0) return;
    PhaseTimer t(write_seconds_);
    if (writer) writer->write(p.block);
    if (emit_ && p.rows != nullptr)
      emit_->write(
          ByteSpan(reinterpret_cast<const uint8_t*>(p.rows), p.result.rows * kBinaryRowBytes));
  };
  read_day(reader, day, "single pass", false,
           [&](const InputChunk& chunk) { process(chunk, sink); });
  if (writer) {
    PhaseTimer t(write_seconds_);
    writer->finish();
  }
  return writer;
}

void Run::publish(std::vector<std::unique_ptr<DayWriter>>& finished) {
  PhaseTimer t(write_seconds_);
  for (auto& w : finished) w->commit();
  finished.clear();
}

void Run::finalize_vocab() {
  for (int j = 0; j < kNumSparse; ++j) {
    stats_.cardinality[j] = vocab_[j].size();
    int64_t oov = o_.oov_id ? *o_.oov_id : (o_.id_base >= 1 ? o_.id_base - 1 : -1);
    if (oov < 0) {
      // Default OOV with id_base 0: one past the column's last ID (the number of kept values).
      int64_t kept = 0;
      for (uint64_t c : vocab_[j].counts()) kept += c >= o_.min_freq ? 1 : 0;
      oov = o_.id_base + kept;
    }
    if (oov >= INT32_MAX)
      throw Error(Errc::limit_exceeded,
                  "OOV ID " + std::to_string(oov) + ": its num_embeddings does not fit in int32");
    stats_.kept[j] = vocab_[j].finalize(std::max<uint64_t>(o_.min_freq, 1), o_.id_base,
                                        static_cast<int32_t>(oov));
    stats_.num_embeddings[j] =
        static_cast<uint64_t>(std::max(o_.id_base + static_cast<int64_t>(stats_.kept[j]), oov + 1));
  }
  ids_final_ = true;
}

void Run::save_vocab(const json& pass1_fp, size_t days_done, const json& outputs) {
  json days = json::array();
  for (const auto& d : stats_.days)
    days.push_back({{"input", d.input},
                    {"rows", d.rows},
                    {"bad_rows", d.bad_rows},
                    {"input_bytes", d.input_bytes}});
  json fields = {{"days", days}, {"days_done", days_done}, {"pass1", pass1_fp}};
  if (!outputs.is_null()) fields["single_pass_outputs"] = outputs;
  write_vocab_dir(o_.out_dir / "vocab", modulus_, vocab_, o_, std::move(fields));
}

size_t Run::try_resume_vocab(const json& pass1_fp) {
  fs::path vj = o_.out_dir / "vocab" / "vocab.json";
  if (!o_.resume || !fs::exists(vj)) return 0;
  try {
    json v = read_json_file(vj);
    if (v.value("pass1", json()) != pass1_fp) return 0;
    const json& days = v["days"];
    size_t done = v.value("days_done", days.size());
    if (days.size() != o_.inputs.size() || done == 0 || done > days.size()) return 0;
    load_vocab_from(o_.out_dir / "vocab");
    resumed_outputs_ = v.value("single_pass_outputs", json());
    for (size_t d = 0; d < done; ++d) {
      stats_.days[d].rows = days[d]["rows"].get<uint64_t>();
      stats_.days[d].bad_rows = days[d]["bad_rows"].get<uint64_t>();
      stats_.days[d].input_bytes = days[d]["input_bytes"].get<uint64_t>();
    }
    return done;
  } catch (const Error&) {
    return 0;  // an unusable checkpoint only means pass 1 runs again
  } catch (const json::exception&) {
    return 0;
  }
}

void Run::load_vocab_from(const fs::path& where) {
  SavedVocab saved = read_vocab_dir(where);
  for (int j = 0; j < kNumSparse; ++j)
    if (o_.vocab_from && o_.modulus[j] != 0 && o_.modulus[j] != saved.modulus[j])
      throw Error(Errc::invalid_argument, "--modulus differs from the vocabulary's (" +
                                              std::to_string(saved.modulus[j]) + ")");
  modulus_ = saved.modulus;
  vocab_ = std::move(saved.columns);
}

// A run that fails or is interrupted before it writes a file leaves no trace: the output directory
// it created goes again while it holds nothing but empty directories (the split layout's day
// directories).
PreprocessStats Run::run() {
  try {
    return execute();
  } catch (...) {
    if (out_dir_) out_dir_->discard_if_empty();
    throw;
  }
}

PreprocessStats Run::execute() {
  auto t0 = Clock::now();
  validate();
  threads_ = o_.threads ? o_.threads : hardware_threads();
  stats_.threads = threads_;
  stats_.gzip_backend = gzip_backend_name();
  if (!backend_) backend_ = make_preprocess_backend(o_.device, threads_);
  backend_->reset_timings();
  stats_.device = std::string(backend_->device_name());
  chunk_bytes_ = o_.chunk_bytes ? o_.chunk_bytes : backend_->default_chunk_bytes();
  read_buffers_.allocate = [this](size_t bytes) { return backend_->allocate_host(bytes); };
  modulus_ = o_.modulus;
  for (const auto& in : o_.inputs) {
    kinds_.push_back(detect_file_kind(in, o_.input_format));
    DayStats d;
    d.input = escape_invalid_utf8(in.string());  // stats.json, state.json: JSON holds it
    stats_.days.push_back(d);
    total_input_bytes_ += regular_file_size(in);
  }
  if (o_.max_memory_bytes) {
    uint64_t need = static_cast<uint64_t>(chunk_bytes_) * 3;
    for (uint32_t m : modulus_)
      if (m && m <= kFlatMaxModulus) need += uint64_t{m} * 4;
    if (o_.preload_inputs) need += total_input_bytes_;
    if (need > o_.max_memory_bytes)
      throw Error(Errc::limit_exceeded,
                  "needs about " + std::to_string(need >> 20) + " MiB (vocabulary tables and " +
                      "chunk buffers) but --max-memory is " + memory_text(o_.max_memory_bytes));
  }
  out_dir_.emplace(o_.out_dir);
  out_lock_.emplace(o_.out_dir);
  // What a killed run (SIGKILL) left under temporary names: the lock says no live run owns it.
  remove_dead_temp_files(o_.out_dir);
  std::error_code dir_ec;
  for (fs::directory_iterator it(o_.out_dir, dir_ec), end; !dir_ec && it != end;
       it.increment(dir_ec)) {
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() == fs::file_type::directory)
      remove_dead_temp_files(it->path());  // vocab/, the split layout's day folders
  }
  if (o_.emit_binary) {
    const fs::path parent = o_.emit_binary->parent_path();
    remove_dead_temp_files(parent.empty() ? fs::path(".") : parent,
                           o_.emit_binary->filename().string());
  }
  cache_fds_.assign(o_.inputs.size(), -1);
  const bool pass2_runs = o_.output_format != OutputFormat::none;
  if (pass2_runs && o_.decode_cache != DecodeCache::off && backend_->host_decode_cache() &&
      !o_.preload_inputs) {
    // Estimated decoded size: 160 bytes per row of about 240 text bytes; gzip text is about 4x
    // smaller than the text.
    uint64_t estimate = 0;
    for (size_t d = 0; d < o_.inputs.size(); ++d) {
      uint64_t size = regular_file_size(o_.inputs[d]);
      if (kinds_[d] == FileKind::tsv) estimate += size / 3 * 2;
      if (kinds_[d] == FileKind::tsv_gzip) estimate += size * 3;
    }
    struct statvfs vfs {};
    uint64_t free_bytes = ::statvfs(o_.out_dir.c_str(), &vfs) == 0
                              ? static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize
                              : 0;
    // auto: only while the cache stays well inside the page cache. Measured at 10M rows (1.6 GB of
    // decoded rows) it cost 7.4 s more kernel time (writeback of the temporary file) than the 2.4 s
    // of decoding it saved; at 1M rows (160 MB) it saved 6% of the CPU time.
    use_cache_ = estimate > 0 && (o_.decode_cache == DecodeCache::on ||
                                  (estimate <= kAutoCacheMaxBytes && estimate * 2 < free_bytes));
  }
  // Binary inputs are their own decoded rows: the cache is their mapping, kept from pass 1 to
  // pass 2 under the same size rule (1M rows: 160 MB, 10% less wall time, the faults of mapping
  // them again saved), and within half of --max-memory, since mapped pages count in the RSS.
  uint64_t binary_bytes = 0;
  for (size_t d = 0; d < o_.inputs.size(); ++d)
    if (kinds_[d] == FileKind::bin) binary_bytes += regular_file_size(o_.inputs[d]);
  keep_maps_ = pass2_runs && o_.decode_cache != DecodeCache::off && backend_->host_decode_cache() &&
               !o_.preload_inputs && binary_bytes > 0 &&
               (o_.decode_cache == DecodeCache::on || binary_bytes <= kAutoCacheMaxBytes) &&
               (o_.max_memory_bytes == 0 || binary_bytes <= o_.max_memory_bytes / 2);
  kept_maps_.assign(keep_maps_ ? o_.inputs.size() : 0, nullptr);
  // A backend without a host decode cache (CUDA) may keep the decoded rows itself.
  keep_rows_ = pass2_runs && o_.decode_cache != DecodeCache::off && !backend_->host_decode_cache();

  json inputs = json::array();
  for (const auto& p : o_.inputs) inputs.push_back(file_identity(p));
  json pass1_fp = {{"inputs", inputs},
                   {"input_format", input_format_name(o_.input_format)},
                   {"modulus", modulus_},
                   {"on_bad_row", bad_row_policy_name(o_.on_bad_row)}};

  pass1_fp_ = pass1_fp;
  if (o_.preload_inputs) {
    auto tp = Clock::now();
    preload();
    stats_.preload_seconds = seconds_since(tp);
  }
  auto t1 = Clock::now();
  if (o_.emit_binary) {
    emit_.emplace(*o_.emit_binary);
    std::string h = binary_header();
    emit_->write(ByteSpan(reinterpret_cast<const uint8_t*>(h.data()), h.size()));
  }
  if (o_.vocab_from) {
    load_vocab_from(*o_.vocab_from);
    stats_.vocab_reused = true;
    stats_.single_pass = single_pass_allowed();
    if (stats_.single_pass) {
      use_cache_ = keep_maps_ = false;  // nothing is read twice
      finalize_vocab();                 // the IDs are known before any row is read
      vocab_single_pass();
    } else {
      pass1(false);  // counts rows (the .npy headers need them) and validates every row
    }
  } else if (size_t done = o_.emit_binary ? 0 : try_resume_vocab(pass1_fp);
             done == o_.inputs.size()) {
    stats_.vocab_reused = true;
    use_cache_ = keep_maps_ = false;  // pass 1 did not run: pass 2 reads the inputs
    for (const auto& d : stats_.days) done_bytes_ += d.input_bytes;
  } else {
    // From scratch, or after the days of a partial checkpoint (their pass 2 reads the inputs).
    if (done == 0) {
      vocab_.clear();
      for (int j = 0; j < kNumSparse; ++j) vocab_.emplace_back(modulus_[j]);
    }
    stats_.days_resumed_in_pass1 = done;
    for (size_t d = 0; d < done; ++d) done_bytes_ += stats_.days[d].input_bytes;
    stats_.single_pass = single_pass_allowed() && single_pass_resumable(done);
    if (stats_.single_pass) {
      use_cache_ = keep_maps_ = false;  // nothing is read twice
      single_pass(done);
    } else {
      pass1(true, done);
    }
  }
  if (emit_) {
    PhaseTimer t(write_seconds_);
    emit_->commit();
  }
  if (!stats_.vocab_reused && o_.write_vocab) {
    PhaseTimer t(write_seconds_);
    save_vocab(pass1_fp, o_.inputs.size());
  }
  stats_.pass1_seconds = seconds_since(t1);

  auto t2 = Clock::now();
  if (!ids_final_) finalize_vocab();
  if (stats_.single_pass && !o_.vocab_from) {
    // A rerun finds every day done, as after pass 2.
    if (!o_.discard_outputs) {
      std::vector<size_t> all(o_.inputs.size());
      for (size_t d = 0; d < all.size(); ++d) all[d] = d;
      save_state(pass2_fingerprint(), all);
    }
  } else if (!stats_.single_pass && pass2_runs) {
    pass2();
  }
  for (const auto& d : stats_.days) {
    stats_.rows += d.rows;
    stats_.bad_rows += d.bad_rows;
  }
  backend_->flush();
  finished_ = true;  // nothing in flight: the backend may serve the Preprocessor's next run
  stats_.pass2_seconds = seconds_since(t2);
  BackendTimings bt = backend_->timings();
  stats_.decode_cache = use_cache_ || keep_maps_ || bt.kept_rows > 0;
  stats_.read_seconds = read_seconds_;
  stats_.write_seconds = write_seconds_;
  stats_.compute_seconds =
      std::max(0.0, stats_.pass1_seconds + stats_.pass2_seconds - read_seconds_ - write_seconds_);
  stats_.h2d_seconds = bt.h2d_seconds;
  stats_.kernel_seconds = bt.kernel_seconds;
  stats_.d2h_seconds = bt.d2h_seconds;
  stats_.alloc_seconds = bt.alloc_seconds;
  stats_.allocations = bt.allocations;
  stats_.wait_seconds = bt.wait_seconds;
  stats_.setup_seconds = bt.setup_seconds;
  stats_.device_chunks = bt.chunks;
  stats_.log_values_on_host = bt.log_values_on_host;
  if (!o_.discard_outputs) {
    PhaseTimer t(write_seconds_);
    write_table_sizes(o_.output_format, o_.out_dir, stats_.num_embeddings);
    remove_stale_outputs();
  }
  stats_.total_seconds = seconds_since(t0);
  stats_.peak_rss_bytes = peak_rss_bytes();
  // A rerun that wrote no day keeps the stats of the run that did (its rates, its timings).
  if (stats_.rows_written() > 0 || !fs::exists(o_.out_dir / "stats.json"))
    write_json_file(o_.out_dir / "stats.json", json::parse(stats_.to_json()));
  return stats_;
}

}  // namespace

uint64_t PreprocessStats::rows_written() const {
  uint64_t n = 0;
  for (const DayStats& d : days) n += d.skipped ? 0 : d.rows;
  return n;
}

std::string PreprocessStats::to_json() const {
  json days_j = json::array();
  for (const auto& d : days)
    days_j.push_back({{"input", d.input},
                      {"rows", d.rows},
                      {"bad_rows", d.bad_rows},
                      {"input_bytes", d.input_bytes},
                      {"skipped", d.skipped}});
  // Rows of the days written per second; null when every day was up to date (none were read).
  const auto rate = [this](double seconds) {
    return rows_written() > 0 && seconds > 0 ? json(static_cast<double>(rows_written()) / seconds)
                                             : json(nullptr);
  };
  // Where the time went. compute: both passes from chunks in host memory to the output arrays
  // back in host memory (for CUDA with preloaded inputs, the figure BENCHMARKS.md defines).
  json phases = {{"preload_seconds", preload_seconds},
                 {"read_seconds", read_seconds},
                 {"compute_seconds", compute_seconds},
                 {"write_seconds", write_seconds},
                 {"compute_rows_per_s", rate(compute_seconds)}};
  json j = {{"schema", "dlprep.criteo-preprocess/1"},
            {"rows", rows},
            {"bad_rows", bad_rows},
            {"days", days_j},
            {"cardinality", cardinality},
            {"kept", kept},
            {"num_embeddings", num_embeddings},
            {"pass1_seconds", pass1_seconds},
            {"pass2_seconds", pass2_seconds},
            {"total_seconds", total_seconds},
            {"rows_per_s", rate(total_seconds)},
            {"phases", phases},
            {"vocab_reused", vocab_reused},
            {"days_resumed_in_pass1", days_resumed_in_pass1},
            {"removed_outputs", removed_outputs},
            {"single_pass", single_pass},
            {"decode_cache", decode_cache},
            {"peak_rss_bytes", peak_rss_bytes},
            {"threads", threads},
            {"device", device},
            {"gzip_backend", gzip_backend}};
  if (device == "cuda") {
    // Sums of CUDA-event intervals; the streams overlap, so they may exceed compute_seconds.
    j["cuda"] = {{"h2d_seconds", h2d_seconds},
                 {"kernel_seconds", kernel_seconds},
                 {"d2h_seconds", d2h_seconds},
                 {"alloc_seconds", alloc_seconds},
                 {"allocations", allocations},
                 {"wait_seconds", wait_seconds},
                 {"setup_seconds", setup_seconds},
                 {"device_chunks", device_chunks},
                 {"log_values_on_host", log_values_on_host}};
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace);  // never throws on a name
}

PreprocessStats preprocess(const PreprocessOptions& options) { return Preprocessor().run(options); }

Preprocessor::Preprocessor() = default;
Preprocessor::~Preprocessor() = default;

PreprocessStats Preprocessor::run(const PreprocessOptions& options) {
  const unsigned threads = options.threads ? options.threads : hardware_threads();
  if (backend_ && (options.device != device_ || threads != threads_)) backend_.reset();
  device_ = options.device;
  threads_ = threads;
  Run run(options, backend_);
  return run.run();
}

}  // namespace dlprep::tabular
