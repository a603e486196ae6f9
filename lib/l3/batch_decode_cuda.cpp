// The CUDA backend behind l3::BatchDecoder: adapts cuda::L3BatchDecoder and cuda::L3Pipeline
// (cuda/l3/, whose headers have no CUDA types) to the backend-neutral interface, and times the
// copies of the benchmark's ceilings through the shared timing core. Built only with CUDA
// (lib/l3/CMakeLists.txt chooses the file); batch_decode_registry.cpp is its only caller.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/device_memory.hpp"
#include "core/error.hpp"
#include "core/timing.hpp"
#include "l3/batch_decode.hpp"
#include "l3/batch_decode_backends.hpp"
#include "l3/decode_cuda.hpp"

namespace dlprep::l3 {
namespace {

class CudaBuffer final : public BatchBuffer {
 public:
  static std::unique_ptr<BatchBuffer> make(MemoryKind kind, size_t bytes) {
    auto memory = std::make_unique<cuda::Allocation>(kind == MemoryKind::device
                                                         ? cuda::Allocation::Kind::device
                                                         : cuda::Allocation::Kind::pinned_host,
                                                     bytes);
    return std::unique_ptr<BatchBuffer>(new CudaBuffer(std::move(memory), kind));
  }

 private:
  CudaBuffer(std::unique_ptr<cuda::Allocation> memory, MemoryKind kind)
      : BatchBuffer(memory->data(), memory->size(), kind), memory_(std::move(memory)) {}
  std::unique_ptr<cuda::Allocation> memory_;
};

DecodeTimings to_timings(const cuda::L3DecodeTimings& t) {
  return {t.h2d_ms, t.decode_ms, t.d2h_ms};
}

void check_range(const BatchBuffer& buffer, size_t offset, size_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    throw Error(Errc::invalid_argument, "l3 batch copy: bytes " + std::to_string(offset) + "+" +
                                            std::to_string(bytes) + " outside a buffer of " +
                                            std::to_string(buffer.size()));
}

void check_output(const BatchPlan& plan, const BatchBuffer& out) {
  if (out.kind() != MemoryKind::device || out.size() < plan.output_bytes)
    throw Error(Errc::invalid_argument,
                "l3 batch decode: the output buffer is not device memory "
                "or smaller than the batch tensor");
}

std::vector<const uint8_t*> file_pointers(const BatchPlan& plan, std::span<const ByteSpan> files,
                                          const char* what) {
  if (files.size() != plan.images.size())
    throw Error(Errc::invalid_argument, std::string(what) + ": the plan is for another batch");
  std::vector<const uint8_t*> data(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].size() != plan.images[i].file_bytes)
      throw Error(Errc::invalid_argument, std::string(what) + ": the plan is for another batch");
    data[i] = files[i].data();
  }
  return data;
}

class BatchPipelineCuda final : public BatchPipeline {
 public:
  // `device`: the GPU of the decoder that made it, current now.
  BatchPipelineCuda(const PipelineOptions& options, int device)
      : device_(device), pipeline_(options.depth, options.low_priority) {}
  unsigned depth() const override { return pipeline_.depth(); }
  size_t in_flight() const override { return pipeline_.in_flight(); }
  uint64_t submit(const BatchPlan& plan, std::span<const ByteSpan> files,
                  BatchBuffer& out) override {
    cuda::require_current_device(device_);
    const std::vector<const uint8_t*> data = file_pointers(plan, files, "l3 pipeline");
    check_output(plan, out);
    return pipeline_.submit(plan, data.data(), out.data());
  }
  uint64_t submit(const BatchPlan& plan, const BatchBuffer& in, BatchBuffer& out) override {
    cuda::require_current_device(device_);
    if (in.kind() != MemoryKind::pinned_host || in.size() < plan.input_bytes)
      throw Error(Errc::invalid_argument,
                  "l3 pipeline: the input buffer is not pinned host "
                  "memory or smaller than the batch input");
    check_output(plan, out);
    return pipeline_.submit_pinned(plan, in.data(), out.data());
  }
  void order_after_stream(std::uintptr_t stream) override {
    cuda::require_current_device(device_);  // (its event is made on the current GPU)
    pipeline_.order_after(stream);
  }
  BatchResult wait() override {
    cuda::require_current_device(device_);
    cuda::L3DecodeTimings t;
    const uint64_t ticket = pipeline_.wait(&t);
    return {ticket, to_timings(t)};
  }

