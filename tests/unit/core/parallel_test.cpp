#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/parallel.hpp"

using namespace dlprep;

TEST_CASE("parallel_for visits every index exactly once") {
  for (unsigned threads : {1u, 2u, 7u}) {
    std::vector<std::atomic<int>> seen(1000);
    parallel_for(seen.size(), threads, [&](size_t i) { seen[i]++; });
    for (auto& s : seen) CHECK(s.load() == 1);
  }
}

TEST_CASE("parallel_for rethrows the first exception") {
  CHECK_THROWS_AS(parallel_for(100, 4,
                               [](size_t i) {
                                 if (i == 50) throw std::runtime_error("boom");
                               }),
                  std::runtime_error);
}
