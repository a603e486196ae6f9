// The CUDA batch decoder against the CPU reference, bit for bit (issue 4). A plain executable, not
// doctest: it probes the device once and exits 77 ("skipped: <reason>") when there is none, which
// ctest reports as skipped (SKIP_RETURN_CODE 77). Run it under compute-sanitizer (memcheck,
// racecheck, synccheck, initcheck) on a GPU machine: tests/bench/l3_cuda_bench.md.
//
// Suite: every channel count 1-4; 1x1, 1xN, Nx1 and sizes just below, at and above patch and
// group multiples for every patch size 8..256; flat, gradient, noise and mixed content (mixed and
// the width ladder make every width code 0-15 and every predictor occur, counted below); the
// golden file; batches of mixed sizes; every output layout (nhwc-u8, nchw-f32 and nchw-f16 with
// per-channel mean/std) with and without centre and random crops; the device-resident entry
// point (input already on the device); the overlapped pipeline (pageable and pinned inputs,
// several depths, low priority, a damaged batch in the middle; a kernel that waits for a
// caller's stream); damaged files reported with the CPU's exact message. Outputs are poisoned
// before each decode, so an element the backend never writes is a difference.
//
// --device cpu runs the whole suite with the CPU backend in the place of the CUDA one: it checks
// the test itself and the CPU backend's device-resident and pipeline paths where there is no GPU
// (registered as a unit test).
// Built a second time as l3_decode_emulated_cuda_test, with the CUDA backend compiled for the CPU
// emulation of tests/cuda/emulation/ (runtime and device): the whole suite then runs the
// kernel's own source and the backend's host code where there is no GPU (a unit test).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if DLPREP_L3_TEST_CALLER_STREAMS
#include <cuda_runtime.h>  // (the emulated runtime in the emulated test)

#include <chrono>
#include <thread>
#endif

#include "core/error.hpp"
#include "expect.hpp"
#include "l3/batch_decode.hpp"
#include "l3/batch_output.hpp"
#include "l3/format.hpp"
#include "l3/kernels.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

using testing::Content;
using testing::get_u32;
using testing::make_image;
using testing::put_u32;
using testing::width_ladder;

using ::dlprep::testing::failures;
/// --quick (for compute-sanitizer runs): patch sizes up to 64 and no FHD image.
bool quick = false;

// How often each width code and predictor occurs in the files of the suite (read from the layout).
uint64_t code_counts[16] = {};
uint64_t predictor_counts[kPredictors] = {};

void count_codes(const BatchPlan& plan, const std::vector<Bytes>& files) {
  for (const PatchTask& t : plan.tasks) {
    const uint8_t* p = files[t.image].data() + (t.src - plan.images[t.image].src);
    for (uint32_t y = 1; y < t.height; ++y) ++predictor_counts[predictor_code(p + 1, y)];
    const uint8_t* codes = p + 1 + predictor_bytes(t.height);
    for (uint32_t g = 0; g < groups_per_row(t.width) * t.height; ++g)
      ++code_counts[(codes[g / 2] >> (4 * (g % 2))) & 15];
  }
}

std::vector<ByteSpan> spans(const std::vector<Bytes>& files) {
  return std::vector<ByteSpan>(files.begin(), files.end());
}

// The reference: the CPU backend on 2 threads.
BatchDecoder& reference() {
  static const std::unique_ptr<BatchDecoder> cpu = make_batch_decoder_cpu(2);
  return *cpu;
}

constexpr uint8_t kPoison = 0xCD;

