// The one list of batch-decode backends, and the only file in lib/ that knows whether the CUDA
// backend and the nvJPEG baseline were built (DLPREP_L3_WITH_CUDA, DLPREP_L3_WITH_NVJPEG, set on
// this file alone by lib/l3/CMakeLists.txt).
// The CUDA backend (libdlprep_cuda, adapted to BatchDecoder by batch_decode_cuda.cpp) depends
// only on dlprep_core and the plain-data headers batch_plan.hpp, batch_output.hpp,
// batch_pipeline.hpp and format.hpp: it receives a plan that plan_batch() validated on the host,
// so it never parses a header itself.
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "l3/batch_bench.hpp"
#include "l3/batch_decode.hpp"

#if DLPREP_L3_WITH_CUDA
#include "core/device_info.hpp"
#include "l3/batch_decode_backends.hpp"
#endif

namespace dlprep::l3 {

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
  return make_batch_decoder_cuda();
#else
  return make_batch_decoder_cpu(cpu_threads);  // unreachable: the reason above is never empty
#endif
}

std::string nvjpeg_unavailable_reason() {
#if DLPREP_L3_WITH_NVJPEG
  return cuda::unavailable_reason();
#else
  return "nvJPEG was not built in (no nvjpeg.h and libnvjpeg next to the CUDA toolkit; see "
         "-DDLPREP_WITH_NVJPEG)";
#endif
}

std::vector<JpegBenchRow> run_nvjpeg_bench(std::span<const ByteSpan> jpegs,
                                           std::span<const Image> originals,
                                           const BatchBenchParams& params, std::string* note) {
  const std::string reason = nvjpeg_unavailable_reason();
  if (!reason.empty()) throw Error(Errc::device_unavailable, reason);
#if DLPREP_L3_WITH_NVJPEG
  return run_nvjpeg_bench_cuda(jpegs, originals, params, note);
#else
  (void)jpegs, (void)originals, (void)params, (void)note;
  return {};  // unreachable: the reason above is never empty
#endif
}

}  // namespace dlprep::l3
