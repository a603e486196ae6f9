#include "core/parallel.hpp"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

TEST_CASE("parallel_for does all the work on the threads the system gives when it gives fewer") {
  // A child whose address space has room for a few thread stacks only (8 MiB each by default).
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    const rlim_t used = [] {
      FILE* f = std::fopen("/proc/self/statm", "r");
      unsigned long pages = 0;
      if (f == nullptr || std::fscanf(f, "%lu", &pages) != 1) std::_Exit(3);
      std::fclose(f);
      return static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE);
    }();
    limit.rlim_cur = used + (64u << 20);
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < limit.rlim_cur)
      std::_Exit(0);  // a machine with less room than the test needs: nothing to show here
    if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(4);
    std::vector<std::atomic<int>> seen(5000);
    parallel_for(seen.size(), 4000, [&](size_t i) { seen[i]++; });
    for (auto& s : seen)
      if (s.load() != 1) std::_Exit(1);
    std::_Exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
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

TEST_CASE("parallel_for_ordered calls in_order for every item in order, after its fn") {
  for (unsigned threads : {1u, 2u, 7u})
    for (size_t window : {1u, 3u, 64u}) {
      std::vector<std::atomic<int>> worked(500);
      std::vector<size_t> order;
      bool fn_first = true;
      parallel_for_ordered(
          worked.size(), threads, window, [&](size_t i) { worked[i]++; },
          [&](size_t i) {
            fn_first = fn_first && worked[i].load() == 1;
            order.push_back(i);
          });
      CHECK(fn_first);
      REQUIRE(order.size() == worked.size());
      for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i);
    }
}

TEST_CASE("parallel_for_ordered starts no item a window or more ahead of in_order") {
  // Item 0 is slow: without the window, the other threads would run every later item meanwhile.
  constexpr size_t kWindow = 8;
  std::atomic<size_t> reported{0};
  std::atomic<size_t> furthest{0};
  parallel_for_ordered(
      200, 4, kWindow,
      [&](size_t i) {
        if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        size_t ahead = i - reported.load();
        size_t seen = furthest.load();
        while (ahead > seen && !furthest.compare_exchange_weak(seen, ahead)) {
        }
      },
      [&](size_t i) { reported = i + 1; });
  CHECK(furthest.load() < kWindow);
  CHECK(reported.load() == 200);
}

TEST_CASE("parallel_for_ordered stops in_order at the lowest item that threw, and rethrows it") {
  for (int run = 0; run < 10; ++run) {
    std::vector<size_t> order;
    std::string what;
    try {
      parallel_for_ordered(
          100, 4, 16,
          [](size_t i) {
            if (i == 3) {
              std::this_thread::sleep_for(std::chrono::milliseconds(2));
              throw std::runtime_error("item 3");
            }
            if (i == 7) throw std::runtime_error("item 7");
          },
          [&](size_t i) { order.push_back(i); });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CHECK(what == "item 3");
    CHECK(order == std::vector<size_t>{0, 1, 2});
  }
  std::vector<size_t> order;
  CHECK_THROWS_AS(parallel_for_ordered(
                      50, 3, 4, [](size_t) {},
                      [&](size_t i) {
                        if (i == 10) throw std::runtime_error("in_order");
                        order.push_back(i);
                      }),
                  std::runtime_error);
  CHECK(order.size() == 10);
}

TEST_CASE("clamp_workers_to_fd_limit leaves each worker its descriptors under ulimit -n") {
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit low = saved;
  low.rlim_cur = 16;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  unsigned long limit = 0;
  const unsigned fit = clamp_workers_to_fd_limit(64, 2, &limit);
  const unsigned one = clamp_workers_to_fd_limit(64, 100);
  const unsigned few = clamp_workers_to_fd_limit(2, 1);
  const unsigned ones = clamp_workers_to_fd_limit(64, 1);
  const unsigned beside_four = clamp_workers_to_fd_limit(64, 1, nullptr, 4);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  CHECK(limit == 16);
  CHECK(fit >= 1);
  CHECK(fit <= 6);  // 16, less stdin, stdout, stderr and the spare ones, in twos
  CHECK(one == 1);  // never none: a run that cannot open a file says so itself
  CHECK(few == 2);  // fewer workers than the limit allows are left as they are
  // The caller's own 4 files, opened later, leave room for 4 fewer workers of one file each.
  if (ones > 4) CHECK(beside_four == ones - 4);
  if (saved.rlim_cur == RLIM_INFINITY) CHECK(clamp_workers_to_fd_limit(64, 2) == 64);
}
