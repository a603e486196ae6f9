// The decode kernel of the CUDA L3 backend (issue 4), bit-identical to
// lib/l3/batch_decode_cpu.cpp. Spec: man/dlprep-l3.5, "PARALLEL AND GPU DECODING"; the tensor
// layouts: man/dlprep-l3.1, "BATCH TENSORS".
//
// The host validated every header and patch table (spec steps 1-7, l3::plan_batch), chose the
// windows and built the work list (decode_kernel.hpp). decode_patches_kernel runs one thread block
// per listed patch (all its channels) and one thread per pixel column of the patch (blockDim =
// widest patch of the batch rounded up to a warp). Per block:
//   1. for each channel in order: the patch's Adler-32 by a block reduction (step 8), the code
//      padding, and the payload offset of every group from a block-wide prefix sum over the width
//      codes, whose total must equal the patch size (step 9). A failing channel sets its task's
//      status and the block leaves before writing any pixel (the later channels of the patch
//      come later in plan order, so the first failure of the batch is still found);
//   2. the rows in sequence, all channels of a row together: row 0 as a block prefix sum of the
//      left-deltas, later rows from the row above (shared memory, two buffers in turn, so one
//      barrier per row). Thread x then holds every channel of pixel x: it undoes subtract-green
//      and, when the pixel lies in the image's window, writes each channel's element through
//      l3/batch_output.hpp, the same code the CPU backend runs (normalisation with
//      __fsub_rn/__fmul_rn, half with __float2half_rn).
// The statuses come back only when the failure flag is set; no pixel of a batch with a damaged
// patch reaches the caller's host memory.
//
// Reviewed changes against the first version (before any GPU run): the channels of a patch are now
// decoded in one block (the float layouts need subtract-green undone before normalising, which
// the separate add-green pass could not do; it also removes that pass and its second trip over
// the tensor); group offsets are 16-bit and sized per launch in dynamic shared memory (16 KB of
// static shared memory per block capped occupancy at 13 blocks per SM for 64-pixel patches that
// need 512 bytes); the row buffer is double-buffered (one barrier per row instead of two); the
// failure flag rather than every status is read back; the plan's work list goes up in one copy
// from pinned memory.
//
// Tuning ideas, to be measured on an H100 before adopting any (tests/bench/l3_cuda_bench.md):
//  - several patches per block for 8..32-pixel patches, where most of a warp idles;
//  - warp-level bit extraction (built, to be measured: DLPREP_L3_CUDA_SHUFFLE_PLANES in
//    group_residual, gpu_session.sh l3-tune): the planes loaded once per half warp and shuffled;
//  - stage the patch bytes in shared memory (cp.async) during the checksum pass, which reads
//    them all once already;
//  - pack a pixel's channels into one 16- or 32-bit store for nhwc-u8.
//
// Device code only, with no CUDA runtime call: nvcc compiles it in decode_launch.cu, and the
// emulated GPU of the tests compiles the same source for the CPU (tests/cuda/emulation/), where
// cuda_emulation.hpp supplies the built-ins. Include it in one file per program: the kernel has
// internal linkage.
#pragma once

#include <cstdint>

#include "l3/batch_output.hpp"
#include "l3/batch_plan.hpp"
#include "l3/decode_kernel.hpp"
#include "l3/format.hpp"

// The group-offset arrays, sized per launch; the emulation defines its own.
#ifndef DLPREP_DYNAMIC_SHARED
#define DLPREP_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

