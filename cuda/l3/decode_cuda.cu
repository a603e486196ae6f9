// The CUDA backend of the batched L3 decoder (issue 4), mirroring lib/l3/batch_decode_cpu.cpp and
// bit-identical to the scalar reference lib/l3/kernels_scalar.cpp. Spec: man/dlprep-l3.5,
// "PARALLEL AND GPU DECODING".
//
// The host validated every header and patch table (spec steps 1-7, l3::plan_batch) and built the
// work list; this file copies the files and the work list to the device and runs:
//   1. decode_patches_kernel: one thread block per (image, patch, channel) task and one thread
//      per pixel of a patch row (blockDim = widest patch of the batch rounded up to a warp).
//      Per block: the patch's Adler-32 by a block reduction (step 8), the code padding and the
//      payload size from a block-wide prefix sum over the width codes (step 9), and only then
//      the rows, in sequence: row 0 as a block prefix sum of the left-deltas, later rows from
//      the row above held in shared memory. Pixels go straight to their HWC place in the batch
//      tensor (byte `channel` of each pixel); a failing patch writes no pixel and sets its status.
//   2. add_green_kernel: for images with the subtract-green flag, adds plane 1 back to planes
//      0 and 2 once all planes are decoded (a second pass keeps the decode one block per plane).
// The statuses come back first; only when every patch passed is the tensor copied to the host.
//
// Tuning ideas, measured on an H100 before adopting any (tests/bench/l3_cuda_bench.md):
//  - several patches (or all channels of a patch) per block for small patches: with 8..32-pixel
//    patches most of a 32-thread warp idles; fusing the channels also removes pass 2;
//  - warp-level bit extraction: one lane loads a group's planes (<= 16 bytes, one vector load)
//    and __shfl_sync's them to its 16 pixels instead of 16 threads reading the same bytes;
//  - stage the patch bytes in shared memory with cp.async / vectorised 16-byte loads (the
//    checksum pass already reads them all once);
//  - write whole rows of 4-channel pixels as 32-bit stores after the fused channel decode;
//  - pinned staging buffers and two streams so that the H2D of batch i+1 overlaps the decode of
//    batch i; input already on the device (skip pass 0); low-priority streams.
#include <cuda_runtime.h>

#include <climits>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "l3/batch_plan.hpp"
#include "l3/decode_cuda.hpp"
#include "l3/format.hpp"

