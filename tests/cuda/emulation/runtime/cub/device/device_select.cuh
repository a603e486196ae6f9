// cub::DeviceSelect on the emulated device (emulated_algorithm.hpp): If and Flagged, stable.
#pragma once

#include "emulated_algorithm.hpp"

namespace cub {

namespace emulated {
// Copies the in[i] for which keep(i) holds to out, in order, and their number to *num_selected.
template <class InIt, class OutIt, class NumIt, class Keep>
void select(const char* name, InIt in, OutIt out, NumIt num_selected, int64_t n, Keep keep) {
  expect_device(in, n, name);
  expect_device(num_selected, 1, name);
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i)
    if (keep(i)) {
      expect_device(out + k, 1, name);
      out[k++] = in[i];
    }
  *num_selected = static_cast<std::remove_reference_t<decltype(*num_selected)>>(k);
}
}  // namespace emulated

struct DeviceSelect {
  template <class InIt, class OutIt, class NumIt, class NumItems, class Select>
  static cudaError_t If(void* temp, size_t& temp_bytes, InIt in, OutIt out, NumIt num_selected,
                        NumItems items, Select select, cudaStream_t stream = nullptr) {
    const auto n = static_cast<int64_t>(items);
    const char* name = "cub::DeviceSelect::If";
    return emulated::run(name, temp, temp_bytes, n, stream, [=] {
      emulated::select(name, in, out, num_selected, n, [&](int64_t i) { return select(in[i]); });
    });
  }

  template <class InIt, class FlagIt, class OutIt, class NumIt, class NumItems>
  static cudaError_t Flagged(void* temp, size_t& temp_bytes, InIt in, FlagIt flags, OutIt out,
                             NumIt num_selected, NumItems items, cudaStream_t stream = nullptr) {
    const auto n = static_cast<int64_t>(items);
    const char* name = "cub::DeviceSelect::Flagged";
    return emulated::run(name, temp, temp_bytes, n, stream, [=] {
      emulated::expect_device(flags, n, name);
      emulated::select(name, in, out, num_selected, n, [&](int64_t i) { return flags[i] != 0; });
    });
  }
};

}  // namespace cub
