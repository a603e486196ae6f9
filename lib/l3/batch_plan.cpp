// The host half of the batch decoder, used by every backend: plan_batch() (validation, the
// windows, the output offsets and the work list), the option parsers, and the BatchDecoder
// helpers that are the same for every backend.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "l3/batch_decode.hpp"
#include "l3/batch_output.hpp"
#include "l3/format.hpp"
#include "l3/l3.hpp"

namespace dlprep::l3 {
namespace {

uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

std::string image_context(size_t i) { return "image " + std::to_string(i); }

// The per-channel constants of the float layouts, checked: scale = 1/std must be finite and the
// mean finite, or every element would be NaN or infinite.
void set_normalisation(const DecodeOptions& o, BatchPlan& plan) {
  const bool identity =
      o.mean == std::array<float, 4>{0, 0, 0, 0} && o.std == std::array<float, 4>{1, 1, 1, 1};
  if (o.layout == OutputLayout::nhwc_u8 && !identity)
    throw Error(Errc::invalid_argument,
                "mean and std apply to the float layouts (nchw-f32, nchw-f16), not nhwc-u8");
  for (size_t c = 0; c < 4; ++c) {
    const float scale = 1.0f / o.std[c];
    if (!std::isfinite(o.mean[c]) || !std::isfinite(o.std[c]) || !std::isfinite(scale) ||
        o.std[c] == 0)
      throw Error(Errc::invalid_argument, "mean/std of channel " + std::to_string(c) +
                                              ": need a finite mean and a finite, non-zero std "
                                              "whose inverse is finite");
    plan.mean[c] = o.mean[c];
    plan.scale[c] = scale;
  }
}

void check_crop(const DecodeOptions& o) {
  if (o.crop == CropMode::none) {
    if (o.crop_width != 0 || o.crop_height != 0)
      throw Error(Errc::invalid_argument, "a crop size needs a crop mode (center or random)");
    return;
  }
  if (o.crop_width == 0 || o.crop_height == 0 || o.crop_width > 65535 || o.crop_height > 65535)
    throw Error(Errc::invalid_argument, "crop " + std::to_string(o.crop_width) + "x" +
                                            std::to_string(o.crop_height) +
                                            ": sides must be 1 to 65535 pixels");
}

// Chooses image i's window (spec in DecodeOptions / CropMode).
void set_window(const DecodeOptions& o, size_t i, BatchImage& image) {
  image.crop_x = image.crop_y = 0;
  image.out_width = image.width;
  image.out_height = image.height;
  if (o.crop == CropMode::none) return;
  if (image.width < o.crop_width || image.height < o.crop_height)
    throw Error(Errc::invalid_argument,
                image_context(i) + ": " + std::to_string(image.width) + "x" +
                    std::to_string(image.height) + " is smaller than the crop " +
                    std::to_string(o.crop_width) + "x" + std::to_string(o.crop_height));
  const uint32_t free_x = image.width - o.crop_width, free_y = image.height - o.crop_height;
  if (o.crop == CropMode::center) {
    image.crop_x = free_x / 2;
    image.crop_y = free_y / 2;
  } else {
    const uint64_t r = crop_random(o.seed, i);
    image.crop_x = static_cast<uint32_t>((r & 0xFFFFFFFFu) % (uint64_t{free_x} + 1));
    image.crop_y = static_cast<uint32_t>((r >> 32) % (uint64_t{free_y} + 1));
  }
  image.out_width = o.crop_width;
  image.out_height = o.crop_height;
}

}  // namespace

BatchPlan plan_batch(std::span<const ByteSpan> files, const DecodeOptions& options) {
  BatchPlan plan;
  plan.layout = options.layout;
  set_normalisation(options, plan);
  check_crop(options);
  const uint64_t element = element_bytes(options.layout);
  plan.images.reserve(files.size());
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < files.size(); ++i) {
    const ByteSpan file = files[i];
    FileInfo info;
    try {
      info = inspect(file);  // spec steps 1-7: header, sizes, header checksum, patch table
    } catch (const Error& e) {
      throw e.with_context(image_context(i));
    }
    BatchImage image;
    image.src = plan.input_bytes;
    image.file_bytes = file.size();
    image.width = info.shape.width;
    image.height = info.shape.height;
    image.channels = info.shape.channels;
    image.patch = info.patch;
    image.subtract_green = info.subtract_green ? 1 : 0;
    set_window(options, i, image);
    image.dst = plan.output_bytes;  // a multiple of `element`, as every image's size is
    const uint64_t elements = image.out_elements();
    // Sums of at most 2^32 files of at most 2^64 bytes: checked, not assumed.
    if (kMax - plan.input_bytes < file.size() || elements > kMax / element ||
        kMax - plan.output_bytes < elements * element)
      throw Error(Errc::limit_exceeded, image_context(i) + ": batch larger than 2^64 bytes");
    plan.input_bytes += file.size();
    plan.output_bytes += elements * element;
    plan.pixel_bytes += elements;
    plan.max_channels = std::max(plan.max_channels, image.channels);
    plan.images.push_back(image);
  }

