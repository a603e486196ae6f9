// Criteo text for the tabular tests: rows built field by field, randomly damaged rows (the
// differential tests of the parsers), and gzip files read back whole.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tabular/criteo_schema.hpp"
#include "tabular/gzip_reader.hpp"

namespace dlprep::tabular::testing {

/// label, then the dense and sparse fields (missing ones empty), tab-separated, no newline.
inline std::string make_row(const std::string& label, std::vector<std::string> dense,
                            std::vector<std::string> sparse) {
  dense.resize(kNumDense);
  sparse.resize(kNumSparse);
  std::string s = label;
  for (auto& d : dense) s += "\t" + d;
  for (auto& c : sparse) s += "\t" + c;
  return s;
}

/// What mutated_rows draws from: the first `valid` values of each list are valid fields, the
/// rest invalid ones, picked once in `rare_invalid` draws; edits insert, replace or delete
/// characters of `alphabet`.
struct RowMutations {
  uint64_t seed = 1;
  int rows = 20000;
  std::string alphabet;
  std::vector<std::string> dense, sparse;
  size_t dense_valid = 10, sparse_valid = 8;
  uint64_t rare_invalid = 300;
};

/// `m.rows` rows from a seeded generator: 5 in 8 intact, the others with 1-3 random edits; a
/// quarter end in CRLF. The same text for the same parameters on every machine.
inline std::string mutated_rows(const RowMutations& m) {
  uint64_t seed = m.seed;
  auto rnd = [&](uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  auto pick = [&](const std::vector<std::string>& v, size_t valid) {
    return v[rnd(m.rare_invalid) == 0 ? valid + rnd(v.size() - valid) : rnd(valid)];
  };
  std::string text;
  for (int i = 0; i < m.rows; ++i) {
    std::vector<std::string> d, s;
    for (int k = 0; k < kNumDense; ++k) d.push_back(pick(m.dense, m.dense_valid));
    for (int j = 0; j < kNumSparse; ++j) s.push_back(pick(m.sparse, m.sparse_valid));
    std::string line = make_row(rnd(3) ? "0" : "1", d, s);
    for (uint64_t e = rnd(8) < 5 ? 0 : rnd(3) + 1; e > 0 && !line.empty(); --e) {
      size_t at = rnd(line.size());
      switch (rnd(3)) {
        case 0:
          line[at] = m.alphabet[rnd(m.alphabet.size())];
          break;
        case 1:
          line.erase(at, 1);
          break;
        default:
          line.insert(at, 1, m.alphabet[rnd(m.alphabet.size())]);
          break;
      }
    }
    text += line + (rnd(4) == 0 ? "\r\n" : "\n");
  }
  return text;
}

/// The whole decompressed content of a gzip file, through the reader the pipeline uses.
inline std::string gunzip(const std::filesystem::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  auto r = open_gzip_reader(fd, p.string());
  std::string out;
  std::vector<uint8_t> buf(1 << 16);
  while (size_t n = r->read(buf.data(), buf.size())) out.append(buf.begin(), buf.begin() + n);
  ::close(fd);
  return out;
}

}  // namespace dlprep::tabular::testing
