// Host memory lent by a backend: plain heap memory for the CPU, page-locked ("pinned") memory for
// a GPU backend, which then copies chunks to the device by DMA without a staging copy. The input
// reader's chunk buffers and preloaded inputs are allocated through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace dlprep::tabular {

/// Owns `size` bytes at `data`, released by `release` (never throws).
class HostBuffer {
 public:
  using Release = void (*)(uint8_t*) noexcept;
  HostBuffer() = default;
  HostBuffer(uint8_t* data, size_t size, Release release)
      : data_(data), size_(size), release_(release) {}
  HostBuffer(HostBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        release_(o.release_) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      release_ = o.release_;
    }
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { reset(); }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset() noexcept {
    if (data_ != nullptr && release_ != nullptr) release_(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Release release_ = nullptr;
};

/// Allocates uninitialised host memory (pages are touched only when written). Throws on failure.
using HostAllocator = std::function<HostBuffer(size_t bytes)>;

/// Ordinary heap memory (new[]): the CPU backend's allocator and the default.
inline HostBuffer allocate_pageable(size_t bytes) {
  return HostBuffer(new uint8_t[bytes], bytes, [](uint8_t* p) noexcept { delete[] p; });
}

}  // namespace dlprep::tabular
