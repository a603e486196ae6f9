// The decode kernel of the CUDA L3 backend (issue 4), bit-identical to
// lib/l3/batch_decode_cpu.cpp. Spec: man/dlprep-l3.5, "PARALLEL AND GPU DECODING"; the tensor
// layouts: man/dlprep-l3.1, "BATCH TENSORS".
//
// The host validated every header and patch table (spec steps 1-7, l3::plan_batch), chose the
// windows and built the work list (decode_kernel.hpp). decode_patches_kernel runs one thread block
// per listed patch (all its channels), or one warp where every patch fits one (kLanes 32, or
// a half or a quarter of a warp with kLanes 16 or 8: then the block-wide steps below are
// warp-wide, and the row above is in registers), and one thread per
// kPixelsPerThread pixel columns of the patch (blockDim = block_threads() of the widest patch of
// the batch). Per block:
//   1. for each channel in order: the patch's Adler-32 by a block reduction (step 8), the code
//      padding, and the payload offset of every group from a block-wide prefix sum over the width
//      codes, whose total must equal the patch size (step 9). A failing channel sets its task's
//      status and the block leaves before writing any pixel (the later channels of the patch
//      come later in plan order, so the first failure of the batch is still found);
//   2. the rows in sequence, all channels of a row together: row 0 as a block prefix sum of the
//      left-deltas, later rows from the row above (shared memory, two buffers in turn, so one
//      barrier per row). A thread then holds every channel of its pixels: it undoes subtract-green
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
// Measured on an H100 (2026-11-26, tests/bench/l3_cuda_bench.md): a thread per pixel gave 138 GB/s
// of FHD pixels at batch 256, issue-bound (IPC 3.07 of 4, ALU the busiest pipe, memory 25% busy).
// Two pixels per thread (kPixelsPerThread, decode_kernel.hpp) share the work per group and row
// and take their plane bits together: 203-210 GB/s in the same run; four pixels lost (127 GB/s),
// and loading the planes once per half warp and shuffling them moved the figure by +2-4% only
// (removed). On an H200 (2026-11-29) four more paths together took FHD from 200-207 to 249-259
// GB/s and are the default (decode_kernel.hpp; each off in a tuning build): the checksum a word
// at a time (DLPREP_L3_CUDA_WORD_CHECKSUM: pass 1's byte loop drew 10% of the stall samples), a
// kernel compiled per output layout (DLPREP_L3_CUDA_LAYOUT_KERNELS: no layout branch per element,
// the window test and element index split into a part per thread and a part per row), a warp per
// patch where every patch fits one (DLPREP_L3_CUDA_WARP_PATCHES: several patches per block, no
// barrier, the row above in registers), and the rows' predictor codes unpacked into shared memory
// in pass 1 (DLPREP_L3_CUDA_ROW_CODES). Built, not yet timed: half a warp per patch of up to 32
// pixels, a quarter per patch of up to 16 (DLPREP_L3_CUDA_SUBWARP_PATCHES), where a warp per
// patch leaves most of each warp idle. Still open: packing a pixel's channels into one store for
// nhwc-u8.

// Device code only, with no CUDA runtime call: nvcc compiles it in decode_launch.cu, and the
// emulated GPU of the tests compiles the same source for the CPU (tests/cuda/emulation/), where
// cuda_emulation.hpp supplies the built-ins. Include it in one file per program: the kernel has
// internal linkage.
#pragma once

#include <cstdint>
#include <cstring>

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
/// A thread per kPixelsPerThread pixels of the widest patch row (decode_kernel.hpp).
constexpr uint32_t kPixels = kPixelsPerThread;
constexpr int kMaxThreads = static_cast<int>(l3::kMaxPatch / kPixels);
constexpr int kMaxWarps = kMaxThreads / 32;
/// Two pixels per thread, and the planes a word at a time (decode_kernel.hpp).
constexpr bool kWordPlanes = DLPREP_L3_CUDA_WORD_PLANES && kPixels == 2;
/// Warp-patch blocks per SM the compiler must fit: 36 warps, 56 registers a thread. Left to
/// itself it took up to 64 registers (32 warps) and spilled in some builds; the block kernel's
/// occupancy is held by the SM's block limit for FHD's one-warp blocks, so it keeps its bound.
/// kWordPlanes needs 64 (32 warps): at 56 ptxas spilled 108-160 bytes a thread.
constexpr int kWarpMinBlocks = (kWordPlanes ? 32 : 36) / static_cast<int>(kWarpsPerBlock);

