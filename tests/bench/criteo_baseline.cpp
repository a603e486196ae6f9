// The straightforward C++ reference of the Criteo benchmark (BENCHMARKS.md: ~350K rows/s here):
// what a competent engineer writes in an afternoon. std::getline, strtol/strtoul, one
// std::unordered_map per column, two passes, one thread. Same transform and same .npy outputs as
// `dlprep criteo-preprocess` (first-appearance IDs from 0, OOV = one past the last ID, modulus,
// log(max(x,0)+offset) rounded once to float), so the benchmark can check its outputs first.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tabular/npy_format.hpp"

uint64_t criteo_baseline(const std::string& input, const std::string& out_dir, uint32_t modulus,
                         double log_offset) {
  std::vector<std::unordered_map<uint32_t, int32_t>> maps(26);
  std::string line;
  uint64_t rows = 0;
  auto fields_of = [](const std::string& l, std::vector<std::string>& f) {
    f.clear();
    size_t start = 0;
    for (;;) {
      size_t tab = l.find('\t', start);
      f.push_back(l.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (!f.empty() && !f.back().empty() && f.back().back() == '\r') f.back().pop_back();
    if (f.size() != 40) throw std::runtime_error("baseline: a row without 40 fields");
  };
  auto hex = [modulus](const std::string& s) {
    uint32_t v = s.empty() ? 0 : static_cast<uint32_t>(std::strtoul(s.c_str(), nullptr, 16));
    return modulus ? v % modulus : v;
  };
  std::vector<std::string> f;
  {  // Pass 1: vocabularies in order of first appearance.
    std::ifstream in(input);
    while (std::getline(in, line)) {
      fields_of(line, f);
      for (int j = 0; j < 26; ++j) {
        auto& m = maps[j];
        m.emplace(hex(f[14 + j]), static_cast<int32_t>(m.size()));
      }
      ++rows;
    }
  }
  // Pass 2: apply, transform, write.
  std::ofstream dense(out_dir + "/day_0_dense.npy", std::ios::binary);
  std::ofstream sparse(out_dir + "/day_0_sparse.npy", std::ios::binary);
  std::ofstream labels(out_dir + "/day_0_labels.npy", std::ios::binary);
  std::string h = dlprep::tabular::npy_header("<f4", rows, 13);
  dense.write(h.data(), static_cast<std::streamsize>(h.size()));
  h = dlprep::tabular::npy_header("<i4", rows, 26);
  sparse.write(h.data(), static_cast<std::streamsize>(h.size()));
  h = dlprep::tabular::npy_header("<i4", rows, 1);
  labels.write(h.data(), static_cast<std::streamsize>(h.size()));
  std::ifstream in(input);
  while (std::getline(in, line)) {
    fields_of(line, f);
    int32_t label = static_cast<int32_t>(std::strtol(f[0].c_str(), nullptr, 10));
    labels.write(reinterpret_cast<const char*>(&label), 4);
    for (int k = 0; k < 13; ++k) {
      long x = std::strtol(f[1 + k].c_str(), nullptr, 10);
      float v = static_cast<float>(std::log(static_cast<double>(x < 0 ? 0 : x) + log_offset));
      dense.write(reinterpret_cast<const char*>(&v), 4);
    }
    for (int j = 0; j < 26; ++j) {
      auto it = maps[j].find(hex(f[14 + j]));
      int32_t id = it == maps[j].end() ? static_cast<int32_t>(maps[j].size()) : it->second;
      sparse.write(reinterpret_cast<const char*>(&id), 4);
    }
  }
  if (!dense || !sparse || !labels) throw std::runtime_error("baseline: write failed");
  return rows;
}