namespace dlprep::cuda {
namespace {

constexpr unsigned kFullMask = 0xFFFFFFFFu;
/// One thread per pixel of the widest patch row.
constexpr int kMaxThreads = static_cast<int>(l3::kMaxPatch);
constexpr int kMaxWarps = kMaxThreads / 32;
/// Groups of the largest patch: 16 per row of 256 pixels, 256 rows (16 KiB of offsets).
constexpr uint32_t kMaxGroups = (l3::kMaxPatch / l3::kGroupPixels) * l3::kMaxPatch;

/// Per-task verdicts, in the order the CPU decoder (decode_cpu.cpp, check_patch) checks them.
enum PatchStatus : uint8_t {
  kPatchOk = 0,
  kPatchChecksum = 1,
  kPatchWidthPadding = 2,
  kPatchPredictorPadding = 3,
  kPatchSizeMismatch = 4,
};

const char* status_message(uint8_t status) {
  switch (status) {
    case kPatchChecksum:
      return "checksum mismatch";
    case kPatchWidthPadding:
      return "padding bits of the width codes are not zero";
    case kPatchPredictorPadding:
      return "padding bits of the predictor codes are not zero";
    case kPatchSizeMismatch:
      return "group sizes do not match the patch size";
    default:
      return "unknown device status";
  }
}

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

__global__ void __launch_bounds__(kMaxThreads)
    decode_patches_kernel(const uint8_t* __restrict__ in, const l3::PatchTask* __restrict__ tasks,
                          uint8_t* __restrict__ out, uint8_t* __restrict__ status,
                          uint32_t* __restrict__ failed) {
  __shared__ uint32_t group_offset[kMaxGroups];  // payload offset of each group (exclusive scan)
  __shared__ uint8_t above[kMaxThreads];         // the previous row of the patch plane
  __shared__ unsigned long long part_a[kMaxWarps], part_b[kMaxWarps];
  __shared__ uint32_t warp_sums[kMaxWarps];
  __shared__ uint32_t payload_total;
  __shared__ uint8_t verdict;

  const l3::PatchTask task = tasks[blockIdx.x];
  const uint8_t* const p = in + task.src;
  const uint32_t n = task.bytes, w = task.width, h = task.height;
  const unsigned tid = threadIdx.x, threads = blockDim.x;

  // Step 8, the patch checksum: A = 1 + sum b[i], B = n + sum (n - i) b[i] (mod 65521), as
  // man/dlprep-l3.5 "CHECKSUM" writes it. 64-bit partial sums cannot overflow: n < 2^17.
  unsigned long long a = 0, b = 0;
  for (uint32_t i = tid; i < n; i += threads) {
    const uint32_t v = p[i];
    a += v;
    b += static_cast<unsigned long long>(n - i) * v;
  }
  a = warp_sum(a);
  b = warp_sum(b);
  if ((tid & 31u) == 0) {
    part_a[tid >> 5] = a;
    part_b[tid >> 5] = b;
  }
  __syncthreads();
  const uint32_t gpr = l3::groups_per_row(w), groups = gpr * h;
  const uint8_t* const predictor_codes = p + 1;
  const uint8_t* const width_codes = predictor_codes + l3::predictor_bytes(h);
  const uint32_t head = l3::patch_head_bytes(w, h);
  if (tid == 0) {
    unsigned long long sa = 0, sb = 0;
    for (unsigned k = 0; k < threads / 32; ++k) {
      sa += part_a[k];
      sb += part_b[k];
    }
    const uint32_t s1 = static_cast<uint32_t>((1 + sa) % l3::kAdlerMod);
    const uint32_t s2 = static_cast<uint32_t>((n + sb) % l3::kAdlerMod);
    uint8_t v = ((s2 << 16) | s1) == task.sum ? kPatchOk : kPatchChecksum;
    // Step 9, padding bits (reads within the head: n >= head was checked on the host).
    if (v == kPatchOk && (groups & 1u) && (width_codes[groups / 2] >> 4) != 0)
      v = kPatchWidthPadding;
    const uint32_t predictor_bits = (h - 1) * l3::kPredictorBits;
    if (v == kPatchOk && predictor_bits % 8 != 0 &&
        (predictor_codes[predictor_bits / 8] >> (predictor_bits % 8)) != 0)
      v = kPatchPredictorPadding;
    verdict = v;
  }
  __syncthreads();
  if (verdict != kPatchOk) {  // uniform: the whole block leaves
    if (tid == 0) {
      status[blockIdx.x] = verdict;
      *failed = 1;
    }
    return;
  }

  // Step 9, payload size: each thread sums the payload bytes of a contiguous run of groups, a
  // block scan turns the run sums into run starts, and each thread writes its groups' offsets.
  const uint32_t run = (groups + threads - 1) / threads;
  const uint32_t g_begin = min(tid * run, groups), g_end = min(g_begin + run, groups);
  uint32_t run_bytes = 0;
  for (uint32_t g = g_begin; g < g_end; ++g)
    run_bytes += l3::code_bytes(width_code_at(width_codes, g));
  const uint32_t run_end = block_inclusive_scan(run_bytes, warp_sums);
  uint32_t offset = run_end - run_bytes;
  for (uint32_t g = g_begin; g < g_end; ++g) {
    group_offset[g] = offset;
    offset += l3::code_bytes(width_code_at(width_codes, g));
  }
  if (tid == threads - 1) payload_total = run_end;
  __syncthreads();
  if (payload_total != n - head) {  // uniform; after this every payload read is in the patch
    if (tid == 0) {
      status[blockIdx.x] = kPatchSizeMismatch;
      *failed = 1;
    }
    return;
  }

  // The rows. Thread x owns pixel x: bit x mod 16 of each plane of its group, plus the base.
  const uint8_t* const payload = p + head;
  const uint32_t x = tid, j = x % l3::kGroupPixels;
  const bool active = x < w;
  uint8_t* const out_px = out + task.dst + static_cast<size_t>(x) * task.channels + task.channel;
  for (uint32_t y = 0; y < h; ++y) {
    uint8_t residual = 0;
    if (active) {
      const uint32_t g = y * gpr + x / l3::kGroupPixels;
      const uint32_t code = width_code_at(width_codes, g);
      const uint32_t width = l3::code_width(code);
      const uint8_t* q = payload + group_offset[g];
      uint8_t base = l3::implicit_base(width);
      if (l3::code_explicit(code)) base = *q++;
      uint32_t v = 0;
      for (uint32_t k = 0; k < width; ++k) {
        const uint32_t plane = q[2 * k] | (uint32_t{q[2 * k + 1]} << 8);
        v |= ((plane >> j) & 1u) << k;
      }
      residual = static_cast<uint8_t>(v + base);
    }
    uint8_t value = 0;
    if (y == 0) {
      // p(x, 0) = seed + r(0) + ... + r(x) (mod 256); inactive threads add 0 after the row.
      value = static_cast<uint8_t>(p[0] + block_inclusive_scan(residual, warp_sums));
    } else if (active) {
      // Border rule: TL at x = 0 and TR at x = w - 1 are T itself.
      const uint32_t predictor = l3::predictor_code(predictor_codes, y);
      const uint8_t t = above[x];
      const uint8_t tl = x > 0 ? above[x - 1] : t;
      const uint8_t tr = x + 1 < w ? above[x + 1] : t;
      value = static_cast<uint8_t>(l3::predict(predictor, tl, t, tr) + residual);
    }
    __syncthreads();  // every thread has read the row above
    if (active) {
      above[x] = value;
      out_px[static_cast<size_t>(y) * task.row_stride] = value;
    }
    __syncthreads();  // the new row is complete before the next one reads it
  }
}

/// An image whose planes 0 and 2 hold R - G and B - G.
struct GreenJob {
  unsigned long long dst;     ///< output byte of pixel (0, 0)
  unsigned long long pixels;  ///< W x H
  uint32_t channels;          ///< 3 or 4
  uint32_t reserved;
};

__global__ void add_green_kernel(uint8_t* __restrict__ out, const GreenJob* __restrict__ jobs,
                                 const uint32_t* __restrict__ failed) {
  // A damaged patch left its pixels unwritten and the batch will be rejected: read nothing
  // (keeps compute-sanitizer's initcheck quiet on the corrupt-input tests).
  if (*failed != 0) return;
  const GreenJob job = jobs[blockIdx.y];
  uint8_t* const image = out + job.dst;
  const unsigned long long step = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < job.pixels; i += step) {
    uint8_t* const px = image + i * job.channels;
    const uint8_t g = px[1];
    px[0] = static_cast<uint8_t>(px[0] + g);
    px[2] = static_cast<uint8_t>(px[2] + g);
  }
}

/// Device memory that grows to the largest request and is reused; freed without throwing.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
  }
  void* reserve(size_t bytes) {
    if (bytes > capacity_) {
      if (ptr_ != nullptr) DLPREP_CUDA_CHECK(cudaFree(ptr_));
      ptr_ = nullptr;
      capacity_ = 0;
      DLPREP_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
      capacity_ = bytes;
    }
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace

struct L3BatchDecoder::Impl {
  cudaStream_t stream = nullptr;
  DeviceBuffer input, tasks, output, status, failed, green;
  std::vector<uint8_t> status_host;
  std::vector<GreenJob> green_jobs;
  // Phase boundaries of a decode: start, uploaded, decoded, downloaded.
  cudaEvent_t events[4] = {};
  L3DecodeTimings timings;

  ~Impl() {
    for (cudaEvent_t e : events)
      if (e != nullptr) (void)cudaEventDestroy(e);
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

L3BatchDecoder::L3BatchDecoder() : impl_(std::make_unique<Impl>()) {
  DLPREP_CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
  for (cudaEvent_t& e : impl_->events) DLPREP_CUDA_CHECK(cudaEventCreate(&e));
}

L3DecodeTimings L3BatchDecoder::last_timings() const { return impl_->timings; }

L3BatchDecoder::~L3BatchDecoder() = default;

void L3BatchDecoder::decode(const l3::BatchPlan& plan, const uint8_t* const* files, uint8_t* out) {
  Impl& m = *impl_;
  const size_t task_count = plan.tasks.size();
  if (task_count == 0) return;  // an empty batch: nothing to copy (every image has >= 1 task)
  if (plan.max_patch_width == 0 || plan.max_patch_width > l3::kMaxPatch)
    throw Error(Errc::internal, "l3 cuda decode: bad plan (patch width " +
                                    std::to_string(plan.max_patch_width) + ")");
  cudaStream_t s = m.stream;
  m.timings = {};
  DLPREP_CUDA_CHECK(cudaEventRecord(m.events[0], s));

  // Pass 0: files and work list to the device. Pageable sources make these copies synchronous;
  // a pinned staging pool is the next step (see the tuning notes at the top).
  auto* in = static_cast<uint8_t*>(m.input.reserve(plan.input_bytes));
  for (size_t i = 0; i < plan.images.size(); ++i)
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(in + plan.images[i].src, files[i], plan.images[i].file_bytes,
                                      cudaMemcpyHostToDevice, s));
  auto* tasks = static_cast<l3::PatchTask*>(m.tasks.reserve(task_count * sizeof(l3::PatchTask)));
  DLPREP_CUDA_CHECK(cudaMemcpyAsync(tasks, plan.tasks.data(), task_count * sizeof(l3::PatchTask),
                                    cudaMemcpyHostToDevice, s));
  auto* status = static_cast<uint8_t*>(m.status.reserve(task_count));
  DLPREP_CUDA_CHECK(cudaMemsetAsync(status, 0, task_count, s));
  auto* failed = static_cast<uint32_t*>(m.failed.reserve(sizeof(uint32_t)));
  DLPREP_CUDA_CHECK(cudaMemsetAsync(failed, 0, sizeof(uint32_t), s));
  auto* tensor = static_cast<uint8_t*>(m.output.reserve(plan.output_bytes));
  DLPREP_CUDA_CHECK(cudaEventRecord(m.events[1], s));

  // Pass 1: one block per task, in launches of at most INT_MAX blocks.
  const unsigned threads = (plan.max_patch_width + 31u) / 32u * 32u;
  for (size_t first = 0; first < task_count; first += INT_MAX) {
    const size_t blocks = task_count - first < size_t{INT_MAX} ? task_count - first : INT_MAX;
    decode_patches_kernel<<<static_cast<unsigned>(blocks), threads, 0, s>>>(
        in, tasks + first, tensor, status + first, failed);
    DLPREP_CUDA_CHECK(cudaGetLastError());
  }

  // Pass 2: subtract-green, one grid row per image (at most 65535 per launch).
  m.green_jobs.clear();
  for (const l3::BatchImage& image : plan.images)
    if (image.subtract_green)
      m.green_jobs.push_back({image.dst, uint64_t{image.width} * image.height, image.channels, 0});
  if (!m.green_jobs.empty()) {
    auto* jobs = static_cast<GreenJob*>(m.green.reserve(m.green_jobs.size() * sizeof(GreenJob)));
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(jobs, m.green_jobs.data(),
                                      m.green_jobs.size() * sizeof(GreenJob),
                                      cudaMemcpyHostToDevice, s));
    constexpr size_t kMaxGridY = 65535;
    for (size_t first = 0; first < m.green_jobs.size(); first += kMaxGridY) {
      const size_t rows =
          m.green_jobs.size() - first < kMaxGridY ? m.green_jobs.size() - first : kMaxGridY;
      // 64 blocks of 256 threads per image: enough to fill an H100 at batch >= 4; the
      // grid-stride loop covers any image size.
      add_green_kernel<<<dim3(64, static_cast<unsigned>(rows)), 256, 0, s>>>(tensor, jobs + first,
                                                                             failed);
      DLPREP_CUDA_CHECK(cudaGetLastError());
    }
  }

  DLPREP_CUDA_CHECK(cudaEventRecord(m.events[2], s));

  // The verdicts first: no pixel of a batch with a damaged patch reaches the caller.
  m.status_host.resize(task_count);
  DLPREP_CUDA_CHECK(
      cudaMemcpyAsync(m.status_host.data(), status, task_count, cudaMemcpyDeviceToHost, s));
  DLPREP_CUDA_CHECK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < task_count; ++i) {
    if (m.status_host[i] != kPatchOk) {
      const l3::PatchTask& t = plan.tasks[i];
      throw Error(Errc::corrupt_data, "image " + std::to_string(t.image) + ": l3: patch " +
                                          std::to_string(t.patch) + " of channel " +
                                          std::to_string(t.channel) + ": " +
                                          status_message(m.status_host[i]));
    }
  }
  DLPREP_CUDA_CHECK(cudaMemcpyAsync(out, tensor, plan.output_bytes, cudaMemcpyDeviceToHost, s));
  DLPREP_CUDA_CHECK(cudaEventRecord(m.events[3], s));
  DLPREP_CUDA_CHECK(cudaStreamSynchronize(s));
  float ms[3] = {};
  for (int i = 0; i < 3; ++i)
    DLPREP_CUDA_CHECK(cudaEventElapsedTime(&ms[i], m.events[i], m.events[i + 1]));
  m.timings = {ms[0], ms[1], ms[2]};
}

}  // namespace dlprep::cuda
