// What a criteo-preprocess run (preprocess.cpp) leaves for the next one: the vocabulary
// checkpoints of pass 1 (vocab/, partial ones every checkpoint_seconds) and the days of pass 2
// complete under the same settings (state.json), each trusted only while the inputs and settings
// they record are this run's; the --emit-binary FILE they continue or find complete; and the day
// files of an earlier run's extra days removed.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/utf8.hpp"
#include "tabular/json_file.hpp"
#include "tabular/preprocess_run.hpp"
#include "tabular/vocab_dir.hpp"

namespace dlprep::tabular::preprocess_detail {
namespace {
std::string absolute_name(const fs::path& p) {
  return escape_invalid_utf8(fs::absolute(p).lexically_normal().string());
}

// --emit-binary's FILE however it is spelled (through a linked folder, or a link to it): the file
// that AtomicFile writes, so that the runs naming it differently share its record.
fs::path resolved_path(const fs::path& p) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? fs::absolute(p).lexically_normal() : resolved;
}

// A name that is not UTF-8 is kept escaped (JSON holds UTF-8 only) and, beside it, as hex bytes,
// so that another run can still find the file it names.
std::string hex_of(const std::string& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}
std::string bytes_of_hex(const std::string& hex) {
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(Errc::corrupt_data, "bad hex digit");
  };
  if (hex.size() % 2 != 0) throw Error(Errc::corrupt_data, "odd hex length");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1]));
  return out;
}

// --emit-binary's FILE starts with it.
std::string binary_header() {
  std::string h(kBinaryHeaderBytes, '\0');
  std::memcpy(h.data(), kBinaryMagic, 8);
  uint32_t version = kBinaryVersion, row_bytes = kBinaryRowBytes, fields = kNumFields;
  std::memcpy(h.data() + 8, &version, 4);
  std::memcpy(h.data() + 12, &row_bytes, 4);
  std::memcpy(h.data() + 16, &fields, 4);
  return h;
}
}  // namespace

// An earlier run into OUTDIR with more days (or a split last day where this run has none, or the
// reverse) left day files that belong to its vocabulary, not this one's; a loader that lists
// OUTDIR (TorchRec's day_*.npy, --days) would take them for this run's. Only this run's layout
// is cleaned: another layout's files are another run's choice.
size_t Run::earlier_run_days() const {
  size_t days = 0;
  for (const fs::path& record : {o_.out_dir / "stats.json", o_.out_dir / "state.json",
                                 o_.out_dir / "vocab" / "vocab.json"}) {
    std::error_code ec;
    if (!fs::is_regular_file(record, ec)) continue;
    try {
      const json j = read_json_file(record);
      if (j.is_object() && j.contains("days") && j["days"].is_array())
        days = std::max(days, j["days"].size());
    } catch (const Error&) {  // unreadable: no record
    } catch (const json::exception&) {
    }
  }
  return days;
}

