// floats_to_halves without F16C (float16.hpp): one conversion at a time.
#include "core/float16.hpp"

namespace dlprep {

void floats_to_halves(const uint32_t* float_bits, uint16_t* halves, size_t n) {
  floats_to_halves_one_by_one(float_bits, halves, n);
}

}  // namespace dlprep
