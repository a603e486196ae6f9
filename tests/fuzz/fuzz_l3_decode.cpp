// libFuzzer target for the L3 decoder (built with DLPREP_BUILD_FUZZERS and clang), or, in a
// normal build, the function that replay_main.cpp runs over every file of corpus/l3/.
//
// Each input is decoded twice: as given (exercising the header and checksum checks) and after
// its checksums were recomputed (so that mutations reach the patch decoder behind them: a
// checksum is no defence against a hostile file, only against accidents). Each decode runs on
// the scalar reference and on the active SIMD kernels, which must agree: both throw
// dlprep::Error, or both produce the same pixels.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "l3/format.hpp"
#include "l3/kernels.hpp"
#include "l3/l3.hpp"

namespace {

using namespace dlprep;

uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Rewrites the file size, every patch checksum that lies within the file, and the header
// checksum, following man/dlprep-l3.5. Leaves inputs that are too short or mis-sized alone.
void repair_checksums(std::vector<uint8_t>& f) {
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

// Decodes with the given kernels; returns false when the decoder rejected the input.
bool decode_with(const std::vector<uint8_t>& file, const l3::detail::Kernels& k,
                 std::vector<uint8_t>& pixels) {
  try {
    const l3::FileInfo info = l3::inspect(file);
    // 64 MiB of pixels at most: a valid 65535 x 16384 header is legal but would only measure
    // the allocator here.
    if (info.shape.pixel_bytes() > (uint64_t{1} << 26)) return false;
    pixels.assign(info.shape.pixel_bytes(), 0);
    l3::detail::decode_into_with(file, pixels.data(),
                                 size_t{info.shape.width} * info.shape.channels, 1, k);
    return true;
  } catch (const dlprep::Error&) {
    return false;
  }
}

void check_backends_agree(const std::vector<uint8_t>& file) {
  std::vector<uint8_t> reference, simd;
  const bool ok_reference = decode_with(file, l3::detail::kScalarKernels, reference);
  const bool ok_simd = decode_with(file, l3::detail::active_kernels(), simd);
  if (ok_reference != ok_simd || (ok_reference && reference != simd)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> file(data, data + size);
  check_backends_agree(file);
  repair_checksums(file);
  check_backends_agree(file);
  return 0;
}
