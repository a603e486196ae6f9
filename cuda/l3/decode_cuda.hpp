// The CUDA backend of the batched L3 decoder (mirrors lib/l3/batch_decode_cpu.cpp). No CUDA type
// appears here: lib/l3/batch_decode_registry.cpp includes it to wrap it as a l3::BatchDecoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "l3/batch_plan.hpp"

namespace dlprep::cuda {

/// Where the time of the last decode() went, from CUDA events on the decoder's stream (ms).
struct L3DecodeTimings {
  float h2d_ms = 0;     ///< files and work list to the device
  float decode_ms = 0;  ///< both kernels: the device-resident decode time
  float d2h_ms = 0;     ///< statuses and tensor back to the host (includes the status check)
};

/// Decodes validated L3 batches on the current CUDA device. Owns one stream and device buffers
/// that grow to the largest batch seen and are reused. Not thread-safe.
class L3BatchDecoder {
 public:
  /// Creates the stream; throws Error(device_failure) when the device cannot be used.
  L3BatchDecoder();
  ~L3BatchDecoder();
  L3BatchDecoder(const L3BatchDecoder&) = delete;
  L3BatchDecoder& operator=(const L3BatchDecoder&) = delete;

  /// Decodes `plan` (from l3::plan_batch on the same files: steps 1-7 of the spec were checked
  /// on the host) from host files `files[i]` (plan.images[i].file_bytes each, pageable or pinned)
  /// into host memory `out` (plan.output_bytes). Per patch the device checks the Adler-32, the code
  /// padding and the payload size before writing a pixel; the first failing patch in plan order is
  /// thrown as Error(corrupt_data) "image I: l3: patch P of channel C: ...", worded as the CPU
  /// decoder words it. CUDA failures throw Error(device_failure) with the status name.
  void decode(const l3::BatchPlan& plan, const uint8_t* const* files, uint8_t* out);

  /// The phases of the last successful decode(), for benchmarks.
  L3DecodeTimings last_timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlprep::cuda
