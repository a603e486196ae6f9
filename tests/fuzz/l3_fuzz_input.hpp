// What the L3 fuzz targets do to an input before decoding it a second time: recompute its
// checksums, so that mutations reach the patch decoder behind them (a checksum is no defence
// against a hostile file, only against accidents).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "l3/format.hpp"
#include "l3/kernels.hpp"

namespace dlprep::fuzz {

inline uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

/// Rewrites the file size, every patch checksum that lies within the file, and the header
/// checksum, following man/dlprep-l3.5. Leaves inputs that are too short or mis-sized alone.
inline void repair_checksums(std::vector<uint8_t>& f) {
  using namespace dlprep::l3;
  if (f.size() < kHeaderBytes) return;
  const uint64_t size = f.size();
  for (int i = 0; i < 8; ++i) f[kOffFileSize + i] = static_cast<uint8_t>(size >> (8 * i));
  const uint32_t channels = f[kOffChannels], log2 = f[kOffPatchLog2];
  const uint32_t width = get_u32(&f[kOffWidth]), height = get_u32(&f[kOffHeight]);
  if (channels < 1 || channels > 4 || log2 < kMinPatchLog2 || log2 > kMaxPatchLog2 || width == 0 ||
      height == 0 || width > 65535 || height > 65535)
    return;
  const uint64_t patches =
      uint64_t{(width + (1u << log2) - 1) >> log2} * ((height + (1u << log2) - 1) >> log2);
  const uint64_t table_bytes = kTableEntryBytes * channels * patches;
  if (table_bytes > size - kHeaderBytes) return;
  const auto& k = l3::detail::kScalarKernels;
  uint64_t channel_start = kHeaderBytes + table_bytes;
  for (uint32_t c = 0; c < channels; ++c) {
    uint64_t start = 0;
    for (uint64_t i = 0; i < patches; ++i) {
      uint8_t* entry = &f[kHeaderBytes + kTableEntryBytes * (c * patches + i)];
      const uint64_t end = get_u32(entry);
      if (end >= start && channel_start + end <= size)
        put_u32(entry + 4, k.adler32(1, &f[channel_start + start], end - start));
      start = end;
    }
    channel_start += start;
  }
  uint32_t sum = k.adler32(1, f.data(), kOffHeaderSum);
  sum = k.adler32(sum, &f[kHeaderBytes], table_bytes);
  put_u32(&f[kOffHeaderSum], sum);
}

/// Runs `check` on the input as given, then with its checksums recomputed.
template <class Check>
void as_given_and_repaired(const uint8_t* data, size_t size, Check check) {
  std::vector<uint8_t> file(data, data + size);
  check(file);
  repair_checksums(file);
  check(file);
}

}  // namespace dlprep::fuzz
