// The CPU emulation of CUDA (cuda_emulation.hpp) on small kernels: the built-ins' values, the
// shuffles against their definitions, and every misuse it promises to report. The L3 kernel's
// emulated test relies on all of these.
#include "cuda_emulation.hpp"

#include <doctest/doctest.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// Kernels are written as the device code they stand for: no emu:: call, only built-ins.

__global__ void record_indices(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[block * blockDim.x * blockDim.y * blockDim.z + thread] = block * 1000 + thread;
}

__global__ void shuffles(const uint32_t* in, uint32_t* up, uint32_t* down, uint32_t* bcast,
                         unsigned long long* sum) {
  const unsigned t = threadIdx.x;
  const uint32_t v = in[t];
  up[t] = __shfl_up_sync(0xFFFFFFFFu, v, 3);
  down[t] = __shfl_down_sync(0xFFFFFFFFu, v, 5);
  bcast[t] = __shfl_sync(0xFFFFFFFFu, v, 7);
  unsigned long long s = v;
  for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xFFFFFFFFu, s, d);
  if ((t & 31u) == 0) sum[t / 32] = s;
}

// A block-wide inclusive scan through shared memory (Hillis-Steele), barriers and all.
__global__ void block_scan(const uint32_t* in, uint32_t* out) {
  __shared__ uint32_t buffer[2][128];
  const unsigned t = threadIdx.x;
  unsigned cur = 0;
  buffer[cur][t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned d = 1; d < blockDim.x; d <<= 1) {
    const uint32_t x = buffer[cur][t] + (t >= d ? buffer[cur][t - d] : 0u);
    buffer[cur ^ 1][t] = x;
    cur ^= 1;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = buffer[cur][t];
}

// Reads a neighbour's shared value without the barrier between the write and the read.
__global__ void missing_barrier(uint32_t* out, bool left) {
  __shared__ uint32_t value[64];
  const unsigned t = threadIdx.x;
  value[t] = blockIdx.x * 100 + t;
  const unsigned n = left ? (t + 63) % 64 : (t + 1) % 64;
  out[blockIdx.x * 64 + t] = value[n];
}

// Each warp publishes a value, then reads the other warp's; without the second barrier a warp
// that runs ahead overwrites its value for the next round before the other warp has read it.
__global__ void publish_and_read(uint32_t* out, bool second_barrier) {
  __shared__ uint32_t published[2];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (unsigned round = 0; round < 2; ++round) {
    const uint32_t v = __shfl_sync(0xFFFFFFFFu, round * 10 + warp + 1, 0);
    if (lane == 0) published[warp] = v;
    __syncthreads();
    out[round * blockDim.x + threadIdx.x] = published[warp ^ 1u];
    if (second_barrier) __syncthreads();
  }
}

__global__ void dynamic_shared_bytes(uint8_t* out) {
  DLPREP_DYNAMIC_SHARED(uint8_t, bytes);
  out[threadIdx.x] = bytes[threadIdx.x];  // never written: garbage
  __syncthreads();
  bytes[threadIdx.x] = static_cast<uint8_t>(threadIdx.x);
}

__global__ void divergent_barrier() {
  if (threadIdx.x == 5) return;
  __syncthreads();
}

__global__ void uniform_return(const int* leave, int* out) {
  __syncthreads();
  if (*leave) return;  // the whole block
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void partial_mask(uint32_t* out) {
  out[threadIdx.x] = __shfl_sync(0x0000FFFFu, threadIdx.x, 0);
}

__global__ void shuffle_after_return(uint32_t* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_down_sync(0xFFFFFFFFu, threadIdx.x, 16);
}

// Half a warp at a barrier, the other half in a shuffle that needs the first half.
__global__ void different_barriers(uint32_t* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_sync(0xFFFFFFFFu, threadIdx.x, 0);
  }
}

// Votes of a warp that has lanes leave first, as a grid-stride loop's last partial group does:
// the ballot names the lanes that stay, and those match on values among themselves only.
__global__ void votes(const uint32_t* values, unsigned active_lanes, unsigned* ballots,
                      unsigned* matches) {
  const unsigned lane = threadIdx.x & 31u;
  const bool active = lane < active_lanes;
  const unsigned mask = __ballot_sync(0xFFFFFFFFu, active);
  ballots[threadIdx.x] = mask;
  if (!active) return;
  matches[threadIdx.x] = __match_any_sync(mask, values[threadIdx.x]);
}

// Two halves of a warp, each shuffling within itself while the other half goes its own way.
__global__ void half_warp_shuffles(uint32_t* out) {
  if (threadIdx.x < 16) {
    out[threadIdx.x] = __shfl_sync(0x0000FFFFu, threadIdx.x * 10, 3);
  } else {
    out[threadIdx.x] = __shfl_xor_sync(0xFFFF0000u, threadIdx.x * 10, 1);
  }
}

__global__ void mismatched_builtins(uint32_t* out) {
  if (threadIdx.x < 16)
    out[threadIdx.x] = __ballot_sync(0xFFFFFFFFu, 1);
  else
    out[threadIdx.x] = __match_any_sync(0xFFFFFFFFu, threadIdx.x);
}

__global__ void vote_after_return(uint32_t* out) {
  if (threadIdx.x == 31) return;
  out[threadIdx.x] = __ballot_sync(0xFFFFFFFFu, 1);
}

__global__ void atomics(unsigned* sum, unsigned* minimum, unsigned long long* slot) {
  atomicAdd(sum, threadIdx.x);
  atomicMin(minimum, 1000u - threadIdx.x);
  atomicCAS(slot, 0ull, static_cast<unsigned long long>(threadIdx.x) + 1);  // the first wins
}

std::string launch_error(dim3 grid, dim3 block, const std::function<void()>& kernel) {
  try {
    emu::launch(grid, block, 0, kernel);
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every thread of every block runs once, with its indices") {
  const dim3 grid{3, 2, 2}, block{8, 4, 2};
  std::vector<unsigned> out(12 * 64, 0xFFFFFFFFu);
  emu::launch(grid, block, 0, [&] { record_indices(out.data()); });
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 64; ++t) CHECK(out[b * 64 + t] == b * 1000 + t);
}

TEST_CASE("shuffles return what CUDA defines, in a block of several warps") {
  const unsigned n = 96;
  std::vector<uint32_t> in(n), up(n), down(n), bcast(n);
  std::vector<unsigned long long> sum(3);
  for (unsigned i = 0; i < n; ++i) in[i] = i * 7919u + 13u;
  emu::launch(dim3{1}, dim3{n}, 0,
              [&] { shuffles(in.data(), up.data(), down.data(), bcast.data(), sum.data()); });
  for (unsigned i = 0; i < n; ++i) {
    const unsigned lane = i % 32, base = i - lane;
    CHECK(up[i] == (lane >= 3 ? in[i - 3] : in[i]));
    CHECK(down[i] == (lane + 5 < 32 ? in[i + 5] : in[i]));
    CHECK(bcast[i] == in[base + 7]);
  }
  for (unsigned w = 0; w < 3; ++w)
    CHECK(sum[w] == std::accumulate(in.begin() + 32 * w, in.begin() + 32 * (w + 1), 0ull));
}

TEST_CASE("__syncthreads orders shared memory across the threads of a block") {
  const unsigned blocks = 3, threads = 128;
  std::vector<uint32_t> in(blocks * threads), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i % 251);
  emu::launch(dim3{blocks}, dim3{threads}, 0, [&] { block_scan(in.data(), out.data()); });
  for (unsigned b = 0; b < blocks; ++b) {
    uint32_t running = 0;
    for (unsigned t = 0; t < threads; ++t) {
      running += in[b * threads + t];
      CHECK(out[b * threads + t] == running);
    }
  }
}

