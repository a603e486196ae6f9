// The CUDA backend of the batched L3 decoder (mirrors lib/l3/batch_decode_cpu.cpp). No CUDA type
// appears here: lib/l3/batch_decode_cuda.cpp includes it to adapt it to l3::BatchDecoder.
//
//   L3BatchDecoder  one stream; host files -> host tensor (decode), or a batch already on the
//                   device -> device tensor (decode_device: the device-resident figure)
//   L3Pipeline      `depth` slots of pinned staging + stream + device input: the copy of batch
//                   i+1 overlaps the decode of batch i (pipeline_cuda.cu)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "l3/batch_plan.hpp"

namespace dlprep::cuda {

/// Where the time of a decode went, from CUDA events on the decoder's stream (ms).
struct L3DecodeTimings {
  float h2d_ms = 0;     ///< files and work list to the device
  float decode_ms = 0;  ///< the kernel alone: the device-resident decode time
  float d2h_ms = 0;     ///< the tensor back to the host (0 for decode_device())
};

/// Decodes validated L3 batches on the current CUDA device. Owns one stream and device buffers
/// that grow to the largest batch seen and are reused. Not thread-safe.
class L3BatchDecoder {
 public:
  /// Creates the stream; throws Error(device_failure) when the device cannot be used.
  explicit L3BatchDecoder(bool low_priority = false);
  ~L3BatchDecoder();
  L3BatchDecoder(const L3BatchDecoder&) = delete;
  L3BatchDecoder& operator=(const L3BatchDecoder&) = delete;

  /// Decodes `plan` (from l3::plan_batch on the same files: steps 1-7 of the spec were checked
  /// on the host) from host files `files[i]` (plan.images[i].file_bytes each, pageable or pinned)
  /// into host memory `out` (plan.output_bytes). Per patch the device checks the Adler-32, the
  /// code padding and the payload size before writing a pixel; the first failing task in plan
  /// order is thrown as Error(corrupt_data) with l3::patch_failure_message(), as the CPU decoder
  /// words it, and no byte reaches `out`. CUDA failures throw Error(device_failure).
  void decode(const l3::BatchPlan& plan, const uint8_t* const* files, uint8_t* out);

  /// Device-resident: the batch input is already in device memory `device_in` (files at the
  /// plan's offsets, plan.input_bytes) and the tensor goes to device memory `device_out`
  /// (plan.output_bytes). Uploads the work list, runs the kernel, checks the verdicts; returns
  /// when the tensor is complete. Errors as decode().
  void decode_device(const l3::BatchPlan& plan, const uint8_t* device_in, uint8_t* device_out);

  /// The phases of the last successful decode() or decode_device() (decode_device: h2d_ms is the
  /// work list, d2h_ms the verdict).
  L3DecodeTimings last_timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Decodes a stream of batches, `depth` at a time in flight, each on its own stream with its
/// own pinned staging buffer and device input buffer, into device tensors the caller owns.
/// Bookkeeping by l3::SlotRing (tested on the CPU). Not thread-safe.
class L3Pipeline {
 public:
  /// Throws Error(invalid_argument) for a depth outside 1..16, Error(device_failure) when the
  /// streams cannot be created.
  L3Pipeline(unsigned depth, bool low_priority);
  ~L3Pipeline();
  L3Pipeline(const L3Pipeline&) = delete;
  L3Pipeline& operator=(const L3Pipeline&) = delete;

  unsigned depth() const;
  size_t in_flight() const;
  /// Copies the files (host memory anywhere) into the next slot's pinned staging buffer on the
  /// calling thread, then queues H2D, the kernel and the verdict on the slot's stream. `plan`
  /// and `device_out` (plan.output_bytes) must stay valid until wait() returns this batch.
  /// Returns the ticket. Throws Error(invalid_argument) when depth() batches are in flight.
  uint64_t submit(const l3::BatchPlan& plan, const uint8_t* const* files, uint8_t* device_out);
  /// The same from page-locked host memory `pinned_in` that holds the batch input at the plan's
  /// offsets: the H2D reads it directly (it must stay unchanged until wait() returns).
  uint64_t submit_pinned(const l3::BatchPlan& plan, const uint8_t* pinned_in, uint8_t* device_out);
  /// The next submit's kernel waits for the work queued on `stream` by now (a cudaStream_t as an
  /// integer; 0: none), through an event recorded there now (l3::BatchPipeline::
  /// order_after_stream). Throws Error(device_failure) when the stream cannot be recorded on.
  void order_after(std::uintptr_t stream);
  /// Waits for the oldest batch and checks its verdicts; returns its ticket and fills `timings`
  /// (h2d_ms: the slot's copies; decode_ms: the kernel). Throws Error(corrupt_data) for a damaged
  /// patch (the batch is dropped, the pipeline stays usable), Error(invalid_argument) when
  /// nothing is in flight.
  uint64_t wait(L3DecodeTimings* timings = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlprep::cuda
