// What two criteo-preprocess runs into different output directories must agree on, for the
// tests and benchmarks that compare a run on one device with a run on another
// (criteo_preprocess_cuda_test, criteo_bench --cuda): every regular file byte for byte, except
// stats.json (timings, the device) and, in the checkpoints (vocab/vocab.json, state.json), what
// records each run's own files: its --emit-binary FILE (path, mtime) and its day files (size,
// mtime, inode; lib/tabular/preprocess_state.cpp).
#pragma once

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file_io.hpp"

namespace dlprep::criteo_test {

/// Every regular file under dir that two runs must agree on, relative to dir, sorted.
inline std::vector<std::filesystem::path> compared_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "stats.json")
      out.push_back(std::filesystem::relative(e.path(), dir));
  std::sort(out.begin(), out.end());
  return out;
}

/// The contents of an output file as two runs must agree on them: the bytes, or for a checkpoint
/// its JSON without the run's own file identities (a checkpoint that is not such JSON: its bytes,
/// so that it compares as different from a good one).
inline Bytes compared_contents(const std::filesystem::path& file) {
  Bytes bytes = read_file(file);
  if (file.filename() != "vocab.json" && file.filename() != "state.json") return bytes;
  try {
    nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end());
    for (const char* key : {"emit", "emit_files", "day_files", "single_pass_files"}) j.erase(key);
    const std::string text = j.dump();
    return Bytes(text.begin(), text.end());
  } catch (const nlohmann::json::exception&) {
    return bytes;
  }
}

}  // namespace dlprep::criteo_test
