// Internal to cuda/l3: what the host hands the decode kernel (the packed work list, the
// arguments, the launch shape), with no CUDA type, so that the device code (decode_kernel.cuh),
// its launch (decode_launch.cu, or the CPU emulation's in tests/cuda/emulation/) and the host
// side (decode_cuda.cu, pipeline_cuda.cu) share one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"
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
inline void pack_work(const l3::BatchPlan& plan, uint8_t* dst) {
  const WorkLayout w = work_layout(plan);
  if (!plan.tasks.empty())
    std::memcpy(dst + w.tasks, plan.tasks.data(), plan.tasks.size() * sizeof(l3::PatchTask));
  if (!plan.patch_first_task.empty())
    std::memcpy(dst + w.patch_first, plan.patch_first_task.data(),
                plan.patch_first_task.size() * sizeof(uint64_t));
  if (!plan.images.empty())
    std::memcpy(dst + w.images, plan.images.data(), plan.images.size() * sizeof(l3::BatchImage));
}

/// The kernel's arguments, by value.
struct DecodeArgs {
  const uint8_t* in;             // the batch input (files back to back)
  const l3::PatchTask* tasks;    // plan.tasks
  const uint64_t* patch_first;   // plan.patch_first_task (offset to this launch's first)
  const l3::BatchImage* images;  // plan.images
  uint8_t* out;                  // the tensor
  uint8_t* status;               // a byte per task
  uint32_t* failed;              // set when any task fails
  float mean[4];
  float scale[4];
  uint32_t max_groups;  // stride of the per-channel group-offset arrays
  l3::OutputLayout layout;
};

/// The arguments for `plan`, with `work` the packed work list (work_layout()) in the memory the
/// kernel reads.
inline DecodeArgs decode_args(const l3::BatchPlan& plan, const uint8_t* in, const uint8_t* work,
                              uint8_t* out, uint8_t* status, uint32_t* failed) {
  const WorkLayout layout = work_layout(plan);
  DecodeArgs args{};
  args.in = in;
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

/// How the kernel is launched for a plan: one block per listed patch.
struct LaunchShape {
  size_t blocks = 0;
  unsigned threads = 0;  ///< the widest patch rounded up to a warp
  size_t shared = 0;     ///< dynamic shared bytes: the group offsets of every channel
};

/// The launch for a non-empty plan; throws Error(internal) for a plan the kernel cannot take.
inline LaunchShape launch_shape(const l3::BatchPlan& plan) {
  LaunchShape s;
  s.blocks = plan.patch_first_task.size();
  if (plan.max_patch_width == 0 || plan.max_patch_width > l3::kMaxPatch || s.blocks == 0 ||
      plan.max_channels == 0 || plan.max_channels > 4 ||
      plan.max_groups > (l3::kMaxPatch / l3::kGroupPixels) * l3::kMaxPatch)
    throw Error(Errc::internal, "l3 cuda decode: inconsistent plan (patch width " +
                                    std::to_string(plan.max_patch_width) + ", " +
                                    std::to_string(s.blocks) + " patches)");
  s.threads = (plan.max_patch_width + 31u) / 32u * 32u;
  // At most 4 x 4096 x 2 = 32 KiB, under the 48 KiB every device allows without opting in.
  s.shared = (size_t{plan.max_channels} * plan.max_groups * sizeof(uint16_t) + 3) & ~size_t{3};
  return s;
}

/// After a batch whose failure flag was set, with its statuses back on the host (a byte per
/// task): throws Error(corrupt_data) for the first failing task in plan order.
[[noreturn]] inline void throw_failed_patch(const l3::BatchPlan& plan, const uint8_t* statuses) {
  const size_t bad = l3::first_failed_task(statuses, plan.tasks.size());
  if (bad == plan.tasks.size())  // the flag was set but no status: a kernel bug
    throw Error(Errc::internal, "l3 cuda decode: failure flag set without a failing patch");
  throw Error(Errc::corrupt_data, l3::patch_failure_message(plan.tasks[bad], statuses[bad]));
}

}  // namespace dlprep::cuda::l3_detail
