// The host half of the batch decoder, which needs no GPU: plan_batch() (validation and the work
// list every backend consumes), the CPU backend (the oracle of tests/cuda), and the registry's
// device choice (DLPREP_FORCE_DEVICE, device_unavailable).
#include "l3/batch_decode.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "l3/format.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

using testing::Content;
using testing::get_u32;
using testing::make_image;

// Sets an environment variable for the scope of a test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

struct Batch {
  std::vector<Image> images;
  std::vector<Bytes> files;
  std::vector<ByteSpan> spans() const { return {files.begin(), files.end()}; }
};

Batch mixed_batch() {
  Batch b;
  const struct {
    uint32_t w, h, c, patch;
    Content content;
  } shapes[] = {{1, 1, 1, 8, Content::flat},     {37, 21, 3, 16, Content::mixed},
                {64, 64, 4, 32, Content::noise}, {300, 1, 2, 256, Content::gradient},
                {1, 129, 3, 64, Content::mixed}, {65, 33, 1, 32, Content::gradient}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    b.images.push_back(make_image(s.w, s.h, s.c, s.content, seed++));
    b.files.push_back(encode(b.images.back(), {s.patch, 1}));
  }
  return b;
}

TEST_CASE("plan_batch lays the images out back to back in input and output") {
  const Batch b = mixed_batch();
  const BatchPlan plan = plan_batch(b.spans());
  REQUIRE(plan.images.size() == b.images.size());
  uint64_t src = 0, dst = 0;
  for (size_t i = 0; i < b.images.size(); ++i) {
    CAPTURE(i);
    const BatchImage& image = plan.images[i];
    CHECK(image.src == src);
    CHECK(image.dst == dst);
    CHECK(image.file_bytes == b.files[i].size());
    CHECK(image.width == b.images[i].width());
    CHECK(image.height == b.images[i].height());
    CHECK(image.channels == b.images[i].channels());
    CHECK(image.patch == (1u << b.files[i][kOffPatchLog2]));
    CHECK((image.subtract_green != 0) == inspect(b.files[i]).subtract_green);
    src += b.files[i].size();
    dst += b.images[i].size_bytes();
  }
  CHECK(plan.input_bytes == src);
  CHECK(plan.output_bytes == dst);
}

TEST_CASE("the work list has one entry per image, patch and channel, matching the patch table") {
  const Batch b = mixed_batch();
  const BatchPlan plan = plan_batch(b.spans());
  size_t t = 0;
  uint32_t widest = 0, tallest = 0, most_groups = 0;
  std::vector<uint64_t> firsts;
  for (size_t i = 0; i < b.images.size(); ++i) {
    const BatchImage& image = plan.images[i];
    const FileInfo info = inspect(b.files[i]);
    const uint32_t n = image.patch, px = (image.width + n - 1) / n, py = (image.height + n - 1) / n;
    const size_t patches = size_t{px} * py;
    const uint8_t* file = b.files[i].data();
    uint64_t channel_start[4] = {kHeaderBytes + kTableEntryBytes * image.channels * patches};
    for (uint32_t c = 1; c < image.channels; ++c)
      channel_start[c] = channel_start[c - 1] + info.channel_bytes[c - 1];
    for (size_t p = 0; p < patches; ++p) {
      firsts.push_back(t);
      for (uint32_t c = 0; c < image.channels; ++c, ++t) {
        CAPTURE(i);
        CAPTURE(p);
        CAPTURE(c);
        REQUIRE(t < plan.tasks.size());
        const PatchTask& task = plan.tasks[t];
        const uint8_t* entry = file + kHeaderBytes + kTableEntryBytes * (c * patches + p);
        const uint32_t begin = p == 0 ? 0 : get_u32(entry - kTableEntryBytes);
        const uint32_t x0 = static_cast<uint32_t>(p % px) * n,
                       y0 = static_cast<uint32_t>(p / px) * n;
        CHECK(task.image == i);
        CHECK(task.patch == p);
        CHECK(task.channel == c);
        CHECK(task.channels == image.channels);
        CHECK(task.src == image.src + channel_start[c] + begin);
        CHECK(task.bytes == get_u32(entry) - begin);
        CHECK(task.sum == get_u32(entry + 4));
        CHECK(task.x0 == x0);
        CHECK(task.y0 == y0);
        CHECK(task.width == std::min(n, image.width - x0));
        CHECK(task.height == std::min(n, image.height - y0));
        CHECK(task.bytes >= patch_head_bytes(task.width, task.height));
        CHECK(task.src + task.bytes <= image.src + image.file_bytes);
        widest = std::max<uint32_t>(widest, task.width);
        tallest = std::max<uint32_t>(tallest, task.height);
        most_groups = std::max(most_groups, groups_per_row(task.width) * task.height);
      }
    }
  }
  CHECK(t == plan.tasks.size());
  CHECK(plan.patch_first_task == firsts);
  CHECK(plan.max_patch_width == widest);
  CHECK(plan.max_patch_height == tallest);
  CHECK(plan.max_groups == most_groups);
  CHECK(plan.max_channels == 4);
  CHECK(plan.pixel_bytes == plan.output_bytes);
}

