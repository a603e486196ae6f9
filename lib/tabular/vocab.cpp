#include "tabular/vocab.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace dlprep::tabular {
namespace {

inline uint64_t hash_bits(uint32_t key, uint32_t shift) {
  // Fibonacci hashing: the high bits of a multiplication by 2^64 / phi.
  return (uint64_t{key} * 0x9E3779B97F4A7C15ull) >> shift;
}

constexpr size_t kInitialHashSlots = size_t{1} << 12;
constexpr size_t kMinListCapacity = 1024;
// values_ (4 bytes) and counts_ (8 bytes) of each value.
constexpr uint64_t kListBytes = 12;

// The slots of a table holding `values` at most half full.
size_t hash_slots_for(uint64_t values) {
  size_t slots = kInitialHashSlots;
  while (slots < 2 * values) slots *= 2;
  return slots;
}

}  // namespace

ColumnVocab::ColumnVocab(uint32_t modulus, MemoryGuard* guard) : guard_(guard) {
  flat_ = modulus != 0 && modulus <= kFlatMaxModulus;
  if (flat_)
    slot_.assign(modulus, -1);  // in the run's estimate before it starts
  else
    hash_resize(kInitialHashSlots);
}

uint64_t ColumnVocab::bytes_for(uint32_t modulus, uint64_t values) {
  const bool flat = modulus != 0 && modulus <= kFlatMaxModulus;
  const uint64_t table = flat ? uint64_t{modulus} * 4 : hash_slots_for(values) * sizeof(Entry);
  return table + values * (kListBytes + 4);  // + 4: the IDs of finalize()
}

// A new table of `slots` (a power of two), filled from the old one: both exist meanwhile.
void ColumnVocab::hash_resize(size_t slots) {
  const uint64_t bytes = slots * sizeof(Entry);
  if (guard_)
    guard_->reserve(bytes, "a vocabulary table growing to " + std::to_string(slots) + " slots");
  std::vector<Entry> old;
  old.swap(table_);
  // Written a MiB at a time, each taken back from the guard once it is resident: another column's
  // reserve() meanwhile sees these bytes once, not both announced and resident (up to a table
  // too many per thread, refusing runs that fit).
  table_.reserve(slots);  // address space only, until written
  constexpr size_t kChunkSlots = (size_t{1} << 20) / sizeof(Entry);
  while (table_.size() < slots) {
    const size_t from = table_.size();
    const size_t n = std::min(kChunkSlots, slots - from);
    // Zeros, then marked empty: resize(n, value) copied the value through the stack (3x slower).
    table_.resize(from + n);
    for (size_t i = from; i < from + n; ++i) table_[i].index = -1;
    if (guard_) guard_->release(n * sizeof(Entry));
  }
  shift_ = 64 - static_cast<uint32_t>(std::countr_zero(slots));
  const size_t mask = slots - 1;
  for (const Entry& e : old) {
    if (e.index < 0) continue;
    size_t i = hash_bits(e.key, shift_);
    while (table_[i].index >= 0) i = (i + 1) & mask;
    table_[i] = e;
  }
}

// The lists double, announced whole; the copy is resident at once, the rest once add() fills it
// (settle_lists()).
void ColumnVocab::grow_lists() {
  settle_lists();
  const size_t size = values_.size();
  const size_t capacity = std::max(kMinListCapacity, size * 2);
  if (guard_)
    guard_->reserve(capacity * kListBytes,
                    "a vocabulary list growing to " + std::to_string(capacity) + " values");
  values_.reserve(capacity);
  counts_.reserve(capacity);
  if (guard_) guard_->release(size * kListBytes);
  announced_to_ = capacity;
  settled_to_ = size;
}

void ColumnVocab::settle_lists() {
  const size_t filled = std::min(values_.size(), announced_to_);
  if (filled <= settled_to_) return;
  if (guard_) guard_->release((filled - settled_to_) * kListBytes);
  settled_to_ = filled;
}

void ColumnVocab::append(uint32_t value) {
  if (values_.size() == values_.capacity()) grow_lists();
  values_.push_back(value);
  counts_.push_back(0);
}

