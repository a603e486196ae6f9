// Builds for CPUs other than x86-64 have only the scalar kernels.
#include "l3/kernels.hpp"

namespace dlprep::l3::detail {
const Kernels* avx2_kernels() { return nullptr; }
const Kernels* gfni_kernels() { return nullptr; }
}  // namespace dlprep::l3::detail
