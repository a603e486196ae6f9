// What the CUDA runtime says about the machine: no CUDA types in this header.
#pragma once

#include <string>

namespace dlprep::cuda {

/// The CUDA runtime version this backend was built with, e.g. "13.0".
std::string runtime_version();

/// Empty when a CUDA device can be used; otherwise why not (no driver, no device, a device older
/// than this build's architectures). Never throws.
std::string unavailable_reason() noexcept;

/// The GPU current on the calling thread (cudaGetDevice).
int current_device();

/// Throws Error(invalid_argument) unless `device` is the GPU current on the calling thread: what
/// a decoder made on one GPU says when it is used while another is current, instead of a
/// failing launch.
void require_current_device(int device);

/// The current device for reports: "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB, CUDA
/// runtime 13.0, driver 13.0". Throws Error(device_failure) when the device cannot be queried.
std::string device_description();

}  // namespace dlprep::cuda