int32_t ColumnVocab::hash_insert(uint32_t value) {
  size_t mask = table_.size() - 1;
  size_t i = hash_bits(value, shift_);
  for (;;) {
    Entry& e = table_[i];
    if (e.index < 0) break;
    if (e.key == value) return e.index;
    i = (i + 1) & mask;
  }
  if (values_.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw Error(Errc::limit_exceeded, "more than 2^31 distinct values in one column");
  auto index = static_cast<int32_t>(values_.size());
  table_[i] = Entry{value, index};
  append(value);
  if (values_.size() * 2 > table_.size()) hash_resize(table_.size() * 2);
  return index;
}

int32_t ColumnVocab::hash_lookup(uint32_t value) const {
  size_t mask = table_.size() - 1;
  size_t i = hash_bits(value, shift_);
  for (;;) {
    const Entry& e = table_[i];
    if (e.index < 0) return oov_;
    if (e.key == value) return e.index;
    i = (i + 1) & mask;
  }
}

void ColumnVocab::add(const uint32_t* values, size_t n, uint32_t* slots) {
  if (flat_) {
    int32_t* slot = slot_.data();
    for (size_t i = 0; i < n; ++i) {
      uint32_t v = values[i];
      int32_t s = slot[v];
      if (s < 0) {
        s = static_cast<int32_t>(values_.size());
        slot[v] = s;
        append(v);
      }
      ++counts_[static_cast<size_t>(s)];
      if (slots) slots[i] = static_cast<uint32_t>(s);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      int32_t s = hash_insert(values[i]);
      ++counts_[static_cast<size_t>(s)];
      if (slots) slots[i] = static_cast<uint32_t>(s);
    }
  }
  settle_lists();
}

void ColumnVocab::assign(std::vector<uint32_t> values, std::vector<uint64_t> counts) {
  if (values.size() != counts.size())
    throw Error(Errc::corrupt_data, "vocabulary values and counts differ in length");
  if (!values_.empty()) throw Error(Errc::internal, "ColumnVocab::assign on a used vocabulary");
  if (values.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw Error(Errc::limit_exceeded, "more than 2^31 distinct values in one column");
  if (flat_) {
    const auto modulus = static_cast<uint32_t>(slot_.size());
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t v = values[i];
      if (v >= modulus || slot_[v] >= 0)
        throw Error(Errc::corrupt_data, "vocabulary value out of range or repeated");
      slot_[v] = static_cast<int32_t>(i);
    }
  } else {
    // The table at its final size at once: no growth, and no copy of the lists.
    if (hash_slots_for(values.size()) > table_.size()) hash_resize(hash_slots_for(values.size()));
    const size_t mask = table_.size() - 1;
    for (size_t n = 0; n < values.size(); ++n) {
      size_t i = hash_bits(values[n], shift_);
      while (table_[i].index >= 0) {
        if (table_[i].key == values[n])
          throw Error(Errc::corrupt_data, "vocabulary value repeated");
        i = (i + 1) & mask;
      }
      table_[i] = Entry{values[n], static_cast<int32_t>(n)};
    }
  }
  values_ = std::move(values);
  counts_ = std::move(counts);
  announced_to_ = settled_to_ = values_.size();  // resident already
}

size_t ColumnVocab::finalize(uint64_t min_freq, int64_t id_base, int32_t oov_id) {
  const uint64_t id_bytes = values_.size() * sizeof(int32_t);
  if (guard_)
    guard_->reserve(id_bytes,
                    "the IDs of a vocabulary of " + std::to_string(values_.size()) + " values");
  // First-appearance index -> final ID.
  std::vector<int32_t> id(values_.size());
  int64_t next = id_base;
  for (size_t i = 0; i < values_.size(); ++i) {
    if (counts_[i] >= min_freq) {
      // The largest ID plus one (num_embeddings) must fit in int32 too.
      if (next >= std::numeric_limits<int32_t>::max())
        throw Error(Errc::limit_exceeded, "IDs do not fit in int32");
      id[i] = static_cast<int32_t>(next++);
    } else {
      id[i] = oov_id;
    }
  }
  oov_ = oov_id;
  ids_ = std::move(id);
  if (guard_) guard_->release(id_bytes);
  if (flat_) {
    for (int32_t& s : slot_) s = s < 0 ? oov_id : ids_[static_cast<size_t>(s)];
  } else {
    for (Entry& e : table_)
      if (e.index >= 0) e.index = ids_[static_cast<size_t>(e.index)];
  }
  return static_cast<size_t>(next - id_base);
}

}  // namespace dlprep::tabular
