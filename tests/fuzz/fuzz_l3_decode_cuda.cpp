// libFuzzer target for the L3 CUDA batch decoder's device code, run on the emulated GPU of
// tests/cuda/emulation/ (the kernel's own source, a fiber per CUDA thread), or, in a normal
// build, the function that replay_main.cpp runs over every file of corpus/l3/: on the emulated
// GPU (fuzz_l3_decode_cuda_emulated_replay) and on a real one (fuzz_l3_decode_cuda_replay,
// skipped with exit 77 where there is none).
//
// The host validates headers and patch tables (plan_batch); the kernel still parses each patch's
// codes from bytes a hostile file controls, and reports damage per patch. Each input, as given
// and with its checksums recomputed (so that mutations reach the patch decoder), is decoded as a
// batch of one by the CUDA backend and by the CPU backend, the reference, which must agree: the
// same tensor, or the same error message. The emulation turns a read outside the device buffers
// into an ASan report and a barrier or warp built-in that hostile bytes make divergent into an
// error, which the comparison then reports.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "l3/batch_decode.hpp"
#include "l3_fuzz_input.hpp"

namespace {

using namespace dlprep;

// The emulated kernel runs a fiber per CUDA thread: larger images only cost time here.
constexpr uint64_t kMaxPixelBytes = uint64_t{1} << 18;

struct Outcome {
  bool ok = false;
  std::string error;  // the message when !ok
  std::vector<uint8_t> tensor;
};

Outcome decode_with(l3::BatchDecoder& decoder, const l3::BatchPlan& plan,
                    std::span<const ByteSpan> files) {
  Outcome o;
  o.tensor.assign(plan.output_bytes, 0);
  try {
    decoder.decode(plan, files, o.tensor.data());
    o.ok = true;
  } catch (const dlprep::Error& e) {
    o.error = e.what();
    o.tensor.clear();
  }
  return o;
}

// The decoder under test. Where the CUDA backend cannot run (the real-GPU replay on a machine
// without one) the run is skipped as the CUDA tests are: exit 77 with the reason.
l3::BatchDecoder& cuda_decoder() {
  static const std::unique_ptr<l3::BatchDecoder> decoder = [] {
    const std::string why = l3::cuda_unavailable_reason();
    if (!why.empty()) {
      std::printf("fuzz_l3_decode_cuda: skipped: %s\n", why.c_str());
      std::exit(77);
    }
    return l3::make_batch_decoder(l3::DecodeDevice::cuda);
  }();
  return *decoder;
}

void check_backends_agree(const std::vector<uint8_t>& file) {
  static const std::unique_ptr<l3::BatchDecoder> cpu = l3::make_batch_decoder_cpu(1);
  l3::BatchDecoder& cuda = cuda_decoder();
  const ByteSpan files[] = {ByteSpan(file.data(), file.size())};
  l3::BatchPlan plan;
  try {
    plan = l3::plan_batch(files);
  } catch (const dlprep::Error&) {
    return;  // rejected on the host, before any backend: fuzz_l3_decode covers inspect()
  }
  if (plan.pixel_bytes > kMaxPixelBytes) return;
  const Outcome reference = decode_with(*cpu, plan, files);
  const Outcome device = decode_with(cuda, plan, files);
  if (reference.ok != device.ok || reference.error != device.error ||
      reference.tensor != device.tensor) {
    std::fprintf(
        stderr, "fuzz_l3_decode_cuda: the backends disagree\n  cpu:  %s\n  cuda: %s\n",
        reference.ok ? "decoded" : reference.error.c_str(),
        device.ok ? (reference.ok ? "decoded, other pixels" : "decoded") : device.error.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::as_given_and_repaired(data, size, check_backends_agree);
  return 0;
}