void Run::remove_stale_outputs() {
  std::set<std::string> current, stale;
  for (size_t d = 0; d < o_.inputs.size(); ++d)
    for (const std::string& s : day_stems(d)) current.insert(s);
  // Only what an earlier run wrote: day_N and test_* files of another tool (TorchRec's scripts
  // name theirs so) in an OUTDIR no run recorded, or past its days, are not ours to remove.
  if (earlier_run_days_ > 0)
    for (const char* s : {"test", "val"})
      if (!current.count(s)) stale.insert(s);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o_.out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    size_t end = 4;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
    // day_N as this run names them: no leading zero, fewer than 10 digits
    if (name.rfind("day_", 0) != 0 || end == 4 || end > 4 + 9 || (name[4] == '0' && end > 5) ||
        current.count(name.substr(0, end)))
      continue;
    if (std::stoul(name.substr(4, end - 4)) < earlier_run_days_) stale.insert(name.substr(0, end));
  }
  for (const std::string& s : stale) {
    for (const fs::path& f : output_files(o_.output_format, o_.out_dir, s))
      if (fs::remove(f, ec)) stats_.removed_outputs.push_back(f.lexically_relative(o_.out_dir));
    if (o_.output_format == OutputFormat::split && fs::is_directory(o_.out_dir / s, ec) &&
        fs::is_empty(o_.out_dir / s, ec))
      fs::remove(o_.out_dir / s, ec);
  }
  // OUTDIR/vocab is what --vocab-from OUTDIR applies to test days, so it must describe these
  // arrays. Reused, it gets this run's conventions (how its IDs and dense values were made: a
  // rerun may change --min-freq or the log); not this run's vocabulary (--no-vocab after pass 1
  // ran, --vocab-from another), it goes, unless this run writes no arrays (--output-format
  // none): then OUTDIR's arrays, if any, are another run's, and so is the vocabulary.
  const fs::path vocab = o_.out_dir / "vocab";
  if (o_.vocab_from || (!o_.write_vocab && !stats_.vocab_reused)) {
    if (o_.output_format != OutputFormat::none)
      for (const fs::path& f : remove_vocab_dir(vocab))
        stats_.removed_outputs.push_back(f.lexically_relative(o_.out_dir));
  } else if (stats_.vocab_reused && fs::exists(vocab / "vocab.json", ec)) {
    update_vocab_conventions(vocab, o_);
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

json Run::pass2_fingerprint() const {
  json fp2 = {{"cardinality", stats_.cardinality},
              {"modulus", modulus_},  // another modulus, another vocabulary of the same size
              {"output_format", output_format_name(o_.output_format)},
              {"min_freq", o_.min_freq},
              {"id_base", o_.id_base},
              {"oov_id", o_.oov_id ? *o_.oov_id : -1},
              {"apply_log", o_.apply_log},
              {"log_offset", o_.log_offset},
              {"split_last", static_cast<int>(o_.split_last)},
              {"on_bad_row", bad_row_policy_name(o_.on_bad_row)},
              {"vocab_from", o_.vocab_from.has_value()}};
  if (!o_.vocab_from) {
    // The vocabulary built from the inputs, as far as its size tells.
    uint64_t rows = 0;
    for (const auto& d : stats_.days) rows += d.rows;
    fp2["vocab_rows"] = rows;
  } else {
    // Which vocabulary, however its path is spelled (DIR or DIR/vocab, relative or absolute):
    // its vocab.json's identity, so that a rebuilt one at the same path reuses no outputs
    // made with the old.
    fp2["vocab_from_id"] = file_identity(resolved_path(vocab_json_of(*o_.vocab_from)));
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

std::vector<fs::path> Run::day_files(size_t day) const {
  std::vector<fs::path> files;
  for (const auto& s : day_stems(day))
    for (const auto& f : output_files(o_.output_format, o_.out_dir, s)) files.push_back(f);
  return files;
}

json Run::day_files_identity(size_t day) const {
  json files = json::array();
  for (const fs::path& f : day_files(day)) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) {
      files.push_back(nullptr);
      continue;
    }
    files.push_back({static_cast<uint64_t>(st.st_size),
                     static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                     static_cast<uint64_t>(st.st_ino)});
  }
  struct stat dir {};
  json out_dir = nullptr;
  if (::stat(o_.out_dir.c_str(), &dir) == 0)
    out_dir = {static_cast<uint64_t>(dir.st_dev), static_cast<uint64_t>(dir.st_ino)};
  return {{"out_dir", out_dir}, {"files", files}};
}

bool Run::day_files_match(size_t day, const json& recorded) const {
  const json now = day_files_identity(day);
  if (!recorded.is_object() || !recorded.contains("files") || !recorded.contains("out_dir"))
    return false;
  const json& then = recorded["files"];
  if (!then.is_array() || then.size() != now["files"].size()) return false;
  // In the OUTDIR that wrote them, a day file is the same file: a run with other settings renames
  // its own over it, and on a file system with coarse mtimes (1 s, 2 s) size and mtime can agree.
  // In a copy of OUTDIR (cp -a, rsync -a, a backup restored) new inodes are no change.
  const bool same_out_dir = !now["out_dir"].is_null() && recorded["out_dir"] == now["out_dir"];
  for (size_t i = 0; i < then.size(); ++i) {
    const json& a = then[i];
    const json& b = now["files"][i];
    if (b.is_null() || !a.is_array() || a.size() != 3 || a[0] != b[0] || a[1] != b[1] ||
        (same_out_dir && a[2] != b[2]))
      return false;
  }
  return true;
}

void Run::flush_outputs(const std::vector<size_t>& days) const {
  std::vector<fs::path> files;
  for (size_t day : days)
    if (flushed_days_.insert(day).second)  // once: a checkpoint after each day lists them all
      for (fs::path& f : day_files(day)) files.push_back(std::move(f));
  if (emit_ && !emit_->temp_path().empty())
    files.emplace_back(emit_->temp_path());  // kept: a partial checkpoint counts its bytes
  else if (o_.emit_binary && !emit_in_place_)
    files.push_back(*o_.emit_binary);  // committed
  flush_to_storage(files);
}

json Run::day_counts() const {
  json days = json::array();
  for (const auto& d : stats_.days)
    days.push_back({{"rows", d.rows}, {"bad_rows", d.bad_rows}, {"input_bytes", d.input_bytes}});
  return days;
}

json Run::read_state() const {
  const fs::path path = o_.out_dir / "state.json";
  try {
    std::error_code ec;
    if (!fs::exists(path, ec)) return json();
    json st = read_json_file(path);
    if (st.is_object() && st.value("schema", json()) == "dlprep.criteo-state/1") return st;
  } catch (const Error&) {  // unreadable: as if there were none
  } catch (const json::exception&) {
  }
  return json();
}

json Run::emit_files(const json& state) const {
  const fs::path own_path = o_.emit_binary ? resolved_path(*o_.emit_binary) : fs::path();
  const std::string own = escape_invalid_utf8(own_path.string());
  json files = json::object();
  const json recorded = state.is_object() ? state.value("emit_files", json()) : json();
  if (recorded.is_object())
    for (const auto& [name, entry] : recorded.items()) {
      if (name == own && emit_committed_) continue;  // replaced below
      try {
        // Another run's (or this FILE's, as the run that wrote it recorded it), kept while its FILE
        // is as that run left it (a gone or changed FILE is written again by that run anyway).
        const std::string path = entry.contains("path_hex")
                                     ? bytes_of_hex(entry.at("path_hex").get<std::string>())
                                     : name;
        if (escape_invalid_utf8(path) != name) continue;  // a hand-made pair: not trusted
        if (entry.at("record").at("file") == file_identity(path)) files[name] = entry;
      } catch (const Error&) {
      } catch (const json::exception&) {
      }
    }
  // Only once this run wrote FILE whole: before, the counts of the days not yet read are 0.
  if (emit_committed_) {
    const json record = emit_record();
    if (!record.is_null()) {
      files[own] = {{"pass1", pass1_fp_}, {"record", record}, {"days", day_counts()}};
      if (own_path.string() != own) files[own]["path_hex"] = hex_of(own_path.string());
    }
  }
  return files;
}

void Run::save_state(const json& fp2, const std::vector<size_t>& days_done) {
  const json earlier = read_state();
  PhaseTimer t(write_seconds_);
  flush_outputs(days_done);
  json files = json::array();
  for (size_t day : days_done) files.push_back(day_files_identity(day));
  json st = {{"schema", "dlprep.criteo-state/1"},
             {"pass2", fp2},
             {"days_done", days_done},
             {"day_files", files},
             {"days", day_counts()}};
  // The complete FILEs of --emit-binary, this run's and other runs' into OUTDIR, for a
  // --vocab-from rerun to keep (a run with its own vocabulary finds its own FILE in the
  // vocabulary's checkpoint).
  if (json emitted = emit_files(earlier); !emitted.empty()) st["emit_files"] = std::move(emitted);
  if (emit_committed_) emit_unrecorded_ = false;
  write_json_file(o_.out_dir / "state.json", st);
}

std::vector<size_t> Run::days_done(const json& fp2, bool restore_counts) {
  std::vector<size_t> done;
  const fs::path path = o_.out_dir / "state.json";
  if (!o_.resume || o_.discard_outputs || !fs::exists(path)) return done;
  try {
    const json st = read_json_file(path);
    json saved = st.value("pass2", json());
    // A state.json of a dlprep before the modulus was recorded (2026-11-29): its days are these
    // when the vocabulary was reused, whose pass-1 fingerprint (or identity) holds the modulus.
    if (saved.is_object() && !saved.contains("modulus") && stats_.vocab_reused)
      saved["modulus"] = fp2.at("modulus");
    if (saved != fp2) return done;
    const json days = st.value("days", json::array());
    const json files = st.value("day_files", json::array());
    const json& listed = st.at("days_done");
    for (size_t i = 0; i < listed.size(); ++i) {
      const uint64_t day = json_count(listed[i]);
      if (day >= o_.inputs.size() || i >= files.size() || !day_files_match(day, files[i])) continue;
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

json Run::single_pass_outputs() const {
  return {{"output_format", output_format_name(o_.output_format)},
          {"id_base", o_.id_base},
          {"apply_log", o_.apply_log},
          {"log_offset", o_.log_offset}};
}

bool Run::single_pass_resumable(size_t done) const {
  if (done == 0) return true;
  if (resumed_outputs_ != single_pass_outputs() || !resumed_files_.is_array() ||
      resumed_files_.size() < done)
    return false;
  for (size_t day = 0; day < done; ++day)
    if (!day_files_match(day, resumed_files_[day])) return false;
  return true;
}

void Run::save_vocab(const json& pass1_fp, size_t days_done, const json& outputs) {
  json days = json::array();
  for (const auto& d : stats_.days)
    days.push_back({{"input", d.input},
                    {"rows", d.rows},
                    {"bad_rows", d.bad_rows},
                    {"input_bytes", d.input_bytes}});
  json fields = {{"days", days}, {"days_done", days_done}, {"pass1", pass1_fp}};
  std::vector<size_t> with_files;  // the days before days_done have their files in a single pass
  if (!outputs.is_null()) {
    fields["single_pass_outputs"] = outputs;
    json files = json::array();
    for (size_t day = 0; day < days_done; ++day) {
      with_files.push_back(day);
      files.push_back(day_files_identity(day));
    }
    fields["single_pass_files"] = files;
  }
  if (o_.emit_binary) fields["emit"] = emit_record();
  flush_outputs(with_files);
  write_vocab_dir(o_.out_dir / "vocab", modulus_, vocab_, o_, std::move(fields));
  // Kept from now on, for a rerun to continue: the checkpoint names it. (Before it, an interrupt
  // would leave a temp file that nothing names.)
  if (emit_) emit_->keep();
}

size_t Run::try_resume_vocab(const json& pass1_fp) {
  fs::path vj = o_.out_dir / "vocab" / "vocab.json";
  if (!o_.resume || !fs::exists(vj)) return 0;
  try {
    json v = read_json_file(vj);
    if (v.value("pass1", json()) != pass1_fp) return 0;
    // at(), never a const operator[]: a key a damaged file lacks would be read past its map.
    const json& days = v.at("days");
    const uint64_t done = v.contains("days_done") ? json_count(v.at("days_done")) : days.size();
    if (!days.is_array() || days.size() != o_.inputs.size() || done == 0 || done > days.size())
      return 0;
    load_vocab_from(o_.out_dir / "vocab");
    resumed_outputs_ = v.value("single_pass_outputs", json());
    resumed_files_ = v.value("single_pass_files", json());
    resumed_emit_ = v.value("emit", json());
    for (size_t d = 0; d < done; ++d) {
      stats_.days[d].rows = json_count(days.at(d).at("rows"));
      stats_.days[d].bad_rows = json_count(days.at(d).at("bad_rows"));
      stats_.days[d].input_bytes = json_count(days.at(d).at("input_bytes"));
    }
    return done;
  } catch (const Error&) {
    return 0;  // an unusable checkpoint only means pass 1 runs again
  } catch (const json::exception&) {
    return 0;
  }
}

size_t Run::open_emit(size_t done) {
  const fs::path& file = *o_.emit_binary;
  const json& saved = resumed_emit_;
  size_t resumed = 0;
  try {
    if (done == o_.inputs.size() && saved.contains("file") &&
        saved["file"] == file_identity(resolved_path(file)))
      return done;  // FILE is as that run wrote it
    if (done > 0 && done < o_.inputs.size() && saved.value("target", "") == absolute_name(file) &&
        saved.contains("temp") && saved.contains("bytes")) {
      const uint64_t bytes = json_count(saved["bytes"]);
      // What the days done wrote, as their counts say: a checkpoint's bytes that are not that
      // (a damaged state) would resume FILE at another row than the next day's first.
      uint64_t rows = 0;
      for (size_t d = 0; d < done; ++d) rows += stats_.days[d].rows;
      if (bytes != binary_header().size() + rows * kBinaryRowBytes)
        throw Error(Errc::corrupt_data, "emit bytes are not the days' rows");
      emit_.emplace(file, fs::path(saved["temp"].get<std::string>()), bytes);
      emit_bytes_ = bytes;
      resumed = done;
    }
  } catch (const Error&) {  // FILE, or the temp file, gone or changed: written again
  } catch (const json::exception&) {
  }
  if (!emit_) {
    emit_.emplace(file);
    const std::string h = binary_header();
    emit_->write(bytes_of(h));
    emit_bytes_ = h.size();
  }
  emit_in_place_ = emit_->temp_path().empty();
  // The temp files of FILE that killed runs left, next to the file a link names: not those of a
  // live run into another OUTDIR (its lock does not cover FILE), which hold theirs locked, as
  // this run does its own.
  const fs::path& target = emit_->final_path();
  const std::string stem = temp_file_stem(target.filename().string());
  remove_unlocked_temp_files(target.parent_path().empty() ? fs::path(".") : target.parent_path(),
                             [&](const std::string& name) { return name == stem; });
  return resumed;
}

void Run::emit_rows(const void* rows, uint64_t count) {
  emit_->write(ByteSpan(static_cast<const uint8_t*>(rows), count * kBinaryRowBytes));
  emit_bytes_ += count * kBinaryRowBytes;
}

bool Run::emit_complete_in_state(bool restore_counts) {
  if (!o_.resume || o_.discard_outputs) return false;
  try {
    const json state = read_state();
    if (state.is_null()) return false;
    const fs::path path = resolved_path(*o_.emit_binary);
    const std::string key = escape_invalid_utf8(path.string());
    const json& entry = state.at("emit_files").at(key);
    // Another name escapes to the same key (a literal "%FF" for the byte 0xFF): not this FILE's.
    const std::string hex = path.string() != key ? hex_of(path.string()) : std::string();
    if (entry.value("path_hex", std::string()) != hex) return false;
    const json& file = entry.at("record").at("file");
    if (entry.at("pass1") != pass1_fp_ || file != file_identity(path)) return false;
    if (!restore_counts) return true;
    const json& days = entry.at("days");
    if (!days.is_array() || days.size() != stats_.days.size()) return false;
    // Checked before get<>(), which would wrap a negative count.
    for (const json& c : days)
      for (const char* key : {"rows", "bad_rows", "input_bytes"})
        if (!c.at(key).is_number_unsigned()) return false;
    for (size_t d = 0; d < days.size(); ++d) {
      DayStats& ds = stats_.days[d];
      ds.rows = days[d]["rows"].get<uint64_t>();
      ds.bad_rows = days[d]["bad_rows"].get<uint64_t>();
      ds.input_bytes = days[d]["input_bytes"].get<uint64_t>();
    }
    return true;
  } catch (const Error&) {  // FILE gone, or no record of it: written again
  } catch (const json::exception&) {
  }
  return false;
}

void Run::commit_emit() {
  PhaseTimer t(write_seconds_);
  emit_->commit();
  emit_.reset();  // a checkpoint from now on records FILE itself
  emit_unrecorded_ = emit_committed_ = true;
}

void Run::add_emit_to_state() {
  json st = read_state();
  if (st.is_null()) {
    save_state(pass2_fingerprint(), {});  // none, or unreadable: one that records FILE alone
    return;
  }
  PhaseTimer t(write_seconds_);
  flush_outputs({});
  st["emit_files"] = emit_files(st);
  emit_unrecorded_ = false;
  write_json_file(o_.out_dir / "state.json", st);
}

json Run::emit_record() const {
  // Written in place (/dev/stdout, a FIFO), FILE is no file that a rerun could find complete,
  // even where the name leads to one (`--emit-binary /dev/stdout >> rows.bin`).
  if (emit_in_place_) return json();
  if (!emit_) {
    std::error_code ec;
    return fs::is_regular_file(*o_.emit_binary, ec)
               ? json{{"file", file_identity(resolved_path(*o_.emit_binary))}}
               : json();
  }
  return {{"target", absolute_name(*o_.emit_binary)},
          {"temp", absolute_name(emit_->temp_path())},
          {"bytes", emit_bytes_}};
}

void Run::load_vocab_from(const fs::path& where) {
  guard_.set_stage("reading the vocabulary");
  SavedVocab saved = read_vocab_dir(where, &guard_);
  for (int j = 0; j < kNumSparse; ++j)
    if (o_.vocab_from && o_.modulus[j] != 0 && o_.modulus[j] != saved.modulus[j])
      throw Error(Errc::invalid_argument,
                  "the modulus " + std::to_string(o_.modulus[j]) +
                      " (of --modulus or a --preset) differs from the --vocab-from vocabulary's (" +
                      std::to_string(saved.modulus[j]) +
                      "), which applies its own: drop it, or give the vocabulary's");
  modulus_ = saved.modulus;
  vocab_ = std::move(saved.columns);
}

}  // namespace dlprep::tabular::preprocess_detail
