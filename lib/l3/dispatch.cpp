// Chooses the kernel table once per process: the widest ISA the CPU supports, capped by the
// environment variable DLPREP_L3_ISA (scalar | avx2 | gfni) so tests and benchmarks can force one.
#include <cstdlib>
#include <string_view>

#include "l3/kernels.hpp"

namespace dlprep::l3::detail {

const Kernels& active_kernels() {
  static const Kernels* chosen = [] {
    const char* env = std::getenv("DLPREP_L3_ISA");
    const std::string_view cap = env != nullptr ? env : "";
    if (cap == "scalar") return &kScalarKernels;
    if (cap != "avx2")
      if (const Kernels* k = gfni_kernels()) return k;
    if (const Kernels* k = avx2_kernels()) return k;
    return &kScalarKernels;
  }();
  return *chosen;
}

}  // namespace dlprep::l3::detail

namespace dlprep::l3 {
std::string_view kernels_name() { return detail::active_kernels().name; }
}  // namespace dlprep::l3