/// The sum over the kLanes lanes of this thread's part of the warp (a whole warp, or a half or a
/// quarter: `mask` its lanes), in the part's first lane; every lane of the part must call it.
template <unsigned kLanes = 32>
__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v,
                                                       unsigned mask = kFullMask) {
  for (unsigned d = kLanes / 2; d > 0; d >>= 1) v += __shfl_down_sync(mask, v, d, kLanes);
  return v;
}

/// Inclusive prefix sum over the kLanes lanes of this thread's part of the warp (`mask` its
/// lanes); every lane of the part must call it.
template <unsigned kLanes = 32>
__device__ __forceinline__ uint32_t warp_inclusive_scan(uint32_t v, unsigned mask = kFullMask) {
  const unsigned lane = threadIdx.x & (kLanes - 1);
  for (unsigned d = 1; d < kLanes; d <<= 1) {
    const uint32_t n = __shfl_up_sync(mask, v, d, kLanes);
    if (lane >= d) v += n;
  }
  return v;
}

/// Inclusive prefix sum over the block (blockDim.x a multiple of 32, at most kMaxThreads); every
/// thread of the block must call it. `warp_sums` is shared scratch of kMaxWarps entries.
__device__ uint32_t block_inclusive_scan(uint32_t v, uint32_t* warp_sums) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  v = warp_inclusive_scan(v);
  if (lane == 31) warp_sums[warp] = v;
  __syncthreads();
  uint32_t prefix = 0;
  for (unsigned w = 0; w < warp; ++w) prefix += warp_sums[w];
  __syncthreads();  // warp_sums is free again for the next call
  return v + prefix;
}

#if DLPREP_L3_CUDA_WORD_CHECKSUM || DLPREP_L3_CUDA_WORD_PLANES
/// The 4 bytes at q, 4-byte aligned.
__device__ __forceinline__ uint32_t aligned_word(const uint8_t* q) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t*>(q);
#else
  uint32_t x;
  std::memcpy(&x, q, 4);
  return x;
#endif
}
#endif

/// This thread's share of the checksum sums of the patch's n bytes at p: sa += b[i] and
/// sb += (n - i) b[i] over its i.
__device__ __forceinline__ void patch_sums(const uint8_t* p, uint32_t n, unsigned tid,
                                           unsigned threads, unsigned long long& sa,
                                           unsigned long long& sb) {
#if DLPREP_L3_CUDA_WORD_CHECKSUM
  // The bytes between the first and the last 4-byte
  // boundary a word at a time, their sum and their weights by two dot products (dp4a):
  // sum (n - i - j) b[i + j] over j < 4 is (n - i) (b0 + b1 + b2 + b3) - (b1 + 2 b2 + 3 b3).
  // The few bytes outside go one at a time.
  const uint32_t lead = min(n, static_cast<uint32_t>(-reinterpret_cast<uintptr_t>(p)) & 3u);
  const uint32_t words = (n - lead) / 4, tail = lead + 4 * words;
  for (uint32_t k = tid; k < words; k += threads) {
    const uint32_t i = lead + 4 * k;
    const uint32_t x = aligned_word(p + i);
    const uint32_t sum = __dp4a(x, 0x01010101u, 0u), weighted = __dp4a(x, 0x03020100u, 0u);
    sa += sum;
    sb += static_cast<unsigned long long>(n - i) * sum - weighted;
  }
  const uint32_t rest = lead + (n - tail);  // at most 6 bytes
  if (tid < rest) {
    const uint32_t i = tid < lead ? tid : tail + (tid - lead);
    const uint32_t v = p[i];
    sa += v;
    sb += static_cast<unsigned long long>(n - i) * v;
  }
#else
  for (uint32_t i = tid; i < n; i += threads) {
    const uint32_t v = p[i];
    sa += v;
    sb += static_cast<unsigned long long>(n - i) * v;
  }
#endif
}

__device__ __forceinline__ uint32_t width_code_at(const uint8_t* codes, uint32_t group) {
  return (codes[group >> 1] >> ((group & 1u) * 4u)) & 0xFu;
}

