// The CUDA backend of the batched L3 decoder (issue 4), mirroring lib/l3/batch_decode_cpu.cpp and
// bit-identical to it: the kernel's host side (statuses, arguments, timing event; the launch itself
// is in decode_launch.cu and the algorithm in decode_kernel.cuh) and L3BatchDecoder, which uploads
// a batch, decodes it on one stream and reports the first damaged patch.
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/error.hpp"
#include "l3/batch_plan.hpp"
#include "l3/decode_cuda.hpp"
#include "l3/decode_kernel.hpp"
#include "l3/format.hpp"

namespace dlprep::cuda {
namespace l3_detail {
namespace {

/// The arguments for `plan`, with `work` the packed work list (work_layout()) in the memory the
/// kernel reads.
DecodeArgs decode_args(const l3::BatchPlan& plan, const uint8_t* in, const uint8_t* work,
                       uint8_t* out, uint8_t* status, uint32_t* failed) {
  const WorkLayout layout = work_layout(plan);
  DecodeArgs args{};
  args.in = in;
  args.in_end = in + plan.input_bytes;
  args.tasks = reinterpret_cast<const l3::PatchTask*>(work + layout.tasks);
  args.patch_first = reinterpret_cast<const uint64_t*>(work + layout.patch_first);
  args.images = reinterpret_cast<const l3::BatchImage*>(work + layout.images);
  args.out = out;
  args.status = status;
  args.failed = failed;
  for (int c = 0; c < 4; ++c) {
    args.mean[c] = plan.mean[c];
    args.scale[c] = plan.scale[c];
  }
  args.max_groups = plan.max_groups;
  args.layout = plan.layout;
  return args;
}

/// The launch for a non-empty plan; throws Error(internal) for a plan the kernel cannot take.
LaunchShape launch_shape(const l3::BatchPlan& plan) {
  LaunchShape s;
  s.patches = plan.patch_first_task.size();
  if (plan.max_patch_width == 0 || plan.max_patch_width > l3::kMaxPatch ||
      plan.max_patch_height > l3::kMaxPatch || s.patches == 0 || plan.max_channels == 0 ||
      plan.max_channels > 4 || plan.max_groups > (l3::kMaxPatch / l3::kGroupPixels) * l3::kMaxPatch)
    throw Error(Errc::internal, "l3 cuda decode: inconsistent plan (patch width " +
                                    std::to_string(plan.max_patch_width) + ", " +
                                    std::to_string(s.patches) + " patches)");
  // A patch's group offsets take at most 4 x 4096 x 2 = 32 KiB, under the 48 KiB every device
  // allows without opting in; patches of a warp (at most 64 x 64 pixels) 2 KiB.
  s.offsets = (plan.max_channels * plan.max_groups + 1) & ~1u;
  s.row_codes = kRowCodes ? (plan.max_patch_height + 1) & ~1u : 0u;  // at most 256 rows: 512 B
  const size_t patch_bytes = size_t{s.offsets + s.row_codes} * sizeof(uint16_t);
  // The fewest lanes per patch that hold the widest patch (part of a warp only in that tuning
  // build), if the block's patches' offsets fit.
  for (const unsigned lanes : {8u, 16u, 32u}) {
    if (!kWarpPatches || (lanes < 32 && !kSubwarpPatches)) continue;
    if (plan.max_patch_width <= lanes * kPixelsPerThread &&
        patches_per_block(lanes) * patch_bytes <= size_t{48} << 10) {
      s.lanes = lanes;
      break;
    }
  }
  s.threads = s.lanes != 0 ? 32 * kWarpsPerBlock : block_threads(plan.max_patch_width);
  s.shared = patches_per_block(s.lanes) * patch_bytes;
  return s;
}

}  // namespace

void pack_work(const l3::BatchPlan& plan, uint8_t* dst) {
  const WorkLayout w = work_layout(plan);
  if (!plan.tasks.empty())
    std::memcpy(dst + w.tasks, plan.tasks.data(), plan.tasks.size() * sizeof(l3::PatchTask));
  if (!plan.patch_first_task.empty())
    std::memcpy(dst + w.patch_first, plan.patch_first_task.data(),
                plan.patch_first_task.size() * sizeof(uint64_t));
  if (!plan.images.empty())
    std::memcpy(dst + w.images, plan.images.data(), plan.images.size() * sizeof(l3::BatchImage));
}

void launch_decode(const l3::BatchPlan& plan, const uint8_t* in, const uint8_t* work, uint8_t* out,
                   uint8_t* status, uint32_t* failed, cudaStream_t stream,
                   cudaEvent_t kernel_start) {
  DLPREP_CUDA_CHECK(cudaMemsetAsync(failed, 0, sizeof(uint32_t), stream));
  if (plan.tasks.empty()) {  // an empty batch: nothing to decode (every image has >= 1 task)
    DLPREP_CUDA_CHECK(cudaEventRecord(kernel_start, stream));
    return;
  }
  const LaunchShape shape = launch_shape(plan);
  DLPREP_CUDA_CHECK(cudaMemsetAsync(status, 0, plan.tasks.size(), stream));
  DecodeArgs args = decode_args(plan, in, work, out, status, failed);
  args.offsets = shape.offsets;
  args.row_codes = shape.row_codes;
  DLPREP_CUDA_CHECK(cudaEventRecord(kernel_start, stream));
  launch_decode_kernel(shape, args, stream);
}

void throw_first_failure(const l3::BatchPlan& plan, const uint8_t* device_status,
                         cudaStream_t stream) {
  std::vector<uint8_t> statuses(plan.tasks.size());
  DLPREP_CUDA_CHECK(cudaMemcpyAsync(statuses.data(), device_status, statuses.size(),
                                    cudaMemcpyDeviceToHost, stream));
  DLPREP_CUDA_CHECK(cudaStreamSynchronize(stream));
  const size_t bad = l3::first_failed_task(statuses.data(), statuses.size());
  if (bad == statuses.size())  // the flag was set but no status: a kernel bug
    throw Error(Errc::internal, "l3 cuda decode: failure flag set without a failing patch");
  throw Error(Errc::corrupt_data, l3::patch_failure_message(plan.tasks[bad], statuses[bad]));
}

}  // namespace l3_detail

using namespace l3_detail;

struct L3BatchDecoder::Impl {
  explicit Impl(bool low_priority) : stream(low_priority) {}
  Stream stream;
  DeviceArray<uint8_t> input, work, output, status;
  DeviceArray<uint32_t> failed;
  PinnedArray<uint8_t> staging;  // the packed work list, then the failure flag
  Event events[5];               // start, uploaded, decoded, tensor download queued, downloaded
  L3DecodeTimings timings;

