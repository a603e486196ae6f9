#include "dataset/assign.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace dlprep::dataset {
namespace {

// splitmix64's finaliser (Steele et al., "Fast splittable pseudorandom number generators"):
// spreads FNV's weak low bits over the whole word.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a 64-bit offset basis and prime
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

// The salt keeps the class offsets independent of the key hashes drawn from the same seed.
constexpr uint64_t kClassOffsetSalt = 0x434C415353ull;  // "CLASS"

// A hash as a double in [0, 1): its top 53 bits.
double unit(uint64_t h) { return double(h >> 11) * 0x1.0p-53; }

}  // namespace

uint64_t key_hash(std::string_view key, uint64_t seed) { return mix64(fnv1a(key) ^ mix64(seed)); }

MixAssigner::MixAssigner(const std::vector<double>& ratios, uint64_t seed) : seed_(seed) {
  if (ratios.empty()) throw Error(Errc::invalid_argument, "empty mix");
  double sum = 0;
  for (double r : ratios) cumulative_.push_back(sum += r);
  for (double& c : cumulative_) c /= sum;
  cumulative_.back() = 1.0;
}

void MixAssigner::add(std::string_view label, std::string_view key) {
  auto it = classes_.find(std::string(label));
  if (it == classes_.end()) {
    it = classes_.emplace(std::string(label), ClassHashes{}).first;
    it->second.offset = unit(mix64(fnv1a(label) ^ mix64(seed_ ^ kClassOffsetSalt)));
  }
  it->second.hashes.push_back(key_hash(key, seed_));
  all_hashes_.push_back(it->second.hashes.back());
}

void MixAssigner::finish() {
  for (auto& [label, c] : classes_) std::sort(c.hashes.begin(), c.hashes.end());
  std::sort(all_hashes_.begin(), all_hashes_.end());
}

uint64_t MixAssigner::cut(size_t entry, double n, double offset) const {
  if (entry + 1 >= cumulative_.size()) return static_cast<uint64_t>(n);
  double c = std::floor(n * cumulative_[entry] + offset);
  return static_cast<uint64_t>(std::clamp(c, 0.0, n));
}

MixAssigner::Placement MixAssigner::place(std::string_view label, std::string_view key) const {
  uint64_t h = key_hash(key, seed_);
  auto it = classes_.find(std::string(label));
  if (it == classes_.end() || it->second.hashes.empty()) {
    // Not registered (cannot happen in convert): the hash as a uniform draw.
    double u = unit(h);
    for (size_t j = 0; j < cumulative_.size(); ++j)
      if (u < cumulative_[j]) return {j, mix64(h)};
    return {cumulative_.size() - 1, mix64(h)};
  }
  const auto& hashes = it->second.hashes;
  double n = double(hashes.size());
  uint64_t rank = static_cast<uint64_t>(std::lower_bound(hashes.begin(), hashes.end(), h) -
                                        hashes.begin());
  uint64_t begin = 0;
  for (size_t j = 0; j < cumulative_.size(); ++j) {
    uint64_t end = cut(j, n, it->second.offset);
    if (rank < end) return {j, rank - begin};
    begin = std::max(begin, end);
  }
  return {cumulative_.size() - 1, rank - begin};
}

uint64_t MixAssigner::shard_size(uint32_t index, uint32_t count) const {
  uint64_t total = 0;
  for (const auto& [label, c] : classes_) {
    double n = double(c.hashes.size());
    uint64_t begin = 0;
    for (size_t j = 0; j < cumulative_.size(); ++j) {
      uint64_t end = std::max(begin, cut(j, n, c.offset));
      uint64_t size = end - begin;  // ranks 0..size-1 of this entry; index, index+count, … are ours
      if (size > index) total += (size - index + count - 1) / count;
      begin = end;
    }
  }
  return total;
}

bool MixAssigner::is_duplicate(std::string_view key) const {
  uint64_t h = key_hash(key, seed_);
  auto [lo, hi] = std::equal_range(all_hashes_.begin(), all_hashes_.end(), h);
  return hi - lo > 1;
}

}  // namespace dlprep::dataset
