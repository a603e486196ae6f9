// What CUB's device-wide algorithms share on the emulated device (see ../../cuda_runtime.h): the
// temporary-storage protocol and the checks a GPU would fail on, less politely. A query (null
// temporary storage) returns a size that grows with the items; a call then needs at least the
// size for its own item count, in device memory, and gets it scribbled over, so that nothing may
// count on its contents. The algorithm itself runs on the stream, when the host waits for it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <utility>

namespace cub::emulated {

inline size_t temp_bytes_for(int64_t items) { return 1024 + static_cast<size_t>(items) / 4; }

/// An iterator that is a pointer must name `items` elements of device memory.
template <class It>
void expect_device(It it, int64_t items, const char* what) {
  if constexpr (std::is_pointer_v<It>)
    emu::expect_device_range(it, static_cast<size_t>(items) * sizeof(*it), what);
}

/// Answers a query, or checks the storage and queues `algorithm` on `stream`.
template <class Algorithm>
cudaError_t run(const char* name, void* temp, size_t& temp_bytes, int64_t items,
                cudaStream_t stream, Algorithm algorithm) {
  const size_t need = temp_bytes_for(items);
  if (temp == nullptr) {
    temp_bytes = need;
    return cudaSuccess;
  }
  if (items < 0 || temp_bytes < need) {
    std::fprintf(stderr, "emulated CUB: %s: %zu bytes of temporary storage for %lld items\n", name,
                 temp_bytes, static_cast<long long>(items));
    return cudaErrorInvalidValue;
  }
  emu::enqueue_kernel(stream, [=] {
    emu::expect_device_range(temp, need, name);
    std::memset(temp, 0xA5, need);
    algorithm();
  });
  return cudaSuccess;
}

}  // namespace cub::emulated
