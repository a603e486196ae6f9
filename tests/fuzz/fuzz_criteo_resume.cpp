// libFuzzer target for what a resumed criteo-preprocess run reads back from OUTDIR (the vocabulary
// checkpoint vocab/vocab.json, state.json and stats.json: preprocess_state.cpp, preprocess.cpp),
// or, in a normal build, the function that replay_main.cpp runs over every file of
// corpus/criteo_resume/.
//
// Once per process: two small days of rows, whose mtimes are set to kMtime, and, per mode, OUTDIR
// (and --emit-binary's FILE, and the temp file of FILE an interrupted run keeps) as a run with
// that mode's options left them, every mtime set to kMtime too. Each input then runs preprocess()
// again, with resume, on a copy of that OUTDIR whose JSON files are the input's:
//
//   byte 0     the mode: bit 0 --output-format none (else npy), bit 1 --emit-binary, bit 2
//              --vocab-from (a vocabulary made once), bit 3 two passes (else a single pass where
//              allowed), bit 4 --split-last test_val, bit 5 --on-bad-row skip; bit 6 the template
//              run was interrupted at day 1's first progress (a partial checkpoint), bit 7 at
//              day 1's first progress in pass 2
//   the rest   up to three sections separated by '\0': vocab/vocab.json, state.json, stats.json;
//              a section that is absent leaves the template's file; "@R@" in a section is
//              replaced by this process's work directory (the inputs and FILE are below it)
//
// Hostile files may only be ignored (the run starts over) or throw dlprep::Error: no crash, no
// other exception, no hang (run it with -timeout=10). About 28 inputs a second under ASan with
// TMPDIR on tmpfs. The seeds (DLPREP_FUZZ_RESUME_SEEDS below writes them) are the files of the
// template runs with their paths written as "@R@", their mtimes as kMtime, OUTDIR's identity
// cleared and the temp file named alike (so that they match the copies and the run resumes), and
// damaged ones: wrong types, negative, fractional and huge counts, partial checkpoints whose
// --emit-binary record names another file or more or fewer bytes, deep nesting, stats.json of
// other arrays.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "fuzz_sections.hpp"
#include "tabular/criteo_preprocess.hpp"

using namespace dlprep;
using namespace dlprep::tabular;
namespace fs = std::filesystem;

