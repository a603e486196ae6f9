// libFuzzer target for the sources of convert-dataset that are files a user hands in
// (dataset/sample_source.hpp: SampleSource on a list file, and on a dataset whose samples.jsonl
// IndexReader reads and for_each checks; built with DLPREP_BUILD_FUZZERS and clang), or, in a
// normal build, the function that replay_main.cpp runs over every file of corpus/sample_source/.
//
// The first byte chooses the source. Even: the rest is a list file, whose entries must be the
// ones a plain reference reading of `PATH[<TAB>LABEL]` lines gives, with keys that are clean
// relative names (the data file is named after the key) and UTF-8 keys and labels. Odd: the rest
// is the samples.jsonl of a dataset whose dataset.json counts data[0] / 2 samples and whose
// data/shard-000000.tar holds kShardBytes bytes; every entry must lie inside the dataset, and a
// tar member inside its shard, block-aligned and after the previous member. Hostile input may
// only throw dlprep::Error; an accepted source gives the same entries each time it is walked.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/utf8.hpp"
#include "dataset/manifest.hpp"
#include "dataset/sample_source.hpp"
#include "dataset/tar_format.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kShardBytes = 16 * tar::kBlock;

// The list file and the dataset, made once per process and removed at its exit: the shard stays,
// the list, dataset.json and samples.jsonl are each input.
struct Workspace {
  fs::path root = fs::temp_directory_path() / ("dlprep-fuzz-source-" + std::to_string(::getpid()));
  fs::path list = root / "list.txt";
  fs::path dataset = root / "ds";
  fs::path shard = dataset / "data" / "shard-000000.tar";
  Workspace() {
    fs::create_directories(shard.parent_path());
    write_file_atomic(shard, Bytes(kShardBytes, 0));
  }
  ~Workspace() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const Workspace& workspace() {
  static const Workspace w;
  return w;
}

std::vector<SourceEntry> walk(const SampleSource& source) {
  std::vector<SourceEntry> entries;
  source.for_each([&](SourceEntry&& e) { entries.push_back(std::move(e)); });
  return entries;
}

bool is_utf8(const std::string& s) { return escape_invalid_utf8(s) == s; }

// What the list grammar gives: (path, label) per line that is not blank or a comment.
std::vector<std::pair<fs::path, std::string>> reference_list(std::string_view text,
                                                             const fs::path& base) {
  std::vector<std::pair<fs::path, std::string>> out;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string line(text.substr(0, end));
    text = end == text.npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    const fs::path p(line.substr(0, tab));
    out.emplace_back(p.is_absolute() ? p : base / p,
                     tab == line.npos ? "" : escape_invalid_utf8(line.substr(tab + 1)));
  }
  return out;
}

void check_list(const Workspace& w, std::string_view text, const std::vector<SourceEntry>& got) {
  const auto want = reference_list(text, w.list.parent_path());
  if (got.size() != want.size()) std::abort();
  for (size_t i = 0; i < got.size(); ++i) {
    const SourceEntry& e = got[i];
    if (e.path != want[i].first || e.label != want[i].second || !e.named || !e.member.empty())
      std::abort();
    const fs::path key(e.key);
    if (e.key.empty() || key.is_absolute() || !is_utf8(e.key) || !is_utf8(e.label)) std::abort();
    for (const fs::path& part : key)
      if (part.empty() || part == "." || part == "..") std::abort();
  }
}

void check_dataset(const Workspace& w, uint64_t counted, const std::vector<SourceEntry>& got) {
  if (got.size() != counted) std::abort();
  std::map<fs::path, uint64_t> member_end;  // per shard, where the last member's data ends
  for (const SourceEntry& e : got) {
    const fs::path inside = e.path.lexically_relative(w.dataset);
    if (inside.empty() || !e.named) std::abort();
    for (const fs::path& part : inside)
      if (part.empty() || part == "." || part == "..") std::abort();
    if (e.member.empty()) {
      if (e.offset != 0 || e.size != 0) std::abort();
      continue;
    }
    uint64_t& end = member_end[e.path];
    if (e.offset % tar::kBlock != 0 || e.offset < end + tar::kBlock) std::abort();
    if (e.path == w.shard && (e.offset > kShardBytes || e.size > kShardBytes - e.offset))
      std::abort();
    end = e.offset + e.size;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Workspace& w = workspace();
  const ByteSpan rest(data + 1, size - 1);
  const bool list = data[0] % 2 == 0;
  const uint64_t counted = data[0] / 2;
  try {
    if (list) {
      write_file_atomic(w.list, rest);
    } else {
      Manifest m;
      m.complete = true;
      m.samples = counted;
      write_manifest(w.dataset, m);
      write_file_atomic(w.dataset / kIndexName, rest);
    }
    const SampleSource source(list ? w.list : w.dataset);
    const std::vector<SourceEntry> entries = walk(source);
    if (list)
      check_list(w, std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()),
                 entries);
    else
      check_dataset(w, counted, entries);
    if (walk(source) != entries) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