/// Decodes through the host API, or (device_resident) by uploading the files to device memory
/// and decoding there; the output (host and device) is poisoned first.
Bytes decode_with(BatchDecoder& d, const BatchPlan& plan, const std::vector<ByteSpan>& in,
                  bool device_resident) {
  Bytes out(plan.output_bytes, kPoison);
  if (!device_resident) {
    d.decode(plan, in, out.data());
    return out;
  }
  const auto device_in = d.allocate(MemoryKind::device, plan.input_bytes);
  // Every other batch into memory the backend lends (wrap), as a framework's tensor would be:
  // at an offset into a larger allocation.
  static bool lend = false;
  lend = !lend;
  const auto backing = d.allocate(MemoryKind::device, plan.output_bytes + (lend ? 64 : 0));
  const auto device_out =
      lend ? d.wrap(MemoryKind::device, backing->data() + 64, plan.output_bytes) : nullptr;
  BatchBuffer& target = lend ? *device_out : *backing;
  d.copy_in(target, 0, out.data(), out.size());
  d.upload(plan, in, *device_in);
  d.decode_device(plan, *device_in, target);
  d.copy_out(out.data(), target, 0, out.size());
  return out;
}

/// The first differing element of two tensors of `plan`, as image, x, y, channel.
std::string first_difference(const BatchPlan& plan, const Bytes& got, const Bytes& want) {
  const uint32_t size = element_bytes(plan.layout);
  for (size_t i = 0; i < plan.images.size(); ++i) {
    const BatchImage& b = plan.images[i];
    for (uint64_t e = 0; e < b.out_elements(); ++e) {
      const size_t at = b.dst + e * size;
      if (std::memcmp(got.data() + at, want.data() + at, size) == 0) continue;
      uint64_t x, y, c;
      if (plan.layout == OutputLayout::nhwc_u8) {
        c = e % b.channels;
        x = e / b.channels % b.out_width;
        y = e / b.channels / b.out_width;
      } else {
        x = e % b.out_width;
        y = e / b.out_width % b.out_height;
        c = e / b.out_width / b.out_height;
      }
      uint32_t g = 0, r = 0;
      std::memcpy(&g, got.data() + at, size);
      std::memcpy(&r, want.data() + at, size);
      char text[256];
      std::snprintf(text, sizeof text,
                    "image %zu (%ux%ux%u, patch %u, window %ux%u at %u,%u): first difference at "
                    "window x=%llu y=%llu c=%llu: device 0x%x, cpu 0x%x",
                    i, b.width, b.height, b.channels, b.patch, b.out_width, b.out_height, b.crop_x,
                    b.crop_y, static_cast<unsigned long long>(x),
                    static_cast<unsigned long long>(y), static_cast<unsigned long long>(c), g, r);
      return text;
    }
  }
  return "no element differs";
}

/// One way to decode a batch: a layout, a crop, the host or the device-resident entry point.
struct Variant {
  const char* name;
  OutputLayout layout;
  CropMode crop;
  bool device_resident;
  bool in_quick;  ///< also under --quick (the sanitizer runs)
};
constexpr Variant kVariants[] = {
    {"nhwc-u8", OutputLayout::nhwc_u8, CropMode::none, false, true},
    {"nhwc-u8 device-resident", OutputLayout::nhwc_u8, CropMode::none, true, false},
    {"nchw-f32", OutputLayout::nchw_f32, CropMode::none, false, false},
    {"nchw-f16 centre crop", OutputLayout::nchw_f16, CropMode::center, false, true},
    {"nhwc-u8 random crop", OutputLayout::nhwc_u8, CropMode::random, false, true},
    {"nchw-f32 random crop device-resident", OutputLayout::nchw_f32, CropMode::random, true, false},
};

uint64_t batches_checked = 0;

DecodeOptions options_for(const Variant& v, const std::vector<Image>& images) {
  DecodeOptions o;
  o.layout = v.layout;
  if (v.layout != OutputLayout::nhwc_u8) {  // ImageNet's constants, and some for alpha
    o.mean = {123.675f, 116.28f, 103.53f, 127.5f};
    o.std = {58.395f, 57.12f, 57.375f, 64.0f};
  }
  o.crop = v.crop;
  if (v.crop != CropMode::none && !images.empty()) {
    // Two thirds of the smallest side of the batch, so that windows cut patches and groups.
    uint32_t w = UINT32_MAX, h = UINT32_MAX;
    for (const Image& image : images) {
      w = std::min(w, image.width());
      h = std::min(h, image.height());
    }
    o.crop_width = std::max(1u, w * 2 / 3);
    o.crop_height = std::max(1u, h * 2 / 3);
    o.seed = ++batches_checked;
  }
  return o;
}

