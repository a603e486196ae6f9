#include "dataset/assign.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>
#include <tuple>

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

// The salts keep the class offsets, the deal turns and the shuffle order independent of the key
// hashes drawn from the same seed.
constexpr uint64_t kClassOffsetSalt = 0x434C415353ull;  // "CLASS"
constexpr uint64_t kTurnSalt = 0x5455524Eull;           // "TURN"
constexpr uint64_t kShuffleSalt = 0x53485546464C45ull;  // "SHUFFLE"

// A hash as a double in [0, 1): its top 53 bits.
double unit(uint64_t h) { return double(h >> 11) * 0x1.0p-53; }

}  // namespace

uint64_t key_hash(std::string_view key, uint64_t seed) { return mix64(fnv1a(key) ^ mix64(seed)); }

uint64_t shuffle_rank(std::string_view key, uint64_t seed) {
  return key_hash(key, seed ^ kShuffleSalt);
}

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
}

void MixAssigner::finish() {
  for (auto& [label, c] : classes_) std::sort(c.hashes.begin(), c.hashes.end());
  // The shared hashes, by a merge of the sorted classes (no second copy of every hash).
  using Cursor = std::pair<const uint64_t*, const uint64_t*>;  // next, end
  auto later = [](const Cursor& a, const Cursor& b) { return *a.first > *b.first; };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heads(later);
  for (const auto& [label, c] : classes_)
    if (!c.hashes.empty()) heads.push({c.hashes.data(), c.hashes.data() + c.hashes.size()});
  std::optional<uint64_t> previous;
  while (!heads.empty()) {
    Cursor top = heads.top();
    heads.pop();
    uint64_t h = *top.first;
    if (previous == h && (shared_.empty() || shared_.back() != h)) shared_.push_back(h);
    previous = h;
    if (++top.first != top.second) heads.push(top);
  }
}

bool MixAssigner::shares_hash(std::string_view key) const {
  return std::binary_search(shared_.begin(), shared_.end(), key_hash(key, seed_));
}

void MixAssigner::add_key(std::string_view label, std::string_view key) {
  if (shares_hash(key))
    shared_samples_.push_back({key_hash(key, seed_), std::string(label), std::string(key)});
}

void MixAssigner::finish_keys() {
  std::sort(shared_samples_.begin(), shared_samples_.end(),
            [](const SharedSample& a, const SharedSample& b) {
              return std::tie(a.hash, a.key) < std::tie(b.hash, b.key);
            });
  for (size_t i = 1; i < shared_samples_.size(); ++i)
    if (shared_samples_[i].key == shared_samples_[i - 1].key &&
        (duplicates_.empty() || duplicates_.back() != shared_samples_[i].key))
      duplicates_.push_back(shared_samples_[i].key);
  std::sort(duplicates_.begin(), duplicates_.end());
  std::sort(shared_samples_.begin(), shared_samples_.end());
  keys_added_ = true;
}

uint64_t MixAssigner::tie_rank(uint64_t hash, std::string_view label, std::string_view key) const {
  // shared_samples_ is sorted by (hash, label, key): the class's keys of this hash are a run.
  auto it = std::lower_bound(shared_samples_.begin(), shared_samples_.end(), hash,
                             [&](const SharedSample& s, uint64_t h) {
                               // (not std::tie: a string and a string_view in tuples do not
                               // compare under clang 14 with libstdc++ 12 in C++20)
                               return s.hash != h ? s.hash < h : std::string_view(s.label) < label;
                             });
  uint64_t rank = 0;
  for (const std::string* previous = nullptr;
       it != shared_samples_.end() && it->hash == hash && it->label == label && it->key < key;
       previous = &it->key, ++it)
    if (!previous || *previous != it->key) ++rank;
  return rank;
}

uint64_t MixAssigner::turn(std::string_view label, size_t entry) const {
  return mix64(fnv1a(label) ^ mix64(seed_ ^ kTurnSalt) ^ mix64(entry));
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
  if (keys_added_ && std::binary_search(shared_.begin(), shared_.end(), h))
    rank += tie_rank(h, label, key);  // distinct keys with one hash: ranks in key order
  uint64_t begin = 0;
  for (size_t j = 0; j < cumulative_.size(); ++j) {
    uint64_t end = cut(j, n, it->second.offset);
    if (rank < end) return {j, rank - begin, turn(label, j)};
    begin = std::max(begin, end);
  }
  const size_t last = cumulative_.size() - 1;
  return {last, rank - begin, turn(label, last)};
}

uint64_t MixAssigner::shard_size(uint32_t index, uint32_t count) const {
  uint64_t total = 0;
  for (const auto& [label, c] : classes_) {
    double n = double(c.hashes.size());
    uint64_t begin = 0;
    for (size_t j = 0; j < cumulative_.size(); ++j) {
      uint64_t end = std::max(begin, cut(j, n, c.offset));
      // Ranks 0..size-1 of this entry; those from `first` in steps of `count` are ours.
      uint64_t size = end - begin;
      uint64_t first = (index + count - turn(label, j) % count) % count;
      if (size > first) total += (size - first + count - 1) / count;
      begin = end;
    }
  }
  return total;
}

bool MixAssigner::is_duplicate(std::string_view key) const {
  if (!shares_hash(key)) return false;
  return !keys_added_ || std::binary_search(duplicates_.begin(), duplicates_.end(), key);
}

}  // namespace dlprep::dataset
