// Deterministic assignment of samples to formats (the mix) and to shards, from seeded hashes of
// the sample keys: the same on every rerun, machine, thread count and enumeration order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dlprep::dataset {

/// 64-bit hash of a sample key under a seed (FNV-1a over the bytes, then a splitmix64 finaliser):
/// defined on bytes only, so it is the same on every platform.
uint64_t key_hash(std::string_view key, uint64_t seed);

/// Where a sample goes in convert-dataset --shuffle's order (ascending, ties by key): a key hash
/// under a seed of its own, so that the order says nothing of the format the mix gave a sample.
uint64_t shuffle_rank(std::string_view key, uint64_t seed);

/// Assigns each sample one entry of a mix so that every class gets the ratios: within a class,
/// samples are ordered by key_hash(key, seed) and the order is cut at the cumulative ratios.
/// Each cut is rounded with a per-class offset in [0, 1) drawn from the seed, so every class is
/// within one sample of its share and the dataset total is unbiased over many small classes.
/// Memory: 8 bytes per sample (the hashes), the one structure that grows with the dataset.
class MixAssigner {
 public:
  /// `ratios` sum to 1 (see parse_mix); throws Error(invalid_argument) if empty.
  MixAssigner(const std::vector<double>& ratios, uint64_t seed);
  /// Registers a sample of the whole dataset (every shard). Not thread-safe.
  void add(std::string_view label, std::string_view key);
  /// Sorts; call once after every add() and before assign().
  void finish();
  /// True after finish() when two registered samples have one key hash: a duplicate key, or
  /// two keys whose 64-bit hashes collide (about once in 30 datasets of a billion samples).
  /// Then register every sample once more with add_key() and call finish_keys(), which tells
  /// the two apart: is_duplicate() and place() are exact after it.
  bool has_shared_hashes() const { return !shared_.empty(); }
  /// True when the key's hash is one that more than one registered sample has.
  bool shares_hash(std::string_view key) const;
  /// Keeps the key of a sample whose hash is shared. Not thread-safe.
  void add_key(std::string_view label, std::string_view key);
  /// Call once after add_key() of every sample.
  void finish_keys();
  /// Where a sample goes: its mix entry, and its rank among the samples of its class that were
  /// given the same entry (0, 1, 2… in hash order).
  struct Placement {
    size_t entry = 0;
    uint64_t rank = 0;
    /// Where the deal of its class and entry to shards starts, drawn from the seed: the groups'
    /// remainders spread over the shards instead of all falling to shard 0 (many small classes).
    uint64_t turn = 0;
    /// The shard of `count` that holds it: its rank, from its group's turn, modulo `count`.
    uint32_t shard(uint32_t count) const {
      return static_cast<uint32_t>((rank % count + turn % count) % count);
    }
  };
  /// The placement of a sample. Thread-safe after finish().
  Placement place(std::string_view label, std::string_view key) const;
  /// The mix entry of a sample. Thread-safe after finish().
  size_t assign(std::string_view label, std::string_view key) const {
    return place(label, key).entry;
  }
  /// The shard of a sample (Placement::shard), so that every shard gets every class's share of
  /// every format to within one sample. Thread-safe after finish().
  uint32_t shard(std::string_view label, std::string_view key, uint32_t count) const {
    return place(label, key).shard(count);
  }
  /// Registered samples that shard() puts in shard `index` of `count`.
  uint64_t shard_size(uint32_t index, uint32_t count) const;
  /// True when another sample registered, in any class, has the same key: a duplicate key
  /// ("a.png" and "a.jpg" in one folder; one path listed twice with two labels), which would
  /// name one data file for two samples. Without finish_keys() a shared hash counts as a
  /// duplicate. Thread-safe after finish().
  bool is_duplicate(std::string_view key) const;

 private:
  struct ClassHashes {
    std::vector<uint64_t> hashes;
    double offset = 0;
  };
  // A sample whose hash is shared, with its key (finish_keys()).
  struct SharedSample {
    uint64_t hash;
    std::string label, key;
    auto operator<=>(const SharedSample&) const = default;
  };
  // The first rank of each entry after the last in a class of n samples with this offset.
  uint64_t cut(size_t entry, double n, double offset) const;
  // Placement::turn of a class's entry.
  uint64_t turn(std::string_view label, size_t entry) const;
  // Among the distinct keys of a class that share this hash, how many sort before `key`.
  uint64_t tie_rank(uint64_t hash, std::string_view label, std::string_view key) const;
  std::vector<double> cumulative_;
  uint64_t seed_;
  std::unordered_map<std::string, ClassHashes> classes_;
  std::vector<uint64_t> shared_;              // sorted: hashes more than one sample has
  std::vector<SharedSample> shared_samples_;  // sorted
  std::vector<std::string> duplicates_;       // sorted: keys registered more than once
  bool keys_added_ = false;
};

}  // namespace dlprep::dataset
