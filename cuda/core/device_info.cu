#include <cuda_runtime.h>

#include "core/device_info.hpp"

namespace dlprep::cuda {

std::string runtime_version() {
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
}

std::string unavailable_reason() noexcept {
  try {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error so later calls start clean
      return std::string("no usable CUDA device: ") + cudaGetErrorName(status) + " (" +
             cudaGetErrorString(status) + ")";
    }
    if (count == 0) return "no CUDA device found";
    return {};
  } catch (...) {
    return "no usable CUDA device";
  }
}

}  // namespace dlprep::cuda