static_assert(l3::kGroupPixels == 16, "group_residuals reads a group's planes as 16-bit words");

// Several pixels per thread: pixel i of the thread keeps its residual bits in byte i of a word.
// A plane byte's bits for pixels i = 0..kPixels-1 (bits 0..kPixels-1 after the shift) go to bit
// 8i by one multiply: bit i moves up by 7i (kSpread), the mask keeps those bits alone.
constexpr uint32_t kPixelBits = (1u << kPixels) - 1;
constexpr uint32_t kSpread = kPixels == 1 ? 1u : kPixels == 2 ? 0x81u : 0x204081u;
constexpr uint32_t kSpreadMask = kPixels == 1 ? 1u : kPixels == 2 ? 0x0101u : 0x01010101u;

/// The thread's pixels' bits of the planes above k (pixel i's in byte i) with plane k's added:
/// taken top plane first, each step doubles what is there (a byte never carries into the next:
/// widths are at most 8) and adds the next plane's bits of every pixel. plane_byte: the byte of
/// plane 0 that holds the pixels' bits, from bit `shift` on; plane k's is 2k bytes on.
__device__ __forceinline__ uint32_t add_plane(uint32_t bits, const uint8_t* plane_byte, uint32_t k,
                                              uint32_t shift) {
  return 2 * bits +
         ((((uint32_t{plane_byte[2 * k]} >> shift) & kPixelBits) * kSpread) & kSpreadMask);
}

#if DLPREP_L3_CUDA_UNROLLED_PLANES
/// The bits of planes [0, kWidth), unrolled.
template <uint32_t kWidth>
__device__ __forceinline__ uint32_t plane_bits(const uint8_t* plane_byte, uint32_t shift) {
  uint32_t bits = 0;
#pragma unroll
  for (uint32_t k = kWidth; k-- > 0;) bits = add_plane(bits, plane_byte, k, shift);
  return bits;
}
static_assert(l3::kMaxWidth == 8, "group_residuals has a case per width");
#endif

#if DLPREP_L3_CUDA_WORD_PLANES
/// kWordPlanes: the bits of a group's `width` planes at q for pixels j and j + 1 (j even), pixel
/// i's in byte i, from the aligned words that hold the planes: a word is two planes (or straddles
/// two words: a funnel shift), and one shift and mask take both pixels' bits of both planes.
/// Pair m leaves plane 2m's bits at bits 2m (pixel 0) and 2m + 1 (pixel 1) of `both`, and plane
/// 2m + 1's at bits 16 + 2m and 17 + 2m; the last two lines put plane k's bit at bit k of each
/// pixel's byte. Reads only the aligned words that hold bytes of [q, q + 2 width).
__device__ __forceinline__ uint32_t word_plane_bits(const uint8_t* q, uint32_t width, uint32_t j) {
  if (width == 0) return 0;
  const uint32_t skew = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(q)) & 3u;
  const uint8_t* const first = q - skew;
  const uint32_t words = (skew + 2 * width + 3) / 4;
  uint32_t both = 0, low = aligned_word(first);
#pragma unroll
  for (uint32_t m = 0; m < l3::kMaxWidth / 2; ++m) {
    if (2 * m >= width) break;
    const uint32_t high = m + 1 < words ? aligned_word(first + 4 * (m + 1)) : 0u;
    both |= ((__funnelshift_r(low, high, 8 * skew) >> j) & 0x00030003u) << (2 * m);
    low = high;
  }
  // An odd width's last pair: its second plane (bits 16 + width - 1, 16 + width) is the bytes
  // after the group's.
  both &= ~(((width & 1u) * 0x3u) << (15 + width));
  const uint32_t pixel0 = (both & 0x55u) | ((both >> 15) & 0xAAu);
  const uint32_t pixel1 = ((both >> 1) & 0x55u) | ((both >> 16) & 0xAAu);
  return pixel0 | pixel1 << 8;
}
#endif

