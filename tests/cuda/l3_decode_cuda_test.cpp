// The CUDA batch decoder against the CPU reference, bit for bit (issue 4). A plain executable, not
// doctest: it probes the device once and exits 77 ("skipped: <reason>") when there is none, which
// ctest reports as skipped (SKIP_RETURN_CODE 77). Run it under compute-sanitizer (memcheck,
// racecheck) on a GPU machine: tests/bench/l3_cuda_bench.md.
//
// Suite: every channel count 1-4; 1x1, 1xN, Nx1 and sizes just below, at and above patch and
// group multiples for every patch size 8..256; flat, gradient, noise and mixed content (mixed and
// the width ladder make every width code 0-15 and every predictor occur, counted below); the
// golden file; batches of mixed sizes; damaged files reported with the CPU's exact message.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "l3/batch_decode.hpp"
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

int failures = 0;
/// --quick (for compute-sanitizer runs): patch sizes up to 64 and no FHD image.
bool quick = false;

#define EXPECT(cond, ...)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ++failures;                                                          \
      std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                   \
      std::fprintf(stderr, "\n");                                          \
    }                                                                      \
  } while (0)

// Rows that are the row above plus a per-group offset and noise of a chosen width, so that every
// width code appears (the same construction as tests/unit/l3/format_test.cpp).
Image width_ladder(uint32_t c) {
  const uint32_t w = 16 * 16, h = 64;
  Image image(w, h, c);
  std::mt19937 rng(77);
  for (uint32_t x = 0; x < w * c; ++x) image.row(0)[x] = static_cast<uint8_t>(x * 7);
  for (uint32_t y = 1; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x)
      for (uint32_t k = 0; k < c; ++k) {
        const uint32_t code = (x / 16 + y) % 16;
        const uint32_t width = code_width(code);
        const int32_t offset = code_explicit(code) ? 90 : 0;
        const int32_t noise =
            width == 0 ? 0 : static_cast<int32_t>(rng() % (1u << width)) - (1 << (width - 1));
        image.row(y)[x * c + k] =
            static_cast<uint8_t>(image.row(y - 1)[x * c + k] + offset + noise);
      }
  return image;
}

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

// Decodes a batch on both backends; the tensors must be equal, and equal to the source images.
void check_batch(BatchDecoder& gpu, const std::vector<Image>& images,
                 const std::vector<Bytes>& files, const std::string& what) {
  const std::vector<ByteSpan> in = spans(files);
  BatchPlan plan;
  Bytes want, got;
  try {
    want = make_batch_decoder_cpu(2)->decode(in, &plan);
    got = gpu.decode(in);
  } catch (const Error& e) {
    EXPECT(false, "%s: %s", what.c_str(), e.what());
    return;
  }
  count_codes(plan, files);
  EXPECT(got.size() == want.size(), "%s: %zu vs %zu bytes", what.c_str(), got.size(), want.size());
  if (got.size() != want.size()) return;
  for (size_t i = 0; i < images.size(); ++i) {
    const BatchImage& b = plan.images[i];
    const Image& image = images[i];
    if (std::memcmp(want.data() + b.dst, image.data(), image.size_bytes()) != 0)
      EXPECT(false, "%s: image %zu: the CPU reference does not round-trip", what.c_str(), i);
    const uint8_t* g = got.data() + b.dst;
    const uint8_t* r = want.data() + b.dst;
    for (size_t k = 0; k < image.size_bytes(); ++k) {
      if (g[k] != r[k]) {
        const size_t px = k / b.channels;
        EXPECT(false,
               "%s: image %zu (%ux%ux%u, patch %u): first difference at x=%zu y=%zu c=%zu: "
               "cuda %u, cpu %u",
               what.c_str(), i, b.width, b.height, b.channels, b.patch, px % b.width, px / b.width,
               k % b.channels, g[k], r[k]);
        break;
      }
    }
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
    for (size_t bit = 0; bit < 8 * 64; bit += 7) {  // flips across the first patches' data
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

}  // namespace
}  // namespace dlprep::l3

int main(int argc, char** argv) {
  using namespace dlprep;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") {
      l3::quick = true;
    } else {
      std::fprintf(stderr, "usage: l3_decode_cuda_test [--quick]\n");
      return 2;
    }
  }
  ::unsetenv(
      "DLPREP_FORCE_DEVICE");  // this test is about the CUDA backend, whatever the caller set
  const std::string reason = l3::cuda_unavailable_reason();
  if (!reason.empty()) {
    std::printf("skipped: %s\n", reason.c_str());
    return 77;
  }
  try {
    const auto gpu = l3::make_batch_decoder(l3::DecodeDevice::cuda);
    if (gpu->device_name() != "cuda") {
      std::fprintf(stderr, "FAIL: asked for cuda, got %s\n",
                   std::string(gpu->device_name()).c_str());
      return 1;
    }
    l3::run_suite(*gpu);
  } catch (const Error& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
  if (l3::failures != 0) {
    std::fprintf(stderr, "%d failures\n", l3::failures);
    return 1;
  }
  std::printf("l3 cuda decode: all checks passed\n");
  return 0;
}
