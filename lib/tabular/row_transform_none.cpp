// Builds for CPUs other than x86-64 have only the scalar row kernels.
#include "tabular/row_transform.hpp"

namespace dlprep::tabular {
const RowKernels* avx512_row_kernels() { return nullptr; }
}  // namespace dlprep::tabular
