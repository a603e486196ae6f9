// Device and pinned host memory, copies and copy timings (device_memory.hpp).
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/device_memory.hpp"
#include "core/error.hpp"

namespace dlprep::cuda {

Allocation::Allocation(Kind kind, size_t bytes) : size_(bytes), kind_(kind) {
  void* ptr = nullptr;
  const size_t n = bytes == 0 ? 1 : bytes;
  if (kind == Kind::device)
    DLPREP_CUDA_CHECK(cudaMalloc(&ptr, n));
  else
    DLPREP_CUDA_CHECK(cudaMallocHost(&ptr, n));
  data_ = static_cast<uint8_t*>(ptr);
}

Allocation::~Allocation() {
  if (kind_ == Kind::device)
    (void)cudaFree(data_);
  else
    (void)cudaFreeHost(data_);
}

namespace {

// What a byte of memory is, in words for an error; empty when it is of `kind` here.
std::string memory_mismatch(const void* p, Allocation::Kind kind, int device) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it for the next call's check
    return "not memory CUDA knows";
  }
  if (kind == Allocation::Kind::pinned_host)
    return a.type == cudaMemoryTypeHost ? "" : "not page-locked host memory";
  if (a.type == cudaMemoryTypeManaged) return "";  // any GPU may use it
  if (a.type != cudaMemoryTypeDevice)
    return a.type == cudaMemoryTypeHost ? "page-locked host memory, not device memory"
                                        : "host memory, not device memory";
  if (a.device != device)
    return "memory of GPU " + std::to_string(a.device) + ", not of the decoder's GPU " +
           std::to_string(device);
  return "";
}

}  // namespace

void check_memory(const void* data, size_t bytes, Allocation::Kind kind, int device) {
  if (data == nullptr) throw Error(Errc::invalid_argument, "the memory is a null pointer");
  const auto* first = static_cast<const uint8_t*>(data);
  for (const uint8_t* p : {first, first + (bytes == 0 ? 0 : bytes - 1)}) {
    const std::string what = memory_mismatch(p, kind, device);
    if (!what.empty()) throw Error(Errc::invalid_argument, "the memory lent is " + what);
  }
}

void copy_to_device(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  DLPREP_CUDA_CHECK(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy returns once the bytes are staged, before the DMA lands;
  // kernels on our non-blocking streams do not wait for it, so wait here.
  DLPREP_CUDA_CHECK(cudaStreamSynchronize(0));
}

void copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes != 0)
    DLPREP_CUDA_CHECK(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost));
}

struct CopyBench::Impl {
  size_t bytes;
  Stream stream;
  Event start, stop;
  DeviceArray<uint8_t> device_a, device_b;
  PinnedArray<uint8_t> pinned;
  std::vector<uint8_t> pageable;

  explicit Impl(size_t n) : bytes(n), pageable(n == 0 ? 1 : n) {
    device_a.reserve(n);
    device_b.reserve(n);
    std::memset(pinned.reserve(n), 0x5A, n == 0 ? 1 : n);  // touched: no first-use faults timed
    std::memset(pageable.data(), 0xA5, pageable.size());
    DLPREP_CUDA_CHECK(cudaMemsetAsync(device_a.get(), 0x3C, n == 0 ? 1 : n, stream.get()));
    stream.synchronize();
  }
  float time(void* dst, const void* src, cudaMemcpyKind kind) {
    start.record(stream.get());
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream.get()));
    stop.record(stream.get());
    stop.synchronize();
    return stop.since(start);
  }
};

CopyBench::CopyBench(size_t bytes) : impl_(new Impl(bytes)) {}
CopyBench::~CopyBench() { delete impl_; }

float CopyBench::h2d_pinned_ms() {
  return impl_->time(impl_->device_a.get(), impl_->pinned.get(), cudaMemcpyHostToDevice);
}
float CopyBench::h2d_pageable_ms() {
  // From pageable memory the driver stages through its own pinned buffers; the event pair still
  // brackets the whole copy (cudaMemcpyAsync returns only once the source was consumed).
  return impl_->time(impl_->device_a.get(), impl_->pageable.data(), cudaMemcpyHostToDevice);
}
float CopyBench::d2h_pinned_ms() {
  return impl_->time(impl_->pinned.get(), impl_->device_a.get(), cudaMemcpyDeviceToHost);
}
float CopyBench::d2d_ms() {
  return impl_->time(impl_->device_b.get(), impl_->device_a.get(), cudaMemcpyDeviceToDevice);
}

}  // namespace dlprep::cuda
