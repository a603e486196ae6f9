// The launch of the L3 decode kernel (decode_kernel.hpp), in launches of at most INT_MAX blocks.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>

#include "core/cuda_check.hpp"
#include "l3/decode_kernel.cuh"
#include "l3/decode_kernel.hpp"

namespace dlprep::cuda::l3_detail {

void launch_decode_kernel(const LaunchShape& shape, const DecodeArgs& args, cudaStream_t stream) {
  for (size_t b = 0; b < shape.blocks; b += INT_MAX) {
    const size_t count = std::min(shape.blocks - b, size_t{INT_MAX});
    DecodeArgs part = args;
    part.patch_first = args.patch_first + b;
    decode_patches_kernel<<<static_cast<unsigned>(count), shape.threads, shape.shared, stream>>>(
        part);
    DLPREP_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace dlprep::cuda::l3_detail
