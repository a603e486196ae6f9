// Running independent work items on several threads.
#pragma once

#include <cstddef>
#include <functional>

namespace dlprep {

/// Number of hardware threads (at least 1): the default for -j.
unsigned hardware_threads() noexcept;

/// Calls fn(i) for every i in [0, count) on up to `threads` threads (the caller's thread counts as
/// one). Items are handed out one at a time, so uneven items balance. If any call throws, items
/// after it are no longer started once that is known, and the exception of the lowest item that
/// threw is rethrown here: the one a loop in order would have met first, on every run.
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& fn);

/// The number of workers (1 to `workers`) that can each hold `fds_per_worker` files open at once
/// within the soft RLIMIT_NOFILE (ulimit -n), besides the descriptors open now and a few the
/// caller opens itself: past it, opens fail with EMFILE in whichever worker comes last, which
/// looks like a bad file. The caller says when it clamps (a warning).
unsigned clamp_workers_to_fd_limit(unsigned workers, unsigned fds_per_worker);

}  // namespace dlprep
