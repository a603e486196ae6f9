#include "core/timing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <time.h>

#include "core/error.hpp"

namespace dlprep {

double monotonic_seconds() noexcept {
  return std::chrono::duration<double>(BenchClock::now().time_since_epoch()).count();
}

namespace {
double clock_seconds(clockid_t id) noexcept {
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return 0;
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}
}  // namespace

double thread_cpu_seconds() noexcept { return clock_seconds(CLOCK_THREAD_CPUTIME_ID); }
double process_cpu_seconds() noexcept { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }

double median(std::span<const double> samples) {
  if (samples.empty()) return 0;
  std::vector<double> s(samples.begin(), samples.end());
  const size_t mid = s.size() / 2;
  std::nth_element(s.begin(), s.begin() + mid, s.end());
  if (s.size() % 2 == 1) return s[mid];
  // Even count: the lower middle is the largest of the lower half.
  const double lower = *std::max_element(s.begin(), s.begin() + mid);
  return (lower + s[mid]) / 2;
}

TimingStats summarize_timings(std::vector<double> samples_s, unsigned warmup_runs) {
  TimingStats st;
  st.warmup_runs = warmup_runs;
  st.samples_s = std::move(samples_s);
  if (st.samples_s.empty()) return st;
  st.median_s = median(st.samples_s);
  const auto [lo, hi] = std::minmax_element(st.samples_s.begin(), st.samples_s.end());
  st.min_s = *lo;
  st.max_s = *hi;
  st.mean_s = std::accumulate(st.samples_s.begin(), st.samples_s.end(), 0.0) /
              static_cast<double>(st.samples_s.size());
  return st;
}

TimingStats measure_self_timed(const TimingParams& params,
                               const std::function<double(bool warmup)>& run) {
  for (unsigned i = 0; i < params.warmup; ++i) run(true);
  const unsigned repeats = std::max(1u, params.repeats);
  std::vector<double> samples;
  samples.reserve(repeats);
  double total = 0;
  for (unsigned i = 0; i < repeats; ++i) {
    const double s = run(false);
    if (!(s >= 0) || !std::isfinite(s))
      throw Error(Errc::internal, "benchmark run reported an invalid time (" + std::to_string(s) +
                                      " s)");
    samples.push_back(s);
    total += s;
    if (params.max_seconds > 0 && total >= params.max_seconds) break;
  }
  return summarize_timings(std::move(samples), params.warmup);
}

TimingStats measure(const TimingParams& params, const std::function<void()>& run) {
  return measure_self_timed(params, [&](bool) {
    Stopwatch sw;
    run();
    return sw.seconds();
  });
}

}  // namespace dlprep
