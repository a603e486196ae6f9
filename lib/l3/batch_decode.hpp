// Batched L3 decode behind one backend-neutral interface (issue 4): a batch of L3 files becomes
// one tensor, NHWC uint8 or NCHW float/half with per-channel normalisation, optionally cropped,
// with per-image offsets. The CPU backend (batch_decode_cpu.cpp) is the reference and the
// fallback; the CUDA backend (cuda/l3/, adapted in batch_decode_cuda.cpp) mirrors it bit for bit.
// batch_decode_registry.cpp is the only file that knows which backends were built. No CUDA type
// appears here: device memory is an opaque BatchBuffer that only its backend dereferences.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_io.hpp"  // Bytes, ByteSpan
#include "core/timing.hpp"   // TimingParams
#include "l3/batch_plan.hpp"

namespace dlprep::l3 {

/// Which window of each image is decoded into the tensor.
enum class CropMode {
  none,    ///< the whole image (images may differ in size: each has its own offset)
  center,  ///< crop_width x crop_height at ((W - w) / 2, (H - h) / 2), rounded down
  random,  ///< at an offset drawn per image from `seed` on the host (crop_random()), so that
           ///< every backend and a rerun with the same seed cut the same windows
};

/// What the batch tensor looks like (man/dlprep-l3.1, "BATCH TENSORS").
struct DecodeOptions {
  OutputLayout layout = OutputLayout::nhwc_u8;
  /// Float layouts only: element = (x - mean[c]) * (1 / std[c]), in float, subtraction then
  /// multiplication, each rounded to nearest even (never fused); half rounds that float to
  /// nearest even. The defaults leave the byte values as they are.
  std::array<float, 4> mean = {0, 0, 0, 0};
  std::array<float, 4> std = {1, 1, 1, 1};
  CropMode crop = CropMode::none;
  uint32_t crop_width = 0, crop_height = 0;  ///< the window, with a crop (1..65535 each)
  uint64_t seed = 0;                         ///< CropMode::random only
};

/// Validates every file of the batch on the host with the checks of inspect() (spec steps 1-7,
/// in batch order, so the first bad file is reported), chooses each image's window, and builds
/// the work list: one PatchTask per (image, patch, channel) for the patches that intersect the
/// window, and the per-image input and output offsets (each a multiple of the element size).
/// Throws what inspect() throws, with "image I" prepended; Error(invalid_argument) for options
/// that make no sense (mean/std with the uint8 layout, a std of 0, a non-finite value, a crop
/// of 0 pixels) or an image smaller than the crop ("image I: ..."); Error(limit_exceeded) if the
/// batch would not fit 64 bits. Pure host code: tests check it without a GPU.
BatchPlan plan_batch(std::span<const ByteSpan> files, const DecodeOptions& options = {});

/// "nhwc-u8", "nchw-f32", "nchw-f16" (the CLI's spelling); throws Error(invalid_argument).
OutputLayout parse_output_layout(std::string_view name);
std::string_view output_layout_name(OutputLayout layout);

/// Where a batch decoder runs. `automatic` is CUDA when it was built and a device is present,
/// else the CPU.
enum class DecodeDevice { automatic, cpu, cuda };

/// "auto", "cpu", "cuda" (the CLI's --device values); throws Error(invalid_argument) otherwise.
DecodeDevice parse_decode_device(std::string_view name);

/// Where a BatchBuffer lives.
enum class MemoryKind {
  device,       ///< the backend's device memory (cuda: cudaMalloc); only the backend reads it
  pinned_host,  ///< page-locked host memory (cuda: cudaMallocHost), for copies at line rate
};

/// Memory owned by a backend, freed with this object. For the cpu backend both kinds are
/// ordinary host memory, so the device-resident API and the pipeline run (and are tested)
/// everywhere. data() of device memory must not be dereferenced on the host.
class BatchBuffer {
 public:
  virtual ~BatchBuffer() = default;
  BatchBuffer(const BatchBuffer&) = delete;
  BatchBuffer& operator=(const BatchBuffer&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  MemoryKind kind() const { return kind_; }
  /// A buffer over memory it does not own (BatchDecoder::wrap()): never freed by it.
  static std::unique_ptr<BatchBuffer> borrow(uint8_t* data, size_t size, MemoryKind kind);

 protected:
  BatchBuffer(uint8_t* data, size_t size, MemoryKind kind)
      : data_(data), size_(size), kind_(kind) {}

 private:
  uint8_t* data_;
  size_t size_;
  MemoryKind kind_;
};

/// Where the time of the last decode went, in milliseconds. The CUDA backend measures with CUDA
/// events on its stream (decode_ms is the kernel time alone), the CPU backend with the
/// monotonic clock; a phase that did not happen is 0.
struct DecodeTimings {
  double h2d_ms = 0;     ///< files and work list to the device
  double decode_ms = 0;  ///< the decode itself: the device-resident figure
  double d2h_ms = 0;     ///< tensor back to the host (0 when it stays on the device)
};

/// Measured copy speeds of the backend's machine, GB/s (10^9 bytes per second, bytes copied).
struct CopyBandwidth {
  double h2d_pinned_gb_s = 0;    ///< pinned host memory to device memory
  double h2d_pageable_gb_s = 0;  ///< ordinary host memory to device memory
  double d2h_pinned_gb_s = 0;    ///< device memory to pinned host memory
  double d2d_gb_s = 0;           ///< device memory to device memory (bytes copied, one direction)
  uint64_t bytes = 0;            ///< size of each copy
};

/// How a BatchPipeline overlaps batches (DLBooster's dispatcher).
struct PipelineOptions {
  /// Batches in flight: one pinned staging buffer, one stream and one device input buffer each.
  /// 2 is enough for the copy of batch i+1 to overlap the decode of batch i.
  unsigned depth = 2;
  /// Create the decode streams at the lowest stream priority, so that a training stream created
  /// with a higher one has its kernels scheduled first. CUDA's default priority is already the
  /// lowest on current GPUs: a training stream at the default competes as an equal (cpu: no
  /// effect).
  bool low_priority = false;
};

/// What wait() returns for the batch that finished.
struct BatchResult {
  uint64_t ticket = 0;  ///< the value submit() returned for it
  DecodeTimings timings;
};

/// Decodes a stream of batches with the copy of one overlapping the decode of another, into
/// device tensors the caller owns (a free/full pool of output buffers, as DLBooster's bridger).
/// Batches complete in submission order. Not thread-safe; one pipeline per producer thread.
class BatchPipeline {
 public:
  virtual ~BatchPipeline() = default;
  virtual unsigned depth() const = 0;
  /// Batches submitted and not yet returned by wait().
  virtual size_t in_flight() const = 0;
  /// Starts a batch from host files anywhere in memory: they are copied (on the calling thread)
  /// into a pinned staging buffer, then to the device and decoded asynchronously into device
  /// buffer `out` (at least plan.output_bytes); the cpu backend decodes them on a worker thread.
  /// The files may be released when submit returns; `plan` and `out` must stay alive and
  /// unchanged until wait() has returned this batch.
  /// Returns the batch's ticket (0, 1, 2, ... in submission order). Throws
  /// Error(invalid_argument) when depth() batches are in flight (call wait() first) or a buffer
  /// is of the wrong kind or too small.
  virtual uint64_t submit(const BatchPlan& plan, std::span<const ByteSpan> files,
                          BatchBuffer& out) = 0;
  /// The same for files the caller keeps alive and unchanged until wait() has returned this
  /// batch: the cpu backend decodes them where they are instead of copying them first (the copy
  /// cost it a quarter of its throughput on two cores); CUDA stages them in pinned memory as
  /// submit() does.
  virtual uint64_t submit_kept(const BatchPlan& plan, std::span<const ByteSpan> files,
                               BatchBuffer& out) {
    return submit(plan, files, out);
  }
  /// The same from a pinned host buffer that already holds the batch input at the plan's offsets
  /// (plan.input_bytes): no staging copy. `in` must stay unchanged until wait() returns.
  virtual uint64_t submit(const BatchPlan& plan, const BatchBuffer& in, BatchBuffer& out) = 0;
  /// Makes the next submit()'s decode wait for the work queued so far on `stream`: a CUDA
  /// stream of the caller's, as an integer (a cudaStream_t; 1 and 2 name the legacy and the
  /// calling thread's per-thread default stream, as the CUDA array interface does; 0: nothing to
  /// wait for), such as the training stream that last used the memory the batch is decoded
  /// into. It must be a live stream on the pipeline's GPU now (an event is recorded there; the
  /// stream may go after), else Error(device_failure). The batch's copy to the device does not
  /// wait, its kernel does (its h2d_ms then includes the wait). A submit refused before it takes
  /// a ticket (a full pipeline, a bad argument) leaves the wait to the next one. The cpu backend
  /// has no device work to order.
  virtual void order_after_stream(std::uintptr_t stream) = 0;
  /// Waits for the oldest batch in flight; returns its ticket and timings once its tensor is
  /// complete. A damaged patch throws Error(corrupt_data) as BatchDecoder::decode() words it; the
  /// batch is then dropped and the pipeline stays usable. Error(invalid_argument) when nothing is
  /// in flight, Error(device_failure) when the device fails.
  virtual BatchResult wait() = 0;
};

/// Decodes batches of L3 files. Not thread-safe: one decoder per thread (a CUDA decoder owns a
/// stream and device buffers that it reuses from batch to batch).
class BatchDecoder {
 public:
  virtual ~BatchDecoder() = default;
  /// "cpu" or "cuda": which backend runs (tests check it against DLPREP_FORCE_DEVICE).
  virtual std::string_view device_name() const = 0;
  /// The device for reports: "NVIDIA H100 80GB HBM3, 132 SMs, CUDA 13.0" or the CPU's threads.
  virtual std::string device_description() const = 0;
  /// The CUDA device ordinal of the decoder's device memory (what DLPack calls its device_id),
  /// or -1 where it has none (cpu).
  virtual int gpu_ordinal() const { return -1; }

