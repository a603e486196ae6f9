// Internal to cuda/l3: the decode kernel's launcher, shared by the decoder (decode_cuda.cu) and
// the pipeline (pipeline_cuda.cu). Has CUDA types; the work list they upload is in
// decode_work.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "l3/batch_plan.hpp"
#include "l3/decode_work.hpp"

namespace dlprep::cuda::l3_detail {

/// Queues on `stream`: zeroing of the statuses and the failure flag, `kernel_start` (so that the
/// timings' kernel span leaves the memsets out), then the decode kernel(s) over every listed patch.
/// `work` is the packed work list in device memory; `status` has a byte per task; `failed` one
/// uint32_t. Throws Error(internal) for an inconsistent plan and Error(device_failure) when a
/// launch fails. No kernel is queued for an empty plan.
void launch_decode(const l3::BatchPlan& plan, const uint8_t* in, const uint8_t* work, uint8_t* out,
                   uint8_t* status, uint32_t* failed, cudaStream_t stream,
                   cudaEvent_t kernel_start);

/// Queues the kernel on `stream`, one block per listed patch, in launches of at most INT_MAX
/// blocks. Defined in decode_launch.cu, the only file with a <<<>>> launch (the CPU emulation of
/// tests/cuda/emulation/ defines it too, so that this file and the others compile as C++ there).
void launch_decode_kernel(const LaunchShape& shape, const DecodeArgs& args, cudaStream_t stream);

/// After a batch whose failure flag was set: copies the statuses back on `stream` (synchronous)
/// and throws Error(corrupt_data) for the first failing task in plan order.
[[noreturn]] void throw_first_failure(const l3::BatchPlan& plan, const uint8_t* device_status,
                                      cudaStream_t stream);

}  // namespace dlprep::cuda::l3_detail
