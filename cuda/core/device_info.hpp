// What the CUDA runtime says about the machine: no CUDA types in this header.
#pragma once

#include <string>

namespace dlprep::cuda {

/// The CUDA runtime version this backend was built with, e.g. "13.0".
std::string runtime_version();

/// Empty when a CUDA device can be used; otherwise why not (no driver, no device…). Never throws.
std::string unavailable_reason() noexcept;

}  // namespace dlprep::cuda
