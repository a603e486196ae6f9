// RAII owners of CUDA resources for the .cu files of cuda/ (this header has CUDA types: never
// include it from lib/ or tools/). Creation failures throw Error(device_failure) through
// DLPREP_CUDA_CHECK; destructors never throw and ignore the status (the process may be tearing
// down the context).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "core/cuda_check.hpp"

namespace dlprep::cuda {

/// An array of T that grows to the largest request and is reused: device memory (cudaMalloc) or
/// page-locked host memory (cudaHostAlloc, portable). Growing discards the contents; cudaFree
/// synchronises the device, which is why these only grow, and rarely.
template <class T, bool kPinnedHost>
class GrowingArray {
 public:
  GrowingArray() = default;
  GrowingArray(const GrowingArray&) = delete;
  GrowingArray& operator=(const GrowingArray&) = delete;
  ~GrowingArray() { release(); }

  /// Room for at least `n` elements. Never leaves a null pointer behind, even for 0 (CUB reads a
  /// null temporary buffer as a size query).
  T* reserve(size_t n) {
    if (p_ != nullptr && n <= n_) return p_;
    release();
    void* p = nullptr;
    const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
    if constexpr (kPinnedHost)
      DLPREP_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    else
      DLPREP_CUDA_CHECK(cudaMalloc(&p, bytes));
    p_ = static_cast<T*>(p);
    n_ = n;
    return p_;
  }
  T* get() const { return p_; }
  void release() noexcept {
    if (p_ != nullptr) {
      if constexpr (kPinnedHost)
        (void)cudaFreeHost(p_);
      else
        (void)cudaFree(p_);
    }
    p_ = nullptr;
    n_ = 0;
  }
  void swap(GrowingArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};
template <class T>
using DeviceArray = GrowingArray<T, false>;
template <class T>
using PinnedArray = GrowingArray<T, true>;

/// A non-blocking stream (it never synchronises with the legacy default stream), optionally at
/// the lowest priority the device offers. On current GPUs that is also the default priority
/// (range 0 to -5 on Ampere and Hopper), so another stream's kernels go first only when that
/// stream was created with a higher priority (e.g. torch.cuda.Stream(priority=-1)).
class Stream {
 public:
  explicit Stream(bool low_priority = false) {
    int least = 0, greatest = 0;
    DLPREP_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    // In CUDA, a numerically greater priority is a lower one: `least` is the lowest.
    DLPREP_CUDA_CHECK(
        cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, low_priority ? least : 0));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  cudaStream_t get() const { return stream_; }
  void synchronize() const { DLPREP_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

/// An event: a timing one, or (`timing` false) one that only orders streams, which costs less.
class Event {
 public:
  explicit Event(bool timing = true) {
    DLPREP_CUDA_CHECK(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) const { DLPREP_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { DLPREP_CUDA_CHECK(cudaEventSynchronize(event_)); }
  /// Milliseconds from `start` to this event; both must have completed.
  float since(const Event& start) const {
    float ms = 0;
    DLPREP_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace dlprep::cuda