/// The residuals of pixel columns x .. x + kPixels - 1 (one thread's, all in one group) of one
/// plane: bit x mod 16 (and the next ones) of each of the group's bit planes, plus its base;
/// `payload` is the group's payload (base, then the planes). kWordPlanes: `words` says that
/// the aligned words around the planes lie in the batch input (word_plane_bits reads them).
__device__ __forceinline__ void group_residuals(uint32_t code, const uint8_t* payload, uint32_t x,
                                                [[maybe_unused]] bool words,
                                                uint8_t (&residual)[kPixels]) {
  const uint32_t width = l3::code_width(code), j = x % l3::kGroupPixels;
  const uint8_t* q = payload;
  uint8_t base = l3::implicit_base(width);
  if (l3::code_explicit(code)) base = *q++;
#if DLPREP_L3_CUDA_WORD_PLANES
  if (kWordPlanes && words) {
    const uint32_t bits = word_plane_bits(q, width, j);
#pragma unroll
    for (uint32_t i = 0; i < kPixels; ++i)
      residual[i] = static_cast<uint8_t>((bits >> (8 * i)) + base);
    return;
  }
#endif
  // Bit j of a 16-bit little-endian plane is bit j % 8 of its byte j / 8: one byte load per
  // plane, not two.
  const uint8_t* const plane_byte = q + j / 8;
  const uint32_t shift = j % 8;
  uint32_t bits = 0;
#if DLPREP_L3_CUDA_UNROLLED_PLANES
  // A tuning build: a loop unrolled per width, so that the plane loads issue back to back
  // instead of one per iteration of a loop of `width` steps (the loop's line drew 30% of the warp
  // stall samples on the H200, 2026-11-29).
  switch (width) {
    case 1:
      bits = plane_bits<1>(plane_byte, shift);
      break;
    case 2:
      bits = plane_bits<2>(plane_byte, shift);
      break;
    case 3:
      bits = plane_bits<3>(plane_byte, shift);
      break;
    case 4:
      bits = plane_bits<4>(plane_byte, shift);
      break;
    case 5:
      bits = plane_bits<5>(plane_byte, shift);
      break;
    case 6:
      bits = plane_bits<6>(plane_byte, shift);
      break;
    case 7:
      bits = plane_bits<7>(plane_byte, shift);
      break;
    case 8:
      bits = plane_bits<8>(plane_byte, shift);
      break;
    default:
      break;  // width 0: every residual is the base
  }
#else
  for (uint32_t k = width; k-- > 0;) bits = add_plane(bits, plane_byte, k, shift);
#endif
#pragma unroll
  for (uint32_t i = 0; i < kPixels; ++i)
    residual[i] = static_cast<uint8_t>((bits >> (8 * i)) + base);
}

/// predict() for a thread's pixels of one row: one dispatch on the row's predictor for them all.
__device__ __forceinline__ void predict_pixels(uint32_t predictor, const uint8_t (&tl)[kPixels],
                                               const uint8_t (&t)[kPixels],
                                               const uint8_t (&tr)[kPixels],
                                               uint8_t (&out)[kPixels]) {
  if constexpr (kPixels == 1) {
    out[0] = l3::predict(predictor, tl[0], t[0], tr[0]);
  } else {
    using u8 = uint8_t;
    const auto each = [&](auto predict_one) {
#pragma unroll
      for (uint32_t i = 0; i < kPixels; ++i) out[i] = predict_one(tl[i], t[i], tr[i]);
    };
    switch (predictor) {
      case l3::kPredTop:
        each([](u8, u8 t, u8) { return t; });
        break;
      case l3::kPredSmooth:
        each([](u8 tl, u8 t, u8 tr) { return l3::avg_up(l3::avg_up(tl, tr), t); });
        break;
      case l3::kPredMedian:
        each([](u8 tl, u8 t, u8 tr) { return l3::median3(tl, t, tr); });
        break;
      case l3::kPredPaeth:
        each([](u8 tl, u8 t, u8 tr) { return l3::paeth(tl, t, tr); });
        break;
      case l3::kPredLeftHalf:
        each([](u8 tl, u8 t, u8) { return l3::avg_up(tl, t); });
        break;
      case l3::kPredRightHalf:
        each([](u8, u8 t, u8 tr) { return l3::avg_up(t, tr); });
        break;
      case l3::kPredTopLeft:
        each([](u8 tl, u8, u8) { return tl; });
        break;
      default:
        each([](u8, u8, u8 tr) { return tr; });
        break;
    }
  }
}

/// kLayout: an l3::OutputLayout the kernel is compiled for, or kAnyLayout (the launch's
/// a.layout, read per element).
constexpr int kAnyLayout = -1;

