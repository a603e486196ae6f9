// Runs a CUDA kernel's own source on the CPU, for tests on machines without a GPU. Include this
// before a header of device code (one with no CUDA runtime call, such as cuda/l3/decode_kernel.cuh)
// and call the kernel through emu::launch.
//
// The model: blocks run one after another on the calling thread; within a block every CUDA thread
// is a fiber that runs until it waits at __syncthreads or a shuffle; a warp's shuffle opens when
// its 32 lanes have reached it, a barrier when the whole block has. The order in which threads
// run changes from block to block (ascending, descending, and each warp as far as it can go
// before the next), so that a missing barrier shows up as a wrong result. Memory accesses are
// checked by the sanitizers the test is built with (ASan knows the fibers' stacks): global memory
// is the caller's host buffers, __shared__ variables are function statics (one block at a time)
// and dynamic shared memory is a buffer of exactly the launch's size, filled with garbage before
// each block. What the GPU leaves undefined is an error here: a barrier that some threads of the
// block never reach (or reach at a different barrier), a shuffle whose mask is not the whole
// warp, or one that reads a lane that has returned. The emulation says nothing about speed,
// memory coalescing, atomics or nvcc's code generation; the GPU test stays the proof for those.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

namespace emu {

const dim3& thread_idx();
const dim3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
void* dynamic_shared();
void sync_threads();
/// The warp-wide exchange behind every shuffle: returns lane src_lane's value (src_lane outside
/// the warp: the caller's own).
uint64_t shuffle(unsigned mask, uint64_t value, int src_lane);
unsigned lane_id();

/// Runs `kernel` (a call of the kernel with its arguments) on every thread of every block of
/// `grid` x `block`, with `shared_bytes` of dynamic shared memory per block; returns when all
/// are done. Throws std::logic_error naming the first violation of the execution model above.
/// One launch at a time (others wait).
void launch(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& kernel);

template <class T>
T shuffle_as(unsigned mask, T v, int src_lane) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t));
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = shuffle(mask, bits, src_lane);
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

}  // namespace emu

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::block_idx())
#define blockDim (::emu::block_dim())
#define gridDim (::emu::grid_dim())
#define DLPREP_DYNAMIC_SHARED(type, name) \
  type* const name = static_cast<type*>(::emu::dynamic_shared())

inline void __syncthreads() { emu::sync_threads(); }

template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  const int lane = static_cast<int>(emu::lane_id());
  return emu::shuffle_as(mask, v, (lane & ~(width - 1)) + (src_lane & (width - 1)));
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(emu::lane_id());
  const int src = lane - static_cast<int>(delta);
  return emu::shuffle_as(mask, v, src < (lane & ~(width - 1)) ? lane : src);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(emu::lane_id());
  const int src = lane + static_cast<int>(delta);
  return emu::shuffle_as(mask, v, src >= (lane & ~(width - 1)) + width ? lane : src);
}

using std::max;
using std::min;
