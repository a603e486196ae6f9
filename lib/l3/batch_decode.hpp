// Batched L3 decode behind one backend-neutral interface (issue 4): a batch of L3 files in host
// memory becomes one NHWC uint8 tensor with per-image offsets. The CPU backend
// (batch_decode_cpu.cpp) is the reference and the fallback; the CUDA backend
// (cuda/l3/decode_cuda.cu) mirrors it. batch_decode_registry.cpp is the only file that knows
// which backends were built. No CUDA type appears here.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_io.hpp"  // Bytes, ByteSpan
#include "l3/batch_plan.hpp"

namespace dlprep::l3 {

/// Validates every file of the batch on the host with the checks of inspect() (spec steps 1-7,
/// in batch order, so the first bad file is reported) and builds the work list: one PatchTask per
/// (image, patch, channel) and the per-image input and output offsets. Throws what inspect()
/// throws, with "image I" prepended, and Error(limit_exceeded) if the batch output would not fit
/// 64 bits. Pure host code: tests check it without a GPU.
BatchPlan plan_batch(std::span<const ByteSpan> files);

/// Where a batch decoder runs. `automatic` is CUDA when it was built and a device is present,
/// else the CPU.
enum class DecodeDevice { automatic, cpu, cuda };

/// "auto", "cpu", "cuda" (the CLI's --device values); throws Error(invalid_argument) otherwise.
DecodeDevice parse_decode_device(std::string_view name);

/// Decodes batches of L3 files. Not thread-safe: one decoder per thread (a CUDA decoder owns a
/// stream and device buffers that it reuses from batch to batch).
class BatchDecoder {
 public:
  virtual ~BatchDecoder() = default;
  /// "cpu" or "cuda": which backend runs (tests check it against DLPREP_FORCE_DEVICE).
  virtual std::string_view device_name() const = 0;
  /// Decodes the batch described by `plan` (from plan_batch(files) on the same files) into host
  /// memory `out` of at least plan.output_bytes bytes. Checks every patch (checksum, code
  /// padding, payload size) and throws Error(corrupt_data) "image I: l3: patch P of channel C:
  /// ..." for the first damaged patch in plan order; `out` then holds garbage. Throws
  /// Error(device_failure) when the device fails.
  virtual void decode(const BatchPlan& plan, std::span<const ByteSpan> files, uint8_t* out) = 0;

  /// Plans and decodes; returns the tensor (plan.output_bytes bytes) and fills `plan` if given.
  Bytes decode(std::span<const ByteSpan> files, BatchPlan* plan = nullptr);
};

/// The CPU backend: l3::decode_into per image with `threads` threads over patches.
std::unique_ptr<BatchDecoder> make_batch_decoder_cpu(unsigned threads = 1);

/// The decoder for `device`. The environment variable DLPREP_FORCE_DEVICE=cpu|cuda overrides
/// the argument (so tests and scripts prove which backend ran); other values throw
/// Error(invalid_argument). Asking for CUDA when it was not built or no device is usable throws
/// Error(device_unavailable) with the reason. `cpu_threads` is used by the CPU backend only.
std::unique_ptr<BatchDecoder> make_batch_decoder(DecodeDevice device = DecodeDevice::automatic,
                                                 unsigned cpu_threads = 1);

/// Empty when the CUDA backend can run here; otherwise why not ("CUDA was not built in",
/// "no CUDA device found", ...). Never throws. For --version, `--device auto` and test skips.
std::string cuda_unavailable_reason();

}  // namespace dlprep::l3