/// Step 8's checksum and step 9's padding checks of one channel of a patch, from the totals of
/// patch_sums over its n bytes at p: l3::kPatchOk or the failure.
__device__ __forceinline__ uint8_t patch_verdict(unsigned long long ta, unsigned long long tb,
                                                 const l3::PatchTask& t, const uint8_t* p,
                                                 const uint8_t* width_codes, uint32_t groups,
                                                 uint32_t predictor_bits) {
  const uint32_t n = t.bytes;
  const uint32_t s1 = static_cast<uint32_t>((1 + ta) % l3::kAdlerMod);
  const uint32_t s2 = static_cast<uint32_t>((n + tb) % l3::kAdlerMod);
  if (((s2 << 16) | s1) != t.sum) return l3::kPatchChecksum;
  // Padding bits (reads within the head: n >= head was checked on the host).
  if ((groups & 1u) && (width_codes[groups / 2] >> 4) != 0) return l3::kPatchWidthPadding;
  if (predictor_bits % 8 != 0 && (p[1 + predictor_bits / 8] >> (predictor_bits % 8)) != 0)
    return l3::kPatchPredictorPadding;
  return l3::kPatchOk;
}

/// kLanes 32 (WARP_PATCHES): each warp decodes a patch of its own (patches at most
/// 32 kPixels wide), warp k of block b the patch at patch_first[kWarpsPerBlock b + k]: no
/// block barrier, the row above in registers (shuffled to the neighbours), scans and reductions
/// within the warp. kLanes 16 or 8 (SUBWARP_PATCHES): the same with each half or quarter of a
/// warp on a patch of its own (at most half or a quarter as wide), its shuffles masked to its
/// part, so that the parts may diverge. kLanes 0: the whole block decodes the patch at
/// patch_first[blockIdx.x].
template <int kLayout, unsigned kLanes>
__global__ void __launch_bounds__(kLanes != 0 ? 32 * kWarpsPerBlock : kMaxThreads,
                                  kLanes != 0 ? kWarpMinBlocks : 0)
    decode_patches_kernel(const DecodeArgs a) {
  static_assert(kLanes == 0 || kLanes == 8 || kLanes == 16 || kLanes == 32,
                "a block, a warp, or a half or a quarter of one");
  constexpr bool kWarp = kLanes != 0;
  constexpr unsigned kPartLanes = kWarp ? kLanes : 32u;  // the lanes of a warp-level scan
  constexpr unsigned kPatchesPerBlock = kWarp ? kWarpsPerBlock * 32 / kLanes : 1u;
  // Payload offset of each group of each channel (exclusive scan), max_groups apart; a.offsets
  // per patch. 16 bits suffice: a group's payload is at most 16 bytes and a patch has at most
  // 4096 groups, so an offset (the bytes of the groups before it) is at most 4095 x 16 = 65520.
  DLPREP_DYNAMIC_SHARED(uint16_t, group_offsets);
  __shared__ uint8_t above[2][4][l3::kMaxPatch];  // the previous row of each plane, two in turn
  __shared__ unsigned long long part_a[kMaxWarps], part_b[kMaxWarps];
  __shared__ uint32_t warp_sums[kMaxWarps];
  __shared__ uint32_t payload_total;
  __shared__ uint8_t verdict;

  const unsigned part = kWarp ? threadIdx.x / kLanes : 0u;  // the block's patch of this thread
  // kWarp: this thread's part of the warp, for the shuffles.
  constexpr unsigned kPartMask = kLanes % 32u == 0 ? kFullMask : (1u << (kLanes % 32u)) - 1;
  const unsigned mask =
      kPartMask == kFullMask ? kFullMask : kPartMask << (threadIdx.x & (32u - kLanes));
  const uint64_t slot = kWarp ? uint64_t{blockIdx.x} * kPatchesPerBlock + part : blockIdx.x;
  if (kWarp && slot >= a.patches) return;  // the last block's spare warps (or parts)
  uint16_t* const group_offset = group_offsets + size_t{part} * a.offsets;
  // kRowCodes: row y's predictor codes, channel c's at bit 3c, after every patch's offsets.
  uint16_t* const row_codes =
      group_offsets + size_t{kPatchesPerBlock} * a.offsets + size_t{part} * a.row_codes;
  const uint64_t first = a.patch_first[slot];
  const l3::PatchTask t0 = a.tasks[first];
  const l3::BatchImage image = a.images[t0.image];
  const uint32_t w = t0.width, h = t0.height, channels = t0.channels;
  const unsigned tid = kWarp ? threadIdx.x & (kLanes - 1) : threadIdx.x;
  const unsigned threads = kWarp ? kLanes : blockDim.x;
  const uint32_t gpr = l3::groups_per_row(w), groups = gpr * h;
  const uint32_t head = l3::patch_head_bytes(w, h);
  const uint32_t predictor_bits = (h - 1) * l3::kPredictorBits;

  // 1. The checks and group offsets, channel by channel (`channels` is the same for the whole
  // block or warp, so the barriers inside are reached by every thread).
  const uint8_t* patch[4] = {};
  uint32_t word_planes = 0;  // kWordPlanes: bit c, channel c's planes may be read as words
#pragma unroll
  for (uint32_t c = 0; c < 4; ++c) {
    if (c >= channels) break;
    const l3::PatchTask t = a.tasks[first + c];
    const uint8_t* const p = a.in + t.src;
    patch[c] = p;
    const uint32_t n = t.bytes;
    if constexpr (kWordPlanes) {  // the patch's aligned words lie in the input (not at its ends)
      const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{3};
      const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n + 3) & ~uintptr_t{3};
      if (begin >= reinterpret_cast<uintptr_t>(a.in) &&
          end <= reinterpret_cast<uintptr_t>(a.in_end))
        word_planes |= 1u << c;
    }
    // Step 8: A = 1 + sum b[i], B = n + sum (n - i) b[i] (mod 65521), as man/dlprep-l3.5
    // "CHECKSUM" writes it. 64-bit partial sums cannot overflow: n < 2^17.
    unsigned long long sa = 0, sb = 0;
    patch_sums(p, n, tid, threads, sa, sb);
    sa = warp_sum<kPartLanes>(sa, mask);
    sb = warp_sum<kPartLanes>(sb, mask);
    const uint8_t* const width_codes = p + 1 + l3::predictor_bytes(h);
    uint8_t v;
    if constexpr (kWarp) {  // the part's lane 0 holds the totals
      v = tid == 0 ? patch_verdict(sa, sb, t, p, width_codes, groups, predictor_bits) : 0;
      v = static_cast<uint8_t>(__shfl_sync(mask, uint32_t{v}, 0, kPartLanes));
    } else {
      if ((tid & 31u) == 0) {
        part_a[tid >> 5] = sa;
        part_b[tid >> 5] = sb;
      }
      __syncthreads();
      if (tid == 0) {
        unsigned long long ta = 0, tb = 0;
        for (unsigned k = 0; k < threads / 32; ++k) {
          ta += part_a[k];
          tb += part_b[k];
        }
        verdict = patch_verdict(ta, tb, t, p, width_codes, groups, predictor_bits);
      }
      __syncthreads();
      v = verdict;
    }
    if (v != l3::kPatchOk) {  // uniform: the whole block (warp) leaves
      if (tid == 0) {
        a.status[first + c] = v;
        *a.failed = 1;
      }
      return;
    }
    if constexpr (kRowCodes) {
      // A thread unpacks the same rows for every channel (read by the rows after the barrier
      // below); the predictor bytes lie in the head, which the host checked is in the patch.
      for (uint32_t y = tid + 1; y < h; y += threads) {
        const uint32_t code = l3::predictor_code(p + 1, y) << (l3::kPredictorBits * c);
        row_codes[y] = static_cast<uint16_t>(c == 0 ? code : row_codes[y] | code);
      }
    }
    // Step 9, payload size: each thread sums the payload bytes of a contiguous run of groups, a
    // scan turns the run sums into run starts, and each thread writes its groups' offsets.
    uint16_t* const offsets = group_offset + c * a.max_groups;
    const uint32_t run = (groups + threads - 1) / threads;
    const uint32_t g_begin = min(tid * run, groups), g_end = min(g_begin + run, groups);
    uint32_t run_bytes = 0;
    for (uint32_t g = g_begin; g < g_end; ++g)
      run_bytes += l3::code_bytes(width_code_at(width_codes, g));
    const uint32_t run_end = kWarp ? warp_inclusive_scan<kPartLanes>(run_bytes, mask)
                                   : block_inclusive_scan(run_bytes, warp_sums);
    uint32_t offset = run_end - run_bytes;
    for (uint32_t g = g_begin; g < g_end; ++g) {
      offsets[g] = static_cast<uint16_t>(offset);
      offset += l3::code_bytes(width_code_at(width_codes, g));
    }
    uint32_t total;
    if constexpr (kWarp) {
      total = __shfl_sync(mask, run_end, kPartLanes - 1, kPartLanes);
      __syncwarp(mask);  // the offsets, for the rows
    } else {
      if (tid == threads - 1) payload_total = run_end;
      __syncthreads();
      total = payload_total;
    }
    if (total != n - head) {  // uniform; after this every payload read is in the patch
      if (tid == 0) {
        a.status[first + c] = l3::kPatchSizeMismatch;
        *a.failed = 1;
      }
      return;
    }
  }

  // 2. The rows. Thread t owns pixel columns x0 .. x0 + kPixels - 1 (x0 = kPixels t, all in one
  // group): their bits of each plane of the group, plus the base, then the predictor over the
  // row above.
  const uint32_t x0 = tid * kPixels;
  const bool active = x0 < w;
  bool column[kPixels];  // which of the thread's columns lie in the patch