TEST_CASE("a missing barrier gives a wrong result whichever neighbour is read") {
  for (const bool left : {false, true}) {
    std::vector<uint32_t> out(2 * 64);
    emu::launch(dim3{2}, dim3{64}, 0, [&] { missing_barrier(out.data(), left); });
    unsigned wrong = 0;
    for (unsigned b = 0; b < 2; ++b)
      for (unsigned t = 0; t < 64; ++t)
        wrong += out[b * 64 + t] != b * 100 + (left ? (t + 63) % 64 : (t + 1) % 64);
    CHECK(wrong > 0);
  }
}

TEST_CASE("a warp that runs ahead past a missing barrier overwrites what another reads") {
  for (const bool second_barrier : {true, false}) {
    unsigned wrong = 0;
    for (unsigned block = 0; block < 4; ++block) {  // one block in each order
      std::vector<uint32_t> out(2 * 64);
      emu::launch(dim3{block + 1}, dim3{64}, 0, [&] {
        if (blockIdx.x == block) publish_and_read(out.data(), second_barrier);
      });
      for (unsigned round = 0; round < 2; ++round)
        for (unsigned t = 0; t < 64; ++t)
          wrong += out[round * 64 + t] != round * 10 + ((t >> 5) ^ 1u) + 1;
    }
    if (second_barrier)
      CHECK(wrong == 0);
    else
      CHECK(wrong > 0);
  }
}

TEST_CASE("dynamic shared memory is the launch's size and starts as garbage in every block") {
  std::vector<uint8_t> out(64, 0);
  emu::launch(dim3{2}, dim3{64}, 64, [&] { dynamic_shared_bytes(out.data()); });
  for (uint8_t v : out) CHECK(v == 0xA5);  // block 1 too: block 0's writes are gone
}

