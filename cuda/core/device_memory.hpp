// Device and pinned host memory, synchronous copies and copy-speed measurements behind a header
// with no CUDA types, for the adapters in lib/ (lib/l3/batch_decode_cuda.cpp) that must not see
// cuda_runtime.h. Errors throw Error(device_failure) with the CUDA status name.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlprep::cuda {

/// One allocation of device memory (cudaMalloc) or page-locked host memory (cudaMallocHost),
/// freed with the object. A size of 0 allocates 1 byte, so data() is never null.
class Allocation {
 public:
  enum class Kind { device, pinned_host };
  Allocation(Kind kind, size_t bytes);
  ~Allocation();
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Kind kind_;
};

/// Throws Error(invalid_argument) saying what it is instead, unless [data, data + bytes) begins
/// and ends in memory of `kind`: device memory of GPU `device` (or managed memory), or
/// page-locked host memory. For memory a caller lends (a framework's tensor), before any work
/// writes to it.
void check_memory(const void* data, size_t bytes, Allocation::Kind kind, int device);

/// Copies between host memory (pageable or pinned) and device memory that have landed when they
/// return, so work on any stream may use them.
void copy_to_device(void* device_dst, const void* host_src, size_t bytes);
void copy_to_host(void* host_dst, const void* device_src, size_t bytes);

/// Times copies of one size with CUDA events on a stream of its own, for the benchmark's
/// ceilings: each call runs one copy and returns its milliseconds.
class CopyBench {
 public:
  explicit CopyBench(size_t bytes);
  ~CopyBench();
  CopyBench(const CopyBench&) = delete;
  CopyBench& operator=(const CopyBench&) = delete;
  float h2d_pinned_ms();
  float h2d_pageable_ms();
  float d2h_pinned_ms();
  float d2d_ms();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace dlprep::cuda
