// cuda/l3/decode_launch.cu for the emulated device: the decode kernel's own source
// (decode_kernel.cuh) compiled for the CPU and queued on the emulated stream, where it runs
// through emu::launch when the host waits for the stream.
#include <cuda_runtime.h>

#include <climits>
#include <stdexcept>

#include "cuda_emulation.hpp"
// After the emulation, which supplies the CUDA built-ins.
#include "l3/decode_kernel.cuh"
#include "l3/decode_kernel.hpp"

namespace dlprep::cuda::l3_detail {

void launch_decode_kernel(const LaunchShape& shape, const DecodeArgs& args, cudaStream_t stream) {
  if (shape.blocks > UINT_MAX) throw std::length_error("emulated launch: too many blocks");
  emu::enqueue_kernel(stream, [shape, args] {
    emu::launch(dim3{static_cast<unsigned>(shape.blocks)}, dim3{shape.threads}, shape.shared,
                [&] { decode_patches_kernel(args); });
  });
}

}  // namespace dlprep::cuda::l3_detail