  // Queues the work-list upload, the kernel and the flag download after events[0]; returns once
  // the flag is back, throwing the first failure if it is set.
  void run(const l3::BatchPlan& plan, const uint8_t* device_in, uint8_t* device_out,
           bool files_queued) {
    cudaStream_t s = stream.get();
    const WorkLayout layout = work_layout(plan);
    uint8_t* const host = staging.reserve(layout.bytes + sizeof(uint32_t));
    pack_work(plan, host);
    uint32_t* const flag = reinterpret_cast<uint32_t*>(host + layout.bytes);
    *flag = 0;
    if (!files_queued) events[0].record(s);
    uint8_t* const d_work = work.reserve(layout.bytes);
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(d_work, host, layout.bytes, cudaMemcpyHostToDevice, s));
    uint8_t* const d_status = status.reserve(plan.tasks.size());
    uint32_t* const d_failed = failed.reserve(1);
    launch_decode(plan, device_in, d_work, device_out, d_status, d_failed, s, events[1].get());
    events[2].record(s);
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(flag, d_failed, sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    stream.synchronize();
    if (*flag != 0) throw_first_failure(plan, d_status, s);
  }
};

L3BatchDecoder::L3BatchDecoder(bool low_priority) : impl_(std::make_unique<Impl>(low_priority)) {}

L3BatchDecoder::~L3BatchDecoder() = default;

L3DecodeTimings L3BatchDecoder::last_timings() const { return impl_->timings; }

void L3BatchDecoder::decode(const l3::BatchPlan& plan, const uint8_t* const* files, uint8_t* out) {
  Impl& m = *impl_;
  m.timings = {};
  if (plan.tasks.empty()) return;  // an empty batch: nothing to copy
  cudaStream_t s = m.stream.get();
  m.events[0].record(s);
  // Files from pageable memory: the driver stages them (the pipeline's pinned staging avoids
  // this); the copies are ordered before the kernel on the stream either way.
  uint8_t* const in = m.input.reserve(plan.input_bytes);
  for (size_t i = 0; i < plan.images.size(); ++i)
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(in + plan.images[i].src, files[i], plan.images[i].file_bytes,
                                      cudaMemcpyHostToDevice, s));
  uint8_t* const tensor = m.output.reserve(plan.output_bytes);
  m.run(plan, in, tensor, true);
  // The download's span starts here, after run() waited on the host for the failure flag.
  m.events[3].record(s);
  DLPREP_CUDA_CHECK(cudaMemcpyAsync(out, tensor, plan.output_bytes, cudaMemcpyDeviceToHost, s));
  m.events[4].record(s);
  m.stream.synchronize();
  m.timings = {m.events[1].since(m.events[0]), m.events[2].since(m.events[1]),
               m.events[4].since(m.events[3])};
}

void L3BatchDecoder::decode_device(const l3::BatchPlan& plan, const uint8_t* device_in,
                                   uint8_t* device_out) {
  Impl& m = *impl_;
  m.timings = {};
  if (plan.tasks.empty()) return;
  m.run(plan, device_in, device_out, false);  // returns with the stream idle
  m.timings = {m.events[1].since(m.events[0]), m.events[2].since(m.events[1]), 0};
}

}  // namespace dlprep::cuda
