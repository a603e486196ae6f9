// Synthetic Criteo rows from a seed, for benchmarks (never committed; BENCHMARKS.md "How").
// Statistics chosen to resemble the Kaggle train.txt: per-column cardinalities of the real data,
// Zipf-like categorical frequencies (rank = floor((N+1)^u), i.e. P(rank <= k) ~ log k / log N),
// 8-digit lower-case hex hashes, columns missing at realistic rates, heavy-tailed dense values
// (log-uniform magnitudes) with missing and negative entries, 25% positive labels; about 240 bytes
// per row.
//
// Usage: gen_criteo ROWS SEED > out.tsv
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform(uint64_t& s) { return static_cast<double>(splitmix(s) >> 11) * 0x1.0p-53; }

// Distinct values per column in the Criteo Kaggle data (C1..C26).
constexpr uint32_t kCardinality[26] = {
    1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
    27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572};
// Share of missing values per column (C19-C20, C22, C25-C26 are often empty in the real data).
constexpr double kSparseMissing[26] = {0,    0,    0.03, 0.03, 0, 0.12, 0,    0,   0,
                                       0,    0,    0.03, 0,    0, 0,    0.03, 0,   0,
                                       0.44, 0.44, 0.03, 0.76, 0, 0.03, 0.44, 0.44};
constexpr double kDenseMissing[13] = {0.45, 0,    0.21, 0.22, 0.03, 0.22, 0.04,
                                      0,    0.04, 0.45, 0.04, 0.77, 0.22};
constexpr double kDenseScale[13] = {5, 500, 30, 10, 20000, 100, 20, 30, 200, 2, 10, 10, 20};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gen_criteo ROWS SEED > out.tsv\n");
    return 2;
  }
  uint64_t rows = std::strtoull(argv[1], nullptr, 10);
  uint64_t state = std::strtoull(argv[2], nullptr, 10) * 0x2545F4914F6CDD1Dull + 1;
  static char buf[1 << 20];
  std::setvbuf(stdout, buf, _IOFBF, sizeof buf);
  char line[512];
  static const char kHex[] = "0123456789abcdef";
  for (uint64_t r = 0; r < rows; ++r) {
    char* p = line;
    *p++ = uniform(state) < 0.25 ? '1' : '0';
    for (int k = 0; k < 13; ++k) {
      *p++ = '\t';
      if (uniform(state) < kDenseMissing[k]) continue;
      // Heavy tail: magnitude log-uniform over [0, 2*scale^2), small values most common.
      double u = uniform(state);
      long v =
          static_cast<long>(std::exp(u * std::log(kDenseScale[k] * kDenseScale[k] * 2 + 1))) - 1;
      if (k == 1 && uniform(state) < 0.1)
        v = -1 - static_cast<long>(uniform(state) * 3);  // I2: -1..-3
      if (k == 7 && uniform(state) < 0.05) v = -v;       // I8
      p += std::snprintf(p, 24, "%ld", v);
    }
    for (int j = 0; j < 26; ++j) {
      *p++ = '\t';
      if (uniform(state) < kSparseMissing[j]) continue;
      double n = kCardinality[j];
      auto rank = static_cast<uint64_t>(std::exp(uniform(state) * std::log(n + 1)));
      uint64_t h =
          (rank + 1) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(j) * 0xD6E8FEB86659FD93ull;
      h ^= h >> 29;
      h *= 0xBF58476D1CE4E5B9ull;
      auto x = static_cast<uint32_t>(h >> 32);
      for (int d = 7; d >= 0; --d) *p++ = kHex[(x >> (4 * d)) & 15];
    }
    *p++ = '\n';
    std::fwrite(line, 1, static_cast<size_t>(p - line), stdout);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