namespace {

constexpr time_t kMtime = 1700000000;  // 2023-11-14, with 0 ns

void set_mtime(const fs::path& p) {
  const timespec times[2] = {{kMtime, 0}, {kMtime, 0}};
  ::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

void set_mtimes(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) set_mtime(e.path());
  set_mtime(dir);
}

std::string as_text(const Bytes& b) { return std::string(b.begin(), b.end()); }

// A JSON file of a template with its recorded mtimes (any number that is one of `mtimes`) as
// kMtime, OUTDIR's identity (dev, inode) cleared and FILE's temp files `renamed`, as the copies
// will have them.
void normalize_json(const fs::path& p, const std::set<int64_t>& mtimes,
                    const std::map<std::string, std::string>& renamed) {
  if (!fs::exists(p)) return;
  nlohmann::json j = nlohmann::json::parse(read_file(p));
  const auto walk = [&](auto&& self, nlohmann::json& v) -> void {
    if (v.is_object()) {
      for (auto& [key, value] : v.items()) {
        if (key == "out_dir") value = nullptr;
        self(self, value);
      }
    } else if (v.is_array()) {
      for (auto& value : v) self(self, value);
    } else if (v.is_string() && renamed.count(v.get<std::string>())) {
      v = renamed.at(v.get<std::string>());
    } else if (v.is_number_integer() && mtimes.count(v.get<int64_t>())) {
      v = int64_t{kMtime} * 1000000000;
    }
  };
  walk(walk, j);
  const std::string s = j.dump(2) + "\n";
  write_file_atomic(p, ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

int64_t mtime_ns_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

void write_text(const fs::path& p, std::string_view text) {
  write_file_atomic(p, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// Rows with repeated values (so that a vocabulary has something to count), a few empty fields.
std::string day_rows(int day, int rows) {
  std::string s;
  char hex[16];
  for (int r = 0; r < rows; ++r) {
    s += std::to_string((r + day) % 2);
    for (int i = 0; i < 13; ++i)
      s += (r + i) % 5 == 0 ? std::string("\t") : "\t" + std::to_string((r * 7 + i + day) % 50);
    for (int j = 0; j < 26; ++j) {
      std::snprintf(hex, sizeof hex, "%08x", 0x1000u * j + (r * 3 + j + day) % 5);
      s += (r + j) % 7 == 0 ? std::string("\t") : std::string("\t") + hex;
    }
    s += '\n';
  }
  return s;
}

// FILE's temp files in `dir` (".emit.bin.tmp.XXXXXX").
std::vector<fs::path> emit_temp_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(".emit.bin", 0) == 0) files.push_back(e.path());
  return files;
}

struct Work {
  fs::path root = fs::temp_directory_path() / ("dlprep-fuzz-resume-" + std::to_string(::getpid()));
  fs::path out = root / "out";
  fs::path emit = root / "emit.bin";
  fs::path vocab = root / "vocab_run";
  std::map<int, bool> made;  // templates made (mode -> whether their run succeeded)

  Work() {
    fs::remove_all(root);
    fs::create_directories(root / "in");
    for (int d = 0; d < 2; ++d) {
      write_text(root / "in" / ("day_" + std::to_string(d) + ".tsv"), day_rows(d, 20 + 5 * d));
      set_mtime(root / "in" / ("day_" + std::to_string(d) + ".tsv"));
    }
    PreprocessOptions o = options(0);
    o.out_dir = vocab;
    o.output_format = OutputFormat::none;
    o.emit_binary.reset();
    preprocess(o);
    set_mtimes(vocab);
  }
  ~Work() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }

  PreprocessOptions options(int mode) const {
    PreprocessOptions o;
    o.inputs = {root / "in" / "day_0.tsv", root / "in" / "day_1.tsv"};
    o.out_dir = out;
    o.output_format = mode & 1 ? OutputFormat::none : OutputFormat::npy;
    if (mode & 2) o.emit_binary = emit;
    if (mode & 4) o.vocab_from = vocab;
    o.single_pass = !(mode & 8);
    if (mode & 16) o.split_last = SplitLast::test_val;
    if (mode & 32) o.on_bad_row = BadRowPolicy::skip;
    o.threads = 1;
    o.checkpoint_seconds = 0;
    o.decode_cache = DecodeCache::off;
    return o;
  }

  fs::path tpl(int mode) const { return root / ("tpl_" + std::to_string(mode)); }

  // OUTDIR (and FILE) of a complete run in this mode, kept as the template of its inputs.
  bool make_template(int mode) {
    if (auto it = made.find(mode); it != made.end()) return it->second;
    fs::remove_all(out);
    fs::remove(emit);
    bool ok = true;
    PreprocessOptions o = options(mode);
    // An interrupted run: at day 1's first progress (of any pass, or of pass 2).
    if (mode & 192)
      o.progress = [mode](const ProgressEvent& e) {
        if (e.item.ends_with("day_1.tsv") && (mode & 64 || e.what == "pass 2"))
          throw Error(Errc::io, "interrupted");
      };
    try {
      preprocess(o);
    } catch (const Error& e) {
      // options this pipeline refuses: every input of the mode is refused too
      ok = mode & 192 && std::string_view(e.what()) == "interrupted";
    }
    std::set<int64_t> mtimes;
    if (fs::exists(emit)) mtimes.insert(mtime_ns_of(emit));
    if (fs::exists(out))
      for (const auto& e : fs::recursive_directory_iterator(out)) mtimes.insert(mtime_ns_of(e));
    // Kept by an interrupted run: named alike in every process.
    std::map<std::string, std::string> renamed;
    for (const fs::path& temp : emit_temp_files(root)) {
      const fs::path fixed = root / (".emit.bin.tmp.fuzz" + std::to_string(renamed.size()) + "0");
      fs::rename(temp, fixed);
      renamed[temp.string()] = fixed.string();
    }
    for (const fs::path& f : {out / "vocab" / "vocab.json", out / "state.json", out / "stats.json"})
      normalize_json(f, mtimes, renamed);
    fs::create_directories(tpl(mode));
    if (fs::exists(out)) fs::rename(out, tpl(mode) / "out");
    if (fs::exists(emit)) fs::rename(emit, tpl(mode) / "emit.bin");
    for (const fs::path& temp : emit_temp_files(root))
      fs::rename(temp, tpl(mode) / temp.filename());
    if (const char* seeds = std::getenv("DLPREP_FUZZ_RESUME_SEEDS")) write_seed(mode, seeds);
    return made[mode] = ok;
  }

  // With DLPREP_FUZZ_RESUME_SEEDS=DIR (to make the seeds): DIR/mode_M, the template's files as
  // an input of mode M.
  void write_seed(int mode, const fs::path& dir) const {
    std::string seed(1, static_cast<char>(mode));
    const char* names[] = {"vocab/vocab.json", "state.json", "stats.json"};
    for (int i = 0; i < 3; ++i) {
      if (i > 0) seed += '\0';
      const fs::path f = tpl(mode) / "out" / names[i];
      if (fs::exists(f)) seed += as_text(read_file(f));
    }
    for (size_t at; (at = seed.find(root.string())) != std::string::npos;)
      seed.replace(at, root.string().size(), "@R@");
    write_text(dir / ("mode_" + std::to_string(mode)), seed);
  }

  // A fresh copy of the template, every mtime kMtime.
  void restore(int mode) {
    fs::remove_all(out);
    fs::remove(emit);
    for (const fs::path& temp : emit_temp_files(root)) fs::remove(temp);
    for (const fs::path& temp : emit_temp_files(tpl(mode))) {
      fs::copy_file(temp, root / temp.filename());
      set_mtime(root / temp.filename());
    }
    if (fs::exists(tpl(mode) / "out")) {
      fs::copy(tpl(mode) / "out", out, fs::copy_options::recursive);
      set_mtimes(out);
    }
    if (fs::exists(tpl(mode) / "emit.bin")) {
      fs::copy_file(tpl(mode) / "emit.bin", emit);
      set_mtime(emit);
    }
  }
};

Work& work() {
  static Work w;
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Work& w = work();
  const int mode = data[0];
  if (!w.make_template(mode)) return 0;
  w.restore(mode);
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const fs::path files[] = {w.out / "vocab" / "vocab.json", w.out / "state.json",
                            w.out / "stats.json"};
  const std::vector<std::string_view> given = fuzz_sections(rest, std::size(files));
  for (size_t i = 0; i < given.size(); ++i) {
    fs::create_directories(files[i].parent_path());
    write_text(files[i], substituted(given[i], w.root.string()));
  }
  try {
    preprocess(w.options(mode));
  } catch (const Error&) {
  }
  return 0;
}
