#include "tabular/vocab.hpp"

#include <limits>

#include "core/error.hpp"

namespace dlprep::tabular {
namespace {

inline uint64_t hash_bits(uint32_t key, uint32_t shift) {
  // Fibonacci hashing: the high bits of a multiplication by 2^64 / phi.
  return (uint64_t{key} * 0x9E3779B97F4A7C15ull) >> shift;
}

constexpr uint32_t kInitialHashBits = 12;

}  // namespace

ColumnVocab::ColumnVocab(uint32_t modulus) {
  flat_ = modulus != 0 && modulus <= kFlatMaxModulus;
  if (flat_) {
    slot_.assign(modulus, -1);
  } else {
    table_.assign(size_t{1} << kInitialHashBits, Entry{0, -1});
    shift_ = 64 - kInitialHashBits;
  }
}

void ColumnVocab::hash_grow() {
  std::vector<Entry> old;
  old.swap(table_);
  table_.assign(old.size() * 2, Entry{0, -1});
  --shift_;
  size_t mask = table_.size() - 1;
  for (const Entry& e : old) {
    if (e.index < 0) continue;
    size_t i = hash_bits(e.key, shift_);
    while (table_[i].index >= 0) i = (i + 1) & mask;
    table_[i] = e;
  }
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
  values_.push_back(value);
  counts_.push_back(0);
  if (values_.size() * 2 > table_.size()) hash_grow();
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
        values_.push_back(v);
        counts_.push_back(0);
      }
      ++counts_[static_cast<size_t>(s)];
      if (slots) slots[i] = static_cast<uint32_t>(s);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    int32_t s = hash_insert(values[i]);
    ++counts_[static_cast<size_t>(s)];
    if (slots) slots[i] = static_cast<uint32_t>(s);
  }
}

void ColumnVocab::assign(std::vector<uint32_t> values, std::vector<uint64_t> counts) {
  if (values.size() != counts.size())
    throw Error(Errc::corrupt_data, "vocabulary values and counts differ in length");
  uint32_t modulus = static_cast<uint32_t>(slot_.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t v = values[i];
    if (flat_) {
      if (v >= modulus || slot_[v] >= 0)
        throw Error(Errc::corrupt_data, "vocabulary value out of range or repeated");
      slot_[v] = static_cast<int32_t>(i);
      values_.push_back(v);
      counts_.push_back(counts[i]);
    } else {
      size_t before = values_.size();
      int32_t index = hash_insert(v);
      if (values_.size() == before || index != static_cast<int32_t>(i))
        throw Error(Errc::corrupt_data, "vocabulary value repeated");
      counts_[static_cast<size_t>(index)] = counts[i];
    }
  }
}

size_t ColumnVocab::finalize(uint64_t min_freq, int64_t id_base, int32_t oov_id) {
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
  ids_ = id;
  if (flat_) {
    for (int32_t& s : slot_) s = s < 0 ? oov_id : id[static_cast<size_t>(s)];
  } else {
    for (Entry& e : table_)
      if (e.index >= 0) e.index = id[static_cast<size_t>(e.index)];
  }
  final_ = true;
  return static_cast<size_t>(next - id_base);
}

}  // namespace dlprep::tabular
