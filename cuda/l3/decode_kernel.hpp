// Internal to cuda/l3: the work list the host uploads, the kernel's arguments and its launch,
// shared by the decoder (decode_cuda.cu), the pipeline (pipeline_cuda.cu), the kernel
// (decode_kernel.cuh) and its launch (decode_launch.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "l3/batch_plan.hpp"
#include "l3/format.hpp"

namespace dlprep::cuda::l3_detail {

/// Where the parts of a packed work list lie (bytes from its start), each 16-byte aligned.
struct WorkLayout {
  size_t tasks = 0;        ///< l3::PatchTask[plan.tasks.size()]
  size_t patch_first = 0;  ///< uint64_t[plan.patch_first_task.size()]
  size_t images = 0;       ///< l3::BatchImage[plan.images.size()]
  size_t bytes = 0;        ///< total
};

inline size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }

inline WorkLayout work_layout(const l3::BatchPlan& plan) {
  WorkLayout w;
  w.tasks = 0;
  w.patch_first = align16(w.tasks + plan.tasks.size() * sizeof(l3::PatchTask));
  w.images = align16(w.patch_first + plan.patch_first_task.size() * sizeof(uint64_t));
  w.bytes = align16(w.images + plan.images.size() * sizeof(l3::BatchImage));
  return w;
}

/// Copies the plan's arrays into `dst` (host memory, usually a pinned staging buffer) as
/// work_layout() places them.
void pack_work(const l3::BatchPlan& plan, uint8_t* dst);

/// The kernel's arguments, by value.
struct DecodeArgs {
  const uint8_t* in;             // the batch input (files back to back)
  const uint8_t* in_end;         // its end: no read goes past it, nor before `in`
  const l3::PatchTask* tasks;    // plan.tasks
  const uint64_t* patch_first;   // plan.patch_first_task (offset to this launch's first)
  const l3::BatchImage* images;  // plan.images
  uint8_t* out;                  // the tensor
  uint8_t* status;               // a byte per task
  uint32_t* failed;              // set when any task fails
  float mean[4];
  float scale[4];
  uint32_t max_groups;  // stride of the per-channel group-offset arrays
  uint32_t offsets;     // group-offset entries per patch in shared memory (LaunchShape)
  uint32_t row_codes;   // kRowCodes: row-code words per patch, after every patch's offsets
  uint64_t patches;     // patches of this launch (patch_first entries from its start)
  l3::OutputLayout layout;
};

/// Pixel columns of a patch row per thread: the work per group and per row (width code, offset,
/// base, predictor code, loop) is shared by that many pixels, and a plane byte yields their bits
/// together. The kernel is issue-bound; on the H100, 2 gave 203-210 GB/s of FHD pixels at batch
/// 64-256 against 135-137 for 1 and 125-127 for 4 in the same run (tests/bench/RESULTS.md). A
/// tuning build may set DLPREP_L3_CUDA_PIXELS_PER_THREAD to 1 or 4 (gpu_session.sh l3-tune).
#ifdef DLPREP_L3_CUDA_PIXELS_PER_THREAD
inline constexpr uint32_t kPixelsPerThread = DLPREP_L3_CUDA_PIXELS_PER_THREAD;
#else
inline constexpr uint32_t kPixelsPerThread = 2;
#endif
static_assert(kPixelsPerThread == 1 || kPixelsPerThread == 2 || kPixelsPerThread == 4,
              "a thread's pixels must divide a group of 16");

/// Threads of a block for patches up to `max_patch_width` wide: a thread per kPixelsPerThread
/// columns, rounded up to a warp.
inline unsigned block_threads(uint32_t max_patch_width) {
  const uint32_t per_row = (max_patch_width + kPixelsPerThread - 1) / kPixelsPerThread;
  return (per_row + 31u) / 32u * 32u;
}

