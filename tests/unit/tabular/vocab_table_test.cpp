// The CUDA backend's GenVocab (vocab_table.hpp, cuda/tabular/vocab_cuda.cu) emulated on the host:
// the kernel's decomposition (one warp per 32 rows of one column, equal values grouped, the
// group's lowest lane doing one atomicAdd and one atomicMin), run in shuffled orders, with hash
// insertions that lose races to other threads, tables that grow between chunks, chunks processed
// out of order and vocabularies continued from a checkpoint. Every order must give exactly
// ColumnVocab's vocabulary (values in first-appearance order, counts).
#include "tabular/vocab_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "tabular/vocab.hpp"

using namespace dlprep::tabular;

namespace {

// One column's table as the device holds it.
struct Table {
  bool flat = false;
  uint32_t bits = 0;
  std::vector<uint64_t> keys, first, count;
  uint64_t size = 0;  // hash entries claimed (the device's hash_sizes)
  uint64_t entries() const { return flat ? first.size() : keys.size(); }
};

Table make_table(uint32_t modulus, uint64_t expected) {
  Table t;
  t.flat = modulus != 0 && modulus <= kFlatMaxModulus;
  uint64_t n = t.flat ? modulus : (uint64_t{1} << (t.bits = vocab_hash_bits_for(expected)));
  if (!t.flat) t.keys.assign(n, kEmptySlot);
  t.first.assign(n, kEmptySlot);
  t.count.assign(n, 0);
  return t;
}

// Atomics for vocab_hash_find_or_insert on one thread (a rehash, a seed): plain loads and stores.
struct PlainOps {
  uint64_t load(uint64_t* p) { return *p; }
  uint64_t cas(uint64_t* p, uint64_t expected, uint64_t desired) {
    uint64_t old = *p;
    if (old == expected) *p = desired;
    return old;
  }
};

// Atomics for vocab_hash_find_or_insert where another thread may win a race: before a load,
// with probability `race`, a pending insertion of another value claims the examined slot first
// (as a concurrent thread would), so the caller sees it taken and probes on.
struct RacingOps {
  Table* t;
  std::mt19937_64* rng;
  std::vector<uint32_t>* pending;  // values still to be inserted by other "threads"
  double race;
  uint64_t injected = 0;  // races lost (so the test knows they happened)
  uint64_t load(uint64_t* p) {
    if (*p == kEmptySlot && !pending->empty() &&
        std::uniform_real_distribution<double>(0, 1)(*rng) < race) {
      uint32_t other = (*pending)[(*rng)() % pending->size()];
      // Only a value not in the table yet, and whose own probe sequence reaches this slot before
      // any other free one, can claim it (as the thread inserting it would).
      bool present = vocab_hash_find(t->keys.data(), t->bits, other) >= 0;
      const auto slot = static_cast<uint32_t>(p - t->keys.data());
      const uint32_t mask = static_cast<uint32_t>(t->keys.size() - 1);
      uint32_t i = vocab_hash_home(other, t->bits);
      while (i != slot && t->keys[i] != kEmptySlot) i = (i + 1) & mask;
      if (!present && i == slot) {
        *p = other;
        ++t->size;
        ++injected;
      }
    }
    return *p;
  }
  // Races are lost in load only: the compare-and-swap after it is a plain one.
  uint64_t cas(uint64_t* p, uint64_t expected, uint64_t desired) {
    return PlainOps{}.cas(p, expected, desired);
  }
};

// The insert kernel's work for one chunk, one item per (warp, column) group leader, in the order
// the emulation chooses. keys[r] is row r's first-appearance key.
struct LeaderOp {
  int column;
  uint32_t value;
  uint64_t key;    // the group's lowest lane's key: its first row
  uint64_t count;  // lanes in the group (__popc of the __match_any_sync mask)
};

std::vector<LeaderOp> warp_groups(const std::vector<std::vector<uint32_t>>& cols,
                                  const std::vector<uint64_t>& keys) {
  std::vector<LeaderOp> ops;
  const size_t n = keys.size();
  for (size_t tile = 0; tile * 32 < n; ++tile) {
    for (int j = 0; j < static_cast<int>(cols.size()); ++j) {
      // __match_any_sync over the valid lanes: groups of equal values; leader = lowest lane.
      std::map<uint32_t, LeaderOp> groups;
      for (size_t lane = 0; lane < 32 && tile * 32 + lane < n; ++lane) {
        size_t r = tile * 32 + lane;
        uint32_t v = cols[static_cast<size_t>(j)][r];
        auto it = groups.find(v);
        if (it == groups.end())
          groups.emplace(v, LeaderOp{j, v, keys[r], 1});
        else
          ++it->second.count;
      }
      for (auto& [v, op] : groups) ops.push_back(op);
    }
  }
  return ops;
}

uint64_t races_lost = 0;

void apply(std::vector<Table>& tables, std::vector<LeaderOp> ops, std::mt19937_64& rng,
           double race) {
  std::shuffle(ops.begin(), ops.end(), rng);  // the atomics' order is anyone's
  std::vector<std::vector<uint32_t>> pending(tables.size());
  for (const LeaderOp& op : ops) pending[static_cast<size_t>(op.column)].push_back(op.value);
  for (const LeaderOp& op : ops) {
    Table& t = tables[static_cast<size_t>(op.column)];
    uint64_t e = op.value;
    if (!t.flat) {
      RacingOps ro{&t, &rng, &pending[static_cast<size_t>(op.column)], race};
      bool inserted = false;
      e = vocab_hash_find_or_insert(t.keys.data(), t.bits, op.value, ro, &inserted);
      if (inserted) ++t.size;
      races_lost += ro.injected;
    }
    t.count[e] += op.count;
    t.first[e] = std::min(t.first[e], op.key);
  }
}

// grow_tables + vocab_rehash_kernel (old entries visited in a shuffled order).
void grow(Table& t, uint64_t incoming, std::mt19937_64& rng) {
  if (t.flat || 2 * (t.size + incoming) <= t.keys.size()) return;
  Table g;
  g.bits = vocab_hash_bits_for(t.size + incoming) + 1;
  g.keys.assign(uint64_t{1} << g.bits, kEmptySlot);
  g.first.assign(g.keys.size(), kEmptySlot);
  g.count.assign(g.keys.size(), 0);
  g.size = t.size;
  std::vector<size_t> order(t.keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  PlainOps ops;
  for (size_t i : order) {
    if (t.keys[i] == kEmptySlot) continue;
    bool inserted = false;
    uint32_t e = vocab_hash_find_or_insert(g.keys.data(), g.bits, static_cast<uint32_t>(t.keys[i]),
                                           ops, &inserted);
    g.first[e] = t.first[i];
    g.count[e] = t.count[i];
  }
  t = std::move(g);
}

// read_vocab: used entries (first != kEmptySlot), sorted by first key.
void extract(const Table& t, std::vector<uint32_t>& values, std::vector<uint64_t>& counts) {
  std::vector<VocabEntry> entries;
  for (uint64_t i = 0; i < t.entries(); ++i)
    if (t.first[i] != kEmptySlot)
      entries.push_back(
          VocabEntry{t.flat ? static_cast<uint32_t>(i) : static_cast<uint32_t>(t.keys[i]),
                     t.first[i], t.count[i]});
  vocab_entries_in_order(entries, values, counts);
}

// Zipf-like values (rank = floor(N^u)), as Criteo's columns: a few values in most rows.
uint32_t zipf_value(std::mt19937_64& rng, uint64_t cardinality, uint32_t salt) {
  double u = std::uniform_real_distribution<double>(0, 1)(rng);
  auto rank = static_cast<uint64_t>(std::pow(static_cast<double>(cardinality), u));
  return static_cast<uint32_t>((rank * 0x9E3779B1u) ^ salt);
}

struct Chunk {
  bool text;
  std::vector<std::vector<uint32_t>> cols;  // [column][row], after the modulus
  std::vector<uint64_t> positions;          // per row: the slot (text) or the row index
  uint64_t span_input;                      // bytes (text) or rows
};

// A day's chunks: random sizes; text rows get random line starts (>= 40 bytes apart).
std::vector<Chunk> make_chunks(std::mt19937_64& rng, const std::vector<uint32_t>& moduli,
                               size_t rows, bool text) {
  std::vector<Chunk> chunks;
  size_t done = 0;
  while (done < rows) {
    size_t n = std::min<size_t>(rows - done, 1 + rng() % 700);
    Chunk c;
    c.text = text;
    c.cols.assign(moduli.size(), {});
    uint64_t pos = 0;
    for (size_t r = 0; r < n; ++r) {
      uint64_t start = pos;
      pos += 40 + rng() % 400;  // the line's length
      c.positions.push_back(text ? start / kMinRowBytes : r);
      for (size_t j = 0; j < moduli.size(); ++j) {
        // Per column: few, some, or very many distinct values (Criteo's C9, C1, C3).
        static constexpr uint64_t kCardinality[] = {3,       1000000, 7,     500, 1000000,
                                                    1000000, 3,       20000, 97};
        uint64_t card = kCardinality[j % 9];
        uint32_t v = zipf_value(rng, card, static_cast<uint32_t>(j * 7919));
        if (j == 4 && rng() % 50 == 0) v = 0xFFFFFFFFu;  // the largest hash, a valid value
        c.cols[j].push_back(moduli[j] ? v % moduli[j] : v);
      }
    }
    c.span_input = text ? pos : n;
    done += n;
    chunks.push_back(std::move(c));
  }
  return chunks;
}

// The device run: keys from running bases, tables grown before each chunk, chunks and atomics in
// shuffled orders. Returns the extracted vocabularies.
std::vector<std::pair<std::vector<uint32_t>, std::vector<uint64_t>>> device_run(
    const std::vector<uint32_t>& moduli, const std::vector<Chunk>& chunks,
    const std::vector<ColumnVocab>* seed, std::mt19937_64& rng, double race, bool shuffle_chunks) {
  std::vector<Table> tables;
  uint64_t key_base = 0;
  for (size_t j = 0; j < moduli.size(); ++j) {
    size_t seeded = seed ? (*seed)[j].size() : 0;
    tables.push_back(make_table(moduli[j], seeded + 1));
    Table& t = tables.back();
    for (size_t i = 0; i < seeded; ++i) {  // vocab_seed_kernel
      uint32_t v = (*seed)[j].values()[i];
      uint64_t e = v;
      if (!t.flat) {
        PlainOps ops;
        bool inserted = false;
        e = vocab_hash_find_or_insert(t.keys.data(), t.bits, v, ops, &inserted);
      }
      t.first[e] = i;
      t.count[e] = (*seed)[j].counts()[i];
    }
    t.size = seeded;
    key_base = std::max<uint64_t>(key_base, seeded);
  }
  // Keys are fixed by input order (bases advance by row_key_span) before any chunk runs.
  std::vector<std::vector<uint64_t>> keys(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (uint64_t p : chunks[c].positions)
      keys[c].push_back(row_key(key_base, static_cast<uint32_t>(p)));
    key_base += row_key_span(chunks[c].text, chunks[c].span_input);
  }
  std::vector<size_t> order(chunks.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  if (shuffle_chunks) std::shuffle(order.begin(), order.end(), rng);
  for (size_t c : order) {
    for (Table& t : tables) grow(t, chunks[c].positions.size(), rng);
    apply(tables, warp_groups(chunks[c].cols, keys[c]), rng, race);
  }
  std::vector<std::pair<std::vector<uint32_t>, std::vector<uint64_t>>> out(tables.size());
  for (size_t j = 0; j < tables.size(); ++j) extract(tables[j], out[j].first, out[j].second);
  return out;
}

std::vector<ColumnVocab> cpu_run(const std::vector<uint32_t>& moduli,
                                 const std::vector<Chunk>& chunks,
                                 std::vector<ColumnVocab> vocab = {}) {
  if (vocab.empty())
    for (uint32_t m : moduli) vocab.emplace_back(m);
  for (const Chunk& c : chunks)
    for (size_t j = 0; j < moduli.size(); ++j) vocab[j].add(c.cols[j].data(), c.cols[j].size());
  return vocab;
}

void check_same(const std::vector<ColumnVocab>& cpu,
                const std::vector<std::pair<std::vector<uint32_t>, std::vector<uint64_t>>>& dev) {
  REQUIRE(cpu.size() == dev.size());
  for (size_t j = 0; j < cpu.size(); ++j) {
    INFO("column " << j);
    CHECK(cpu[j].values() == dev[j].first);
    CHECK(cpu[j].counts() == dev[j].second);
  }
}

}  // namespace

TEST_CASE("the device's first-appearance tables give ColumnVocab's vocabulary in any order") {
  // Flat (small moduli), hashed (no modulus, a modulus above the flat limit), mixed.
  const std::vector<uint32_t> moduli = {5000, 0, 7, 1000000, 0, kFlatMaxModulus + 1, 3, 0, 97};
  for (bool text : {true, false}) {
    std::mt19937_64 rng(text ? 11 : 12);
    std::vector<Chunk> chunks = make_chunks(rng, moduli, 6000, text);
    std::vector<ColumnVocab> cpu = cpu_run(moduli, chunks);
    CHECK(cpu[1].size() > 1000);  // the hash columns do grow past their first table
    for (int trial = 0; trial < 4; ++trial) {
      INFO("text " << text << " trial " << trial);
      std::mt19937_64 order_rng(1000 + trial);
      check_same(cpu, device_run(moduli, chunks, nullptr, order_rng, trial * 0.2, trial >= 2));
    }
  }
  CHECK(races_lost > 100);  // the emulated races did happen
}

TEST_CASE("a vocabulary continued from a checkpoint equals one built in a single pass") {
  const std::vector<uint32_t> moduli = {5000, 0, 11, 0};
  std::mt19937_64 rng(21);
  std::vector<Chunk> day0 = make_chunks(rng, moduli, 2500, true);
  std::vector<Chunk> day1 = make_chunks(rng, moduli, 2500, false);
  std::vector<ColumnVocab> after0 = cpu_run(moduli, day0);
  std::vector<Chunk> all = day0;
  all.insert(all.end(), day1.begin(), day1.end());
  std::vector<ColumnVocab> whole = cpu_run(moduli, all);
  std::mt19937_64 order_rng(22);
  check_same(whole, device_run(moduli, day1, &after0, order_rng, 0.3, true));
}

TEST_CASE("first keys are unique per column and increase with the input position") {
  // Two valid text rows start at least kMinRowBytes apart, so their slots differ and keep order.
  uint64_t prev_start = 0;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 10000; ++i) {
    uint64_t start = prev_start + kMinRowBytes + rng() % 300;
    CHECK(start / kMinRowBytes > prev_start / kMinRowBytes);
    prev_start = start;
  }
  // Chunk bases: every key of a chunk is below the next chunk's base.
  uint64_t bytes = 1000;
  CHECK(row_key_span(true, bytes) > (bytes - 1) / kMinRowBytes);
  CHECK(row_key_span(false, 17) == 17);
  // vocab_hash_bits_for keeps tables at most half full, and at least kMinTableBits.
  CHECK(vocab_hash_bits_for(0) == kMinTableBits);
  CHECK((uint64_t{1} << vocab_hash_bits_for(3000)) >= 6000);
  CHECK((uint64_t{1} << vocab_hash_bits_for(5000000)) >= 10000000);
}
