// The one timing core of dlprep's benchmarks (`dlprep … bench` and tests/bench/): a monotonic
// clock, warm-up runs that are not counted, repeated timed runs, and their median and minimum.
// Generic on purpose: the image codec benchmark, the Criteo rows/s benchmark and the GPU decode
// benchmark (which times itself with CUDA events and reports the seconds) all go through it, so
// every figure dlprep prints is measured the same way (BENCHMARKS.md "How").
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace dlprep {

/// The benchmark clock: monotonic (never jumps with NTP or a date change), nanosecond ticks.
using BenchClock = std::chrono::steady_clock;

/// Seconds on the monotonic clock since an arbitrary epoch; only differences mean anything.
double monotonic_seconds() noexcept;

/// CPU seconds used so far by the calling thread (CLOCK_THREAD_CPUTIME_ID). Unlike the monotonic
/// clock it does not advance while the thread waits for a core, so on a shared, loaded machine it
/// still measures the work done (cache pollution by neighbours aside). Only differences mean
/// anything.
double thread_cpu_seconds() noexcept;

/// CPU seconds used so far by all threads of this process (CLOCK_PROCESS_CPUTIME_ID): for work that
/// a library spreads over its own threads.
double process_cpu_seconds() noexcept;

/// Measures one interval on the monotonic clock. Cheap (two clock reads), so it can time single
/// images inside a loop.
class Stopwatch {
 public:
  Stopwatch() noexcept : start_(BenchClock::now()) {}
  /// Starts again from now.
  void restart() noexcept { start_ = BenchClock::now(); }
  /// Seconds since construction or the last restart().
  double seconds() const noexcept {
    return std::chrono::duration<double>(BenchClock::now() - start_).count();
  }

 private:
  BenchClock::time_point start_;
};

/// Median of the samples (the mean of the two middle ones for an even count); 0 when empty.
double median(std::span<const double> samples);

/// The summary of the timed runs of one measurement. Warm-up runs are never in it.
struct TimingStats {
  std::vector<double> samples_s;  ///< every timed run, in order, in seconds
  double median_s = 0;            ///< the figure to report (robust to a noisy neighbour)
  double min_s = 0;               ///< the best run (closest to the machine's capability)
  double max_s = 0;
  double mean_s = 0;
  unsigned warmup_runs = 0;  ///< runs done before the timed ones and not counted

  size_t runs() const { return samples_s.size(); }
  /// `units` (bytes, images, rows…) per second at the median time; 0 when there is no time.
  double median_rate(double units) const { return median_s > 0 ? units / median_s : 0; }
  /// `units` per second at the best (minimum) time; 0 when there is no time.
  double best_rate(double units) const { return min_s > 0 ? units / min_s : 0; }
};

/// Summarises timed samples (seconds). `warmup_runs` is only recorded.
TimingStats summarize_timings(std::vector<double> samples_s, unsigned warmup_runs = 0);

/// How a measurement is repeated.
struct TimingParams {
  unsigned warmup = 1;   ///< untimed runs first (page faults, caches, lazy initialisation)
  unsigned repeats = 5;  ///< timed runs (at least 1 is always done)
  /// Stop repeating once this many seconds of timed runs are done (0: no limit). At least one timed
  /// run is always done, so a slow codec gets fewer repeats rather than none.
  double max_seconds = 0;
};

/// Runs `run()` params.warmup times untimed, then params.repeats times, each timed on the monotonic
/// clock. Exceptions from run() propagate (nothing is reported for a failed run).
TimingStats measure(const TimingParams& params, const std::function<void()>& run);

/// Like measure(), but `run()` returns the seconds it measured itself, and that is what counts.
/// For runs that must exclude part of their work from the time (checking each output before its
/// time is accepted, per-item timing across threads) or that are timed by another clock (CUDA
/// events). `run(true)` is a warm-up run: its result is ignored. A negative result is an error.
TimingStats measure_self_timed(const TimingParams& params,
                               const std::function<double(bool warmup)>& run);

}  // namespace dlprep