// Decodes a batch on both backends in every variant; the tensors must be equal, and the
// uncropped nhwc-u8 tensor equal to the source images.
void check_batch(BatchDecoder& gpu, const std::vector<Image>& images,
                 const std::vector<Bytes>& files, const std::string& what) {
  const std::vector<ByteSpan> in = spans(files);
  for (const Variant& v : kVariants) {
    if (quick && !v.in_quick) continue;
    const std::string name = what + ", " + v.name;
    BatchPlan plan;
    Bytes want, got;
    try {
      plan = plan_batch(in, options_for(v, images));
      want = decode_with(reference(), plan, in, false);
      got = decode_with(gpu, plan, in, v.device_resident);
    } catch (const Error& e) {
      EXPECT(false, "%s: %s", name.c_str(), e.what());
      continue;
    }
    if (&v == &kVariants[0]) {
      count_codes(plan, files);
      for (size_t i = 0; i < images.size(); ++i)
        if (std::memcmp(want.data() + plan.images[i].dst, images[i].data(),
                        images[i].size_bytes()) != 0)
          EXPECT(false, "%s: image %zu: the CPU reference does not round-trip", name.c_str(), i);
    }
    EXPECT(got == want, "%s: %s", name.c_str(), first_difference(plan, got, want).c_str());
  }
}

// A damaged batch must throw corrupt_data on both backends with the same message.
void check_rejected(BatchDecoder& gpu, const std::vector<Bytes>& files, const std::string& what) {
  std::string cpu_message, gpu_message;
  try {
    (void)make_batch_decoder_cpu(1)->decode(spans(files));
  } catch (const Error& e) {
    EXPECT(e.code() == Errc::corrupt_data, "%s: cpu: %s", what.c_str(), e.what());
    cpu_message = e.what();
  }
  try {
    (void)gpu.decode(spans(files));
    EXPECT(false, "%s: the cuda decoder accepted a damaged file", what.c_str());
  } catch (const Error& e) {
    EXPECT(e.code() == Errc::corrupt_data, "%s: cuda: %s", what.c_str(), e.what());
    gpu_message = e.what();
  }
  EXPECT(!cpu_message.empty(), "%s: the cpu decoder accepted a damaged file", what.c_str());
  EXPECT(cpu_message == gpu_message, "%s: cpu '%s', cuda '%s'", what.c_str(), cpu_message.c_str(),
         gpu_message.c_str());
  // The device-resident entry point reports the same failure.
  std::string device_message;
  try {
    const BatchPlan plan = plan_batch(spans(files));
    (void)decode_with(gpu, plan, spans(files), true);
    EXPECT(false, "%s: decode_device accepted a damaged file", what.c_str());
  } catch (const Error& e) {
    device_message = e.what();
  }
  EXPECT(cpu_message == device_message, "%s: cpu '%s', decode_device '%s'", what.c_str(),
         cpu_message.c_str(), device_message.c_str());
}

// Where patch `patch` of channel `c` lies in `file`, and its table entry.
struct PatchRef {
  size_t start, size, entry;
};
PatchRef find_patch(const Bytes& file, uint32_t c, size_t patch) {
  const std::vector<ByteSpan> in = {ByteSpan(file)};
  const BatchPlan plan = plan_batch(in);
  for (const PatchTask& t : plan.tasks)
    if (t.channel == c && t.patch == patch) {
      const size_t patches = plan.tasks.size() / plan.images[0].channels;
      return {static_cast<size_t>(t.src), t.bytes,
              kHeaderBytes + kTableEntryBytes * (c * patches + patch)};
    }
  std::abort();
}

