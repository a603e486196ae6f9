// libFuzzer target for dataset merge and dataset verify (dataset_merge.cpp, dataset_verify.cpp)
// driven by a damaged index of a real dataset, or, in a normal build, the function that
// replay_main.cpp runs over every file of corpus/dataset_index/.
//
// Once per process: six tiny PPM images in two classes, converted (l3, png and ppm) as the two
// parts of `--shard K/2`, in the file layout and in tar shards of at most 2 KiB, and each pair
// merged. Each input then works on a fresh copy of one layout's three datasets (A, B and their
// merge M):
//
//   byte 0     bit 0: the tar layout (else files); bits 1-2: 0 verify A, 1 merge A and B into a
//              new dataset, 2 merge A and B over M, 3 verify M
//   the rest   up to six sections separated by '\0': A's samples.jsonl and dataset.json, B's,
//              M's; a section that is absent leaves that file as it was made; "@R@" in a
//              section is replaced by this process's work directory (the source is below it)
//
// Hostile indices may only throw dlprep::Error, and no file outside the copy may change (a
// location must never lead out of its dataset). A merge that succeeds gives a dataset that
// verify reads (counting problems, never crashing). The seeds are each mode with the indices as
// made, and damaged ones: offsets and sizes past the shard or not on a block, wrong CRCs and
// shapes, ".." and absolute locations, a location outside data/, duplicate keys and ordinals,
// a shard of one part named by the other, counts near 2^64.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/convert.hpp"
#include "dataset/dataset_merge.hpp"
#include "dataset/dataset_verify.hpp"
#include "dataset/target_spec.hpp"
#include "fuzz_sections.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, std::string_view text) {
  write_file_atomic(p, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// A binary PPM (P6, RGB; P5, gray) of w x h pixels.
std::string ppm(int w, int h, int channels, int seed) {
  std::string s = std::string(channels == 1 ? "P5" : "P6") + "\n" + std::to_string(w) + " " +
                  std::to_string(h) + "\n255\n";
  for (int i = 0; i < w * h * channels; ++i) s += static_cast<char>((i * 37 + seed * 11) & 255);
  return s;
}

// Every file below `dir` but `skip`, with its size and mtime: what no input may change.
using Snapshot = std::map<std::string, std::tuple<uint64_t, int64_t, int64_t>>;
Snapshot snapshot(const fs::path& dir, const fs::path& skip) {
  Snapshot s;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->path() == skip) {
      it.disable_recursion_pending();
      continue;
    }
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    s[it->path().string()] = {static_cast<uint64_t>(st.st_size), st.st_mtim.tv_sec,
                              st.st_mtim.tv_nsec};
  }
  return s;
}

struct Work {
  fs::path root = fs::temp_directory_path() / ("dlprep-fuzz-dsidx-" + std::to_string(::getpid()));
  fs::path work = root / "work";
  Snapshot before;

  Work() {
    fs::remove_all(root);
    const char* names[] = {"cat/a", "cat/b", "cat/c", "dog/d", "dog/e", "dog/f"};
    for (int i = 0; i < 6; ++i) {
      fs::create_directories((root / "src" / names[i]).parent_path());
      write_text(root / "src" / (std::string(names[i]) + ".ppm"),
                 ppm(2 + i % 3, 2 + i % 2, i == 4 ? 1 : 3, i));
    }
    for (int tar = 0; tar < 2; ++tar) {
      const fs::path t = tpl(tar);
      for (uint32_t k = 0; k < 2; ++k) {
        ConvertOptions o;
        o.source = root / "src";
        o.destination = t / (k == 0 ? "a" : "b");
        o.mix = parse_mix("l3:0.4,png:0.3,ppm:0.3");
        o.shard_index = k;
        o.shard_count = 2;
        o.max_shard_bytes = tar ? 2048 : 0;
        o.tool = "fuzz";
        convert_dataset(o);
      }
      MergeOptions m;
      m.inputs = {t / "a", t / "b"};
      m.output = t / "m";
      m.tool = "fuzz";
      merge_datasets(m);
    }
    if (const char* seeds = std::getenv("DLPREP_FUZZ_DATASET_SEEDS")) write_seeds(seeds);
    before = snapshot(root, work);
  }
  ~Work() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }

  fs::path tpl(int tar) const { return root / (tar ? "tpl_tar" : "tpl_files"); }

  // With DLPREP_FUZZ_DATASET_SEEDS=DIR (to make the seeds): DIR/mode_M, each mode's files as
  // made.
  void write_seeds(const fs::path& dir) const {
    for (int mode = 0; mode < 8; ++mode) {
      std::string seed(1, static_cast<char>(mode));
      for (const char* d : {"a", "b", "m"})
        for (const char* f : {kIndexName, kManifestName}) {
          const Bytes b = read_file(tpl(mode & 1) / d / f);
          seed.append(b.begin(), b.end());
          seed += '\0';
        }
      seed.pop_back();
      for (size_t at; (at = seed.find(root.string())) != std::string::npos;)
        seed.replace(at, root.string().size(), "@R@");
      write_text(dir / ("mode_" + std::to_string(mode)), seed);
    }
  }
};

Work& the_work() {
  static Work w;
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Work& w = the_work();
  const int tar = data[0] & 1;
  const int op = (data[0] >> 1) & 3;
  fs::remove_all(w.work);
  fs::copy(w.tpl(tar), w.work, fs::copy_options::recursive);
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<std::string_view> given = fuzz_sections(rest, 6);
  size_t k = 0;
  for (const char* d : {"a", "b", "m"})
    for (const char* f : {kIndexName, kManifestName})
      if (k < given.size()) write_text(w.work / d / f, substituted(given[k++], w.root.string()));
  const auto verify = [](const fs::path& dir) {
    VerifyOptions v;
    v.dataset = dir;
    v.problem = [](const Error&) {};
    try {
      (void)verify_dataset(v);
    } catch (const Error&) {
    }
  };
  if (op == 0 || op == 3) {
    verify(w.work / (op == 0 ? "a" : "m"));
  } else {
    MergeOptions m;
    m.inputs = {w.work / "a", w.work / "b"};
    m.output = w.work / (op == 1 ? "new" : "m");
    m.tool = "fuzz";
    bool merged = false;
    try {
      (void)merge_datasets(m);
      merged = true;
    } catch (const Error&) {
    }
    if (merged) verify(m.output);
  }
  if (snapshot(w.root, w.work) != w.before) std::abort();  // a file outside the copy changed
  return 0;
}