namespace dlprep::cuda::l3_detail {
namespace {

constexpr unsigned kFullMask = 0xFFFFFFFFu;
/// One thread per pixel of the widest patch row.
constexpr int kMaxThreads = static_cast<int>(l3::kMaxPatch);
constexpr int kMaxWarps = kMaxThreads / 32;

// A tuning build may set DLPREP_L3_CUDA_MIN_BLOCKS, the blocks of kMaxThreads that must fit on
// an SM: ptxas then caps the registers at 64K / (256 x it), trading spills for occupancy
// (tests/bench/l3_cuda_bench.md, gpu_session.sh l3-tune). Unset, ptxas takes 64 registers: half
// occupancy for FHD's 64-thread blocks. (A minimum of 1 is not the same: it lets ptxas take 80.)
#ifdef DLPREP_L3_CUDA_MIN_BLOCKS
#define DLPREP_L3_LAUNCH_BOUNDS __launch_bounds__(kMaxThreads, DLPREP_L3_CUDA_MIN_BLOCKS)
#else
#define DLPREP_L3_LAUNCH_BOUNDS __launch_bounds__(kMaxThreads)
#endif

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(kFullMask, v, d);
  return v;
}

/// Inclusive prefix sum over the block (blockDim.x a multiple of 32, at most kMaxThreads); every
/// thread of the block must call it. `warp_sums` is shared scratch of kMaxWarps entries.
__device__ uint32_t block_inclusive_scan(uint32_t v, uint32_t* warp_sums) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (unsigned d = 1; d < 32; d <<= 1) {
    const uint32_t n = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v += n;
  }
  if (lane == 31) warp_sums[warp] = v;
  __syncthreads();
  uint32_t prefix = 0;
  for (unsigned w = 0; w < warp; ++w) prefix += warp_sums[w];
  __syncthreads();  // warp_sums is free again for the next call
  return v + prefix;
}

__device__ __forceinline__ uint32_t width_code_at(const uint8_t* codes, uint32_t group) {
  return (codes[group >> 1] >> ((group & 1u) * 4u)) & 0xFu;
}

static_assert(l3::kGroupPixels == 16, "a group is half a warp in group_residual");
#ifdef DLPREP_L3_CUDA_SHUFFLE_PLANES
constexpr bool kShufflePlanes = true;
#else
constexpr bool kShufflePlanes = false;
#endif

/// The residual of pixel column x (thread x of the block) in its group of one plane: bit x mod 16
/// of each of the group's bit planes, plus its base; `payload` is the group's payload (base, then
/// the planes). In the shuffle build every lane of the half warp that holds the group calls it,
/// lanes past the patch's right edge too (their x still lies in the group; their value is unused).
__device__ __forceinline__ uint32_t group_residual(uint32_t code, const uint8_t* payload,
                                                   uint32_t x) {
  const uint32_t width = l3::code_width(code), j = x % l3::kGroupPixels;
  const uint8_t* q = payload;
  uint8_t base = l3::implicit_base(width);
  if (l3::code_explicit(code)) base = *q++;
  uint32_t bits = 0;
#ifdef DLPREP_L3_CUDA_SHUFFLE_PLANES
  // A tuning build (gpu_session.sh l3-tune): lane j of the half warp loads byte j of the planes
  // (one coalesced load of at most 16 bytes), and each lane takes the bytes of its bit from the
  // others by shuffles: 1 load per lane instead of `width`. The half warp agrees on `width`.
  const unsigned half = 0xFFFFu << (x & 16u);
  const uint32_t mine = j < 2 * width ? q[j] : 0u;
  for (uint32_t k = 0; k < width; ++k) {
    const uint32_t plane = __shfl_sync(half, mine, static_cast<int>(2 * k + j / 8), 16);
    bits |= ((plane >> (j % 8)) & 1u) << k;
  }
#else
  // Bit j of a 16-bit little-endian plane is bit j % 8 of its byte j / 8: one byte load per
  // plane, not two.
  const uint8_t* const plane_byte = q + j / 8;
  const uint32_t shift = j % 8;
  for (uint32_t k = 0; k < width; ++k) bits |= ((uint32_t{plane_byte[2 * k]} >> shift) & 1u) << k;
#endif
  return bits + base;
}