  /// Decodes the batch described by `plan` (from plan_batch(files) on the same files) into host
  /// memory `out` of at least plan.output_bytes bytes. Checks every patch the plan lists
  /// (checksum, code padding, payload size) and throws Error(corrupt_data) "image I: l3: patch P
  /// of channel C: ..." for the first damaged patch in plan order; `out` then holds garbage.
  /// Throws Error(device_failure) when the device fails.
  virtual void decode(const BatchPlan& plan, std::span<const ByteSpan> files, uint8_t* out) = 0;

  /// Plans and decodes; returns the tensor (plan.output_bytes bytes) and fills `plan` if given.
  Bytes decode(std::span<const ByteSpan> files, BatchPlan* plan = nullptr,
               const DecodeOptions& options = {});

  // ---- Device-resident decode: the input is already on the device, the tensor stays there ----

  /// Allocates `bytes` (at least 1) of memory of `kind` owned by this backend. Throws
  /// Error(device_failure) when the device is out of memory.
  virtual std::unique_ptr<BatchBuffer> allocate(MemoryKind kind, size_t bytes) = 0;
  /// Memory the caller owns and lends (a framework's tensor, to decode into without a copy), as
  /// a buffer of `kind` that never frees it: the memory must outlive the buffer, and no other
  /// work may use it while a decode writes it. The cuda backend checks that the first and the
  /// last byte are memory of that kind (device memory of the current GPU, page-locked host
  /// memory) and throws Error(invalid_argument) otherwise; the cpu backend's memory is the
  /// host's.
  virtual std::unique_ptr<BatchBuffer> wrap(MemoryKind kind, void* data, size_t bytes) = 0;
  /// Copies host memory into a buffer at `offset`, or a buffer's bytes out to host memory;
  /// synchronous. Throws Error(invalid_argument) for a range outside the buffer.
  virtual void copy_in(BatchBuffer& dst, size_t offset, const void* src, size_t bytes) = 0;
  virtual void copy_out(void* dst, const BatchBuffer& src, size_t offset, size_t bytes) = 0;
  /// Copies the files into `in` at the plan's offsets (plan.input_bytes bytes); synchronous.
  void upload(const BatchPlan& plan, std::span<const ByteSpan> files, BatchBuffer& in);
  /// Decodes a batch whose files already lie in device buffer `in` at the plan's offsets into
  /// device buffer `out` (plan.output_bytes). Synchronous: returns once the tensor is complete
  /// and every patch passed its checks (errors as decode()); last_timings().decode_ms is the
  /// kernel time. Error(invalid_argument) for a buffer of the wrong kind or too small.
  virtual void decode_device(const BatchPlan& plan, const BatchBuffer& in, BatchBuffer& out) = 0;

  /// The phases of the last successful decode() or decode_device().
  virtual DecodeTimings last_timings() const = 0;
  /// A pipeline on this decoder's device (it has its own streams and buffers).
  virtual std::unique_ptr<BatchPipeline> make_pipeline(const PipelineOptions& options = {}) = 0;
  /// Measures the copy speeds with copies of `bytes` bytes, through the shared timing core
  /// (median of params.repeats after params.warmup). For the ceilings of the benchmark.
  virtual CopyBandwidth measure_copy_bandwidth(uint64_t bytes, const TimingParams& params) = 0;
};

/// The CPU backend: the reference. Patches decode in parallel on `threads` threads with the
/// CPU's best kernels (l3::kernels_name()); the tensor is written with batch_output.hpp.
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
