// The launch of the L3 decode kernel (decode_kernel.hpp), in launches of at most INT_MAX blocks.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>

#include "core/cuda_check.hpp"
#include "l3/decode_kernel.cuh"
#include "l3/decode_kernel.hpp"

namespace dlprep::cuda::l3_detail {

namespace {

using Kernel = void (*)(DecodeArgs);

// A tuning build (gpu_session.sh l3-tune) compiles the kernel once per output layout.
Kernel kernel_for(l3::OutputLayout layout) {
#ifdef DLPREP_L3_CUDA_LAYOUT_KERNELS
  switch (layout) {
    case l3::OutputLayout::nhwc_u8:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nhwc_u8)>;
    case l3::OutputLayout::nchw_f32:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nchw_f32)>;
    case l3::OutputLayout::nchw_f16:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nchw_f16)>;
  }
#endif
  (void)layout;
  return &decode_patches_kernel<kAnyLayout>;
}

}  // namespace

void launch_decode_kernel(const LaunchShape& shape, const DecodeArgs& args, cudaStream_t stream) {
  const Kernel kernel = kernel_for(args.layout);
  for (size_t b = 0; b < shape.blocks; b += INT_MAX) {
    const size_t count = std::min(shape.blocks - b, size_t{INT_MAX});
    DecodeArgs part = args;
    part.patch_first = args.patch_first + b;
    kernel<<<static_cast<unsigned>(count), shape.threads, shape.shared, stream>>>(part);
    DLPREP_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace dlprep::cuda::l3_detail
