// GenVocab and ApplyVocab for one sparse column: the values in order of first appearance, with
// counts; then a value -> contiguous ID table. With a modulus M up to kFlatMaxModulus the table is
// a flat array indexed by the value (no hashing: one load per lookup); otherwise an open-addressing
// hash table. Each column is updated by one thread, in row order, so the first-appearance order
// (and therefore every ID) is independent of the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tabular/memory_guard.hpp"

namespace dlprep::tabular {

/// Largest modulus given a flat table: 4 Mi entries x 4 bytes = 16 MiB per column, 416 MiB for
/// all 26 (under the 1 GiB budget of the Criteo targets). Larger moduli hash.
inline constexpr uint32_t kFlatMaxModulus = uint32_t{1} << 22;

class ColumnVocab {
 public:
  /// modulus 0: values are full 32-bit (hash table). With a guard, every growth of the table and
  /// lists is announced to it first (and refused there when it would pass --max-memory).
  explicit ColumnVocab(uint32_t modulus = 0, MemoryGuard* guard = nullptr);

  /// About the bytes a column of `values` values takes once finalized (table, lists, IDs).
  static uint64_t bytes_for(uint32_t modulus, uint64_t values);

  /// Pass 1: counts each value, appending unseen ones to the first-appearance list. The values
  /// must already be reduced by the modulus.
  /// With `slots` (which may be `values` itself), also writes each value's first-appearance index.
  void add(const uint32_t* values, size_t n, uint32_t* slots = nullptr);
  /// Restores a saved vocabulary (values in first-appearance order, their counts).
  void assign(std::vector<uint32_t> values, std::vector<uint64_t> counts);

  size_t size() const { return values_.size(); }
  const std::vector<uint32_t>& values() const { return values_; }
  const std::vector<uint64_t>& counts() const { return counts_; }

  /// Turns the table into value -> ID: values with count >= min_freq get id_base, id_base + 1, ...
  /// in first-appearance order; the others, and values never seen, get oov_id. Returns the number
  /// of kept values. After this, add() must not be called.
  size_t finalize(uint64_t min_freq, int64_t id_base, int32_t oov_id);

  /// Pass 2: the ID of a value (reduced by the modulus). Only after finalize().
  int32_t lookup(uint32_t value) const {
    if (flat_) return slot_[value];
    return hash_lookup(value);
  }

  /// After finalize(), for a flat table: value -> ID, indexed by the value (what lookup() reads),
  /// for loops that keep the pointer at hand; nullptr for a hash table.
  const int32_t* flat_ids() const { return flat_ ? slot_.data() : nullptr; }
  /// After finalize(): first-appearance index -> ID (for rows whose values pass 1 already turned
  /// into indices, so that pass 2 needs no table indexed by value).
  const std::vector<int32_t>& index_ids() const { return ids_; }
  /// After finalize(): the ID of values not kept or never seen.
  int32_t oov_id() const { return oov_; }

  bool flat() const { return flat_; }
  MemoryGuard* guard() const { return guard_; }

 private:
  int32_t hash_insert(uint32_t value);  // returns the first-appearance index
  int32_t hash_lookup(uint32_t value) const;
  void hash_resize(size_t slots);
  void append(uint32_t value);
  void grow_lists();
  void settle_lists();

  MemoryGuard* guard_ = nullptr;
  // The lists' capacity announced to the guard, and how much of it is filled (resident) and taken
  // back: announced, unfilled capacity is not resident yet, and the guard must still count it.
  size_t announced_to_ = 0;
  size_t settled_to_ = 0;

  bool flat_ = false;
  int32_t oov_ = 0;
  std::vector<int32_t> slot_;  // flat: value -> index (-1 unseen), then -> ID
  struct Entry {
    uint32_t key;
    int32_t index;  // -1: empty
  };
  std::vector<Entry> table_;  // hash: capacity a power of two, load <= 1/2
  uint32_t shift_ = 64;
  std::vector<uint32_t> values_;
  std::vector<uint64_t> counts_;
  std::vector<int32_t> ids_;
};

}  // namespace dlprep::tabular
