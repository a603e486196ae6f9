#include "core/parallel.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

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

TEST_CASE("clamp_workers_to_fd_limit leaves each worker room for its files within ulimit -n") {
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // the descriptors open now
  REQUIRE(lowest_free >= 0);
  ::close(lowest_free);
  const rlim_t limit = static_cast<rlim_t>(lowest_free) + 8 + 10;
  if (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur < limit) return;  // cannot raise it here
  rlimit low = saved;
  low.rlim_cur = limit;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  const unsigned many = clamp_workers_to_fd_limit(64, 1);
  const unsigned pairs = clamp_workers_to_fd_limit(64, 2);
  const unsigned few = clamp_workers_to_fd_limit(3, 1);
  const unsigned huge = clamp_workers_to_fd_limit(64, 1000);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  CHECK(many >= 1);
  CHECK(many <= 10);
  CHECK(pairs <= many / 2 + 1);
  CHECK(few == 3);   // fits: unchanged
  CHECK(huge == 1);  // never 0 workers
}
