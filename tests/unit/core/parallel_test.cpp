#include "core/parallel.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

TEST_CASE("parallel_for rethrows the exception of the lowest item, as a loop in order would") {
  // Item 3 is slow and fails after item 7 has failed: still item 3's error, every time.
  for (int run = 0; run < 20; ++run) {
    std::string what;
    try {
      parallel_for(64, 4, [](size_t i) {
        if (i == 3) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          throw std::runtime_error("item 3");
        }
        if (i == 7) throw std::runtime_error("item 7");
      });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CHECK(what == "item 3");
  }
}
