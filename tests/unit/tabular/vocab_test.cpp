#include "tabular/vocab.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"

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
