// The CUDA L3 decode kernel run on the CPU through the emulation (emulation/cuda_emulation.hpp),
// behind the BatchDecoder interface, so that l3_decode_cuda_test checks the kernel's own source
// on machines without a GPU.
#pragma once

#include <memory>

#include "l3/batch_decode.hpp"

namespace dlprep::l3 {

/// decode() and decode_device() launch cuda/l3/decode_kernel.cuh's kernel with the arguments
/// the CUDA backend builds (cuda/l3/decode_work.hpp); memory, copies and the pipeline are the
/// CPU backend's. device_name() is "emulated".
std::unique_ptr<BatchDecoder> make_batch_decoder_emulated();

}  // namespace dlprep::l3
