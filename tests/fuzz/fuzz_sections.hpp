// The inputs of the fuzz targets that stand for files of a run (fuzz_criteo_resume,
// fuzz_dataset_index): sections separated by '\0', where "@R@" stands for the work directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

/// Up to `count` sections of `rest`: each up to the next '\0', fewer when the input ends first
/// (an empty input is one empty section).
inline std::vector<std::string_view> fuzz_sections(std::string_view rest, size_t count) {
  std::vector<std::string_view> out;
  for (size_t at = 0; out.size() < count && at <= rest.size();) {
    size_t end = rest.find('\0', at);
    if (end == std::string_view::npos) end = rest.size();
    out.push_back(rest.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

/// `text` with every "@R@" replaced by `root`.
inline std::string substituted(std::string_view text, const std::string& root) {
  std::string s;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, 3) == "@R@") {
      s += root;
      i += 3;
    } else {
      s += text[i++];
    }
  }
  return s;
}
