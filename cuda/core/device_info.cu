#include <cuda_runtime.h>

#include <cstdio>

#include "core/cuda_check.hpp"
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
      // The runtime says "insufficient driver" also when there is no driver at all: tell the two
      // apart, since only one of them is cured by a driver upgrade.
      int driver = 0;
      if (status == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess) {
        if (driver == 0) return "no NVIDIA driver is installed (libcuda.so.1 not found)";
        return "the NVIDIA driver supports CUDA " + std::to_string(driver / 1000) + "." +
               std::to_string(driver % 1000 / 10) + "; this dlprep's CUDA runtime " +
               runtime_version() + " needs a newer driver";
      }
      return std::string("no usable CUDA device: ") + cudaGetErrorName(status) + " (" +
             cudaGetErrorString(status) + ")";
    }
    if (count == 0) return "no CUDA device found";
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
      cudaGetLastError();
      return "no usable CUDA device: its compute capability cannot be read";
    }
    if (major * 10 + minor < DLPREP_CUDA_MIN_SM)
      return "the CUDA device is sm_" + std::to_string(major * 10 + minor) +
             "; this dlprep was built for sm_" + std::to_string(DLPREP_CUDA_MIN_SM) +
             " and newer (CMAKE_CUDA_ARCHITECTURES)";
    return {};
  } catch (...) {
    return "no usable CUDA device";
  }
}

int current_device() {
  int device = 0;
  DLPREP_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

void require_current_device(int device) {
  const int current = current_device();
  if (current != device)
    throw Error(Errc::invalid_argument,
                "the decoder was made on GPU " + std::to_string(device) + ", and GPU " +
                    std::to_string(current) + " is current on this thread (make GPU " +
                    std::to_string(device) + " current: cudaSetDevice, torch.cuda.set_device)");
}

std::string device_description() {
  int device = 0, driver = 0;
  DLPREP_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  DLPREP_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DLPREP_CUDA_CHECK(cudaDriverGetVersion(&driver));
  char text[512];
  std::snprintf(text, sizeof text, "%s, sm_%d%d, %d SMs, %.1f GiB, CUDA runtime %s, driver %d.%d",
                p.name, p.major, p.minor, p.multiProcessorCount,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                runtime_version().c_str(), driver / 1000, driver % 1000 / 10);
  return text;
}

}  // namespace dlprep::cuda
