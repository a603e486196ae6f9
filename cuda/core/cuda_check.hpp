// Every CUDA status becomes a dlprep::Error carrying the status name, at the call site.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/error.hpp"

namespace dlprep::cuda {

/// Throws Error(device_failure) "what: cudaErrorName (description)" unless status is cudaSuccess.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(Errc::device_failure, std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                                          cudaGetErrorString(status) + ")");
}

}  // namespace dlprep::cuda

#define DLPREP_CUDA_CHECK(call) ::dlprep::cuda::check((call), #call)
