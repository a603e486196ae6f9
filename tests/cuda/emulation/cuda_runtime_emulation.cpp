// The emulated CUDA runtime (runtime/cuda_runtime.h): one device, host memory standing for device
// memory, streams as queues of work that run when the host waits.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "asan.hpp"
#include "runtime/cuda_runtime.h"

struct CUstream_st {
  std::deque<std::function<void()>> work;
};

struct CUevent_st {
  CUstream_st* stream = nullptr;  // where it was last recorded
  uint64_t recorded = 0;          // records made
  uint64_t reached = 0;           // records the device has run
  double ms = 0;                  // when the device reached the last one
  bool timing = true;             // not made with cudaEventDisableTiming
  bool complete() const { return reached == recorded; }
};

struct CUmemPoolHandle_st {};

namespace {

enum class Memory { device, pinned };

struct Allocation {
  size_t bytes;
  Memory kind;
};

struct Runtime {
  std::map<const uint8_t*, Allocation> allocations;  // by start
  std::vector<CUstream_st*> streams;                 // created ones, for device-wide waits
  CUstream_st legacy;                                // stream 0
  cudaError_t last_error = cudaSuccess;
  int device_depth = 0;  // > 0 while queued work runs: device memory is accessible
};

Runtime& rt() {
  static Runtime r;
  return r;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

cudaError_t fail(cudaError_t error) {
  rt().last_error = error;
  return error;
}

// The allocation holding [p, p + bytes), if any.
const Allocation* find(const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  auto it = rt().allocations.upper_bound(b);
  if (it == rt().allocations.begin()) return nullptr;
  --it;
  const size_t offset = static_cast<size_t>(b - it->first);
  if (offset > it->second.bytes || bytes > it->second.bytes - offset) return nullptr;
  return &it->second;
}

bool is_device(const void* p, size_t bytes) {
  const Allocation* a = find(p, bytes);
  return a != nullptr && a->kind == Memory::device;
}

bool is_pinned(const void* p, size_t bytes) {
  const Allocation* a = find(p, bytes);
  return a != nullptr && a->kind == Memory::pinned;
}

// Device memory opens to the work the device runs, and closes again for the host.
void set_device_memory_open(bool open) {
  for (const auto& [start, a] : rt().allocations)
    if (a.kind == Memory::device) {
      if (open)
        DLPREP_EMU_UNPOISON(start, a.bytes);
      else
        DLPREP_EMU_POISON(start, a.bytes);
    }
}

cudaStream_t resolve(cudaStream_t stream) {
  const bool default_stream =
      stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
  return default_stream ? &rt().legacy : stream;
}

// Runs the work queued on `stream` up to and including the item for which `until` returns true
// after it ran (all of it when `until` is empty).
cudaError_t run(cudaStream_t stream, const std::function<bool()>& until = {}) {
  CUstream_st* s = resolve(stream);
  cudaError_t result = cudaSuccess;
  // A wait that finds nothing queued skips the (un)poisoning of every device allocation.
  if (s->work.empty()) return result;
  if (rt().device_depth++ == 0) set_device_memory_open(true);
  while (!s->work.empty()) {
    std::function<void()> item = std::move(s->work.front());
    s->work.pop_front();
    try {
      item();
    } catch (const std::logic_error& e) {
      std::fprintf(stderr, "emulated CUDA device: kernel failed: %s\n", e.what());
      result = fail(cudaErrorLaunchFailure);
    }
    if (until && until()) break;
  }
  if (--rt().device_depth == 0) set_device_memory_open(false);
  return result;
}

cudaError_t run_all() {
  cudaError_t result = run(nullptr);
  for (CUstream_st* s : rt().streams) {
    const cudaError_t e = run(s);
    if (result == cudaSuccess) result = e;
  }
  return result;
}

// What CUDA checks of a copy's direction: each side in memory of the kind it names.
bool copy_is_valid(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const bool dst_device = is_device(dst, bytes), src_device = is_device(src, bytes);
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return dst_device && !src_device;
    case cudaMemcpyDeviceToHost:
      return src_device && !dst_device;
    case cudaMemcpyDeviceToDevice:
      return dst_device && src_device;
    case cudaMemcpyHostToHost:
      return !dst_device && !src_device;
  }
  return false;
}

// Queues a copy. From pageable host memory the source is staged now, as CUDA does: the caller
// may reuse it as soon as the call returns. Returns whether the host must wait for it (CUDA's
// copies into pageable memory return only once they are done).
cudaError_t queue_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                       cudaStream_t stream, bool* host_waits) {
  if (bytes == 0) return cudaSuccess;
  if (!copy_is_valid(dst, src, bytes, kind)) {
    std::fprintf(stderr,
                 "emulated CUDA device: copy of %zu bytes, kind %d: a side is not an allocation of "
                 "that kind, or the range runs past it\n",
                 bytes, static_cast<int>(kind));
    return fail(cudaErrorInvalidValue);
  }
  const bool from_pageable = kind == cudaMemcpyHostToDevice && !is_pinned(src, bytes);
  std::shared_ptr<std::vector<uint8_t>> staged;
  if (from_pageable) {
    const auto* s = static_cast<const uint8_t*>(src);
    staged = std::make_shared<std::vector<uint8_t>>(s, s + bytes);
  }
  resolve(stream)->work.push_back([=] { std::memcpy(dst, staged ? staged->data() : src, bytes); });
  *host_waits = kind == cudaMemcpyDeviceToHost && !is_pinned(dst, bytes);
  return cudaSuccess;
}

}  // namespace

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver:
      return "cudaErrorInsufficientDriver";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "emulated CUDA error (see the lines above)";
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = rt().last_error;
  rt().last_error = cudaSuccess;
  return e;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return fail(cudaErrorInvalidValue);
  *value = attr == cudaDevAttrComputeCapabilityMajor ? 9 : 0;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return fail(cudaErrorInvalidValue);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "emulated CUDA device (CPU)");
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  prop->totalGlobalMem = size_t{1} << 32;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;  // as on Ampere and Hopper
  *greatest = -5;
  return cudaSuccess;
}

