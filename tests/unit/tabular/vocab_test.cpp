#include "tabular/vocab.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "tabular/memory_guard.hpp"

using namespace dlprep::tabular;

TEST_CASE("IDs follow first appearance, with counts, for flat and hashed tables alike") {
  std::vector<uint32_t> values = {7, 3, 7, 9, 3, 7, 0, 9};
  for (uint32_t modulus : {10u, 0u, kFlatMaxModulus + 1}) {
    ColumnVocab v(modulus);
    CHECK(v.flat() == (modulus == 10));
    v.add(values.data(), 3);
    v.add(values.data() + 3, values.size() - 3);
    CHECK(v.values() == std::vector<uint32_t>{7, 3, 9, 0});
    CHECK(v.counts() == std::vector<uint64_t>{3, 2, 2, 1});
    CHECK(v.finalize(1, 0, 4) == 4);
    CHECK(v.lookup(7) == 0);
    CHECK(v.lookup(3) == 1);
    CHECK(v.lookup(9) == 2);
    CHECK(v.lookup(0) == 3);
    CHECK(v.lookup(5) == 4);  // never seen: OOV
  }
}

TEST_CASE("min_freq sends rare values to the OOV ID and keeps the others contiguous") {
  std::vector<uint32_t> values = {1, 2, 2, 3, 3, 3, 4};
  ColumnVocab v(100);
  v.add(values.data(), values.size());
  CHECK(v.finalize(2, 2, 1) == 2);  // TorchRec style: IDs from 2, OOV 1
  CHECK(v.lookup(1) == 1);
  CHECK(v.lookup(2) == 2);
  CHECK(v.lookup(3) == 3);
  CHECK(v.lookup(4) == 1);
}

TEST_CASE("a hash table grows past many distinct values without losing any") {
  ColumnVocab v(0);
  std::vector<uint32_t> values;
  for (uint32_t i = 0; i < 100000; ++i) values.push_back(i * 2654435761u);
  v.add(values.data(), values.size());
  v.add(values.data(), values.size());
  REQUIRE(v.size() == values.size());
  v.finalize(1, 0, -0 + 100000);
  for (uint32_t i = 0; i < 100000; i += 997) CHECK(v.lookup(values[i]) == static_cast<int32_t>(i));
}

TEST_CASE("assign restores a saved vocabulary and rejects repeated values") {
  ColumnVocab v(50);
  v.assign({5, 1, 40}, {3, 1, 2});
  v.finalize(1, 0, 3);
  CHECK(v.lookup(40) == 2);
  ColumnVocab w(50);
  CHECK_THROWS_AS(w.assign({5, 5}, {1, 1}), dlprep::Error);
  ColumnVocab x(50);
  CHECK_THROWS_AS(x.assign({60}, {1}), dlprep::Error);
}

TEST_CASE("with a guard, a growing vocabulary stops before its growth passes the limit") {
  // Distinct values, 26 columns' worth in one: each table doubling must be refused up front.
  const uint64_t limit = resident_bytes() + (uint64_t{48} << 20);
  MemoryGuard guard(limit);
  ColumnVocab v(0, &guard);
  std::vector<uint32_t> piece(4096);
  uint32_t next = 0;
  bool refused = false;
  try {
    for (int i = 0; i < 4096; ++i) {  // 16M values: about 400 MB unguarded
      for (uint32_t& x : piece) x = next++;
      v.add(piece.data(), piece.size());
    }
  } catch (const dlprep::Error& e) {
    refused = true;
    CHECK(e.code() == dlprep::Errc::limit_exceeded);
    CHECK(std::string(e.what()).find("over --max-memory") != std::string::npos);
  }
  CHECK(refused);
#if defined(__SANITIZE_ADDRESS__)
  const uint64_t unannounced = uint64_t{8} << 20;  // ASan's shadow of a growth (an eighth)
#else
  const uint64_t unannounced = 0;
#endif
  CHECK(resident_bytes() <= limit + unannounced);
  CHECK(v.size() > 250000);  // it grew until the limit was near
}

TEST_CASE("a guard's announcements balance: a vocabulary within the limit is never refused") {
  // Announced list capacity is taken back as add() fills it; an imbalance would leave it counted
  // (or wrap around) and refuse a later growth that fits.
  MemoryGuard guard(resident_bytes() + (uint64_t{256} << 20));
  for (uint32_t modulus : {0u, 1000000u}) {
    ColumnVocab v(modulus, &guard);
    std::vector<uint32_t> piece(1000);
    for (uint32_t round = 0; round < 1000; ++round) {
      for (uint32_t i = 0; i < piece.size(); ++i) piece[i] = (round * 1000 + i) % 999983;
      CHECK_NOTHROW(v.add(piece.data(), piece.size()));
    }
    CHECK(v.size() == 999983);
    CHECK(v.finalize(1, 0, -1) == 999983);
    ColumnVocab restored(modulus, &guard);
    CHECK_NOTHROW(restored.assign(v.values(), v.counts()));
    CHECK(restored.size() == 999983);
  }
}

TEST_CASE("memory_text: whole MiB as they are, others rounded up to a tenth, small ones in bytes") {
  using dlprep::tabular::memory_text;
  CHECK(memory_text(1000) == "1000 bytes");
  CHECK(memory_text(uint64_t{60} << 20) == "60 MiB");
  CHECK(memory_text((uint64_t{60} << 20) + 1) == "60.1 MiB");  // over a 60 MiB limit, reads so
  CHECK(memory_text((uint64_t{60} << 20) + (uint64_t{1} << 19)) == "60.5 MiB");
  CHECK(memory_text((uint64_t{61} << 20) - 1) == "61.0 MiB");
}
