// criteo-preprocess's passes over the inputs (the outline: preprocess.cpp): pass 1 (GenVocab),
// pass 2 (the transform and the writers), the single passes that replace both, and the bad rows
// each reports as file:line.
#include <algorithm>

#include "core/error.hpp"
#include "tabular/preprocess_run.hpp"
#include "tabular/row_count.hpp"

namespace dlprep::tabular::preprocess_detail {
namespace {
// Bad rows reported one by one through the warning callback (the rest only counted).
constexpr int kMaxBadRowWarnings = 5;
}  // namespace

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

void Run::pass1(bool build_vocab, size_t first_day) {
  Pass1Setup setup;
  setup.modulus = modulus_;
  setup.build_vocab = build_vocab;
  setup.stop_at_error = o_.on_bad_row == BadRowPolicy::error;
  setup.want_rows = emit_.has_value() || (use_cache_ && !build_vocab);
  setup.index_rows = use_cache_ && build_vocab;
  setup.keep_rows = keep_rows_;
  guard_.set_stage("pass 1");
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
      if (emit_) emit_rows(bytes, p.result.rows);
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

Pass2Setup Run::pass2_setup() const {
  Pass2Setup setup;
  setup.modulus = modulus_;
  setup.stop_at_error = o_.on_bad_row == BadRowPolicy::error;
  setup.int_dense = o_.output_format == OutputFormat::dlrm;
  setup.apply_log = o_.apply_log && !setup.int_dense;
  setup.log_offset = o_.log_offset;
  return setup;
}

void Run::pass2() {
  backend_->begin_pass2(pass2_setup(), vocab_);
  const bool discard = o_.discard_outputs;
  // Pass-2 resume state: which days are complete under these exact output settings.
  const json fp2 = pass2_fingerprint();
  const std::vector<size_t> done_days = days_done(fp2, false);
  std::vector<size_t> completed;
  size_t saved = 0;  // days that state.json lists

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
      record_days();
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
    saved = completed.size();
  }
  // Up-to-date days after the last one written: listed too, or the next rerun redoes them.
  if (saved > 0 && completed.size() > saved) save_state(fp2, completed);
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
  // An --oov-id among the kept values' IDs is refused once their number is known (finalize_vocab):
  // before any output, in two passes.
  const bool oov_below = !o_.oov_id || *o_.oov_id < o_.id_base;
  const bool ids_known =
      o_.vocab_from || (backend_->single_pass() && o_.min_freq <= 1 && o_.id_base <= kMaxIdBase &&
                        o_.output_format != OutputFormat::split && oov_below);
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

void Run::single_pass(size_t first_day) {
  passes_ = 1;
  Pass1Setup setup;
  setup.modulus = modulus_;
  setup.stop_at_error = o_.on_bad_row == BadRowPolicy::error;
  setup.assign_ids = true;
  setup.want_rows = emit_.has_value();
  setup.id_base = static_cast<int32_t>(o_.id_base);
  setup.transform = pass2_setup();
  guard_.set_stage("single pass");
  backend_->begin_pass1(setup, vocab_);
  const bool discard = o_.discard_outputs;
  for (size_t day = 0; day < first_day; ++day) stats_.days[day].skipped = true;
  if (!discard && day_stems(o_.inputs.size() - 1).size() == 2)
    counted_bytes_ = regular_file_size(o_.inputs.back());
  std::vector<std::unique_ptr<DayWriter>> finished;  // complete days, not yet under their names
  // An earlier run's state.json, which lists its days as complete under its settings, is replaced
  // by one that lists none before the first of this run's days replaces one of them (this run's
  // comes at its end; the partial checkpoints in vocab/ record its days meanwhile). It keeps the
  // other runs' --emit-binary records.
  if (!discard && fs::exists(o_.out_dir / "state.json")) save_state(json(), {});
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
  // FILE holds every row now: in place before the last checkpoint, which records it.
  if (emit_) commit_emit();
  // A rerun that found every day done writes nothing, not even the same state.json anew (a
  // Makefile rule on it would run again each time).
  if (!o_.discard_outputs && completed.size() + finished_days.size() > done.size()) checkpoint();
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
    if (emit_ && p.rows != nullptr) emit_rows(p.rows, p.result.rows);
  };
  read_day(reader, day, "single pass", false,
           [&](const InputChunk& chunk) { process(chunk, sink); });
  if (writer) {
    PhaseTimer t(write_seconds_);
    writer->finish();
  }
  return writer;
}

void Run::record_days() {
  // Once, where no record in OUTDIR covers this run's days: a rerun with fewer inputs after an
  // interruption must know them to remove the rest (remove_stale_outputs). A state.json that
  // lists no day complete; the run's own checkpoints replace it.
  if (days_recorded_ || o_.discard_outputs) return;
  days_recorded_ = true;
  if (std::max(earlier_run_days_, earlier_run_days()) < o_.inputs.size()) save_state(json(), {});
}

void Run::publish(std::vector<std::unique_ptr<DayWriter>>& finished) {
  if (!finished.empty()) record_days();
  PhaseTimer t(write_seconds_);
  for (auto& w : finished) w->commit();
  finished.clear();
}

void Run::finalize_vocab() {
  guard_.set_stage("finalizing the vocabulary");
  for (int j = 0; j < kNumSparse; ++j) {
    stats_.cardinality[j] = vocab_[j].size();
    int64_t kept = 0;
    for (uint64_t c : vocab_[j].counts()) kept += c >= o_.min_freq ? 1 : 0;
    if (o_.id_base + kept > INT32_MAX)  // num_embeddings, id_base + kept, is stored as int32
      throw Error(Errc::invalid_argument, "--id-base " + std::to_string(o_.id_base) + ": the " +
                                              std::to_string(kept) + " kept values of " +
                                              field_name(kFirstSparseField + j) +
                                              " would take IDs past 2^31 - 1 (give at most " +
                                              std::to_string(INT32_MAX - kept) + ")");
    // Default OOV with id_base 0: one past the column's last ID (the number of kept values).
    int64_t oov = o_.oov_id ? *o_.oov_id : (o_.id_base >= 1 ? o_.id_base - 1 : o_.id_base + kept);
    if (oov >= o_.id_base && oov < o_.id_base + kept)
      throw Error(Errc::invalid_argument,
                  "--oov-id " + std::to_string(oov) + " is the ID of a kept value of " +
                      field_name(kFirstSparseField + j) + " (IDs " + std::to_string(o_.id_base) +
                      " to " + std::to_string(o_.id_base + kept - 1) +
                      "): rare and unseen values would share its embedding row; give an ID "
                      "below --id-base or past the last one");
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

}  // namespace dlprep::tabular::preprocess_detail
