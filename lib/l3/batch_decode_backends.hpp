// Internal to lib/l3: the factories of the batch-decode backends that exist only in some builds,
// for batch_decode_registry.cpp (the one file that knows which were built) and nothing else.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "l3/batch_bench.hpp"
#include "l3/batch_decode.hpp"

namespace dlprep::l3 {

/// The CUDA backend (batch_decode_cuda.cpp, built only with CUDA). Throws Error(device_failure)
/// when the device cannot be used.
std::unique_ptr<BatchDecoder> make_batch_decoder_cuda();

/// The nvJPEG baseline (batch_bench_nvjpeg.cpp, built only with nvJPEG): run_nvjpeg_bench().
std::vector<JpegBenchRow> run_nvjpeg_bench_cuda(std::span<const ByteSpan> jpegs,
                                                std::span<const Image> originals,
                                                const BatchBenchParams& params, std::string* note);

}  // namespace dlprep::l3