namespace {
constexpr size_t kDeviceMemory = size_t{8} << 30;  // what cudaMemGetInfo reports as the total
}  // namespace

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  size_t used = 0;
  for (const auto& [start, a] : rt().allocations)
    if (a.kind == Memory::device) used += a.bytes;
  *total = kDeviceMemory;
  *free = used < kDeviceMemory ? kDeviceMemory - used : 0;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return fail(cudaErrorInvalidValue);
  *attributes = {cudaMemoryTypeUnregistered, -2, nullptr, const_cast<void*>(ptr)};
  if (is_device(ptr, 1))
    *attributes = {cudaMemoryTypeDevice, 0, const_cast<void*>(ptr), nullptr};
  else if (is_pinned(ptr, 1))
    *attributes = {cudaMemoryTypeHost, 0, const_cast<void*>(ptr), const_cast<void*>(ptr)};
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (bytes == 0) return fail(cudaErrorInvalidValue);
  auto* p = new uint8_t[bytes];  // exactly `bytes`: ASan bounds every access
  rt().allocations[p] = {bytes, Memory::device};
  if (rt().device_depth == 0) DLPREP_EMU_POISON(p, bytes);
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags) {
  if ((flags & ~cudaHostAllocPortable) != 0) return fail(cudaErrorInvalidValue);
  return cudaMallocHost(ptr, bytes);
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  if (bytes == 0) return fail(cudaErrorInvalidValue);
  auto* p = new uint8_t[bytes];
  rt().allocations[p] = {bytes, Memory::pinned};
  *ptr = p;
  return cudaSuccess;
}

namespace {
cudaError_t release(void* ptr, Memory kind) {
  auto* p = static_cast<uint8_t*>(ptr);
  const auto it = rt().allocations.find(p);
  if (it == rt().allocations.end() || it->second.kind != kind)
    return fail(cudaErrorInvalidDevicePointer);
  DLPREP_EMU_UNPOISON(p, it->second.bytes);
  rt().allocations.erase(it);
  delete[] p;
  return cudaSuccess;
}

cudaError_t free_allocation(void* ptr, Memory kind) {
  if (ptr == nullptr) return cudaSuccess;
  const cudaError_t pending = run_all();  // as CUDA: freeing waits for the device
  const cudaError_t e = release(ptr, kind);
  return e != cudaSuccess ? e : pending;
}
}  // namespace

