#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/timing.hpp"

using namespace dlprep;

TEST_CASE("median of an odd count is the middle sample") {
  const std::vector<double> s{5, 1, 4, 2, 3};
  CHECK(median(s) == 3);
}

TEST_CASE("median of an even count is the mean of the two middle samples") {
  const std::vector<double> s{8, 1, 4, 2};
  CHECK(median(s) == 3);  // (2 + 4) / 2
  CHECK(median(std::vector<double>{7}) == 7);
  CHECK(median(std::vector<double>{}) == 0);
}

TEST_CASE("summarize_timings gives median, min, max and mean of known samples") {
  const TimingStats st = summarize_timings({0.4, 0.1, 0.3, 0.2, 0.5}, 2);
  CHECK(st.runs() == 5);
  CHECK(st.warmup_runs == 2);
  CHECK(st.median_s == doctest::Approx(0.3));
  CHECK(st.min_s == doctest::Approx(0.1));
  CHECK(st.max_s == doctest::Approx(0.5));
  CHECK(st.mean_s == doctest::Approx(0.3));
  // Samples keep their order.
  CHECK(st.samples_s == std::vector<double>{0.4, 0.1, 0.3, 0.2, 0.5});
  CHECK(st.median_rate(600) == doctest::Approx(2000));
  CHECK(st.best_rate(600) == doctest::Approx(6000));
}

TEST_CASE("an empty summary reports no rate rather than dividing by zero") {
  const TimingStats st = summarize_timings({});
  CHECK(st.runs() == 0);
  CHECK(st.median_rate(100) == 0);
  CHECK(st.best_rate(100) == 0);
}

TEST_CASE("warm-up runs are done first and not counted") {
  // The warm-up reports an absurd time: if it were counted, min/max/median would show it.
  std::vector<bool> calls;
  const std::vector<double> timed{0.3, 0.1, 0.2};
  size_t next = 0;
  const TimingStats st = measure_self_timed({2, 3, 0}, [&](bool warmup) {
    calls.push_back(warmup);
    return warmup ? 1000.0 : timed[next++];
  });
  CHECK(calls == std::vector<bool>{true, true, false, false, false});
  CHECK(st.runs() == 3);
  CHECK(st.warmup_runs == 2);
  CHECK(st.median_s == doctest::Approx(0.2));
  CHECK(st.min_s == doctest::Approx(0.1));
  CHECK(st.max_s == doctest::Approx(0.3));
}

TEST_CASE("zero repeats still does one timed run") {
  int runs = 0;
  const TimingStats st = measure_self_timed({0, 0, 0}, [&](bool) { return ++runs, 0.5; });
  CHECK(runs == 1);
  CHECK(st.runs() == 1);
}

TEST_CASE("a time budget stops the repeats early but keeps at least one run") {
  int runs = 0;
  TimingStats st = measure_self_timed({1, 10, 1.0}, [&](bool) { return ++runs, 0.4; });
  CHECK(st.runs() == 3);  // 0.4 + 0.4 + 0.4 >= 1.0
  CHECK(runs == 4);       // and the warm-up
  runs = 0;
  st = measure_self_timed({0, 10, 0.01}, [&](bool) { return ++runs, 5.0; });
  CHECK(st.runs() == 1);
}

TEST_CASE("an invalid self-reported time is an error") {
  CHECK_THROWS_AS(measure_self_timed({0, 1, 0}, [](bool) { return -1.0; }), Error);
}

TEST_CASE("measure times each run on the monotonic clock") {
  int runs = 0;
  const TimingStats st = measure({1, 2, 0}, [&] {
    ++runs;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  CHECK(runs == 3);
  CHECK(st.runs() == 2);
  CHECK(st.min_s >= 0.002);  // sleep_for sleeps at least that long; no upper bound asserted
}

TEST_CASE("the stopwatch and the monotonic clock never go backwards") {
  Stopwatch sw;
  const double a = monotonic_seconds();
  const double b = monotonic_seconds();
  CHECK(b >= a);
  CHECK(sw.seconds() >= 0);
  sw.restart();
  CHECK(sw.seconds() >= 0);
}

TEST_CASE("an exception from a run propagates and nothing is reported") {
  CHECK_THROWS_AS(measure({1, 3, 0}, [] { throw Error(Errc::mismatch, "wrong output"); }), Error);
}

TEST_CASE("thread CPU time advances with work and not while sleeping") {
  const double cpu0 = thread_cpu_seconds();
  const double proc0 = process_cpu_seconds();
  volatile uint64_t sink = 0;
  Stopwatch sw;
  while (sw.seconds() < 0.02) sink = sink + 1;  // busy: CPU time advances
  const double cpu1 = thread_cpu_seconds();
  CHECK(cpu1 > cpu0);
  CHECK(process_cpu_seconds() >= proc0 + (cpu1 - cpu0) * 0.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Sleeping costs (almost) no CPU: far less than the 50 ms that passed on the monotonic clock.
  CHECK(thread_cpu_seconds() - cpu1 < 0.04);
}
