// clear_upper_simd_state and upper_simd_state_in_use where there is no AVX state (simd_state.hpp).
#include "core/simd_state.hpp"

namespace dlprep {

void clear_upper_simd_state() {}

std::optional<bool> upper_simd_state_in_use() { return std::nullopt; }

}  // namespace dlprep
