// The emulated CUDA runtime (runtime/cuda_runtime.h): queued work runs as late as CUDA allows,
// copies are checked against their allocations, kernel failures reach the host's next wait. The
// L3 backend's emulated test relies on each of these to expose host code that would race the GPU.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

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
