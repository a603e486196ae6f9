// The batch decoder's host half: plan_batch() (validation and work list, used by every backend)
// and the CPU backend, the reference the CUDA backend (cuda/l3/decode_cuda.cu) must equal bit for
// bit. The CPU backend decodes image by image with l3::decode_into, which re-validates each file
// (cheap next to the decode) and checks every patch as man/dlprep-l3.5 "DECODING" requires.
#include <algorithm>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "l3/batch_decode.hpp"
#include "l3/format.hpp"
#include "l3/l3.hpp"

namespace dlprep::l3 {
namespace {

uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

std::string image_context(size_t i) { return "image " + std::to_string(i); }

class BatchDecoderCpu final : public BatchDecoder {
 public:
  explicit BatchDecoderCpu(unsigned threads) : threads_(threads == 0 ? 1 : threads) {}
  std::string_view device_name() const override { return "cpu"; }
  using BatchDecoder::decode;
  void decode(const BatchPlan& plan, std::span<const ByteSpan> files, uint8_t* out) override {
    if (files.size() != plan.images.size())
      throw Error(Errc::invalid_argument, "l3 batch decode: the plan is for another batch");
    for (size_t i = 0; i < files.size(); ++i) {
      const BatchImage& image = plan.images[i];
      try {
        decode_into(files[i], out + image.dst, size_t{image.width} * image.channels, threads_);
      } catch (const Error& e) {
        throw e.with_context(image_context(i));
      }
    }
  }

 private:
  unsigned threads_;
};

}  // namespace

BatchPlan plan_batch(std::span<const ByteSpan> files) {
  BatchPlan plan;
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
    image.dst = plan.output_bytes;
    image.width = info.shape.width;
    image.height = info.shape.height;
    image.channels = info.shape.channels;
    image.patch = info.patch;
    image.subtract_green = info.subtract_green;
    // Sums of at most 2^32 files of at most 2^64 bytes: checked, not assumed.
    if (kMax - plan.input_bytes < file.size() || kMax - plan.output_bytes < image.pixel_bytes())
      throw Error(Errc::limit_exceeded, image_context(i) + ": batch larger than 2^64 bytes");
    plan.input_bytes += file.size();
    plan.output_bytes += image.pixel_bytes();
    plan.images.push_back(image);
  }

  // The work list: the table was validated by inspect(), so its offsets are trusted from here on.
  size_t total_tasks = 0;
  for (const BatchImage& image : plan.images) {
    const uint64_t px = (image.width + image.patch - 1) / image.patch;
    const uint64_t py = (image.height + image.patch - 1) / image.patch;
    total_tasks += px * py * image.channels;
  }
  plan.tasks.reserve(total_tasks);
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
    const uint32_t row_stride = image.width * image.channels;
    for (size_t p = 0; p < patches; ++p) {
      const uint32_t x0 = static_cast<uint32_t>(p % px) * n;
      const uint32_t y0 = static_cast<uint32_t>(p / px) * n;
      for (uint32_t c = 0; c < image.channels; ++c) {
        const uint8_t* entry = table + kTableEntryBytes * (c * patches + p);
        const uint32_t begin = p == 0 ? 0 : get_u32(entry - kTableEntryBytes);
        PatchTask t;
        t.src = image.src + channel_start[c] + begin;
        t.dst = image.dst + uint64_t{y0} * row_stride + uint64_t{x0} * image.channels;
        t.bytes = get_u32(entry) - begin;
        t.sum = get_u32(entry + 4);
        t.row_stride = row_stride;
        t.image = static_cast<uint32_t>(i);
        t.patch = static_cast<uint32_t>(p);
        t.width = static_cast<uint16_t>(std::min(n, image.width - x0));
        t.height = static_cast<uint16_t>(std::min(n, image.height - y0));
        t.channel = static_cast<uint8_t>(c);
        t.channels = static_cast<uint8_t>(image.channels);
        plan.max_patch_width = std::max<uint32_t>(plan.max_patch_width, t.width);
        plan.tasks.push_back(t);
      }
    }
  }
  return plan;
}

DecodeDevice parse_decode_device(std::string_view name) {
  if (name == "auto") return DecodeDevice::automatic;
  if (name == "cpu") return DecodeDevice::cpu;
  if (name == "cuda") return DecodeDevice::cuda;
  throw Error(Errc::invalid_argument,
              "unknown device '" + std::string(name) + "' (expected auto, cpu or cuda)");
}

Bytes BatchDecoder::decode(std::span<const ByteSpan> files, BatchPlan* plan_out) {
  BatchPlan plan = plan_batch(files);  // everything is validated before the allocation
  Bytes out(plan.output_bytes);
  decode(plan, files, out.data());
  if (plan_out != nullptr) *plan_out = std::move(plan);
  return out;
}

std::unique_ptr<BatchDecoder> make_batch_decoder_cpu(unsigned threads) {
  return std::make_unique<BatchDecoderCpu>(threads);
}

}  // namespace dlprep::l3