// Rewrites the patch's checksum in the table and the header checksum, so that the checks after
// the checksums (code padding, payload size) are what the damaged file exercises.
void resign_patch(Bytes& file, const PatchRef& ref) {
  const auto& k = detail::kScalarKernels;
  put_u32(&file[ref.entry + 4], k.adler32(1, file.data() + ref.start, ref.size));
  const uint32_t channels = file[kOffChannels], patch = 1u << file[kOffPatchLog2];
  const uint32_t w = get_u32(&file[kOffWidth]), h = get_u32(&file[kOffHeight]);
  const size_t table =
      kTableEntryBytes * channels * ((w + patch - 1) / patch) * ((h + patch - 1) / patch);
  testing::resign_header(file, table);
}

Bytes read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// What the cuda backend's wrap() refuses: memory that is not of the kind it is lent as.
void check_wrap_refusals(BatchDecoder& gpu) {
  if (gpu.device_name() != "cuda") return;  // the cpu backend's memory is all the host's
  std::vector<uint8_t> host(256);
  const auto device = gpu.allocate(MemoryKind::device, 256);
  const auto pinned = gpu.allocate(MemoryKind::pinned_host, 256);
  const struct {
    MemoryKind kind;
    void* data;
    size_t bytes;
    const char* what;
  } cases[] = {{MemoryKind::device, host.data(), host.size(), "host memory, not device memory"},
               {MemoryKind::device, pinned->data(), 256, "page-locked host memory"},
               {MemoryKind::pinned_host, device->data(), 256, "not page-locked host memory"},
               {MemoryKind::pinned_host, host.data(), host.size(), "not page-locked host memory"}};
  for (const auto& c : cases) {
    std::string message;
    try {
      gpu.wrap(c.kind, c.data, c.bytes);
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT(message.find(c.what) != std::string::npos, "wrap: '%s' for a case of '%s'",
           message.c_str(), c.what);
  }
  gpu.wrap(MemoryKind::device, device->data() + 8, 248);
  gpu.wrap(MemoryKind::pinned_host, pinned->data(), 256);
}

void run_suite(BatchDecoder& gpu) {
  const Content contents[] = {Content::flat, Content::gradient, Content::noise, Content::mixed};
  const char* content_names[] = {"flat", "gradient", "noise", "mixed"};

  // Every patch size with sizes around its multiples, all channel counts, one batch per patch
  // size and channel count (images of different sizes share the tensor).
  for (uint32_t patch = 8; patch <= (quick ? 64u : 256u); patch *= 2) {
    for (uint32_t c = 1; c <= 4; ++c) {
      std::vector<Image> images;
      std::vector<Bytes> files;
      const uint32_t sides[] = {1, 2, patch - 1, patch, patch + 1, 2 * patch - 1, 2 * patch + 3};
      uint32_t seed = patch * 10 + c;
      for (uint32_t w : sides)
        for (uint32_t h : sides) {
          // Keep the largest batches small: only a few 2-patch-wide shapes at 256.
          if (patch == 256 && w > 2 * patch - 1 && h > 2) continue;
          const Content content = contents[seed % 4];
          images.push_back(make_image(w, h, c, content, seed++));
          files.push_back(encode(images.back(), {patch, 1}));
        }
      check_batch(gpu, images, files,
                  "patch " + std::to_string(patch) + ", " + std::to_string(c) + " channels");
    }
  }

  // Each content on its own, 1xN and Nx1 strips, groups of 16 +- 1.
  for (size_t k = 0; k < 4; ++k)
    for (uint32_t c = 1; c <= 4; ++c) {
      std::vector<Image> images;
      std::vector<Bytes> files;
      for (const auto& [w, h] : std::vector<std::pair<uint32_t, uint32_t>>{
               {1, 1}, {1, 300}, {300, 1}, {15, 17}, {16, 16}, {17, 15}, {33, 47}, {97, 65}}) {
        images.push_back(make_image(w, h, c, contents[k], 1000 + w + h + c));
        files.push_back(encode(images.back(), {32, 1}));
      }
      check_batch(gpu, images, files,
                  std::string(content_names[k]) + ", " + std::to_string(c) + " channels");
    }

  // Narrow images alone: every patch of the batch taller than its widest (what the kernel keeps
  // per row is sized by the tallest).
  for (uint32_t patch : {16u, 64u, 256u}) {
    if (quick && patch > 64) continue;
    for (uint32_t c : {1u, 3u}) {
      std::vector<Image> images;
      std::vector<Bytes> files;
      for (uint32_t w : {1u, 2u, 5u, 15u})
        for (uint32_t h : {patch, 2 * patch + 3}) {
          images.push_back(make_image(w, h, c, contents[(w + h) % 4], 2000 + w + h + c));
          files.push_back(encode(images.back(), {patch, 1}));
        }
      check_batch(
          gpu, images, files,
          "narrow, patch " + std::to_string(patch) + ", " + std::to_string(c) + " channels");
    }
  }

  // Every width code and every predictor; a large image at the automatic patch size.
  {
    std::vector<Image> images;
    std::vector<Bytes> files;
    for (uint32_t c = 1; c <= 4; ++c) {
      images.push_back(width_ladder(c));
      files.push_back(encode(images.back(), {64, 1}));
      images.push_back(make_image(256, 96, c, Content::mixed, 5));
      files.push_back(encode(images.back(), {64, 1}));
    }
    if (!quick) {
      images.push_back(make_image(1920, 1080, 3, Content::mixed, 7));
      files.push_back(encode(images.back(), {}));
    }
    check_batch(gpu, images, files, "width ladder, mixed, FHD");
  }

  // The golden file.
  {
    const Bytes golden =
        read_all(std::filesystem::path(DLPREP_L3_TEST_DATA) / "golden_37x21_rgb_p16.l3");
    std::vector<Bytes> files = {golden};
    std::vector<Image> images;
    images.push_back(decode(golden));
    check_batch(gpu, images, files, "golden file");
  }

  for (size_t i = 0; i < 16; ++i) EXPECT(code_counts[i] > 0, "width code %zu never occurred", i);
  for (size_t i = 0; i < kPredictors; ++i)
    EXPECT(predictor_counts[i] > 0, "predictor %zu never occurred", i);

  // An empty batch is an empty tensor.
  EXPECT(gpu.decode(std::vector<ByteSpan>{}).empty(), "empty batch");

  // Damaged files: reported with image, channel and patch, never decoded.
  const Bytes good = encode(make_image(19, 11, 3, Content::mixed, 5), {8, 1});
  const Bytes other = encode(make_image(40, 30, 4, Content::noise, 6), {16, 1});
  {
    Bytes bad = good;
    bad[bad.size() - 1] ^= 0x10;  // the last patch of the last channel: checksum
    check_rejected(gpu, {other, good, bad}, "checksum of the last patch");
    for (size_t bit = 0; bit < 8 * 64; bit += quick ? 37 : 7) {  // flips over the first patches
      Bytes flipped = good;
      const size_t data = kHeaderBytes + kTableEntryBytes * 3 * 6;
      flipped[data + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      check_rejected(gpu, {flipped}, "bit flip " + std::to_string(bit));
    }
  }
  {
    // 19x11 at patch 8: patch 2 is 3x8 (1 group a row, 8 groups: even) and patch 5 is 3x3
    // (3 groups: odd, so its last width-code byte has padding bits; 2 predictor rows = 6 bits).
    Bytes bad = good;
    const PatchRef ref = find_patch(bad, 1, 5);
    bad[ref.start + 1 + predictor_bytes(3) + 1] |= 0x80;  // width-code padding
    resign_patch(bad, ref);
    check_rejected(gpu, {other, bad}, "width-code padding");
  }
  {
    Bytes bad = good;
    const PatchRef ref = find_patch(bad, 2, 5);
    bad[ref.start + 1] |= 0x80;  // predictor padding: bits 6-7 of the only predictor byte
    resign_patch(bad, ref);
    check_rejected(gpu, {bad}, "predictor padding");
  }
  {
    Bytes bad = good;
    const PatchRef ref = find_patch(bad, 0, 0);
    const size_t codes = ref.start + 1 + predictor_bytes(8);
    bad[codes] = static_cast<uint8_t>((bad[codes] & 0xF0) | ((bad[codes] & 0x0F) == 8 ? 7 : 8));
    resign_patch(bad, ref);
    check_rejected(gpu, {good, bad}, "payload size");
  }
}

// The overlapped pipeline: several batches of different shapes and layouts through depths 1-3,
// inputs from pageable files and from pinned buffers, a damaged batch in the middle (reported
// with the CPU's message, after which the pipeline goes on), every tensor equal to the CPU's.
void run_pipeline_suite(BatchDecoder& gpu) {
  struct Job {
    std::vector<Bytes> files;
    BatchPlan plan;
    Bytes want;
    std::string error;  // the CPU's message when the batch is damaged
  };
  std::vector<Job> jobs;
  const Variant* variants[] = {&kVariants[0], &kVariants[2], &kVariants[3], &kVariants[4]};
  for (uint32_t b = 0; b < 7; ++b) {
    Job job;
    std::vector<Image> images;
    const uint32_t count = 1 + b % 4;
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t w = 40 + 37 * ((b + i) % 5), h = 20 + 29 * ((b * 3 + i) % 4);
      images.push_back(make_image(w, h, 1 + (b + i) % 4, Content::mixed, 500 + 10 * b + i));
      job.files.push_back(encode(images.back(), {8u << ((b + i) % 4), 1}));
    }
    if (b == 4 && !quick) {
      images.push_back(make_image(1920, 1080, 3, Content::mixed, 8));
      job.files.push_back(encode(images.back(), {}));
    }
    if (b == 4) job.files.back()[job.files.back().size() - 2] ^= 0x04;  // a damaged batch
    if (b == 6 && !quick) {
      // Over 1 MiB of files from pageable memory: the pipeline stages them in 1 MiB pieces on
      // several threads (pipeline_cuda.cu), a piece ending inside this file.
      images.push_back(make_image(900, 500, 3, Content::noise, 9));
      job.files.push_back(encode(images.back(), {}));
      images.push_back(make_image(61, 33, 2, Content::mixed, 10));
      job.files.push_back(encode(images.back(), {16, 1}));
    }
    job.plan = plan_batch(spans(job.files), options_for(*variants[b % 4], images));
    job.want = Bytes(job.plan.output_bytes, kPoison);
    try {
      reference().decode(job.plan, spans(job.files), job.want.data());
    } catch (const Error& e) {
      job.error = e.what();
    }
    jobs.push_back(std::move(job));
  }
  EXPECT(!jobs[4].error.empty(), "the damaged batch decoded on the cpu");

  for (unsigned depth : {1u, 2u, 3u}) {
    if (quick && depth == 3) continue;
    PipelineOptions options;
    options.depth = depth;
    options.low_priority = depth == 3;
    // The buffers outlive the pipeline, so that a batch still queued never reads or writes
    // freed memory when a check throws.
    std::vector<std::unique_ptr<BatchBuffer>> outs, pinned;
    const auto pipeline = gpu.make_pipeline(options);
    for (const Job& job : jobs) {
      outs.push_back(gpu.allocate(MemoryKind::device, job.plan.output_bytes));
      const Bytes poison(job.plan.output_bytes, kPoison);
      gpu.copy_in(*outs.back(), 0, poison.data(), poison.size());
      // Odd batches come from pinned memory that already holds the batch input.
      pinned.push_back(gpu.allocate(MemoryKind::pinned_host, job.plan.input_bytes));
      for (size_t i = 0; i < job.files.size(); ++i)
        gpu.copy_in(*pinned.back(), job.plan.images[i].src, job.files[i].data(),
                    job.files[i].size());
    }
    size_t next_wait = 0;
    auto wait_one = [&] {
      const Job& job = jobs[next_wait];
      try {
        const BatchResult r = pipeline->wait();
        EXPECT(r.ticket == next_wait, "depth %u: ticket %llu, expected %zu", depth,
               static_cast<unsigned long long>(r.ticket), next_wait);
        EXPECT(job.error.empty(), "depth %u: batch %zu: damaged batch accepted", depth, next_wait);
        EXPECT(r.timings.decode_ms >= 0 && r.timings.h2d_ms >= 0, "depth %u: negative time", depth);
        Bytes got(job.plan.output_bytes);
        gpu.copy_out(got.data(), *outs[next_wait], 0, got.size());
        EXPECT(got == job.want, "depth %u: batch %zu: %s", depth, next_wait,
               first_difference(job.plan, got, job.want).c_str());
      } catch (const Error& e) {
        EXPECT(e.what() == job.error, "depth %u: batch %zu: '%s', cpu '%s'", depth, next_wait,
               e.what(), job.error.c_str());
      }
      ++next_wait;
    };
    try {
      for (size_t b = 0; b < jobs.size(); ++b) {
        if (pipeline->in_flight() == depth) wait_one();
        const uint64_t ticket =
            b % 2 == 1 ? pipeline->submit(jobs[b].plan, *pinned[b], *outs[b])
                       : pipeline->submit(jobs[b].plan, spans(jobs[b].files), *outs[b]);
        EXPECT(ticket == b, "depth %u: submit returned ticket %llu for batch %zu", depth,
               static_cast<unsigned long long>(ticket), b);
      }
      while (pipeline->in_flight() > 0) wait_one();
      EXPECT(next_wait == jobs.size(), "depth %u: %zu batches came back", depth, next_wait);
    } catch (const Error& e) {
      EXPECT(false, "depth %u: %s", depth, e.what());
    }
  }

  // Device-resident decode is timed by the backend; on the GPU the kernel takes some time.
  const Job& job = jobs[0];
  try {
    (void)decode_with(gpu, job.plan, spans(job.files), true);
    const DecodeTimings t = gpu.last_timings();
    EXPECT(t.decode_ms > 0 || gpu.device_name() == "cpu", "no kernel time: %f ms", t.decode_ms);
  } catch (const Error& e) {
    EXPECT(false, "timings: %s", e.what());
  }
}

#if DLPREP_L3_TEST_CALLER_STREAMS
// Sleeps on a caller's stream so that the work queued after it runs late: without the wait the
// pipeline's kernel would run first on a GPU, and it always does on the emulated one.
void CUDART_CB hold_stream(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

// A batch decoded into memory that a caller's stream still writes (a training stream's last use
// of a reused tensor): order_after_stream() makes the kernel wait for that work, so the decoded
// pixels are what remains. A caller's own stream, and the legacy default stream (handle 1).
void check_pipeline_waits_for_caller_streams(BatchDecoder& gpu) {
  if (gpu.device_name() != "cuda") return;
  const Image image = make_image(200, 120, 3, Content::mixed, 71);
  const Bytes file = encode(image, {});
  const std::vector<ByteSpan> in = {ByteSpan(file)};
  const BatchPlan plan = plan_batch(in);
  const Bytes want = decode_with(reference(), plan, in, false);
  const auto out = gpu.allocate(MemoryKind::device, plan.output_bytes);
  for (const bool legacy : {false, true}) {
    cudaStream_t caller = cudaStreamLegacy;
    if (!legacy && cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking) != cudaSuccess) {
      EXPECT(false, "caller stream: cannot create one");
      return;
    }
    bool queued = cudaLaunchHostFunc(caller, hold_stream, nullptr) == cudaSuccess &&
                  cudaMemsetAsync(out->data(), 0x5A, plan.output_bytes, caller) == cudaSuccess;
    try {
      const auto pipeline = gpu.make_pipeline();
      pipeline->order_after_stream(reinterpret_cast<std::uintptr_t>(caller));
      (void)pipeline->submit(plan, in, *out);
      (void)pipeline->wait();
    } catch (const Error& e) {
      EXPECT(false, "caller stream: %s", e.what());
    }
    queued = cudaStreamSynchronize(caller) == cudaSuccess && queued;
    EXPECT(queued, "caller stream: its work failed");
    Bytes got(plan.output_bytes);
    gpu.copy_out(got.data(), *out, 0, got.size());
    EXPECT(got == want, "%s stream: the caller's later write won: %s",
           legacy ? "the legacy default" : "a caller's", first_difference(plan, got, want).c_str());
    if (!legacy) (void)cudaStreamDestroy(caller);
  }
}
#endif

// A damaged patch outside a crop is never read, on any backend.
void check_crop_skips_damage(BatchDecoder& gpu) {
  const Image image = make_image(96, 64, 3, Content::mixed, 61);
  Bytes file = encode(image, {16, 1});
  const std::vector<ByteSpan> in = {ByteSpan(file)};
  const BatchPlan all = plan_batch(in);
  for (const PatchTask& t : all.tasks)  // patch 0 (top left) of every channel
    if (t.patch == 0) file[t.src + t.bytes - 1] ^= 0x01;
  DecodeOptions o;
  o.crop = CropMode::center;
  o.crop_width = 32;
  o.crop_height = 16;
  o.layout = OutputLayout::nchw_f16;
  const BatchPlan plan = plan_batch(in, o);
  try {
    const Bytes want = decode_with(reference(), plan, in, false);
    const Bytes got = decode_with(gpu, plan, in, false);
    EXPECT(got == want, "crop over damage: %s", first_difference(plan, got, want).c_str());
  } catch (const Error& e) {
    EXPECT(false, "crop over damage: %s", e.what());
  }
}

}  // namespace
}  // namespace dlprep::l3

