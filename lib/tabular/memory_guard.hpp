// --max-memory checked before a large allocation rather than after it: the resident memory now,
// plus what other threads have announced and not yet touched, plus the allocation. The 26
// vocabulary tables grow by doubling at about the same time, so the check of the peak after each
// chunk alone let a run reach 1.2-1.7x the limit (2.2x loading a --vocab-from vocabulary) before
// it stopped, and a cgroup or Slurm limit set to the same figure killed it first.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace dlprep::tabular {

class MemoryGuard {
 public:
  /// limit_bytes 0: no limit (every call returns at once).
  explicit MemoryGuard(uint64_t limit_bytes = 0) : limit_(limit_bytes) {}
  MemoryGuard(const MemoryGuard&) = delete;
  MemoryGuard& operator=(const MemoryGuard&) = delete;

  /// What the run is doing ("pass 1"), the messages' prefix. Not while other threads reserve.
  void set_stage(std::string stage) { stage_ = std::move(stage); }

  /// Announces `bytes` about to be allocated, which stay announced until release() (once they are
  /// written, and so resident). Throws Error(limit_exceeded) naming `what` when the resident
  /// memory plus everything announced would pass the limit. Thread-safe.
  void reserve(uint64_t bytes, const std::string& what);
  /// Takes back announced bytes (now resident, or never allocated).
  void release(uint64_t bytes) {
    if (limit_) pending_.fetch_sub(bytes, std::memory_order_relaxed);
  }
  bool active() const { return limit_ != 0; }

 private:
  uint64_t limit_;
  std::atomic<uint64_t> pending_{0};
  std::string stage_;
};

/// The process's resident memory now (not its peak), or 0 where /proc is not readable.
uint64_t resident_bytes();

/// "N MiB", "N.N MiB" (rounded up: a figure over a whole-MiB limit never reads as equal to
/// it), or "N bytes" below a MiB (--max-memory 1K is no "0 MiB").
std::string memory_text(uint64_t bytes);

}  // namespace dlprep::tabular
