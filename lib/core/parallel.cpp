#include "core/parallel.hpp"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
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
  try {
    for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // The system gave fewer threads than asked (a process or memory limit): the ones it gave,
    // and this one, do all the work.
  }
  work();
  for (auto& t : pool) t.join();
  if (lowest_error) std::rethrow_exception(lowest_error);
}

void parallel_for_ordered(size_t count, unsigned threads, size_t window,
                          const std::function<void(size_t)>& fn,
                          const std::function<void(size_t)>& in_order) {
  window = std::max<size_t>(window, 1);
  // No thread waits for a slow item while it could work: whichever thread finds the writer role
  // free calls in_order for every consecutive finished item. Only an item `window` ahead waits,
  // and then item `next` is running (items are handed out in order), so the wait ends.
  std::mutex mutex;
  std::condition_variable room;
  std::vector<char> done(window, 0);  // item i's flag at i % window
  size_t next = 0;                    // the next item for in_order
  size_t lowest_failed = SIZE_MAX;
  std::exception_ptr error;
  bool writing = false;
  auto fail = [&](size_t i) {  // with the lock held
    if (i < lowest_failed) {
      lowest_failed = i;
      error = std::current_exception();
    }
    room.notify_all();
  };
  parallel_for(count, threads, [&](size_t i) {
    {
      std::unique_lock lock(mutex);
      room.wait(lock, [&] { return i < next + window || i > lowest_failed; });
      if (i > lowest_failed) return;
    }
    try {
      fn(i);
    } catch (...) {
      std::lock_guard lock(mutex);
      fail(i);
      return;
    }
    std::unique_lock lock(mutex);
    done[i % window] = 1;
    if (writing) return;
    writing = true;
    while (next < count && next < lowest_failed && done[next % window]) {
      done[next % window] = 0;
      const size_t k = next;
      lock.unlock();
      try {
        in_order(k);
      } catch (...) {
        lock.lock();
        fail(k);
        break;
      }
      lock.lock();
      ++next;
      room.notify_all();
    }
    writing = false;
  });
  if (error) std::rethrow_exception(error);
}

namespace {

// Descriptors open now (/proc/self/fd less the one reading it); 3 where /proc cannot be read.
unsigned long open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return 3;
  unsigned long n = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n > 0 ? n - 1 : 0;
}

// Descriptors kept free beside the workers' own and the caller's: a directory walk (one at a
// time, whatever the depth: DirectoryWalk), a library opening a file of its own (iconv, locale
// data), a pipe to report an interrupt.
constexpr unsigned long kSpareFds = 4;

}  // namespace

unsigned clamp_workers_to_fd_limit(unsigned workers, unsigned fds_per_worker, unsigned long* limit,
                                   unsigned fixed_fds) {
  rlimit fds{};
  if (::getrlimit(RLIMIT_NOFILE, &fds) != 0 || fds.rlim_cur == RLIM_INFINITY) {
    if (limit) *limit = 0;
    return std::max(1u, workers);
  }
  if (limit) *limit = fds.rlim_cur;
  const unsigned long used = open_fds() + fixed_fds + kSpareFds;
  const unsigned long free = fds.rlim_cur > used ? fds.rlim_cur - used : 0;
  const unsigned long fit = free / std::max(1u, fds_per_worker);
  return static_cast<unsigned>(std::clamp<unsigned long>(fit, 1, std::max(1u, workers)));
}

}  // namespace dlprep
