// The CUDA runtime API as far as dlprep's host code uses it, emulated on the CPU for tests
// (cuda_runtime_emulation.cpp): this directory goes before the CUDA toolkit's on the include path
// of the emulated test, so that cuda/'s .cu files (less the one with the <<<>>> launch) compile
// as C++ unchanged. The functions have C++ linkage, so they never clash with the real runtime
// linked into the same program.
//
// The emulated device runs queued work as late as CUDA allows: a stream's copies, memsets,
// kernels and event records run only when the host waits for them (stream or event
// synchronisation, a synchronous copy, cudaFree). Host code that touches a buffer before the
// work that reads or writes it has run therefore sees the wrong bytes. Device memory is poisoned
// for ASan while host code runs, so a host access to it is reported; copies must name ranges
// inside their allocations, the right kind on each side.
#pragma once

#include <cstddef>
#include <functional>

#define CUDART_VERSION 13000

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotReady = 600,
  cudaErrorInvalidResourceHandle = 400,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
};

enum cudaDeviceAttr {
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
};

inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaHostAllocPortable = 1;

struct CUstream_st;
using cudaStream_t = CUstream_st*;
// The default streams' handles, as the real header defines them (both are the emulation's one
// default stream).
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
struct CUevent_st;
using cudaEvent_t = CUevent_st*;

struct CUmemPoolHandle_st;
using cudaMemPool_t = CUmemPoolHandle_st*;
enum cudaMemAllocationType { cudaMemAllocationTypePinned = 1 };
enum cudaMemLocationType { cudaMemLocationTypeDevice = 1 };
struct cudaMemLocation {
  cudaMemLocationType type;
  int id;
};
struct cudaMemPoolProps {
  cudaMemAllocationType allocType;
  cudaMemLocation location;
};
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3,
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount;
  size_t totalGlobalMem;
};

const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError();

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest);

cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
/// What `ptr` points into: an allocation of this runtime (device or pinned), else unregistered.
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* ptr);

// Stream-ordered allocation: the memory is usable by work queued after the call on `stream`
// (here, at once) and freed when the stream reaches cudaFreeAsync.
cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props);
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value);
cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool,
                                    cudaStream_t stream);
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
/// Work queued on `stream` after this waits for the event's last record (at the time of the call).
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
#define CUDART_CB
using cudaHostFn_t = void (*)(void*);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data);

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream);

cudaError_t cudaEventCreate(cudaEvent_t* event);
inline constexpr unsigned cudaEventDefault = 0;
inline constexpr unsigned cudaEventDisableTiming = 2;
// An event without timing refuses cudaEventElapsedTime, as CUDA's does.
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

namespace emu {
/// Queues `work` (a kernel launch through emu::launch) on `stream`; it runs, with device memory
/// accessible, when the host next waits for the stream. A std::logic_error it throws (a
/// violation of the execution model) becomes cudaErrorLaunchFailure, reported by that wait.
void enqueue_kernel(cudaStream_t stream, std::function<void()> work);
/// A launch the device refuses (its configuration): reported by the next cudaGetLastError.
void refuse_launch(const char* why);
/// For work on the device (library algorithms): throws std::logic_error naming `what` unless
/// [p, p + bytes) lies in one device allocation.
void expect_device_range(const void* p, size_t bytes, const char* what);
}  // namespace emu
