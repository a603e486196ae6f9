// libFuzzer target for the L3 decoder (built with DLPREP_BUILD_FUZZERS and clang), or, in a
// normal build, the function that replay_main.cpp runs over every file of corpus/l3/.
//
// Each input is decoded twice: as given (exercising the header and checksum checks) and after
// its checksums were recomputed (so that mutations reach the patch decoder behind them: a
// checksum is no defence against a hostile file, only against accidents). Each decode runs on
// the scalar reference and on the active SIMD kernels, which must agree: both throw
// dlprep::Error, or both produce the same pixels.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/error.hpp"
#include "l3/kernels.hpp"
#include "l3/l3.hpp"
#include "l3_fuzz_input.hpp"

namespace {

using namespace dlprep;

// Decodes with the given kernels; returns false when the decoder rejected the input.
bool decode_with(const std::vector<uint8_t>& file, const l3::detail::Kernels& k,
                 std::vector<uint8_t>& pixels) {
  try {
    const l3::FileInfo info = l3::inspect(file);
    // 64 MiB of pixels at most: a valid 65535 x 16384 header is legal but would only measure
    // the allocator here.
    if (info.shape.pixel_bytes() > (uint64_t{1} << 26)) return false;
    pixels.assign(info.shape.pixel_bytes(), 0);
    l3::detail::decode_into_with(file, pixels.data(),
                                 size_t{info.shape.width} * info.shape.channels, 1, k);
    return true;
  } catch (const dlprep::Error&) {
    return false;
  }
}

void check_backends_agree(const std::vector<uint8_t>& file) {
  std::vector<uint8_t> reference, simd;
  const bool ok_reference = decode_with(file, l3::detail::kScalarKernels, reference);
  const bool ok_simd = decode_with(file, l3::detail::active_kernels(), simd);
  if (ok_reference != ok_simd || (ok_reference && reference != simd)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::as_given_and_repaired(data, size, check_backends_agree);
  return 0;
}