int main(int argc, char** argv) {
  using namespace dlprep;
  std::string device = "cuda";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      l3::quick = true;
    } else if (arg == "--device" && i + 1 < argc &&
               (std::string(argv[i + 1]) == "cuda" || std::string(argv[i + 1]) == "cpu")) {
      device = argv[++i];
    } else {
      std::fprintf(stderr, "usage: l3_decode_cuda_test [--quick] [--device cuda|cpu]\n");
      return 2;
    }
  }
  ::unsetenv("DLPREP_FORCE_DEVICE");  // this test chooses its backend, whatever the caller set
  std::unique_ptr<l3::BatchDecoder> decoder;
  try {
    if (device == "cpu") {
      decoder = l3::make_batch_decoder_cpu(3);
    } else {
      const std::string reason = l3::cuda_unavailable_reason();
      if (!reason.empty()) {
        std::printf("skipped: %s\n", reason.c_str());
        return 77;
      }
      decoder = l3::make_batch_decoder(l3::DecodeDevice::cuda);
      if (decoder->device_name() != "cuda") {
        std::fprintf(stderr, "FAIL: asked for cuda, got %s\n",
                     std::string(decoder->device_name()).c_str());
        return 1;
      }
    }
    std::printf("l3 decode test on %s\n", decoder->device_description().c_str());
    l3::check_wrap_refusals(*decoder);
    l3::run_suite(*decoder);
    l3::run_pipeline_suite(*decoder);
    l3::check_crop_skips_damage(*decoder);
#if DLPREP_L3_TEST_CALLER_STREAMS
    l3::check_pipeline_waits_for_caller_streams(*decoder);
#endif
  } catch (const Error& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
  if (l3::failures != 0) {
    std::fprintf(stderr, "%d failures\n", l3::failures);
    return 1;
  }
  std::printf("l3 decode on %s: all checks passed\n", device.c_str());
  return 0;
}