/// The kernel's four code paths beyond the paper's block per patch, each on by default and each
/// turned off by a tuning build with -DDLPREP_L3_CUDA_<NAME>=0 (gpu_session.sh l3-tune, and the
/// emulated suite's variants). Measured together on an H200 (2026-11-29, tests/bench/RESULTS.md):
/// FHD nhwc-u8 decoded at 249 / 259 GB/s at batch 64 / 256 against 200 / 207 without them in the
/// same run; the warp per patch and the row codes alone moved it by -1.5% to +2%, so most of the
/// gain is the checksum a word at a time and the kernel per layout.
/// - WORD_CHECKSUM: pass 1 sums the patch 4 aligned bytes at a time by two dp4a.
/// - LAYOUT_KERNELS: a kernel per output layout, no layout branch per element (decode_launch.cu).
/// - WARP_PATCHES: when no patch of a batch is wider than a warp's columns (32 kPixelsPerThread:
///   FHD's 64-pixel patches at 2 pixels per thread), each warp decodes a patch of its own,
///   kWarpsPerBlock to a block. Blocks of one warp held FHD at 32 warps per SM (the SM's block
///   limit) and paid a block barrier per row; a warp needs neither the barrier nor shared memory
///   for the row above (its lanes shuffle it).
/// - ROW_CODES: pass 1 unpacks each row's predictor codes (every channel's, 3 bits apart) into
///   shared memory, so that a row reads one 16-bit word instead of two bytes and their bit
///   arithmetic per channel (l3::predictor_code).
#ifndef DLPREP_L3_CUDA_WORD_CHECKSUM
#define DLPREP_L3_CUDA_WORD_CHECKSUM 1
#endif
#ifndef DLPREP_L3_CUDA_LAYOUT_KERNELS
#define DLPREP_L3_CUDA_LAYOUT_KERNELS 1
#endif
#ifndef DLPREP_L3_CUDA_WARP_PATCHES
#define DLPREP_L3_CUDA_WARP_PATCHES 1
#endif
#ifndef DLPREP_L3_CUDA_ROW_CODES
#define DLPREP_L3_CUDA_ROW_CODES 1
#endif
/// A tuning build not yet timed (DLPREP_L3_CUDA_UNROLLED_PLANES=1, gpu_session.sh l3-tune's
/// `upl`): the plane loop of decode_kernel.cuh's group_residuals unrolled per width.
#ifndef DLPREP_L3_CUDA_UNROLLED_PLANES
#define DLPREP_L3_CUDA_UNROLLED_PLANES 0
#endif
/// A tuning build not yet timed (DLPREP_L3_CUDA_SUBWARP_PATCHES=1, `swp`): with WARP_PATCHES,
/// each half (or quarter) of a warp decodes a patch of its own when no patch of the batch is
/// wider than half (a quarter) of a warp's columns: 32-pixel patches at two pixels per thread,
/// the encoder's choice up to 1280 x 720, where a warp per patch leaves half of each warp idle.
#ifndef DLPREP_L3_CUDA_SUBWARP_PATCHES
#define DLPREP_L3_CUDA_SUBWARP_PATCHES 0
#endif
/// A tuning build not yet timed (DLPREP_L3_CUDA_WORD_PLANES=1, `wpl`): with two pixels per
/// thread, a group's planes read 4 aligned bytes (two planes) at a time and their bits gathered
/// for both pixels at once, instead of a byte load and its bit arithmetic per plane.
#ifndef DLPREP_L3_CUDA_WORD_PLANES
#define DLPREP_L3_CUDA_WORD_PLANES 0
#endif
inline constexpr bool kWarpPatches = DLPREP_L3_CUDA_WARP_PATCHES != 0;
inline constexpr bool kSubwarpPatches = kWarpPatches && DLPREP_L3_CUDA_SUBWARP_PATCHES != 0;

inline constexpr bool kRowCodes = DLPREP_L3_CUDA_ROW_CODES != 0;
inline constexpr uint32_t kWarpsPerBlock =
    l3::kMaxPatch / kPixelsPerThread / 32 < 4 ? l3::kMaxPatch / kPixelsPerThread / 32 : 4;

/// How the kernel is launched for a plan: a block per listed patch, or `lanes` lanes of a warp
/// per patch (32, 16 or 8) and kWarpsPerBlock warps per block.
struct LaunchShape {
  size_t patches = 0;
  unsigned lanes = 0;    ///< 0: a block per patch
  unsigned threads = 0;  ///< block_threads() of the widest patch, or kWarpsPerBlock warps
  uint32_t offsets = 0;  ///< group offsets of a patch (every channel's), an even number
  uint32_t row_codes = 0;  ///< kRowCodes: a patch's row-code words (its rows, rounded up to even)
  size_t shared = 0;  ///< dynamic shared bytes: the block's patches' group offsets, then row codes
};

/// Patches a block decodes with `lanes` lanes of a warp each (0: the whole block's one).
inline size_t patches_per_block(unsigned lanes) {
  return lanes == 0 ? 1 : kWarpsPerBlock * 32 / lanes;
}

/// Queues on `stream`: zeroing of the statuses and the failure flag, `kernel_start` (so that the
/// timings' kernel span leaves the memsets out), then the decode kernel(s) over every listed patch.
/// `work` is the packed work list in device memory; `status` has a byte per task; `failed` one
/// uint32_t. Throws Error(internal) for an inconsistent plan and Error(device_failure) when a
/// launch fails. No kernel is queued for an empty plan.
void launch_decode(const l3::BatchPlan& plan, const uint8_t* in, const uint8_t* work, uint8_t* out,
                   uint8_t* status, uint32_t* failed, cudaStream_t stream,
                   cudaEvent_t kernel_start);

/// Queues the kernel on `stream` over every listed patch, in launches of at most INT_MAX blocks.
/// Defined in decode_launch.cu.
void launch_decode_kernel(const LaunchShape& shape, const DecodeArgs& args, cudaStream_t stream);

/// After a batch whose failure flag was set: copies the statuses back on `stream` (synchronous)
/// and throws Error(corrupt_data) for the first failing task in plan order.
[[noreturn]] void throw_first_failure(const l3::BatchPlan& plan, const uint8_t* device_status,
                                      cudaStream_t stream);

}  // namespace dlprep::cuda::l3_detail