  // The work list: the table was validated by inspect(), so its offsets are trusted from here
  // on. Only the patches that intersect the window are listed (all of them without a crop).
  // Patch columns and rows that the window [crop, crop + out) touches, as [begin, end].
  struct Span {
    uint32_t begin, end;
  };
  const auto window_patches = [](const BatchImage& image) {
    const uint32_t n = image.patch;
    return std::pair<Span, Span>{{image.crop_x / n, (image.crop_x + image.out_width - 1) / n},
                                 {image.crop_y / n, (image.crop_y + image.out_height - 1) / n}};
  };
  // Sized once: 64 FHD images list 98,000 tasks (3.9 MB), whose growth by doubling page-faulted
  // through twice that and was most of a batch's planning.
  size_t tasks = 0, patches_listed = 0;
  for (const BatchImage& image : plan.images) {
    const auto [cols, rows] = window_patches(image);
    const size_t n = size_t{cols.end - cols.begin + 1} * (rows.end - rows.begin + 1);
    patches_listed += n;
    tasks += n * image.channels;
  }
  plan.tasks.reserve(tasks);
  plan.patch_first_task.reserve(patches_listed);
  for (size_t i = 0; i < plan.images.size(); ++i) {
    const BatchImage& image = plan.images[i];
    const uint8_t* file = files[i].data();
    const uint32_t n = image.patch;
    const uint32_t px = (image.width + n - 1) / n, py = (image.height + n - 1) / n;
    const size_t patches = size_t{px} * py;
    const uint8_t* table = file + kHeaderBytes;
    // Channel c's data starts after the table and the data of channels 0..c-1.
    uint64_t channel_start[4] = {};
    uint64_t start = kHeaderBytes + kTableEntryBytes * image.channels * patches;
    for (uint32_t c = 0; c < image.channels; ++c) {
      channel_start[c] = start;
      start += get_u32(table + kTableEntryBytes * (c * patches + patches - 1));
    }
    const auto [cols, rows] = window_patches(image);
    for (uint32_t row = rows.begin; row <= rows.end; ++row) {
      for (uint32_t col = cols.begin; col <= cols.end; ++col) {
        const size_t p = size_t{row} * px + col;
        const uint32_t x0 = col * n, y0 = row * n;
        plan.patch_first_task.push_back(plan.tasks.size());
        for (uint32_t c = 0; c < image.channels; ++c) {
          const uint8_t* entry = table + kTableEntryBytes * (c * patches + p);
          const uint32_t begin = p == 0 ? 0 : get_u32(entry - kTableEntryBytes);
          PatchTask t;
          t.src = image.src + channel_start[c] + begin;
          t.bytes = get_u32(entry) - begin;
          t.sum = get_u32(entry + 4);
          t.image = static_cast<uint32_t>(i);
          t.patch = static_cast<uint32_t>(p);
          t.x0 = static_cast<uint16_t>(x0);
          t.y0 = static_cast<uint16_t>(y0);
          t.width = static_cast<uint16_t>(std::min(n, image.width - x0));
          t.height = static_cast<uint16_t>(std::min(n, image.height - y0));
          t.channel = static_cast<uint8_t>(c);
          t.channels = static_cast<uint8_t>(image.channels);
          plan.max_patch_width = std::max<uint32_t>(plan.max_patch_width, t.width);
          plan.max_patch_height = std::max<uint32_t>(plan.max_patch_height, t.height);
          plan.max_groups = std::max(plan.max_groups, groups_per_row(t.width) * t.height);
          plan.tasks.push_back(t);
        }
      }
    }
  }
  return plan;
}

OutputLayout parse_output_layout(std::string_view name) {
  if (name == "nhwc-u8") return OutputLayout::nhwc_u8;
  if (name == "nchw-f32") return OutputLayout::nchw_f32;
  if (name == "nchw-f16") return OutputLayout::nchw_f16;
  throw Error(Errc::invalid_argument, "unknown layout '" + std::string(name) +
                                          "' (expected nhwc-u8, nchw-f32 or nchw-f16)");
}

std::string_view output_layout_name(OutputLayout layout) {
  switch (layout) {
    case OutputLayout::nhwc_u8:
      return "nhwc-u8";
    case OutputLayout::nchw_f32:
      return "nchw-f32";
    case OutputLayout::nchw_f16:
      return "nchw-f16";
  }
  return "unknown";
}

DecodeDevice parse_decode_device(std::string_view name) {
  if (name == "auto") return DecodeDevice::automatic;
  if (name == "cpu") return DecodeDevice::cpu;
  if (name == "cuda") return DecodeDevice::cuda;
  throw Error(Errc::invalid_argument,
              "unknown device '" + std::string(name) + "' (expected auto, cpu or cuda)");
}

namespace {

class BorrowedBuffer final : public BatchBuffer {
 public:
  BorrowedBuffer(uint8_t* data, size_t size, MemoryKind kind) : BatchBuffer(data, size, kind) {}
};

}  // namespace

std::unique_ptr<BatchBuffer> BatchBuffer::borrow(uint8_t* data, size_t size, MemoryKind kind) {
  if (data == nullptr) throw Error(Errc::invalid_argument, "l3 batch buffer: a null pointer");
  return std::make_unique<BorrowedBuffer>(data, size, kind);
}

Bytes BatchDecoder::decode(std::span<const ByteSpan> files, BatchPlan* plan_out,
                           const DecodeOptions& options) {
  BatchPlan plan = plan_batch(files, options);  // everything is validated before the allocation
  Bytes out(plan.output_bytes);
  decode(plan, files, out.data());
  if (plan_out != nullptr) *plan_out = std::move(plan);
  return out;
}

void BatchDecoder::upload(const BatchPlan& plan, std::span<const ByteSpan> files, BatchBuffer& in) {
  if (files.size() != plan.images.size())
    throw Error(Errc::invalid_argument, "l3 batch upload: the plan is for another batch");
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].size() != plan.images[i].file_bytes)
      throw Error(Errc::invalid_argument, "l3 batch upload: the plan is for another batch");
    if (!files[i].empty()) copy_in(in, plan.images[i].src, files[i].data(), files[i].size());
  }
}

}  // namespace dlprep::l3