TEST_CASE("the CPU batch decoder equals l3::decode for a batch of mixed sizes") {
  const Batch b = mixed_batch();
  const auto cpu = make_batch_decoder_cpu(2);
  CHECK(cpu->device_name() == "cpu");
  BatchPlan plan;
  const Bytes tensor = cpu->decode(b.spans(), &plan);
  REQUIRE(tensor.size() == plan.output_bytes);
  for (size_t i = 0; i < b.files.size(); ++i) {
    CAPTURE(i);
    const Image image = decode(b.files[i]);
    REQUIRE(image.same_pixels(b.images[i]));
    CHECK(std::equal(image.data(), image.data() + image.size_bytes(),
                     tensor.data() + plan.images[i].dst));
  }
  CHECK(cpu->decode(std::vector<ByteSpan>{}).empty());
}

TEST_CASE("a bad header or a damaged patch is reported with the image's index") {
  Batch b = mixed_batch();
  Bytes truncated = b.files[2];
  truncated.pop_back();
  std::vector<ByteSpan> in = b.spans();
  in[2] = truncated;
  try {
    (void)plan_batch(in);
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()).starts_with("image 2: l3: truncated"));
  }

  Bytes damaged = encode(make_image(19, 11, 3, Content::mixed, 5), {8, 1});
  damaged.back() ^= 0x10;  // the last patch of the last channel
  in = b.spans();
  in[4] = damaged;
  try {
    (void)make_batch_decoder_cpu(1)->decode(in);
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()) == "image 4: l3: patch 5 of channel 2: checksum mismatch");
  }
}

// The tensor element of channel c at image pixel (x, y), computed from the source image alone.
float expected_value(const Image& image, const BatchPlan& plan, uint32_t x, uint32_t y,
                     uint32_t c) {
  const uint8_t v = image.row(y)[x * image.channels() + c];
  const float centred = static_cast<float>(static_cast<double>(v) - plan.mean[c]);
  return static_cast<float>(static_cast<double>(centred) * plan.scale[c]);
}

// Checks every element of every window of `tensor` against the source images.
void check_tensor(const Batch& b, const BatchPlan& plan, const Bytes& tensor) {
  REQUIRE(tensor.size() == plan.output_bytes);
  for (size_t i = 0; i < b.images.size(); ++i) {
    CAPTURE(i);
    const BatchImage& w = plan.images[i];
    const uint8_t* window = tensor.data() + w.dst;
    size_t bad = 0;
    for (uint32_t oy = 0; oy < w.out_height; ++oy)
      for (uint32_t ox = 0; ox < w.out_width; ++ox)
        for (uint32_t c = 0; c < w.channels; ++c) {
          const uint32_t x = w.crop_x + ox, y = w.crop_y + oy;
          // NHWC for bytes, NCHW for floats: the layouts' definition, written out.
          if (plan.layout == OutputLayout::nhwc_u8) {
            const size_t at = (size_t{oy} * w.out_width + ox) * w.channels + c;
            bad += window[at] != b.images[i].row(y)[x * w.channels + c];
            continue;
          }
          const size_t at = (size_t{c} * w.out_height + oy) * w.out_width + ox;
          const float want = expected_value(b.images[i], plan, x, y, c);
          if (plan.layout == OutputLayout::nchw_f32) {
            float got;
            std::memcpy(&got, window + 4 * at, 4);
            bad += std::memcmp(&got, &want, 4) != 0;
          } else {
            uint16_t got;
            std::memcpy(&got, window + 2 * at, 2);
            const _Float16 half = static_cast<_Float16>(want);
            uint16_t bits;
            std::memcpy(&bits, &half, 2);
            bad += got != bits;
          }
        }
    CHECK(bad == 0);
  }
}

