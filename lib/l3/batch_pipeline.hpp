// The bookkeeping of a BatchPipeline, shared by the CPU and CUDA pipelines so that the CPU tests
// cover the CUDA one's: `depth` slots (a pinned staging buffer, a stream and device buffers each
// in the CUDA backend), batches numbered by tickets in submission order, batch t in slot
// t mod depth, completed strictly in order. Plain C++17 (nvcc compiles the CUDA pipeline).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace dlprep::l3 {

class SlotRing {
 public:
  struct Entry {
    uint64_t ticket = 0;
    unsigned slot = 0;
  };

  /// Throws Error(invalid_argument) for a depth of 0 or more than kMaxDepth.
  explicit SlotRing(unsigned depth) : depth_(depth) {
    if (depth == 0 || depth > kMaxDepth)
      throw Error(Errc::invalid_argument, "pipeline depth " + std::to_string(depth) +
                                              " (expected 1 to " + std::to_string(kMaxDepth) + ")");
  }

  /// More slots than this buy nothing: two already overlap a copy with a decode, a few more
  /// absorb jitter; each slot holds a batch's input in pinned and device memory.
  static constexpr unsigned kMaxDepth = 16;

  unsigned depth() const { return depth_; }
  size_t in_flight() const { return static_cast<size_t>(next_ - oldest_); }
  bool full() const { return in_flight() == depth_; }
  bool empty() const { return next_ == oldest_; }

  /// Claims the slot of the next batch. Throws Error(invalid_argument) when every slot holds a
  /// batch in flight: the caller must wait() for the oldest first (its slot is the one needed).
  Entry push() {
    if (full())
      throw Error(Errc::invalid_argument,
                  "pipeline full (" + std::to_string(depth_) + " batches in flight): wait first");
    const Entry e{next_, static_cast<unsigned>(next_ % depth_)};
    ++next_;
    return e;
  }
  /// The oldest batch in flight. Throws Error(invalid_argument) when there is none.
  Entry front() const {
    if (empty()) throw Error(Errc::invalid_argument, "pipeline empty: nothing to wait for");
    return {oldest_, static_cast<unsigned>(oldest_ % depth_)};
  }
  /// Retires the oldest batch (after its wait, successful or not).
  void pop() {
    if (empty()) throw Error(Errc::invalid_argument, "pipeline empty: nothing to wait for");
    ++oldest_;
  }

 private:
  unsigned depth_;
  uint64_t next_ = 0;    ///< ticket of the next submit
  uint64_t oldest_ = 0;  ///< ticket of the oldest batch in flight (== next_ when empty)
};

}  // namespace dlprep::l3