TEST_CASE("a block that returns as a whole between barriers is fine") {
  std::vector<int> out(64, 0);
  const int leave = 1, stay = 0;
  CHECK(launch_error(dim3{2}, dim3{64}, [&] { uniform_return(&leave, out.data()); }).empty());
  CHECK(out == std::vector<int>(64, 0));
  CHECK(launch_error(dim3{2}, dim3{64}, [&] { uniform_return(&stay, out.data()); }).empty());
  CHECK(out == std::vector<int>(64, 1));
}

TEST_CASE("what the GPU leaves undefined is reported, with the block") {
  std::vector<uint32_t> out(64);
  const std::string divergent = launch_error(dim3{3}, dim3{64}, [] { divergent_barrier(); });
  CHECK(divergent.find("block 0 of 3") != std::string::npos);
  CHECK(divergent.find("__syncthreads") != std::string::npos);
  CHECK(launch_error(dim3{1}, dim3{32}, [&] {
          partial_mask(out.data());
        }).find("mask 0x0000ffff") != std::string::npos);
  CHECK(launch_error(dim3{1}, dim3{32}, [&] {
          shuffle_after_return(out.data());
        }).find("returned") != std::string::npos);
  CHECK(launch_error(dim3{1}, dim3{32}, [&] {
          different_barriers(out.data());
        }).find("different barriers") != std::string::npos);
  CHECK(launch_error(dim3{1}, dim3{32}, [&] {
          mismatched_builtins(out.data());
        }).find("different warp built-ins") != std::string::npos);
  CHECK(launch_error(dim3{1}, dim3{32}, [&] {
          vote_after_return(out.data());
        }).find("had returned") != std::string::npos);
}

TEST_CASE("ballot and match among the lanes of a partial mask") {
  std::vector<uint32_t> values(64);
  for (unsigned t = 0; t < 64; ++t) values[t] = t % 3;
  for (unsigned active : {32u, 20u, 1u}) {
    std::vector<unsigned> ballots(64, 0), matches(64, 0);
    CHECK(launch_error(dim3{3}, dim3{64}, [&] {
            votes(values.data(), active, ballots.data(), matches.data());
          }).empty());
    const unsigned mask = active == 32 ? 0xFFFFFFFFu : (1u << active) - 1u;
    for (unsigned t = 0; t < 64; ++t) {
      CHECK(ballots[t] == mask);
      const unsigned lane = t % 32;
      if (lane >= active) continue;
      unsigned want = 0;
      for (unsigned k = 0; k < active; ++k)
        if (values[t - lane + k] == values[t]) want |= 1u << k;
      CHECK(matches[t] == want);
    }
  }
}

TEST_CASE("halves of a warp shuffle apart, and atomics see every thread") {
  std::vector<uint32_t> out(32);
  CHECK(launch_error(dim3{4}, dim3{32}, [&] { half_warp_shuffles(out.data()); }).empty());
  for (unsigned t = 0; t < 32; ++t) CHECK(out[t] == (t < 16 ? 30u : (t ^ 1u) * 10u));
  unsigned sum = 0, minimum = ~0u;
  unsigned long long slot = 0;
  CHECK(launch_error(dim3{2}, dim3{100}, [&] { atomics(&sum, &minimum, &slot); }).empty());
  CHECK(sum == 2 * 4950);
  CHECK(minimum == 901);
  CHECK(slot == 1);  // block 0 runs first, thread 0 first in it
}

TEST_CASE("built-ins outside a kernel and impossible launches are errors") {
  CHECK_THROWS_AS(emu::thread_idx(), std::logic_error);
  CHECK_THROWS_AS(emu::launch(dim3{1}, dim3{2048}, 0, [] {}), std::logic_error);
  CHECK_THROWS_AS(emu::launch(dim3{0}, dim3{32}, 0, [] {}), std::logic_error);
}

TEST_CASE("the integer built-ins compute what CUDA documents") {
  // dp4a: the sum of the byte products, plus c.
  CHECK(__dp4a(0x01020304u, 0x01010101u, 5u) == 15u);
  CHECK(__dp4a(0xFFFFFFFFu, 0x03020100u, 0u) == 255u * 6u);
  // The funnel shift wraps its amount at 32, as __funnelshift_r does (__funnelshift_rc clamps).
  CHECK(__funnelshift_r(0x89ABCDEFu, 0x01234567u, 0u) == 0x89ABCDEFu);
  CHECK(__funnelshift_r(0x89ABCDEFu, 0x01234567u, 8u) == 0x6789ABCDu);
  CHECK(__funnelshift_r(0x89ABCDEFu, 0x01234567u, 24u) == 0x23456789u);
  CHECK(__funnelshift_r(0x89ABCDEFu, 0x01234567u, 40u) == 0x6789ABCDu);
}
