// Running independent work items on several threads.
#pragma once

#include <cstddef>
#include <functional>

namespace dlprep {

/// Number of hardware threads (at least 1): the default for -j.
unsigned hardware_threads() noexcept;

/// Calls fn(i) for every i in [0, count) on up to `threads` threads (the caller's thread counts as
/// one; fewer when the system cannot start more). Items are handed out one at a time, so uneven
/// items balance. If any call throws, items
/// after it are no longer started once that is known, and the exception of the lowest item that
/// threw is rethrown here: the one a loop in order would have met first, on every run.
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& fn);

/// parallel_for(count, threads, fn), and in_order(i) for every i in index order, each once fn(i)
/// has returned, never two at once: for results that must come out in input order (a listing) as
/// they are made. An item is not started while it is `window` or more items ahead of the next
/// in_order call, so that a caller keeping item i's result in slot i % window holds at most
/// `window` results, however many items there are. If fn or in_order throws, in_order is called
/// for no item after it and the exception of the lowest item is rethrown, as in parallel_for.
void parallel_for_ordered(size_t count, unsigned threads, size_t window,
                          const std::function<void(size_t)>& fn,
                          const std::function<void(size_t)>& in_order);

/// The largest number of workers, at most `workers` and at least 1, that can each hold
/// `fds_per_worker` file descriptors at once without passing the soft limit RLIMIT_NOFILE
/// (`ulimit -n`), after the descriptors open now and a few spare: a run at -j64 under
/// `ulimit -n 16` then works on fewer threads instead of failing files with EMFILE at random.
/// `limit`, when not null, receives that limit (0: none). `fixed_fds`: descriptors the caller
/// opens after this call and holds while the workers run (a lock, an index), set aside too.
unsigned clamp_workers_to_fd_limit(unsigned workers, unsigned fds_per_worker,
                                   unsigned long* limit = nullptr, unsigned fixed_fds = 0);

}  // namespace dlprep
