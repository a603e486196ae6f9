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

template <bool kWarp>
Kernel kernel_for(l3::OutputLayout layout) {
  // The kernel compiled once per output layout (decode_kernel.hpp), unless a tuning build asks
  // for one kernel that branches on the layout.
#if DLPREP_L3_CUDA_LAYOUT_KERNELS
  switch (layout) {
    case l3::OutputLayout::nhwc_u8:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nhwc_u8), kWarp>;
    case l3::OutputLayout::nchw_f32:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nchw_f32), kWarp>;
    case l3::OutputLayout::nchw_f16:
      return &decode_patches_kernel<static_cast<int>(l3::OutputLayout::nchw_f16), kWarp>;
  }
  throw Error(Errc::internal, "l3 decode: unknown output layout");
#else
  (void)layout;
  return &decode_patches_kernel<kAnyLayout, kWarp>;
#endif
}

Kernel kernel_for(const LaunchShape& shape, l3::OutputLayout layout) {
  if constexpr (kWarpPatches)
    if (shape.warp_patches) return kernel_for<true>(layout);
  return kernel_for<false>(layout);
}

}  // namespace

void launch_decode_kernel(const LaunchShape& shape, const DecodeArgs& args, cudaStream_t stream) {
  const Kernel kernel = kernel_for(shape, args.layout);
  const size_t per_block = shape.warp_patches ? kWarpsPerBlock : 1;
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