__global__ void DLPREP_L3_LAUNCH_BOUNDS decode_patches_kernel(const DecodeArgs a) {
  // Payload offset of each group of each channel (exclusive scan), max_groups apart. 16 bits
  // suffice: a group's payload is at most 16 bytes and a patch has at most 4096 groups, so an
  // offset (the bytes of the groups before it) is at most 4095 x 16 = 65520.
  DLPREP_DYNAMIC_SHARED(uint16_t, group_offset);
  __shared__ uint8_t above[2][4][kMaxThreads];  // the previous row of each plane, two in turn
  __shared__ unsigned long long part_a[kMaxWarps], part_b[kMaxWarps];
  __shared__ uint32_t warp_sums[kMaxWarps];
  __shared__ uint32_t payload_total;
  __shared__ uint8_t verdict;

  const uint64_t first = a.patch_first[blockIdx.x];
  const l3::PatchTask t0 = a.tasks[first];
  const l3::BatchImage image = a.images[t0.image];
  const uint32_t w = t0.width, h = t0.height, channels = t0.channels;
  const unsigned tid = threadIdx.x, threads = blockDim.x;
  const uint32_t gpr = l3::groups_per_row(w), groups = gpr * h;
  const uint32_t head = l3::patch_head_bytes(w, h);
  const uint32_t predictor_bits = (h - 1) * l3::kPredictorBits;

  // 1. The checks and group offsets, channel by channel (`channels` is the same for the whole
  // block, so the barriers inside are reached by every thread).
  const uint8_t* patch[4] = {};
#pragma unroll
  for (uint32_t c = 0; c < 4; ++c) {
    if (c >= channels) break;
    const l3::PatchTask t = a.tasks[first + c];
    const uint8_t* const p = a.in + t.src;
    patch[c] = p;
    const uint32_t n = t.bytes;
    // Step 8: A = 1 + sum b[i], B = n + sum (n - i) b[i] (mod 65521), as man/dlprep-l3.5
    // "CHECKSUM" writes it. 64-bit partial sums cannot overflow: n < 2^17.
    unsigned long long sa = 0, sb = 0;
    for (uint32_t i = tid; i < n; i += threads) {
      const uint32_t v = p[i];
      sa += v;
      sb += static_cast<unsigned long long>(n - i) * v;
    }
    sa = warp_sum(sa);
    sb = warp_sum(sb);
    if ((tid & 31u) == 0) {
      part_a[tid >> 5] = sa;
      part_b[tid >> 5] = sb;
    }
    __syncthreads();
    const uint8_t* const width_codes = p + 1 + l3::predictor_bytes(h);
    if (tid == 0) {
      unsigned long long ta = 0, tb = 0;
      for (unsigned k = 0; k < threads / 32; ++k) {
        ta += part_a[k];
        tb += part_b[k];
      }
      const uint32_t s1 = static_cast<uint32_t>((1 + ta) % l3::kAdlerMod);
      const uint32_t s2 = static_cast<uint32_t>((n + tb) % l3::kAdlerMod);
      uint8_t v = ((s2 << 16) | s1) == t.sum ? l3::kPatchOk : l3::kPatchChecksum;
      // Step 9, padding bits (reads within the head: n >= head was checked on the host).
      if (v == l3::kPatchOk && (groups & 1u) && (width_codes[groups / 2] >> 4) != 0)
        v = l3::kPatchWidthPadding;
      if (v == l3::kPatchOk && predictor_bits % 8 != 0 &&
          (p[1 + predictor_bits / 8] >> (predictor_bits % 8)) != 0)
        v = l3::kPatchPredictorPadding;
      verdict = v;
    }
    __syncthreads();
    if (verdict != l3::kPatchOk) {  // uniform: the whole block leaves
      if (tid == 0) {
        a.status[first + c] = verdict;
        *a.failed = 1;
      }
      return;
    }
    // Step 9, payload size: each thread sums the payload bytes of a contiguous run of groups, a
    // block scan turns the run sums into run starts, and each thread writes its groups' offsets.
    uint16_t* const offsets = group_offset + c * a.max_groups;
    const uint32_t run = (groups + threads - 1) / threads;
    const uint32_t g_begin = min(tid * run, groups), g_end = min(g_begin + run, groups);
    uint32_t run_bytes = 0;
    for (uint32_t g = g_begin; g < g_end; ++g)
      run_bytes += l3::code_bytes(width_code_at(width_codes, g));
    const uint32_t run_end = block_inclusive_scan(run_bytes, warp_sums);
    uint32_t offset = run_end - run_bytes;
    for (uint32_t g = g_begin; g < g_end; ++g) {
      offsets[g] = static_cast<uint16_t>(offset);
      offset += l3::code_bytes(width_code_at(width_codes, g));
    }
    if (tid == threads - 1) payload_total = run_end;
    __syncthreads();
    if (payload_total != n - head) {  // uniform; after this every payload read is in the patch
      if (tid == 0) {
        a.status[first + c] = l3::kPatchSizeMismatch;
        *a.failed = 1;
      }
      return;
    }
  }

  // 2. The rows. Thread x owns pixel column x: bit x mod 16 of each plane of its group, plus the
  // base, then the predictor over the row above.
  const uint32_t x = tid;
  const bool active = x < w, in_group = x / l3::kGroupPixels < gpr;
  const uint32_t image_x = t0.x0 + x;
  uint8_t* const window = a.out + image.dst;
  for (uint32_t y = 0; y < h; ++y) {
    const unsigned cur = y & 1u, prev = cur ^ 1u;
    uint8_t v[4] = {0, 0, 0, 0};
#pragma unroll
    for (uint32_t c = 0; c < 4; ++c) {
      if (c >= channels) break;  // uniform
      const uint8_t* const p = patch[c];
      const uint8_t* const predictor_codes = p + 1;
      const uint8_t* const width_codes = predictor_codes + l3::predictor_bytes(h);
      uint8_t residual = 0;
      // The shuffles need every lane of a half warp that holds a group, past the edge or not.
      if (kShufflePlanes ? in_group : active) {
        const uint32_t g = y * gpr + x / l3::kGroupPixels;
        const uint32_t code = width_code_at(width_codes, g);
        const uint32_t r = group_residual(code, p + head + group_offset[c * a.max_groups + g], x);
        if (active) residual = static_cast<uint8_t>(r);
      }
      if (y == 0) {
        // p(x, 0) = seed + r(0) + ... + r(x) (mod 256); inactive threads add 0 after the row.
        v[c] = static_cast<uint8_t>(p[0] + block_inclusive_scan(residual, warp_sums));
      } else if (active) {
        // Border rule: TL at x = 0 and TR at x = w - 1 are T itself.
        const uint32_t predictor = l3::predictor_code(predictor_codes, y);
        const uint8_t t = above[prev][c][x];
        const uint8_t tl = x > 0 ? above[prev][c][x - 1] : t;
        const uint8_t tr = x + 1 < w ? above[prev][c][x + 1] : t;
        v[c] = static_cast<uint8_t>(l3::predict(predictor, tl, t, tr) + residual);
      }
    }
    if (active) {
#pragma unroll
      for (uint32_t c = 0; c < 4; ++c)
        if (c < channels) above[cur][c][x] = v[c];  // the planes as stored, for the next row
      uint32_t ox = 0, oy = 0;
      if (l3::in_window(image, image_x, t0.y0 + y, ox, oy)) {
        l3::add_green(v, image.subtract_green);
#pragma unroll
        for (uint32_t c = 0; c < 4; ++c)
          if (c < channels)
            l3::store_element(window, a.layout,
                              l3::output_element(a.layout, image.out_width, image.out_height,
                                                 channels, ox, oy, c),
                              v[c], a.mean[c], a.scale[c]);
      }
    }
    // Row y is complete in above[cur] before row y + 1 reads it, and every read of above[prev]
    // (row y - 1) is done before row y + 1 overwrites that buffer.
    __syncthreads();
  }
}

}  // namespace
}  // namespace dlprep::cuda::l3_detail
