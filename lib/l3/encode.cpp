// The L3 encoder (man/dlprep-l3.5): colour transform, then per channel and patch the row
// predictor with the fewest payload bits, then the patch table and header with their checksums.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "l3/format.hpp"
#include "l3/kernels.hpp"
#include "l3/l3.hpp"

namespace dlprep::l3 {
namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t patch_log2(uint32_t patch) {
  for (uint32_t l = kMinPatchLog2; l <= kMaxPatchLog2; ++l)
    if (patch == (1u << l)) return l;
  throw Error(Errc::invalid_argument,
              "l3 patch size " + std::to_string(patch) + " is not a power of two from 8 to 256");
}

// Encodes one channel patch, whose rows are at `rows` with `stride` and slack for the border
// pixels (detail::kRowSlack*), into `base` (patch_max_bytes(w, h) + detail::kReadSlack bytes, the
// slack for 16-byte stores; its old contents do not matter) and returns the bytes written.
size_t encode_patch(const detail::Kernels& k, uint8_t* rows, size_t stride, uint32_t w, uint32_t h,
                    uint8_t* base) {
  const uint32_t gpr = groups_per_row(w);
  const size_t head = patch_head_bytes(w, h);
  std::memset(base, 0, head);  // the predictor and width codes are or-ed in
  const uint8_t seed = rows[0];
  base[0] = seed;
  uint8_t* pred_codes = base + 1;
  uint8_t* width_codes = pred_codes + predictor_bytes(h);
  uint8_t* payload = base + head;

  alignas(64) uint8_t residuals[kPredictors * kMaxPatch];
  detail::RowPlan plan;
  for (uint32_t y = 0; y < h; ++y) {
    uint8_t* row = rows + y * stride;
    row[-1] = row[0];  // border rule: the row below sees the nearest in-patch pixel
    row[w] = row[w - 1];
    uint32_t best = 0;
    if (y == 0) {
      k.residuals(0, nullptr, row, w, seed, residuals);
      k.plan_row(residuals, w, plan);
    } else {
      best = k.choose_row(row - stride, row, w, residuals, plan);
      const uint32_t bit = (y - 1) * kPredictorBits;  // a little-endian bit string
      pred_codes[bit / 8] |= static_cast<uint8_t>(best << (bit % 8));
      if (bit % 8 + kPredictorBits > 8)
        pred_codes[bit / 8 + 1] |= static_cast<uint8_t>(best >> (8 - bit % 8));
    }
    for (uint32_t g = 0; g < gpr; ++g) {
      const uint32_t index = y * gpr + g;
      width_codes[index >> 1] |= static_cast<uint8_t>(plan.codes[g] << ((index & 1) * 4));
    }
    payload += k.pack_row(residuals + best * kMaxPatch, w, plan, payload);
  }
  return static_cast<size_t>(payload - base);
}

}  // namespace

uint32_t auto_patch_size(uint32_t width, uint32_t height) {
  const uint64_t pixels = uint64_t{width} * height;
  if (pixels <= 1280ull * 720) return 32;
  if (pixels <= 1920ull * 1080) return 64;
  return 128;
}

namespace detail {

Bytes encode_with(const Image& image, const EncodeParams& params, const Kernels& k) {
  if (image.empty()) throw Error(Errc::invalid_argument, "l3: cannot encode an empty image");
  check_shape(image.shape());
  const uint32_t width = image.width(), height = image.height(), channels = image.channels();
  const uint32_t patch = params.patch == 0 ? auto_patch_size(width, height) : params.patch;
  const uint32_t log2 = patch_log2(patch);
  const bool subtract_green = channels >= 3;

  const uint32_t patches_x = (width + patch - 1) >> log2, patches_y = (height + patch - 1) >> log2;
  const size_t patches = size_t{patches_x} * patches_y;
  // One buffer per (patch, channel), of exactly its encoded size; patches are independent so
  // threads take whole patches, split into planes (and colour-transformed) while they are hot in
  // L1/L2. Each patch is encoded into a per-thread buffer of the worst-case size first: sizing
  // every patch's own buffer for the worst case would zero-fill ~7x the file's size per image.
  std::vector<std::vector<uint8_t>> encoded(patches * channels);
  const size_t stride = kRowSlackBefore + kMaxPatch + kRowSlackAfter;
  const size_t plane_bytes = stride * (patch + 1);
  const size_t patch_bytes = patch_max_bytes(patch, patch) + kReadSlack;
  parallel_for(patches, params.threads, [&](size_t i) {
    thread_local std::vector<uint8_t> scratch, out;
    if (scratch.size() < plane_bytes * 4) scratch.resize(plane_bytes * 4);
    if (out.size() < patch_bytes) out.resize(patch_bytes);
    const uint32_t px = static_cast<uint32_t>(i % patches_x),
                   py = static_cast<uint32_t>(i / patches_x);
    const uint32_t x0 = px << log2, y0 = py << log2;
    const uint32_t w = std::min(patch, width - x0), h = std::min(patch, height - y0);
    uint8_t* planes[4];
    for (uint32_t c = 0; c < channels; ++c)
      planes[c] = scratch.data() + c * plane_bytes + kRowSlackBefore;
    k.load_planes(image.row(y0) + size_t{x0} * channels, image.row_bytes(), w, h, channels,
                  subtract_green, planes, stride);
    for (uint32_t c = 0; c < channels; ++c) {
      const size_t n = encode_patch(k, planes[c], stride, w, h, out.data());
      encoded[c * patches + i].assign(out.data(), out.data() + n);
    }
  });

  const size_t table_bytes = kTableEntryBytes * channels * patches;
  size_t data_bytes = 0;
  for (const auto& e : encoded) data_bytes += e.size();
  Bytes file(kHeaderBytes + table_bytes + data_bytes, 0);
  uint8_t* h = file.data();
  std::memcpy(h + kOffMagic, kMagic, sizeof(kMagic));
  h[kOffVersion] = kVersion;
  h[kOffChannels] = static_cast<uint8_t>(channels);
  h[kOffPatchLog2] = static_cast<uint8_t>(log2);
  h[kOffFlags] = subtract_green ? kFlagSubtractGreen : 0;
  h[kOffMode] = kModePacked;
  put_u32(h + kOffWidth, width);
  put_u32(h + kOffHeight, height);
  put_u64(h + kOffFileSize, file.size());
  uint8_t* table = h + kHeaderBytes;
  uint8_t* data = table + table_bytes;
  for (uint32_t c = 0; c < channels; ++c) {
    uint64_t end = 0;
    for (size_t i = 0; i < patches; ++i) {
      const auto& e = encoded[c * patches + i];
      std::memcpy(data, e.data(), e.size());
      data += e.size();
      end += e.size();
      // Cannot happen within limits.hpp (a channel is at most ~2.2 bytes per pixel, see the spec).
      if (end > UINT32_MAX) throw Error(Errc::internal, "l3: channel data exceeds 4 GiB");
      uint8_t* entry = table + kTableEntryBytes * (c * patches + i);
      put_u32(entry, static_cast<uint32_t>(end));
      put_u32(entry + 4, k.adler32(1, e.data(), e.size()));
    }
  }
  uint32_t sum = k.adler32(1, h, kOffHeaderSum);
  sum = k.adler32(sum, table, table_bytes);
  put_u32(h + kOffHeaderSum, sum);
  return file;
}

}  // namespace detail

Bytes encode(const Image& image, const EncodeParams& params) {
  return detail::encode_with(image, params, detail::active_kernels());
}

}  // namespace dlprep::l3
