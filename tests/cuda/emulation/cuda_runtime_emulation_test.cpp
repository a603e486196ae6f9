// The emulated CUDA runtime (runtime/cuda_runtime.h): queued work runs as late as CUDA allows,
// streams wait for each other's events, copies are checked against their allocations, kernel
// failures reach the host's next wait; launches (kernel_launch.hpp) copy their arguments; CUB's
// algorithms hold to their temporary-storage protocol. The backends' emulated tests rely on each
// of these to expose host code that would race the GPU.
#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <stdexcept>
#include <vector>

#include "kernel_launch.hpp"

namespace {

uint8_t* device_bytes(size_t n) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, n) == cudaSuccess);
  return static_cast<uint8_t*>(p);
}

uint8_t* pinned_bytes(size_t n) {
  void* p = nullptr;
  REQUIRE(cudaMallocHost(&p, n) == cudaSuccess);
  return static_cast<uint8_t*>(p);
}

__global__ void add_to_all(uint32_t* data, uint32_t n, uint32_t value) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += value;
}

struct IsOdd {
  __device__ bool operator()(uint32_t v) const { return v % 2 == 1; }
};

}  // namespace

TEST_CASE("queued copies run when the host waits: pinned sources are read then, pageable now") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, 0) == cudaSuccess);
  uint8_t* d = device_bytes(8);
  uint8_t* pinned = pinned_bytes(8);
  std::vector<uint8_t> pageable(8, 1), back(8, 0);
  std::memset(pinned, 2, 8);

  CHECK(cudaMemcpyAsync(d, pinned, 8, cudaMemcpyHostToDevice, s) == cudaSuccess);
  std::memset(pinned, 3, 8);  // a race on a GPU: the copy has not run yet
  CHECK(cudaMemcpyAsync(pinned, d, 8, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(pinned[0] == 3);  // nothing ran
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(pinned[0] == 3);  // the copy read the source when it ran

  CHECK(cudaMemcpyAsync(d, pageable.data(), 8, cudaMemcpyHostToDevice, s) == cudaSuccess);
  std::memset(pageable.data(), 4, 8);  // allowed: CUDA staged the pageable source
  // Into pageable memory the call returns once the copy is done.
  CHECK(cudaMemcpyAsync(back.data(), d, 8, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(back == std::vector<uint8_t>(8, 1));

  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("pointer attributes tell device, pinned and other memory apart") {
  void* device = nullptr;
  void* pinned = nullptr;
  REQUIRE(cudaMalloc(&device, 64) == cudaSuccess);
  REQUIRE(cudaMallocHost(&pinned, 64) == cudaSuccess);
  std::vector<uint8_t> host(64);
  cudaPointerAttributes a{};
  REQUIRE(cudaPointerGetAttributes(&a, static_cast<uint8_t*>(device) + 63) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeDevice);
  CHECK(a.device == 0);
  REQUIRE(cudaPointerGetAttributes(&a, pinned) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeHost);
  REQUIRE(cudaPointerGetAttributes(&a, host.data()) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeUnregistered);
  REQUIRE(cudaPointerGetAttributes(&a, static_cast<uint8_t*>(device) + 64) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeUnregistered);
  CHECK(cudaFree(device) == cudaSuccess);
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
}

TEST_CASE("events complete when the stream reaches them") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, 0) == cudaSuccess);
  cudaEvent_t a = nullptr, b = nullptr;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  uint8_t* d = device_bytes(4);
  CHECK(cudaEventRecord(a, s) == cudaSuccess);
  CHECK(cudaMemsetAsync(d, 7, 4, s) == cudaSuccess);
  CHECK(cudaEventRecord(b, s) == cudaSuccess);
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorNotReady);
  CHECK(cudaGetLastError() == cudaErrorNotReady);
  CHECK(cudaGetLastError() == cudaSuccess);  // read once
  CHECK(cudaEventSynchronize(b) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  CHECK(ms >= 0);
  uint8_t v[4] = {};
  CHECK(cudaMemcpy(v, d, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(v[3] == 7);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaEventDestroy(a) == cudaSuccess);
  CHECK(cudaEventDestroy(b) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("copies and memsets must stay inside allocations of the kinds they name") {
  uint8_t* d = device_bytes(16);
  std::vector<uint8_t> host(32);
  CHECK(cudaMemcpy(d, host.data(), 17, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(host.data(), d + 8, 9, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(d, host.data(), 4, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(host.data(), host.data() + 16, 4, cudaMemcpyHostToDevice) ==
        cudaErrorInvalidValue);
  CHECK(cudaMemsetAsync(host.data(), 0, 4, nullptr) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(d + 8, host.data(), 8, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaFreeHost(d) == cudaErrorInvalidDevicePointer);  // device memory, not pinned
  (void)cudaGetLastError();
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("a kernel that breaks the execution model fails the host's next wait") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, 0) == cudaSuccess);
  bool ran = false;
  emu::enqueue_kernel(s, [&] { ran = true; });
  emu::enqueue_kernel(s, [] { throw std::logic_error("emu: block 0 of 1: a test failure"); });
  CHECK_FALSE(ran);
  CHECK(cudaStreamSynchronize(s) == cudaErrorLaunchFailure);
  CHECK(ran);
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("a stream that waits for an event runs the other stream up to that record only") {
  cudaStream_t a = nullptr, b = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t e = nullptr;
  REQUIRE(cudaEventCreate(&e) == cudaSuccess);
  uint8_t* d = device_bytes(4);
  uint8_t* pinned = pinned_bytes(4);
  CHECK(cudaMemsetAsync(d, 1, 4, a) == cudaSuccess);
  CHECK(cudaEventRecord(e, a) == cudaSuccess);
  CHECK(cudaMemsetAsync(d, 2, 4, a) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(b, e, 0) == cudaSuccess);
  CHECK(cudaEventRecord(e, a) == cudaSuccess);  // a later record: the wait is for the first
  CHECK(cudaMemcpyAsync(pinned, d, 4, cudaMemcpyDeviceToHost, b) == cudaSuccess);
  CHECK(cudaStreamSynchronize(b) == cudaSuccess);
  CHECK(pinned[0] == 1);
  CHECK(cudaStreamSynchronize(a) == cudaSuccess);
  CHECK(cudaMemcpy(pinned, d, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(pinned[0] == 2);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
  CHECK(cudaEventDestroy(e) == cudaSuccess);
  CHECK(cudaStreamDestroy(a) == cudaSuccess);
  CHECK(cudaStreamDestroy(b) == cudaSuccess);
}

TEST_CASE("an event without timing orders streams and refuses to time") {
  cudaEvent_t plain = nullptr, timed = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&plain, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&timed, cudaEventDefault) == cudaSuccess);
  CHECK(cudaEventCreateWithFlags(&plain, 64) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  CHECK(cudaEventRecord(plain, nullptr) == cudaSuccess);
  CHECK(cudaEventRecord(timed, nullptr) == cudaSuccess);
  CHECK(cudaEventSynchronize(timed) == cudaSuccess);
  CHECK(cudaEventSynchronize(plain) == cudaSuccess);
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, plain, timed) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  CHECK(cudaEventElapsedTime(&ms, timed, timed) == cudaSuccess);
  CHECK(cudaEventDestroy(plain) == cudaSuccess);
  CHECK(cudaEventDestroy(timed) == cudaSuccess);
}

TEST_CASE("the default streams' handles (0, legacy, per-thread) name the one default stream") {
  uint8_t* d = device_bytes(4);
  uint8_t* pinned = pinned_bytes(4);
  int calls = 0;
  CHECK(cudaLaunchHostFunc(
            cudaStreamPerThread, [](void* n) { ++*static_cast<int*>(n); }, &calls) == cudaSuccess);
  CHECK(calls == 0);  // a host function is queued work too
  CHECK(cudaMemsetAsync(d, 5, 4, cudaStreamLegacy) == cudaSuccess);
  CHECK(cudaMemsetAsync(d, 6, 2, cudaStreamPerThread) == cudaSuccess);
  CHECK(cudaMemcpyAsync(pinned, d, 4, cudaMemcpyDeviceToHost, nullptr) == cudaSuccess);
  CHECK(cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess);
  CHECK(calls == 1);
  CHECK(pinned[0] == 6);
  CHECK(pinned[3] == 5);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
}

TEST_CASE("stream-ordered allocations are freed when the stream gets there") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  REQUIRE(cudaMemPoolCreate(&pool, &props) == cudaSuccess);
  void* p = nullptr;
  REQUIRE(cudaMallocFromPoolAsync(&p, 64, pool, s) == cudaSuccess);
  size_t free_before = 0, free_after = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
  CHECK(cudaMemsetAsync(p, 0, 64, s) == cudaSuccess);
  CHECK(cudaFreeAsync(p, s) == cudaSuccess);
  CHECK(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
  CHECK(free_after == free_before);  // not yet: the stream has not got there
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
  CHECK(free_after == free_before + 64);
  CHECK(cudaMemsetAsync(p, 0, 64, s) == cudaErrorInvalidValue);  // freed
  CHECK(cudaFreeAsync(p, s) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  CHECK(cudaMemPoolDestroy(pool) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("a launch copies its arguments then, and runs when the host waits") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  constexpr uint32_t n = 1000;
  auto* d = reinterpret_cast<uint32_t*>(device_bytes(n * 4));
  CHECK(cudaMemsetAsync(d, 0, n * 4, s) == cudaSuccess);
  uint32_t value = 5;
  emu::launch_async(add_to_all, emu::LaunchConfig(3, 128, 0, s), d, n, value);
  value = 7;  // the launch has its own copy
  emu::launch_async(add_to_all, emu::LaunchConfig(0, 128, 0, s), d, n, value);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);  // an empty grid, refused at once
  std::vector<uint32_t> out(n);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaMemcpy(out.data(), d, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(out == std::vector<uint32_t>(n, 5));
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("CUB's select and radix sort, and their temporary storage") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  constexpr uint32_t n = 300;
  std::vector<uint32_t> values(n);
  std::vector<uint8_t> flags(n);
  std::vector<uint64_t> keys(n);
  for (uint32_t i = 0; i < n; ++i) {
    values[i] = i * 7 % 101;
    flags[i] = i % 3 == 0;
    keys[i] = (uint64_t{i} * 0x9E3779B97F4A7C15ull) >> 8;
  }
  auto* d_values = reinterpret_cast<uint32_t*>(device_bytes(n * 4));
  auto* d_out = reinterpret_cast<uint32_t*>(device_bytes(n * 4));
  auto* d_num = reinterpret_cast<uint32_t*>(device_bytes(4));
  auto* d_flags = device_bytes(n);
  auto* d_keys = reinterpret_cast<uint64_t*>(device_bytes(n * 8));
  auto* d_keys_out = reinterpret_cast<uint64_t*>(device_bytes(n * 8));
  auto* d_slots = reinterpret_cast<uint32_t*>(device_bytes(n * 4));
  // On `s` itself: a cudaMemcpy from pageable memory may still be landing when work queued on a
  // non-blocking stream runs.
  CHECK(cudaMemcpyAsync(d_values, values.data(), n * 4, cudaMemcpyHostToDevice, s) == cudaSuccess);
  CHECK(cudaMemcpyAsync(d_flags, flags.data(), n, cudaMemcpyHostToDevice, s) == cudaSuccess);
  CHECK(cudaMemcpyAsync(d_keys, keys.data(), n * 8, cudaMemcpyHostToDevice, s) == cudaSuccess);

  size_t temp_bytes = 0;
  CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, d_values, d_out, d_num, n, IsOdd{}) ==
        cudaSuccess);
  uint8_t* temp = device_bytes(temp_bytes);
  size_t too_small = temp_bytes - 1;
  CHECK(cub::DeviceSelect::If(temp, too_small, d_values, d_out, d_num, n, IsOdd{}, s) ==
        cudaErrorInvalidValue);
  CHECK(cub::DeviceSelect::If(temp, temp_bytes, d_values, d_out, d_num, n, IsOdd{}, s) ==
        cudaSuccess);
  std::vector<uint32_t> out(n);
  uint32_t num = 0;
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaMemcpy(&num, d_num, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(out.data(), d_out, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  std::vector<uint32_t> odd;
  for (uint32_t v : values)
    if (v % 2 == 1) odd.push_back(v);
  REQUIRE(num == odd.size());
  CHECK(std::vector<uint32_t>(out.begin(), out.begin() + num) == odd);

  CHECK(cub::DeviceSelect::Flagged(temp, temp_bytes, thrust::counting_iterator<uint32_t>(0),
                                   d_flags, d_out, d_num, n, s) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaMemcpy(&num, d_num, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(out.data(), d_out, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(num == 100);
  for (uint32_t i = 0; i < num; ++i) CHECK(out[i] == i * 3);

  CHECK(cub::DeviceSelect::Flagged(temp, temp_bytes, thrust::counting_iterator<uint32_t>(0),
                                   d_flags, d_slots, d_num, n, s) == cudaSuccess);
  CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, static_cast<const uint64_t*>(d_keys),
                                        d_keys_out, static_cast<const uint32_t*>(d_values), d_out,
                                        n, 0, 64, s) == cudaSuccess);
  std::vector<uint64_t> sorted(n);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaMemcpy(sorted.data(), d_keys_out, n * 8, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(cudaMemcpy(out.data(), d_out, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (uint32_t i = 0; i < n; ++i) {
    if (i > 0) CHECK(sorted[i - 1] < sorted[i]);
    for (uint32_t j = 0; j < n; ++j)
      if (keys[j] == sorted[i]) CHECK(out[i] == values[j]);
  }

  // Temporary storage in host memory: a GPU would fault; here the wait fails.
  std::vector<uint8_t> host_temp(temp_bytes);
  CHECK(cub::DeviceSelect::If(host_temp.data(), temp_bytes, d_values, d_out, d_num, n, IsOdd{},
                              s) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorLaunchFailure);
  (void)cudaGetLastError();
  for (void* p :
       {static_cast<void*>(d_values), static_cast<void*>(d_out), static_cast<void*>(d_num),
        static_cast<void*>(d_flags), static_cast<void*>(d_keys), static_cast<void*>(d_keys_out),
        static_cast<void*>(d_slots), static_cast<void*>(temp)})
    CHECK(cudaFree(p) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}