 private:
  const int device_;
  cuda::L3Pipeline pipeline_;
};

class BatchDecoderCuda final : public BatchDecoder {
 public:
  std::string_view device_name() const override { return "cuda"; }
  std::string device_description() const override { return cuda::device_description(); }
  int gpu_ordinal() const override { return device_; }

  using BatchDecoder::decode;
  void decode(const BatchPlan& plan, std::span<const ByteSpan> files, uint8_t* out) override {
    cuda::require_current_device(device_);
    const std::vector<const uint8_t*> data = file_pointers(plan, files, "l3 batch decode");
    decoder_.decode(plan, data.data(), out);
  }
  std::unique_ptr<BatchBuffer> allocate(MemoryKind kind, size_t bytes) override {
    cuda::require_current_device(device_);
    return CudaBuffer::make(kind, bytes);
  }
  std::unique_ptr<BatchBuffer> wrap(MemoryKind kind, void* data, size_t bytes) override {
    cuda::check_memory(data, bytes,
                       kind == MemoryKind::device ? cuda::Allocation::Kind::device
                                                  : cuda::Allocation::Kind::pinned_host,
                       device_);
    return BatchBuffer::borrow(static_cast<uint8_t*>(data), bytes, kind);
  }
  void copy_in(BatchBuffer& dst, size_t offset, const void* src, size_t bytes) override {
    check_range(dst, offset, bytes);
    if (dst.kind() == MemoryKind::device)
      cuda::copy_to_device(dst.data() + offset, src, bytes);
    else if (bytes != 0)
      std::memcpy(dst.data() + offset, src, bytes);
  }
  void copy_out(void* dst, const BatchBuffer& src, size_t offset, size_t bytes) override {
    check_range(src, offset, bytes);
    if (src.kind() == MemoryKind::device)
      cuda::copy_to_host(dst, src.data() + offset, bytes);
    else if (bytes != 0)
      std::memcpy(dst, src.data() + offset, bytes);
  }
  void decode_device(const BatchPlan& plan, const BatchBuffer& in, BatchBuffer& out) override {
    cuda::require_current_device(device_);
    if (in.kind() != MemoryKind::device || in.size() < plan.input_bytes)
      throw Error(Errc::invalid_argument,
                  "l3 batch decode: the input buffer is not device "
                  "memory or smaller than the batch input");
    check_output(plan, out);
    decoder_.decode_device(plan, in.data(), out.data());
  }
  DecodeTimings last_timings() const override { return to_timings(decoder_.last_timings()); }
  std::unique_ptr<BatchPipeline> make_pipeline(const PipelineOptions& options) override {
    cuda::require_current_device(device_);
    return std::make_unique<BatchPipelineCuda>(options, device_);
  }
  CopyBandwidth measure_copy_bandwidth(uint64_t bytes, const TimingParams& params) override {
    cuda::require_current_device(device_);
    cuda::CopyBench bench(bytes);
    auto rate = [&](float (cuda::CopyBench::*copy)()) {
      const TimingStats t = measure_self_timed(params, [&](bool) { return (bench.*copy)() / 1e3; });
      return t.median_rate(static_cast<double>(bytes)) / 1e9;
    };
    CopyBandwidth bw;
    bw.bytes = bytes;
    bw.h2d_pinned_gb_s = rate(&cuda::CopyBench::h2d_pinned_ms);
    bw.h2d_pageable_gb_s = rate(&cuda::CopyBench::h2d_pageable_ms);
    bw.d2h_pinned_gb_s = rate(&cuda::CopyBench::d2h_pinned_ms);
    bw.d2d_gb_s = rate(&cuda::CopyBench::d2d_ms);
    return bw;
  }

 private:
  // The GPU of the decoder's stream and buffers: the one current when it was made. Its work
  // runs only while that GPU is current (checked, not switched: the thread's choice stands).
  const int device_ = cuda::current_device();
  cuda::L3BatchDecoder decoder_;
};

}  // namespace

std::unique_ptr<BatchDecoder> make_batch_decoder_cuda() {
  return std::make_unique<BatchDecoderCuda>();
}

}  // namespace dlprep::l3