#pragma unroll
  for (uint32_t i = 0; i < kPixels; ++i) column[i] = x0 + i < w;
  uint8_t* const window = a.out + image.dst;
  const l3::OutputLayout layout =
      kLayout == kAnyLayout ? a.layout : static_cast<l3::OutputLayout>(kLayout);
  // A kernel compiled for its layout (LAYOUT_KERNELS) splits the window test and the element
  // index into its columns' part, taken here once, and each row's part (l3::in_window and
  // l3::output_element per pixel otherwise; the same index, batch_output.hpp).
  constexpr bool kSplitIndex = kLayout != kAnyLayout;
  bool column_in[kPixels] = {};
  uint64_t column_at[kPixels] = {}, plane = 0;
  if constexpr (kSplitIndex) {
#pragma unroll
    for (uint32_t i = 0; i < kPixels; ++i) {
      uint32_t ox = 0;
      column_in[i] = l3::in_window_x(image, t0.x0 + x0 + i, ox);
      column_at[i] = l3::column_element(layout, channels, ox);
    }
    plane = l3::channel_stride(layout, image.out_width, image.out_height);
  }
  // kWarp: the thread's pixels of the row above (channel c in byte c), and the pixels beside
  // them, of the neighbouring lanes.
  uint32_t up[kPixels] = {}, up_left = 0, up_right = 0;
  for (uint32_t y = 0; y < h; ++y) {
    const unsigned cur = y & 1u, prev = cur ^ 1u;
    if constexpr (kWarp) {
      // The part's first lane's left and last lane's right neighbour are its own pixels, never
      // used: x = 0 and x = kLanes kPixels - 1 >= w - 1 take T (border rule).
      up_left = __shfl_up_sync(mask, up[kPixels - 1], 1, kPartLanes);
      up_right = __shfl_down_sync(mask, up[0], 1, kPartLanes);
    }
    uint8_t v[kPixels][4] = {};
    const uint32_t row_code = kRowCodes && y > 0 ? row_codes[y] : 0u;
#pragma unroll
    for (uint32_t c = 0; c < 4; ++c) {
      if (c >= channels) break;  // uniform
      const uint8_t* const p = patch[c];
      const uint8_t* const predictor_codes = p + 1;
      const uint8_t* const width_codes = predictor_codes + l3::predictor_bytes(h);
      uint8_t residual[kPixels] = {};
      if (active) {
        const uint32_t g = y * gpr + x0 / l3::kGroupPixels;
        const uint32_t code = width_code_at(width_codes, g);
        group_residuals(code, p + head + group_offset[c * a.max_groups + g], x0,
                        (word_planes >> c) & 1u, residual);
#pragma unroll
        for (uint32_t i = 0; i < kPixels; ++i)
          if (!column[i]) residual[i] = 0;
      }
      if (y == 0) {
        // p(x, 0) = seed + r(0) + ... + r(x) (mod 256); columns past the edge add 0.
        uint32_t sum = 0;
#pragma unroll
        for (uint32_t i = 0; i < kPixels; ++i) sum += residual[i];
        const uint32_t scan = kWarp ? warp_inclusive_scan<kPartLanes>(sum, mask)
                                    : block_inclusive_scan(sum, warp_sums);
        uint8_t last = static_cast<uint8_t>(p[0] + scan);
#pragma unroll
        for (uint32_t i = kPixels; i-- > 0;) {
          v[i][c] = last;
          last = static_cast<uint8_t>(last - residual[i]);
        }
      } else if (active) {
        // Border rule: TL at x = 0 and TR at x = w - 1 are T itself.
        const uint32_t predictor =
            kRowCodes ? (row_code >> (l3::kPredictorBits * c)) & ((1u << l3::kPredictorBits) - 1)
                      : l3::predictor_code(predictor_codes, y);
        uint8_t tl[kPixels], t[kPixels], tr[kPixels], predicted[kPixels];
#pragma unroll
        for (uint32_t i = 0; i < kPixels; ++i) {
          const uint32_t x = x0 + i;
          if constexpr (kWarp) {
            // A column past the edge is computed from whatever is there, never stored or used.
            const uint32_t s = 8 * c;
            t[i] = static_cast<uint8_t>(up[i] >> s);
            tl[i] = x > 0 ? static_cast<uint8_t>((i > 0 ? up[i - 1] : up_left) >> s) : t[i];
            tr[i] = x + 1 < w ? static_cast<uint8_t>((i + 1 < kPixels ? up[i + 1] : up_right) >> s)
                              : t[i];
          } else {
            const uint8_t* const row = above[prev][c];
            t[i] = column[i] ? row[x] : 0;  // a column past the edge is computed, never stored
            tl[i] = x > 0 ? row[x - 1] : t[i];
            tr[i] = x + 1 < w ? row[x + 1] : t[i];
          }
        }
        predict_pixels(predictor, tl, t, tr, predicted);
#pragma unroll
        for (uint32_t i = 0; i < kPixels; ++i)
          v[i][c] = static_cast<uint8_t>(predicted[i] + residual[i]);
      }
    }
    if constexpr (kWarp) {
#pragma unroll
      for (uint32_t i = 0; i < kPixels; ++i)  // the planes as stored, for the next row
        up[i] =
            v[i][0] | uint32_t{v[i][1]} << 8 | uint32_t{v[i][2]} << 16 | uint32_t{v[i][3]} << 24;
    }
    uint32_t window_y = 0;
    const bool row_in = kSplitIndex && l3::in_window_y(image, t0.y0 + y, window_y);
    const uint64_t row_at =
        kSplitIndex ? l3::row_element(layout, image.out_width, channels, window_y) : uint64_t{0};
#pragma unroll
    for (uint32_t i = 0; i < kPixels; ++i) {
      if (!column[i]) break;  // the columns in the patch come first
      const uint32_t x = x0 + i;
      if constexpr (!kWarp) {
#pragma unroll
        for (uint32_t c = 0; c < 4; ++c)
          if (c < channels) above[cur][c][x] = v[i][c];  // the planes as stored, for the next row
      }
      if constexpr (kSplitIndex) {
        if (row_in && column_in[i]) {
          l3::add_green(v[i], image.subtract_green);
#pragma unroll
          for (uint32_t c = 0; c < 4; ++c)
            if (c < channels)
              l3::store_element(window, layout, row_at + column_at[i] + c * plane, v[i][c],
                                a.mean[c], a.scale[c]);
        }
      } else {
        uint32_t ox = 0, oy = 0;
        if (l3::in_window(image, t0.x0 + x, t0.y0 + y, ox, oy)) {
          l3::add_green(v[i], image.subtract_green);
#pragma unroll
          for (uint32_t c = 0; c < 4; ++c)
            if (c < channels)
              l3::store_element(window, layout,
                                l3::output_element(layout, image.out_width, image.out_height,
                                                   channels, ox, oy, c),
                                v[i][c], a.mean[c], a.scale[c]);
        }
      }
    }
    // Row y is complete in above[cur] before row y + 1 reads it, and every read of above[prev]
    // (row y - 1) is done before row y + 1 overwrites that buffer. A warp's shuffles order it.
    if constexpr (!kWarp) __syncthreads();
  }
}

}  // namespace
}  // namespace dlprep::cuda::l3_detail
