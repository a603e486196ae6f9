// The emulated CUDA decoder (l3_decode_emulated.hpp). This file is the kernel launcher of
// cuda/l3/decode_cuda.cu with host memory in the place of device memory and emu::launch in the
// place of <<<...>>>.
#include "l3_decode_emulated.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "emulation/cuda_emulation.hpp"
// After the emulation, which supplies the CUDA built-ins.
#include "l3/decode_kernel.cuh"
#include "l3/decode_work.hpp"

namespace dlprep::l3 {
namespace {

using cuda::l3_detail::decode_args;
using cuda::l3_detail::launch_shape;
using cuda::l3_detail::pack_work;
using cuda::l3_detail::work_layout;

// Runs the kernel over `plan` with the batch input at `in`, the tensor to `out`, and reports the
// first damaged patch as the CUDA backend does.
void run_kernel(const BatchPlan& plan, const uint8_t* in, uint8_t* out) {
  if (plan.tasks.empty()) return;
  const cuda::l3_detail::LaunchShape shape = launch_shape(plan);
  std::vector<uint8_t> work(work_layout(plan).bytes), status(plan.tasks.size(), 0);
  pack_work(plan, work.data());
  uint32_t failed = 0;
  const cuda::l3_detail::DecodeArgs args =
      decode_args(plan, in, work.data(), out, status.data(), &failed);
  try {
    emu::launch(dim3{static_cast<unsigned>(shape.blocks)}, dim3{shape.threads}, shape.shared,
                [&] { cuda::l3_detail::decode_patches_kernel(args); });
  } catch (const std::logic_error& e) {
    throw Error(Errc::internal, std::string("l3 emulated decode: ") + e.what());
  }
  if (failed != 0) cuda::l3_detail::throw_failed_patch(plan, status.data());
}

class EmulatedDecoder final : public BatchDecoder {
 public:
  std::string_view device_name() const override { return "emulated"; }
  std::string device_description() const override {
    return "the CUDA kernel emulated on the CPU (a fiber per CUDA thread)";
  }
  void decode(const BatchPlan& plan, std::span<const ByteSpan> files, uint8_t* out) override {
    std::vector<uint8_t> in(plan.input_bytes);
    for (size_t i = 0; i < plan.images.size(); ++i)
      std::copy(files[i].begin(), files[i].end(), in.begin() + plan.images[i].src);
    run_kernel(plan, in.data(), out);
  }
  std::unique_ptr<BatchBuffer> allocate(MemoryKind kind, size_t bytes) override {
    return memory_->allocate(kind, bytes);
  }
  void copy_in(BatchBuffer& dst, size_t offset, const void* src, size_t bytes) override {
    memory_->copy_in(dst, offset, src, bytes);
  }
  void copy_out(void* dst, const BatchBuffer& src, size_t offset, size_t bytes) override {
    memory_->copy_out(dst, src, offset, bytes);
  }
  void decode_device(const BatchPlan& plan, const BatchBuffer& in, BatchBuffer& out) override {
    if (in.size() < plan.input_bytes || out.size() < plan.output_bytes)
      throw Error(Errc::invalid_argument, "l3 emulated decode: buffer too small");
    run_kernel(plan, in.data(), out.data());
  }
  DecodeTimings last_timings() const override { return {}; }
  std::unique_ptr<BatchPipeline> make_pipeline(const PipelineOptions&) override {
    throw Error(Errc::invalid_argument, "l3 emulated decode: no pipeline (it is CUDA streams)");
  }
  CopyBandwidth measure_copy_bandwidth(uint64_t, const TimingParams&) override { return {}; }

 private:
  // The CPU backend's buffers are host memory of either kind, which the emulated kernel reads.
  std::unique_ptr<BatchDecoder> memory_ = make_batch_decoder_cpu(1);
};

}  // namespace

std::unique_ptr<BatchDecoder> make_batch_decoder_emulated() {
  return std::make_unique<EmulatedDecoder>();
}

}  // namespace dlprep::l3
