// The L3 CPU decoder (man/dlprep-l3.5, "DECODING"): the header and the whole patch table are
// validated before anything is allocated; each patch's checksum and code arrays are checked
// before its pixels are decoded; patches decode in parallel straight into the caller's HWC rows.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "l3/batch_plan.hpp"
#include "l3/format.hpp"
#include "l3/kernels.hpp"
#include "l3/l3.hpp"

namespace dlprep::l3 {
namespace {

uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t get_u64(const uint8_t* p) { return get_u32(p) | (uint64_t{get_u32(p + 4)} << 32); }

Error corrupt(const std::string& what) { return Error(Errc::corrupt_data, "l3: " + what); }

// Everything decode needs, derived from a validated header and table.
struct Layout {
  FileInfo info;
  uint32_t log2 = 0, patches_x = 0, patches_y = 0;
  size_t patches = 0;
  const uint8_t* table = nullptr;
  const uint8_t* channel_data[4] = {};

  uint32_t entry_end(uint32_t c, size_t i) const {
    return get_u32(table + kTableEntryBytes * (c * patches + i));
  }
  uint32_t entry_sum(uint32_t c, size_t i) const {
    return get_u32(table + kTableEntryBytes * (c * patches + i) + 4);
  }
  uint32_t patch_w(size_t i) const {
    const uint32_t x0 = static_cast<uint32_t>(i % patches_x) << log2;
    return std::min(info.patch, info.shape.width - x0);
  }
  uint32_t patch_h(size_t i) const {
    const uint32_t y0 = static_cast<uint32_t>(i / patches_x) << log2;
    return std::min(info.patch, info.shape.height - y0);
  }
};

// Validation in the order of the spec: fixed header fields, sizes, header checksum, table.
Layout parse(ByteSpan file, const detail::Kernels& k) {
  if (file.size() < kHeaderBytes) {
    if (file.size() >= sizeof(kMagic) && std::memcmp(file.data(), kMagic, sizeof(kMagic)) == 0)
      throw corrupt("truncated header (" + std::to_string(file.size()) + " of " +
                    std::to_string(kHeaderBytes) + " bytes)");
    throw corrupt("not an l3 file (" + std::to_string(file.size()) + " bytes)");
  }
  const uint8_t* h = file.data();
  if (std::memcmp(h + kOffMagic, kMagic, sizeof(kMagic)) != 0)
    throw corrupt("not an l3 file (bad magic)");
  if (h[kOffVersion] != kVersion)
    throw Error(Errc::unsupported, "l3: version " + std::to_string(h[kOffVersion]) +
                                       " (this build reads version " + std::to_string(kVersion) +
                                       ")");
  if (h[kOffMode] != kModePacked)
    throw Error(Errc::unsupported,
                "l3: coding mode " + std::to_string(h[kOffMode]) + " at offset 12");
  Layout l;
  FileInfo& info = l.info;
  info.version = h[kOffVersion];
  info.shape = {get_u32(h + kOffWidth), get_u32(h + kOffHeight), h[kOffChannels]};
  if (info.shape.channels < 1 || info.shape.channels > 4)
    throw corrupt("channel count " + std::to_string(info.shape.channels) + " at offset 9");
  l.log2 = h[kOffPatchLog2];
  if (l.log2 < kMinPatchLog2 || l.log2 > kMaxPatchLog2)
    throw corrupt("patch size 2^" + std::to_string(l.log2) + " at offset 10");
  info.patch = 1u << l.log2;
  const uint8_t flags = h[kOffFlags];
  if ((flags & ~kKnownFlags) != 0) throw corrupt("unknown flags at offset 11");
  info.subtract_green = (flags & kFlagSubtractGreen) != 0;
  if (info.subtract_green && info.shape.channels < 3)
    throw corrupt("subtract-green flag with fewer than 3 channels");
  if (h[kOffReserved0] | h[kOffReserved0 + 1] | h[kOffReserved0 + 2] | get_u32(h + kOffReserved1))
    throw corrupt("reserved header bytes are not zero");
  try {
    check_shape(info.shape);
  } catch (const Error& e) {
    throw e.with_context("l3");
  }
  info.file_bytes = get_u64(h + kOffFileSize);
  if (info.file_bytes < kHeaderBytes)  // a damaged field, not trailing data
    throw corrupt("header file size " + std::to_string(info.file_bytes) + " is smaller than the " +
                  std::to_string(kHeaderBytes) + "-byte header");
  if (info.file_bytes != file.size())
    throw corrupt(info.file_bytes > file.size()
                      ? "truncated: " + std::to_string(file.size()) + " bytes, header says " +
                            std::to_string(info.file_bytes)
                      : std::to_string(file.size() - info.file_bytes) +
                            (file.size() - info.file_bytes == 1 ? " byte" : " bytes") +
                            " of trailing data after the " + std::to_string(info.file_bytes) +
                            " bytes the header gives");

  l.patches_x = (info.shape.width + info.patch - 1) >> l.log2;
  l.patches_y = (info.shape.height + info.patch - 1) >> l.log2;
  l.patches = size_t{l.patches_x} * l.patches_y;
  const uint64_t table_bytes = uint64_t{kTableEntryBytes} * info.shape.channels * l.patches;
  if (table_bytes > file.size() - kHeaderBytes)
    throw corrupt("truncated patch table (" + std::to_string(table_bytes) + " bytes at offset " +
                  std::to_string(kHeaderBytes) + ")");
  l.table = h + kHeaderBytes;
  uint32_t sum = k.adler32(1, h, kOffHeaderSum);
  sum = k.adler32(sum, l.table, table_bytes);
  if (sum != get_u32(h + kOffHeaderSum)) throw corrupt("header checksum mismatch");

  // Each patch lies within [minimum, maximum] bytes for its size; channels follow each other.
  const uint8_t* data = l.table + table_bytes;
  uint64_t remaining = file.size() - kHeaderBytes - table_bytes;
  for (uint32_t c = 0; c < info.shape.channels; ++c) {
    l.channel_data[c] = data;
    uint64_t start = 0;
    for (size_t i = 0; i < l.patches; ++i) {
      const uint64_t end = l.entry_end(c, i);
      const uint32_t w = l.patch_w(i), ph = l.patch_h(i);
      if (end < start + patch_head_bytes(w, ph) || end > start + patch_max_bytes(w, ph))
        throw corrupt("patch " + std::to_string(i) + " of channel " + std::to_string(c) +
                      ": size " + std::to_string(int64_t(end) - int64_t(start)) +
                      " out of range in the patch table");
      start = end;
    }
    if (start > remaining)
      throw corrupt("channel " + std::to_string(c) + ": data runs past the end of the file");
    info.channel_bytes.push_back(start);
    data += start;
    remaining -= start;
  }
  if (remaining != 0)
    throw corrupt(std::to_string(remaining) + (remaining == 1 ? " unused byte" : " unused bytes") +
                  " after the last patch");
  return l;
}

// Payload bytes announced by each pair of width codes (low and high nibble), for the exact size
// check that makes every later read in bounds.
struct CodeBytesTable {
  uint16_t bytes[256];
  constexpr CodeBytesTable() : bytes() {
    for (uint32_t b = 0; b < 256; ++b)
      bytes[b] = static_cast<uint16_t>(code_bytes(b & 15) + code_bytes(b >> 4));
  }
};
constexpr CodeBytesTable kPairBytes;

}  // namespace

std::optional<uint64_t> declared_file_size(ByteSpan head) {
  if (head.size() < kOffFileSize + 8 || std::memcmp(head.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  return get_u64(head.data() + kOffFileSize);
}

uint8_t detail::check_patch_bytes(const uint8_t* p, uint32_t size, uint32_t sum, uint32_t w,
                                  uint32_t h, const Kernels& k, PatchView& v) {
  if (k.adler32(1, p, size) != sum) return kPatchChecksum;
  v.seed = p[0];
  v.width = w;
  v.height = h;
  v.predictor_codes = p + 1;
  v.width_codes = v.predictor_codes + predictor_bytes(h);
  v.payload = p + patch_head_bytes(w, h);
  const uint32_t groups = groups_per_row(w) * h;
  uint32_t payload = 0;
  for (uint32_t b = 0; b < groups / 2; ++b) payload += kPairBytes.bytes[v.width_codes[b]];
  if (groups & 1) {
    const uint8_t last = v.width_codes[groups / 2];
    if (last >> 4) return kPatchWidthPadding;
    payload += code_bytes(last);
  }
  const uint32_t predictor_bits = (h - 1) * kPredictorBits;
  if (predictor_bits % 8 != 0 &&
      (v.predictor_codes[predictor_bits / 8] >> (predictor_bits % 8)) != 0)
    return kPatchPredictorPadding;
  if (payload != size - patch_head_bytes(w, h)) return kPatchSizeMismatch;
  return kPatchOk;
}

namespace {

// Checks one channel patch and returns its view; throws on a checksum or size mismatch.
detail::PatchView check_patch(const Layout& l, const detail::Kernels& k, uint32_t c, size_t i) {
  const uint32_t start = i == 0 ? 0 : l.entry_end(c, i - 1);
  detail::PatchView v;
  uint8_t status = detail::check_patch_bytes(l.channel_data[c] + start, l.entry_end(c, i) - start,
                                             l.entry_sum(c, i), l.patch_w(i), l.patch_h(i), k, v);
  if (status != kPatchOk)
    throw corrupt("patch " + std::to_string(i) + " of channel " + std::to_string(c) + ": " +
                  patch_status_message(status));
  return v;
}

// Steps 8-9 for every patch, in parallel, reporting the first failure in patch and then channel
// order as decode_patches() does.
void check_patches(const Layout& l, unsigned threads, const detail::Kernels& k) {
  parallel_for(l.patches, threads, [&](size_t i) {
    for (uint32_t c = 0; c < l.info.shape.channels; ++c) check_patch(l, k, c, i);
  });
}

// Decodes the patches of a parsed file into HWC rows at out, in parallel over patches.
void decode_patches(ByteSpan file, const Layout& l, uint8_t* out, size_t row_stride,
                    unsigned threads, const detail::Kernels& k) {
  using namespace detail;
  const ImageShape& s = l.info.shape;
  if (row_stride < size_t{s.width} * s.channels)
    throw Error(Errc::invalid_argument, "l3: row stride smaller than a row");
  const size_t stride = kRowSlackBefore + kMaxPatch + kRowSlackAfter;
  parallel_for(l.patches, threads, [&](size_t i) {
    // One scratch per thread: up to 4 planes of one patch, rows with slack for borders.
    thread_local std::unique_ptr<uint8_t[]> scratch;
    thread_local size_t scratch_bytes = 0;
    const size_t plane_bytes = stride * (l.info.patch + 1);
    if (scratch_bytes < plane_bytes * 4) {
      scratch.reset(new uint8_t[plane_bytes * 4]());
      scratch_bytes = plane_bytes * 4;
    }
    const uint8_t* planes[4];
    for (uint32_t c = 0; c < s.channels; ++c) {
      uint8_t* plane = scratch.get() + c * plane_bytes + kRowSlackBefore;
      PatchView view = check_patch(l, k, c, i);
      // SIMD kernels read up to kReadSlack bytes past a group's start; a patch that ends closer
      // than that to the end of the caller's buffer is decoded from a padded copy.
      thread_local uint8_t tail_copy[patch_max_bytes(kMaxPatch, kMaxPatch) + kReadSlack];
      const uint8_t* end = l.channel_data[c] + l.entry_end(c, i);
      if (file.size() - static_cast<size_t>(end - file.data()) < kReadSlack) {
        const uint8_t* head = view.predictor_codes - 1;
        std::memcpy(tail_copy, head, static_cast<size_t>(end - head));
        std::memset(tail_copy + (end - head), 0, kReadSlack);
        view.predictor_codes = tail_copy + 1;
        view.width_codes = tail_copy + (view.width_codes - head);
        view.payload = tail_copy + (view.payload - head);
      }
      k.decode_plane(view, plane, stride);
      planes[c] = plane;
    }
    const uint32_t x0 = static_cast<uint32_t>(i % l.patches_x) << l.log2;
    const uint32_t y0 = static_cast<uint32_t>(i / l.patches_x) << l.log2;
    k.store_hwc(planes, stride, l.patch_w(i), l.patch_h(i), s.channels, l.info.subtract_green,
                out + y0 * row_stride + size_t{x0} * s.channels, row_stride);
  });
}

}  // namespace

namespace detail {

void decode_into_with(ByteSpan file, uint8_t* out, size_t row_stride, unsigned threads,
                      const Kernels& k) {
  decode_patches(file, parse(file, k), out, row_stride, threads, k);
}

}  // namespace detail

FileInfo inspect(ByteSpan file) { return parse(file, detail::active_kernels()).info; }

FileInfo verify(ByteSpan file, unsigned threads) {
  const detail::Kernels& k = detail::active_kernels();
  Layout layout = parse(file, k);
  check_patches(layout, threads, k);
  return std::move(layout.info);
}

Image decode(ByteSpan file, unsigned threads) {
  const detail::Kernels& k = detail::active_kernels();
  const Layout layout = parse(file, k);  // steps 1-7 pass before the allocation
  // Checking the patches first costs a second Adler-32 pass; only worth it where a damaged
  // file could make the allocation large (one FHD RGB image is 6 MB).
  constexpr uint64_t kCheckFirstBytes = uint64_t{256} << 20;
  if (layout.info.shape.pixel_bytes() > kCheckFirstBytes) check_patches(layout, threads, k);
  Image image(layout.info.shape);
  decode_patches(file, layout, image.data(), image.row_bytes(), threads, k);
  return image;
}

void decode_into(ByteSpan file, uint8_t* out, size_t row_stride, unsigned threads) {
  detail::decode_into_with(file, out, row_stride, threads, detail::active_kernels());
}

}  // namespace dlprep::l3
