// Runs a CUDA kernel's own source on the CPU, for tests on machines without a GPU. Include this
// before device code; call a kernel through emu::launch, or compile a whole .cu file through
// emulate_launches.cmake, which turns its <<<>>> launches into kernel_launch.hpp's.
//
// The model: blocks run one after another on the calling thread; within a block every CUDA thread
// is a fiber that runs until it waits at __syncthreads or a warp built-in (shuffle, ballot,
// match); a warp built-in opens when every lane of its mask has reached it, a barrier when the
// whole block has. The order in which threads run changes from block to block (ascending,
// descending, and each warp as far as it can go before the next), so that a missing barrier shows
// up as a wrong result. Memory accesses are checked by the sanitizers the test is built with (ASan
// knows the fibers' stacks): global memory is the caller's host buffers, __shared__ variables are
// function statics (one block at a time) and dynamic shared memory is a buffer of exactly the
// launch's size, filled with garbage before each block. What the GPU leaves undefined is an error
// here: a barrier that some threads of the block never reach (or reach at a different barrier), a
// warp built-in whose mask leaves out the caller or names lanes that have returned, lanes of one
// mask at different built-ins or with different masks, a shuffle that reads a lane outside its
// mask. The emulation says nothing about speed, memory coalescing, the interleaving of atomics
// between running threads (a thread runs alone until it waits, so every read-modify-write is
// atomic here) or nvcc's code generation; the GPU test stays the proof for those.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

struct dim3 {
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  unsigned x, y, z;
};

namespace emu {

const dim3& thread_idx();
const dim3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
void* dynamic_shared();
void sync_threads();
/// The warp-wide exchanges behind the warp built-ins, among the lanes of `mask` (which must hold
/// the caller and no lane past the warp's end). shuffle returns lane src_lane's value (src_lane
/// outside the warp: the caller's own); ballot, the lanes whose predicate holds; match_any, the
/// lanes whose value equals the caller's.
uint64_t shuffle(unsigned mask, uint64_t value, int src_lane);
unsigned ballot(unsigned mask, bool predicate);
unsigned match_any(unsigned mask, uint64_t value);
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
/// A rendezvous of the lanes of `mask`, as any warp built-in (which also orders their memory).
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) { (void)emu::ballot(mask, true); }

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

template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const int lane = static_cast<int>(emu::lane_id());
  const int src = lane ^ lane_mask;
  return emu::shuffle_as(mask, v, src >= (lane & ~(width - 1)) + width ? lane : src);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return emu::ballot(mask, predicate != 0);
}
template <class T>
unsigned __match_any_sync(unsigned mask, T value) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= sizeof(uint64_t));
  return emu::match_any(mask, static_cast<uint64_t>(value));
}

inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
/// The unsigned dot product of the 4 bytes of a and b, plus c.
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int k = 0; k < 32; k += 8) c += ((a >> k) & 0xFFu) * ((b >> k) & 0xFFu);
  return c;
}
/// The low 32 bits of hi:lo shifted right by shift & 31 (CUDA's wrapping funnel shift).
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return static_cast<unsigned>(((uint64_t{hi} << 32) | lo) >> (shift & 31u));
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float __double2float_rn(double d) { return static_cast<float>(d); }  // the host rounds so
template <class T>
T __ldg(const T* p) {
  return *p;
}

namespace emu {
// The types CUDA's atomics take: a call nvcc would reject does not compile here either.
template <class T>
inline constexpr bool kAtomicInteger =
    std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long>;

// A thread runs alone until it waits, so a plain read-modify-write is atomic.
template <class T, class Update>
T atomic_update(T* p, Update update) {
  const T old = *p;
  *p = update(old);
  return old;
}
}  // namespace emu

template <class T>
T atomicAdd(T* p, T v) {
  static_assert(emu::kAtomicInteger<T> || std::is_floating_point_v<T>);
  return emu::atomic_update(p, [v](T old) { return old + v; });
}
template <class T>
T atomicMin(T* p, T v) {
  static_assert(emu::kAtomicInteger<T>);
  return emu::atomic_update(p, [v](T old) { return std::min(old, v); });
}
template <class T>
T atomicMax(T* p, T v) {
  static_assert(emu::kAtomicInteger<T>);
  return emu::atomic_update(p, [v](T old) { return std::max(old, v); });
}
template <class T>
T atomicExch(T* p, T v) {
  static_assert(emu::kAtomicInteger<T>);
  return emu::atomic_update(p, [v](T) { return v; });
}
template <class T>
T atomicCAS(T* p, T expected, T desired) {
  static_assert(emu::kAtomicInteger<T>);
  return emu::atomic_update(p, [=](T old) { return old == expected ? desired : old; });
}

using std::max;
using std::min;
