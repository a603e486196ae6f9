// What a <<<>>> launch becomes on the emulated device (emulate_launches.cmake rewrites it): the
// kernel's parameters are copied at the launch, as CUDA copies them, and the kernel is queued on
// the stream, where it runs through emu::launch when the host waits (runtime/cuda_runtime.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_emulation.hpp"

namespace emu {

struct LaunchConfig {
  LaunchConfig(dim3 grid_, dim3 block_, size_t shared_ = 0, cudaStream_t stream_ = nullptr)
      : grid(grid_), block(block_), shared(shared_), stream(stream_) {}
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};

template <class... Params, class... Args>
void launch_async(void (*kernel)(Params...), const LaunchConfig& config, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "a kernel launch with the wrong arguments");
  const dim3 &g = config.grid, &b = config.block;
  const uint64_t threads = uint64_t{b.x} * b.y * b.z;
  if (threads == 0 || threads > 1024 || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 ||
      g.y > 65535 || g.z > 65535) {
    refuse_launch("a grid or block of sizes CUDA does not allow");
    return;
  }
  std::tuple<std::decay_t<Params>...> copied(std::forward<Args>(args)...);
  enqueue_kernel(config.stream, [kernel, config, copied] {
    emu::launch(config.grid, config.block, config.shared, [&] { std::apply(kernel, copied); });
  });
}

}  // namespace emu
