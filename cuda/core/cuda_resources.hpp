// RAII owners of CUDA resources for the .cu files of cuda/ (this header has CUDA types: never
// include it from lib/ or tools/). Creation failures throw Error(device_failure) through
// DLPREP_CUDA_CHECK; destructors never throw and ignore the status (the process may be tearing
// down the context).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "core/cuda_check.hpp"

namespace dlprep::cuda {

/// Memory that grows to the largest request and is reused: device memory (cudaMalloc) or
/// page-locked host memory (cudaMallocHost). Growing discards the contents.
template <bool kPinnedHost>
class GrowingMemory {
 public:
  GrowingMemory() = default;
  GrowingMemory(const GrowingMemory&) = delete;
  GrowingMemory& operator=(const GrowingMemory&) = delete;
  ~GrowingMemory() { release(); }

  /// At least `bytes` bytes (and at least 1, so that the pointer is never null).
  void* reserve(size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (bytes > capacity_) {
      release();
      if constexpr (kPinnedHost)
        DLPREP_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
      else
        DLPREP_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
      capacity_ = bytes;
    }
    return ptr_;
  }
  void* data() const { return ptr_; }
  size_t capacity() const { return capacity_; }

 private:
  void release() noexcept {
    if (ptr_ != nullptr) {
      if constexpr (kPinnedHost)
        (void)cudaFreeHost(ptr_);
      else
        (void)cudaFree(ptr_);
    }
    ptr_ = nullptr;
    capacity_ = 0;
  }
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};
using DeviceMemory = GrowingMemory<false>;
using PinnedMemory = GrowingMemory<true>;

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

/// A timing event.
class Event {
 public:
  Event() { DLPREP_CUDA_CHECK(cudaEventCreate(&event_)); }
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
