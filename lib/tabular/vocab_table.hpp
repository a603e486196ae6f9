// GenVocab without an order of updates: the first-appearance table that the CUDA backend builds
// with atomics, and the rule that turns it into exactly ColumnVocab's vocabulary.
//
// ColumnVocab (vocab.hpp) adds rows one by one, so a value's index is its rank in order of first
// appearance. A GPU updates a table from thousands of threads in no fixed order. Instead of
// appending, each entry keeps
//   first  the smallest key of the rows holding the value (atomicMin), and
//   count  how many rows hold it (atomicAdd),
// where a row's key strictly increases with its position in the input (row_key below). Min and
// sum are commutative, so the table's contents do not depend on the order of the updates; and
// since a row holds one value per column, two values of a column never share a first key, so
// sorting the entries by first key gives one total order: the order of first appearance.
// Continuing a saved vocabulary: its values get first = 0, 1, ... (their indices) and counts, and
// the keys of new rows start above them.
//
// Tables: with a modulus M up to kFlatMaxModulus, arrays of M entries indexed by the value;
// otherwise open addressing over 2^bits 64-bit keys (kEmptySlot = free), kept at most half full.
// Plain C++ shared by nvcc and g++ (DLPREP_HD); tests/unit/tabular/vocab_table_test.cpp runs these
// functions on the host in random update orders, the way the kernels interleave them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tabular/criteo_schema.hpp"
#include "tabular/parse_row.hpp"

namespace dlprep::tabular {

/// A free hash slot, and the `first` of a value never seen (larger than every key).
inline constexpr uint64_t kEmptySlot = ~uint64_t{0};

/// The fewest bits of a hash table (as ColumnVocab's first table).
inline constexpr uint32_t kMinTableBits = 12;

/// First-appearance key of a row, strictly increasing in input order over a whole pass: the
/// chunk's base plus, for text, the row's start offset / kMinRowBytes (valid rows start at least
/// that far apart), for binary rows the row index. The base then advances by
/// row_key_span(): bytes / kMinRowBytes + 1 for text, the row count for binary rows.
DLPREP_HD inline uint64_t row_key(uint64_t chunk_base, uint32_t position_in_chunk) {
  return chunk_base + position_in_chunk;
}
DLPREP_HD inline uint64_t row_key_span(bool text, uint64_t bytes_or_rows) {
  return text ? bytes_or_rows / kMinRowBytes + 1 : bytes_or_rows;
}

/// Home slot of a value in a table of 2^bits slots (Fibonacci hashing, as ColumnVocab).
DLPREP_HD inline uint32_t vocab_hash_home(uint32_t value, uint32_t bits) {
  return static_cast<uint32_t>((uint64_t{value} * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/// Finds the slot of `value` in the open-addressing table `keys` (2^bits slots, linear probing),
/// claiming a free one when it is absent. `ops.load(p)` reads a key, `ops.cas(p, expected,
/// desired)` is an atomic compare-and-swap returning the previous value (atomicCAS on the device).
/// Sets *inserted when this call claimed the slot. Keys are never removed or changed once set, so
/// concurrent calls agree on every value's slot. The table must have a free slot.
template <class Ops>
DLPREP_HD inline uint32_t vocab_hash_find_or_insert(uint64_t* keys, uint32_t bits, uint32_t value,
                                                    Ops& ops, bool* inserted) {
  const uint32_t mask = (bits >= 32 ? 0u : (1u << bits)) - 1;
  uint32_t i = vocab_hash_home(value, bits);
  *inserted = false;
  for (;;) {
    uint64_t k = ops.load(&keys[i]);
    if (k == value) return i;
    if (k == kEmptySlot) {
      uint64_t prev = ops.cas(&keys[i], kEmptySlot, uint64_t{value});
      if (prev == kEmptySlot) {
        *inserted = true;
        return i;
      }
      if (prev == value) return i;  // another thread inserted the same value just now
    }
    i = (i + 1) & mask;
  }
}

/// Looks a value up without inserting; returns the slot or -1 (pass 2 of the hash columns).
DLPREP_HD inline int64_t vocab_hash_find(const uint64_t* keys, uint32_t bits, uint32_t value) {
  const uint32_t mask = (bits >= 32 ? 0u : (1u << bits)) - 1;
  uint32_t i = vocab_hash_home(value, bits);
  for (;;) {
    uint64_t k = keys[i];
    if (k == value) return i;
    if (k == kEmptySlot) return -1;
    i = (i + 1) & mask;
  }
}

/// Table bits so that `entries` values fill at most half of it (at least kMinTableBits).
DLPREP_HD inline uint32_t vocab_hash_bits_for(uint64_t entries) {
  uint32_t bits = kMinTableBits;
  while ((uint64_t{1} << bits) < 2 * entries) ++bits;
  return bits;
}

/// One entry of a table read back: its value, first key and count.
struct VocabEntry {
  uint32_t value;
  uint64_t first;
  uint64_t count;
};

/// The vocabulary of a table's used entries (any order): values and counts in order of first
/// appearance. The host statement of what the device does with a radix sort.
inline void vocab_entries_in_order(std::vector<VocabEntry>& entries, std::vector<uint32_t>& values,
                                   std::vector<uint64_t>& counts) {
  std::sort(entries.begin(), entries.end(),
            [](const VocabEntry& a, const VocabEntry& b) { return a.first < b.first; });
  values.resize(entries.size());
  counts.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    values[i] = entries[i].value;
    counts[i] = entries[i].count;
  }
}

}  // namespace dlprep::tabular