TEST_CASE("the CPU backend writes every layout and crop as defined, from the source pixels") {
  const Batch b = mixed_batch();
  const auto cpu = make_batch_decoder_cpu(3);
  for (OutputLayout layout :
       {OutputLayout::nhwc_u8, OutputLayout::nchw_f32, OutputLayout::nchw_f16}) {
    for (CropMode crop : {CropMode::none, CropMode::center, CropMode::random}) {
      CAPTURE(static_cast<int>(layout));
      CAPTURE(static_cast<int>(crop));
      DecodeOptions o;
      o.layout = layout;
      if (layout != OutputLayout::nhwc_u8) {
        o.mean = {123.675f, 116.28f, 103.53f, 127.5f};
        o.std = {58.395f, 57.12f, 57.375f, 64.0f};
      }
      o.crop = crop;
      if (crop != CropMode::none) {
        o.crop_width = 1;  // the batch has 1-pixel-wide and 1-pixel-high images
        o.crop_height = 1;
        o.seed = 9;
      }
      BatchPlan plan;
      const Bytes tensor = cpu->decode(b.spans(), &plan, o);
      check_tensor(b, plan, tensor);
    }
  }
  // Larger crops on larger images: windows that cut patches in all directions.
  Batch big;
  for (uint32_t c = 1; c <= 4; ++c) {
    big.images.push_back(make_image(133, 71, c, Content::mixed, 20 + c));
    big.files.push_back(encode(big.images.back(), {c == 2 ? 64u : 16u, 1}));
  }
  for (CropMode crop : {CropMode::center, CropMode::random}) {
    DecodeOptions o;
    o.layout = OutputLayout::nchw_f16;
    o.mean = {10, 20, 30, 40};
    o.std = {2, 3, 0.25f, 7};
    o.crop = crop;
    o.crop_width = 50;
    o.crop_height = 33;
    o.seed = 5;
    BatchPlan plan;
    check_tensor(big, plan, cpu->decode(big.spans(), &plan, o));
    o.layout = OutputLayout::nhwc_u8;
    o.mean = {0, 0, 0, 0};
    o.std = {1, 1, 1, 1};
    check_tensor(big, plan, cpu->decode(big.spans(), &plan, o));
  }
}

TEST_CASE("a crop skips the patches outside it, even damaged ones; the first failure wins") {
  // 64x64 at patch 16: 16 patches. A centre crop of 16x16 at (24, 24) needs patches 5, 6, 9, 10.
  const Image image = make_image(64, 64, 3, Content::mixed, 4);
  Bytes file = encode(image, {16, 1});
  const auto flip_patch = [](Bytes& f, uint32_t channel, uint32_t patch) {
    const BatchPlan all = plan_batch(std::vector<ByteSpan>{ByteSpan(f)});
    for (const PatchTask& t : all.tasks)
      if (t.channel == channel && t.patch == patch) f[t.src + t.bytes - 1] ^= 0x01;
  };
  flip_patch(file, 1, 0);  // outside the crop
  DecodeOptions o;
  o.crop = CropMode::center;
  o.crop_width = 16;
  o.crop_height = 16;
  const std::vector<ByteSpan> in = {ByteSpan(file)};
  const BatchPlan plan = plan_batch(in, o);
  CHECK(plan.patch_first_task.size() == 4);
  const auto cpu = make_batch_decoder_cpu(4);
  Bytes tensor(plan.output_bytes);
  cpu->decode(plan, in, tensor.data());  // the damaged patch is never read
  for (uint32_t y = 0; y < 16; ++y)
    CHECK(std::memcmp(tensor.data() + y * 16 * 3, image.row(24 + y) + 24 * 3, 16 * 3) == 0);
  // Two damaged patches inside: the first in plan order is reported, whatever the threads did.
  flip_patch(file, 2, 10);
  flip_patch(file, 0, 6);
  for (unsigned threads : {1u, 2u, 4u}) {
    try {
      make_batch_decoder_cpu(threads)->decode(plan, in, tensor.data());
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::corrupt_data);
      CHECK(std::string(e.what()) == "image 0: l3: patch 6 of channel 0: checksum mismatch");
    }
  }
}

TEST_CASE("the device names parse and DLPREP_FORCE_DEVICE overrides the argument") {
  CHECK(parse_decode_device("auto") == DecodeDevice::automatic);
  CHECK(parse_decode_device("cpu") == DecodeDevice::cpu);
  CHECK(parse_decode_device("cuda") == DecodeDevice::cuda);
  CHECK_THROWS_AS(parse_decode_device("gpu"), Error);

  {
    ScopedEnv env("DLPREP_FORCE_DEVICE", "cpu");
    CHECK(make_batch_decoder(DecodeDevice::cuda)->device_name() == "cpu");
    CHECK(make_batch_decoder(DecodeDevice::automatic)->device_name() == "cpu");
  }
  {
    ScopedEnv env("DLPREP_FORCE_DEVICE", "tpu");
    try {
      (void)make_batch_decoder(DecodeDevice::cpu);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::invalid_argument);
    }
  }
}

TEST_CASE("choosing cuda without a usable device throws device_unavailable with the reason") {
  ScopedEnv env("DLPREP_FORCE_DEVICE", nullptr);
  const std::string reason = cuda_unavailable_reason();
  const auto automatic = make_batch_decoder(DecodeDevice::automatic);
  if (reason.empty()) {  // a GPU machine: cuda is used, and chosen by auto
    CHECK(make_batch_decoder(DecodeDevice::cuda)->device_name() == "cuda");
    CHECK(automatic->device_name() == "cuda");
    return;
  }
  CHECK(automatic->device_name() == "cpu");
  for (const std::optional<const char*> forced :
       {std::optional<const char*>{}, std::optional("cuda")}) {
    ScopedEnv force("DLPREP_FORCE_DEVICE", forced.value_or(nullptr));
    try {
      (void)make_batch_decoder(forced ? DecodeDevice::cpu : DecodeDevice::cuda);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::device_unavailable);
      CHECK(std::string(e.what()).find(reason) != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace dlprep::l3
