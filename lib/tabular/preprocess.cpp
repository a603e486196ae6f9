// criteo-preprocess's pipeline: everything that is the same on every backend. It reads the
// inputs in chunks, keeps the resume state and the vocabulary checkpoints (their directory:
// vocab_dir.cpp), assigns the IDs, counts lines, reports malformed rows as file:line, writes
// every output and stats.json. This file checks the options, sets a run up and orders its passes;
// the steps are in the files preprocess_run.hpp lists. The compute core of each chunk runs on a
// PreprocessBackend (preprocess_backend.hpp: the CPU reference in preprocess_cpu.cpp, CUDA in
// cuda/tabular/), chosen by preprocess_registry.cpp.
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/utf8.hpp"
#include "tabular/gzip_reader.hpp"
#include "tabular/json_file.hpp"
#include "tabular/preprocess_run.hpp"
#include "tabular/vocab_dir.hpp"

namespace dlprep::tabular::preprocess_detail {
namespace {

// Largest decode cache --decode-cache auto uses (see Run::execute for the measurement behind it).
constexpr uint64_t kAutoCacheMaxBytes = uint64_t{1} << 30;

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

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

// Whether the stats.json at `file` is of the arrays these stats describe: the same days, rows and
// tables. False when it cannot be read.
bool describes_same_arrays(const fs::path& file, const PreprocessStats& stats) {
  const json now = json::parse(stats.to_json());
  try {
    const json old = read_json_file(file);
    for (const char* key : {"rows", "bad_rows", "cardinality", "kept", "num_embeddings"})
      if (old.at(key) != now.at(key)) return false;
    const json& days = old.at("days");
    if (days.size() != now.at("days").size()) return false;
    for (size_t d = 0; d < days.size(); ++d)
      for (const char* key : {"input", "rows", "bad_rows"})
        if (days.at(d).at(key) != now["days"][d][key]) return false;
    return true;
  } catch (const Error&) {
    return false;
  } catch (const json::exception&) {
    return false;
  }
}

}  // namespace

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

const char* bad_row_policy_name(BadRowPolicy p) {
  return p == BadRowPolicy::skip ? "skip" : "error";
}

void Run::validate() {
  if (o_.inputs.empty()) throw Error(Errc::invalid_argument, "no input files");
  if (o_.out_dir.empty()) throw Error(Errc::invalid_argument, "no output directory (-o)");
  // A file where a folder must be: one clear line, before any work.
  auto refuse_file_in_the_way = [](const fs::path& dir, const std::string& option,
                                   const fs::path& path) {
    if (const std::optional<fs::path> file = file_in_the_way(dir))
      throw Error(Errc::invalid_argument, option + " " + path.string() + ": " +
                                              (*file == path ? "" : file->string() + " ") +
                                              "exists and is not a directory");
  };
  refuse_file_in_the_way(o_.out_dir, "-o", o_.out_dir);
  if (o_.emit_binary)
    refuse_file_in_the_way(o_.emit_binary->parent_path(), "--emit-binary", *o_.emit_binary);
  for (const fs::path& in : o_.inputs) {
    // A pipe could be read only once, and not even sniffed for its format without losing bytes.
    struct stat st {};
    const bool standard_input = in == "-" && ::stat(in.c_str(), &st) != 0;  // no file named "-"
    if (!standard_input && ::stat(in.c_str(), &st) != 0)
      throw Error(Errc::io, in.string() + ": cannot open: " + std::strerror(errno));
    if (standard_input)
      throw Error(Errc::invalid_argument,
                  "-: standard input cannot be an input: the inputs are read more than once and "
                  "resumed by size and time; name the file (gzip files are read as they are)");
    if (!S_ISREG(st.st_mode))
      throw Error(Errc::invalid_argument,
                  in.string() + ": not a regular file (a pipe or a device): the inputs are read " +
                      "more than once and resumed by size and time; save it to a file first " +
                      "(gzip files are read as they are)");
  }
  if (o_.id_base < 0 || o_.id_base > INT32_MAX)
    throw Error(Errc::invalid_argument,
                "--id-base " + std::to_string(o_.id_base) + " is not in [0, 2^31)");
  // num_embeddings, the OOV ID plus one at least, is stored as int32 (day_fea_count.npz).
  if (o_.oov_id && (*o_.oov_id < 0 || *o_.oov_id >= INT32_MAX))
    throw Error(Errc::invalid_argument,
                "--oov-id " + std::to_string(*o_.oov_id) + " is not in [0, 2^31 - 1)");
  if (o_.apply_log && !(o_.log_offset > 0 && std::isfinite(o_.log_offset)))
    throw Error(Errc::invalid_argument, "--log-offset " + std::to_string(o_.log_offset) +
                                            " must be finite and > 0 (log(0) is undefined)");
  if (o_.output_format == OutputFormat::dlrm && o_.apply_log)
    throw Error(Errc::invalid_argument,
                "--output-format dlrm stores integer dense values: add --no-log (the DLRM "
                "loader takes log(x+1))");
  if (o_.output_format == OutputFormat::split && !o_.apply_log)
    throw Error(Errc::invalid_argument,
                "--output-format split stores the dense values as float16 after the log (NVIDIA's "
                "layout), and --no-log (given, or brought by --preset dlrm or a --vocab-from "
                "run's conventions) leaves it out: drop --no-log or give --log-offset (1 for "
                "log(x+1)), or use --output-format npy or dlrm for integer values");
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
    // to a value. Its run's directory is held (shared) until the vocabulary is read: a run
    // writing it anew now is refused, as is one that starts meanwhile.
    const fs::path vocab_json = vocab_json_of(from);
    const fs::path vocab_dir = vocab_json.parent_path();
    const fs::path run_dir = vocab_dir.filename() == "vocab" ? vocab_dir.parent_path() : vocab_dir;
    try {
      vocab_from_lock_.emplace(run_dir.empty() ? fs::path(".") : run_dir,
                               DirectoryLock::Access::read);
    } catch (const Error& e) {
      throw Error(Errc::invalid_argument, "--vocab-from " + from.string() + ": " + e.what() +
                                              " (its vocabulary is being made): finish it first");
    }
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
  if (o_.emit_binary) {
    const std::string file = "--emit-binary " + o_.emit_binary->string();
    for (const fs::path& in : o_.inputs) {
      std::error_code ec;
      if (fs::equivalent(in, *o_.emit_binary, ec))
        throw Error(Errc::invalid_argument,
                    file + " is an input: it would be replaced by its rows");
    }
    std::error_code ec;
    if (fs::is_directory(*o_.emit_binary, ec))
      throw Error(Errc::invalid_argument, file + " is a directory: name the file to write");
    if (o_.vocab_from) {
      // The vocabulary's run directory, whose day files FILE could replace.
      const fs::path vocab = vocab_json_of(*o_.vocab_from).parent_path();
      const fs::path run = vocab.filename() == "vocab" ? vocab.parent_path() : vocab;
      if (is_within(*o_.emit_binary, run))
        throw Error(Errc::invalid_argument, file + " is inside " + run.string() +
                                                ", the --vocab-from run's directory: write it "
                                                "elsewhere");
    }
  }
  if (o_.warning) {
    if (const std::string w = day_order_problem(o_.inputs); !w.empty()) o_.warning(w);
    if (o_.split_last != SplitLast::none && o_.inputs.size() == 1 &&
        o_.output_format != OutputFormat::none)
      o_.warning(
          "one input, split (--split-last, or the preset's): its halves are the test and "
          "validation days, and no training day is written");
  }
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

// A run that fails or is interrupted before it writes a file leaves no trace: the output directory
// it created goes again while it holds nothing but empty directories (the split layout's day
// directories).
PreprocessStats Run::run() {
  try {
    return execute();
  } catch (...) {
    // Only while this run holds OUTDIR's lock: the run that holds it may be writing there.
    if (out_dir_ && out_lock_) out_dir_->discard_if_empty();
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
    if (o_.vocab_from) {
      need += vocab_dir_bytes(*o_.vocab_from);  // its tables, as vocab.json's cardinalities say
    } else {
      for (uint32_t m : modulus_)
        if (m && m <= kFlatMaxModulus) need += uint64_t{m} * 4;
    }
    if (o_.preload_inputs) need += total_input_bytes_;
    if (need > o_.max_memory_bytes)
      throw Error(Errc::limit_exceeded,
                  "needs about " + std::to_string(need >> 20) + " MiB (vocabulary tables and " +
                      "chunk buffers) but --max-memory is " + memory_text(o_.max_memory_bytes));
  }
  out_dir_.emplace(o_.out_dir);
  out_lock_.emplace(o_.out_dir);
  // Found before any day is written rather than at the vocabulary's first checkpoint.
  if (o_.write_vocab && !o_.vocab_from) {
    const fs::path vocab = o_.out_dir / "vocab";
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(vocab, ec);
    if (fs::exists(st) && !fs::is_directory(fs::status(vocab, ec)))
      throw Error(Errc::io, vocab.string() + ": not a folder, where the run writes its " +
                                "vocabulary: move it away (or run with --no-vocab)");
  }
  earlier_run_days_ = earlier_run_days();
  // The run writes, replaces and removes files in OUTDIR (a day file could be FILE's name).
  // Checked once OUTDIR exists, so that a link to it resolves.
  if (o_.emit_binary && is_within(*o_.emit_binary, o_.out_dir))
    throw Error(Errc::invalid_argument, "--emit-binary " + o_.emit_binary->string() +
                                            " is inside the output directory " +
                                            o_.out_dir.string() +
                                            ", whose files the run writes and removes: write it "
                                            "elsewhere");
  // What a killed run (SIGKILL) left under temporary names: the lock says no live run owns it.
  remove_dead_temp_files(o_.out_dir);
  std::error_code dir_ec;
  for (fs::directory_iterator it(o_.out_dir, dir_ec), end; !dir_ec && it != end;
       it.increment(dir_ec)) {
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() == fs::file_type::directory)
      remove_dead_temp_files(it->path());  // vocab/, the split layout's day folders
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
  if (o_.vocab_from) {
    const bool emit_complete = o_.emit_binary && emit_complete_in_state(!pass2_runs);
    if (o_.emit_binary && !emit_complete) open_emit(0);
    // Without arrays, FILE is all a run writes: complete, there is nothing to read.
    const bool nothing_to_write = emit_complete && !pass2_runs;
    load_vocab_from(*o_.vocab_from);
    vocab_from_lock_.reset();
    stats_.vocab_reused = true;
    stats_.single_pass = !nothing_to_write && single_pass_allowed();
    if (nothing_to_write) {
      for (auto& d : stats_.days) {
        done_bytes_ += d.input_bytes;
        d.skipped = true;
      }
    } else if (stats_.single_pass) {
      use_cache_ = keep_maps_ = false;  // nothing is read twice
      finalize_vocab();                 // the IDs are known before any row is read
      vocab_single_pass();
    } else {
      pass1(false);  // counts rows (the .npy headers need them) and validates every row
    }
  } else if (size_t done = o_.emit_binary ? open_emit(try_resume_vocab(pass1_fp))
                                          : try_resume_vocab(pass1_fp);
             done == o_.inputs.size()) {
    stats_.vocab_reused = true;
    use_cache_ = keep_maps_ = false;  // pass 1 did not run: pass 2 reads the inputs
    for (auto& d : stats_.days) {
      done_bytes_ += d.input_bytes;
      d.skipped = !pass2_runs;  // nothing to write: the checkpoint holds all there is
    }
  } else {
    // From scratch, or after the days of a partial checkpoint (their pass 2 reads the inputs).
    if (done == 0) {
      vocab_.clear();
      for (int j = 0; j < kNumSparse; ++j) vocab_.emplace_back(modulus_[j], &guard_);
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
  if (emit_) commit_emit();
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
  // --vocab-from: FILE, complete, goes into state.json where no checkpoint after it did (pass 2
  // found every day done, or --output-format none runs none), so that a rerun keeps it.
  if (o_.vocab_from && emit_unrecorded_ && !o_.discard_outputs) {
    if (pass2_runs) {
      std::vector<size_t> days(o_.inputs.size());
      for (size_t d = 0; d < days.size(); ++d) days[d] = d;
      save_state(pass2_fingerprint(), days);
    } else {
      add_emit_to_state();
    }
  }
  for (const auto& d : stats_.days) {
    stats_.rows += d.rows;
    stats_.bad_rows += d.bad_rows;
    // An empty day is more often a failed download or copy than a day without clicks, and one
    // without a good row another file (a label-less test.txt) than a day with bad rows.
    if (d.rows == 0 && !d.skipped && o_.warning)
      o_.warning(d.input + (d.bad_rows == 0 ? ": no rows (an empty file?)"
                                            : ": every row (" + std::to_string(d.bad_rows) +
                                                  ") is malformed: no row was written"));
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
  // A rerun that wrote no day keeps the stats of the run that did (its rates, its timings), and a
  // run without arrays those of the run whose arrays OUTDIR holds (state.json lists their days),
  // unless they describe other arrays: a run killed before its stats.json, after its state.json.
  const json state = pass2_runs ? json() : read_state();
  const bool others_arrays = state.is_object() &&
                             state.value("days_done", json::array()).is_array() &&
                             !state.value("days_done", json::array()).empty();
  const fs::path stats_file = o_.out_dir / "stats.json";
  if ((stats_.rows_written() > 0 && !others_arrays) || !fs::exists(stats_file) ||
      (!others_arrays && !describes_same_arrays(stats_file, stats_)))
    write_json_file(stats_file, json::parse(stats_.to_json()));
  return stats_;
}

}  // namespace dlprep::tabular::preprocess_detail

namespace dlprep::tabular {

PreprocessStats preprocess(const PreprocessOptions& options) { return Preprocessor().run(options); }

Preprocessor::Preprocessor() = default;
Preprocessor::~Preprocessor() = default;

PreprocessStats Preprocessor::run(const PreprocessOptions& options) {
  const unsigned threads = options.threads ? options.threads : hardware_threads();
  if (backend_ && (options.device != device_ || threads != threads_)) backend_.reset();
  device_ = options.device;
  threads_ = threads;
  // min_freq 0 (NVTabular's freq_threshold for none) keeps every value, as 1 does: recorded as 1,
  // the one spelling a vocab_from run takes.
  PreprocessOptions o = options;
  o.min_freq = std::max<uint64_t>(o.min_freq, 1);
  preprocess_detail::Run run(o, backend_);
  return run.run();
}

}  // namespace dlprep::tabular
