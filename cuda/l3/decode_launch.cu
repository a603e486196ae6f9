// The launch of the L3 decode kernel (decode_kernel.hpp), in launches of at most INT_MAX blocks.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "l3/decode_kernel.cuh"
#include "l3/decode_kernel.hpp"

namespace dlprep::cuda::l3_detail {

namespace {

using Kernel = void (*)(DecodeArgs);

template <unsigned kLanes>
Kernel kernel_for(l3::OutputLayout layout) {
  // The kernel compiled once per output layout (decode_kernel.hpp), unless a tuning build asks
  // for one kernel that branches on the layout.
#if DLPREP_L3_CUDA_LAYOUT_KERNELS
  switch (layout) {
    case l3::OutputLayout::nhwc_u8:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nhwc_u8), kLanes>;
    case l3::OutputLayout::nchw_f32:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nchw_f32), kLanes>;
    case l3::OutputLayout::nchw_f16:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nchw_f16), kLanes>;
  }
  throw Error(Errc::internal, "l3 decode: unknown output layout");
#else
  (void)layout;
  return &decode_patches_kernel<kAnyLayout, kLanes>;
#endif
}

Kernel kernel_for(const LaunchShape& shape, l3::OutputLayout layout) {
  switch (shape.lanes) {  // only the kernels of this build's paths are compiled
#if DLPREP_L3_CUDA_WARP_PATCHES
    case 32:
      return kernel_for<32>(layout);
#if DLPREP_L3_CUDA_SUBWARP_PATCHES
    case 16:
      return kernel_for<16>(layout);
    case 8:
      return kernel_for<8>(layout);
#endif
#endif
    default:
      return kernel_for<0>(layout);
  }
}

}  // namespace

void launch_decode_kernel(const LaunchShape& shape, const DecodeArgs& args, cudaStream_t stream) {
  const Kernel kernel = kernel_for(shape, args.layout);
  const size_t per_block = patches_per_block(shape.lanes);
  const size_t per_launch = size_t{INT_MAX} * per_block;
  for (size_t first = 0; first < shape.patches; first += per_launch) {
    DecodeArgs part = args;
    part.patch_first = args.patch_first + first;
    part.patches = std::min(shape.patches - first, per_launch);
    const size_t blocks = (part.patches + per_block - 1) / per_block;
    kernel<<<static_cast<unsigned>(blocks), shape.threads, shape.shared, stream>>>(part);
    DLPREP_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace dlprep::cuda::l3_detail
