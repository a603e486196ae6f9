#include "core/parallel.hpp"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dlprep {

unsigned hardware_threads() noexcept { return std::max(1u, std::thread::hardware_concurrency()); }

void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& fn) {
  if (count == 0) return;
  size_t workers = std::min<size_t>(std::max(1u, threads), count);
  if (workers == 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  // Items are handed out in index order, and one is skipped only past the lowest failed so far:
  // every item before the lowest that throws runs, so its exception is the one a loop in order
  // would meet first, whatever the timing (a corrupt file names the same patch every run).
  std::atomic<size_t> next{0};
  std::atomic<size_t> lowest_failed{SIZE_MAX};
  std::exception_ptr lowest_error;
  std::mutex error_mutex;
  auto work = [&] {
    for (;;) {
      size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count || i > lowest_failed.load(std::memory_order_relaxed)) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (i < lowest_failed.load(std::memory_order_relaxed)) {
          lowest_error = std::current_exception();
          lowest_failed.store(i, std::memory_order_relaxed);
        }
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (lowest_error) std::rethrow_exception(lowest_error);
}

unsigned clamp_workers_to_fd_limit(unsigned workers, unsigned fds_per_worker) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return std::max(1u, workers);
  // Descriptors open now (stdin/out/err, the caller's files), counted in /proc/self/fd less the
  // one that reading it takes; 3 where /proc is not mounted.
  uint64_t open_now = 3;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    open_now = 0;
    while (const dirent* entry = ::readdir(dir))
      if (entry->d_name[0] != '.') ++open_now;
    ::closedir(dir);
    open_now = open_now > 0 ? open_now - 1 : 0;
  }
  // What the caller opens besides its workers' files: an index, a manifest, an output.
  constexpr uint64_t kCallerFds = 8;
  const uint64_t used = open_now + kCallerFds;
  const uint64_t room = limit.rlim_cur > used ? limit.rlim_cur - used : 0;
  const uint64_t fit = room / std::max(1u, fds_per_worker);
  return static_cast<unsigned>(std::clamp<uint64_t>(fit, 1, std::max(1u, workers)));
}

}  // namespace dlprep
