// cub::DeviceRadixSort on the emulated device (emulated_algorithm.hpp): SortPairs, stable, by the
// key bits [begin_bit, end_bit), into separate output arrays.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "emulated_algorithm.hpp"

namespace cub {

struct DeviceRadixSort {
  template <class Key, class Value, class NumItems>
  static cudaError_t SortPairs(void* temp, size_t& temp_bytes, const Key* keys_in, Key* keys_out,
                               const Value* values_in, Value* values_out, NumItems items,
                               int begin_bit = 0, int end_bit = sizeof(Key) * 8,
                               cudaStream_t stream = nullptr) {
    static_assert(std::is_unsigned_v<Key>, "the emulation sorts unsigned keys only");
    const auto n = static_cast<int64_t>(items);
    if (begin_bit < 0 || end_bit > static_cast<int>(sizeof(Key) * 8) || begin_bit >= end_bit)
      return cudaErrorInvalidValue;
    return emulated::run("cub::DeviceRadixSort::SortPairs", temp, temp_bytes, n, stream, [=] {
      for (const auto& [p, what] :
           {std::pair<const void*, const char*>{keys_in, "keys in"}, {keys_out, "keys out"}})
        emu::expect_device_range(p, static_cast<size_t>(n) * sizeof(Key), what);
      for (const auto& [p, what] : {std::pair<const void*, const char*>{values_in, "values in"},
                                    {values_out, "values out"}})
        emu::expect_device_range(p, static_cast<size_t>(n) * sizeof(Value), what);
      const int width = end_bit - begin_bit;
      const Key mask = width == static_cast<int>(sizeof(Key) * 8)
                           ? static_cast<Key>(~Key{0})
                           : static_cast<Key>((Key{1} << width) - 1);
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return (keys_in[a] >> begin_bit & mask) < (keys_in[b] >> begin_bit & mask);
      });
      for (int64_t i = 0; i < n; ++i) {
        keys_out[i] = keys_in[order[static_cast<size_t>(i)]];
        values_out[i] = values_in[order[static_cast<size_t>(i)]];
      }
    });
  }
};

}  // namespace cub
