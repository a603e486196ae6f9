// The one list of batch-decode backends, and the only file in lib/ that knows whether the CUDA
// backend was built (DLPREP_L3_WITH_CUDA, set on this file alone by lib/l3/CMakeLists.txt).
// The CUDA backend (libdlprep_cuda) depends only on dlprep_core and the plain-data headers
// format.hpp and batch_plan.hpp: it receives a plan that plan_batch() validated here on the
// host, so it never parses a header itself and dlprep_l3 -> dlprep_cuda has no cycle.
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "l3/batch_decode.hpp"

#if DLPREP_L3_WITH_CUDA
#include "core/device_info.hpp"
#include "l3/decode_cuda.hpp"
#endif

namespace dlprep::l3 {
namespace {

#if DLPREP_L3_WITH_CUDA
class BatchDecoderCuda final : public BatchDecoder {
 public:
  std::string_view device_name() const override { return "cuda"; }
  using BatchDecoder::decode;
  void decode(const BatchPlan& plan, std::span<const ByteSpan> files, uint8_t* out) override {
    if (files.size() != plan.images.size())
      throw Error(Errc::invalid_argument, "l3 batch decode: the plan is for another batch");
    std::vector<const uint8_t*> data(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      if (files[i].size() != plan.images[i].file_bytes)
        throw Error(Errc::invalid_argument, "l3 batch decode: the plan is for another batch");
      data[i] = files[i].data();
    }
    decoder_.decode(plan, data.data(), out);
  }

 private:
  cuda::L3BatchDecoder decoder_;
};
#endif

}  // namespace

std::string cuda_unavailable_reason() {
#if DLPREP_L3_WITH_CUDA
  return cuda::unavailable_reason();
#else
  return "CUDA was not built in (configure with nvcc present or -DDLPREP_WITH_CUDA=ON)";
#endif
}

std::unique_ptr<BatchDecoder> make_batch_decoder(DecodeDevice device, unsigned cpu_threads) {
  if (const char* forced = std::getenv("DLPREP_FORCE_DEVICE"); forced != nullptr && *forced) {
    try {
      device = parse_decode_device(forced);
    } catch (const Error& e) {
      throw e.with_context("DLPREP_FORCE_DEVICE");
    }
  }
  if (device == DecodeDevice::cpu) return make_batch_decoder_cpu(cpu_threads);
  const std::string reason = cuda_unavailable_reason();
  if (!reason.empty()) {
    if (device == DecodeDevice::automatic) return make_batch_decoder_cpu(cpu_threads);
    throw Error(Errc::device_unavailable, "l3 batch decode on cuda: " + reason);
  }
#if DLPREP_L3_WITH_CUDA
  return std::make_unique<BatchDecoderCuda>();
#else
  return make_batch_decoder_cpu(cpu_threads);  // unreachable: the reason above is never empty
#endif
}

}  // namespace dlprep::l3