cudaError_t cudaFree(void* ptr) { return free_allocation(ptr, Memory::device); }
cudaError_t cudaFreeHost(void* ptr) { return free_allocation(ptr, Memory::pinned); }

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  if (props->allocType != cudaMemAllocationTypePinned ||
      props->location.type != cudaMemLocationTypeDevice || props->location.id != 0)
    return fail(cudaErrorInvalidValue);
  *pool = new CUmemPoolHandle_st;
  return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  delete pool;  // as CUDA: allocations still out stay valid until they are freed
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (pool == nullptr || attr != cudaMemPoolAttrReleaseThreshold || value == nullptr)
    return fail(cudaErrorInvalidValue);
  return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool,
                                    cudaStream_t stream) {
  (void)stream;  // the memory exists at once, which stream order allows
  if (pool == nullptr) return fail(cudaErrorInvalidValue);
  return cudaMalloc(ptr, bytes);
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  if (ptr == nullptr) return cudaSuccess;
  const auto it = rt().allocations.find(static_cast<uint8_t*>(ptr));
  if (it == rt().allocations.end() || it->second.kind != Memory::device)
    return fail(cudaErrorInvalidValue);
  // Freed when the stream gets there: work queued before may still use it, work after may not.
  resolve(stream)->work.push_back([ptr] { (void)release(ptr, Memory::device); });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  return cudaStreamCreateWithPriority(stream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned flags, int priority) {
  if (flags != cudaStreamNonBlocking || priority > 0 || priority < -5)
    return fail(cudaErrorInvalidValue);
  *stream = new CUstream_st;
  rt().streams.push_back(*stream);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  auto& all = rt().streams;
  const auto it = std::find(all.begin(), all.end(), stream);
  if (it == all.end()) return fail(cudaErrorInvalidResourceHandle);
  const cudaError_t e = run(stream);  // CUDA finishes the queued work first
  all.erase(it);
  delete stream;
  return e;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return run(stream); }

namespace {
// Runs `event`'s stream until it has reached record number `record`.
cudaError_t run_until_reached(cudaEvent_t event, uint64_t record) {
  if (event->reached >= record) return cudaSuccess;
  return run(event->stream, [event, record] { return event->reached >= record; });
}
}  // namespace

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags) {
  if (flags != 0) return fail(cudaErrorInvalidValue);
  if (event->stream == nullptr || event->complete()) return cudaSuccess;
  const uint64_t record = event->recorded;
  resolve(stream)->work.push_back([event, record] {
    if (run_until_reached(event, record) != cudaSuccess)
      throw std::logic_error("the work it waits for on another stream failed");
  });
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  bool host_waits = false;
  const cudaError_t e = queue_copy(dst, src, bytes, kind, nullptr, &host_waits);
  if (e != cudaSuccess) return e;
  // Synchronous, except from pageable memory to the device: CUDA returns once the source is
  // staged, before the copy lands.
  if (kind == cudaMemcpyHostToDevice && !is_pinned(src, bytes)) return cudaSuccess;
  return run(nullptr);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data) {
  resolve(stream)->work.push_back([fn, data] { fn(data); });
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  bool host_waits = false;
  const cudaError_t e = queue_copy(dst, src, bytes, kind, stream, &host_waits);
  if (e != cudaSuccess || !host_waits) return e;
  return run(stream);
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (!is_device(ptr, bytes)) {
    std::fprintf(stderr, "emulated CUDA device: memset of %zu bytes outside device memory\n",
                 bytes);
    return fail(cudaErrorInvalidValue);
  }
  resolve(stream)->work.push_back([=] { std::memset(ptr, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (flags != cudaEventDefault && flags != cudaEventDisableTiming)
    return fail(cudaErrorInvalidValue);
  *event = new CUevent_st;
  (*event)->timing = flags == cudaEventDefault;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  CUstream_st* s = resolve(stream);
  event->stream = s;
  const uint64_t record = ++event->recorded;
  s->work.push_back([event, record] {
    event->reached = record;
    event->ms = now_ms();
  });
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event->stream == nullptr) return cudaSuccess;
  return run_until_reached(event, event->recorded);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start->timing || !end->timing) return fail(cudaErrorInvalidResourceHandle);
  if (!start->complete() || !end->complete()) return fail(cudaErrorNotReady);
  *ms = static_cast<float>(end->ms - start->ms);
  return cudaSuccess;
}

namespace emu {
void enqueue_kernel(cudaStream_t stream, std::function<void()> work) {
  resolve(stream)->work.push_back(std::move(work));
}

void refuse_launch(const char* why) {
  std::fprintf(stderr, "emulated CUDA device: launch refused: %s\n", why);
  fail(cudaErrorInvalidConfiguration);
}

void expect_device_range(const void* p, size_t bytes, const char* what) {
  if (!is_device(p, bytes))
    throw std::logic_error(std::string(what) + ": " + std::to_string(bytes) +
                           " bytes that are not in one device allocation");
}
}  // namespace emu
