// plan_batch's output options: the windows of the crops (decided on the host so that every
// backend cuts the same ones), the patches they need, the offsets of each layout, and the
// options it refuses.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "l3/batch_decode.hpp"
#include "l3/batch_output.hpp"
#include "l3/format.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

using testing::Content;
using testing::make_image;

std::vector<Bytes> files_of(const std::vector<std::array<uint32_t, 4>>& shapes) {
  std::vector<Bytes> files;
  uint32_t seed = 3;
  for (const auto& [w, h, c, patch] : shapes)
    files.push_back(encode(make_image(w, h, c, Content::mixed, seed++), {patch, 1}));
  return files;
}

std::vector<ByteSpan> spans(const std::vector<Bytes>& files) {
  return {files.begin(), files.end()};
}

std::string error_of(const std::vector<Bytes>& files, const DecodeOptions& o,
                     Errc* code = nullptr) {
  try {
    (void)plan_batch(spans(files), o);
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST_CASE("without a crop the window is the whole image; offsets scale with the element size") {
  const std::vector<Bytes> files = files_of({{37, 21, 3, 16}, {8, 9, 1, 8}, {64, 3, 4, 32}});
  for (OutputLayout layout :
       {OutputLayout::nhwc_u8, OutputLayout::nchw_f32, OutputLayout::nchw_f16}) {
    DecodeOptions o;
    o.layout = layout;
    const BatchPlan plan = plan_batch(spans(files), o);
    uint64_t dst = 0, pixels = 0;
    for (const BatchImage& image : plan.images) {
      CHECK(image.crop_x == 0);
      CHECK(image.crop_y == 0);
      CHECK(image.out_width == image.width);
      CHECK(image.out_height == image.height);
      CHECK(image.dst == dst);
      CHECK(image.dst % element_bytes(layout) == 0);
      dst += image.pixel_bytes() * element_bytes(layout);
      pixels += image.pixel_bytes();
    }
    CHECK(plan.output_bytes == dst);
    CHECK(plan.pixel_bytes == pixels);
    CHECK(plan.layout == layout);
    for (int c = 0; c < 4; ++c) {
      CHECK(plan.mean[c] == 0.0f);
      CHECK(plan.scale[c] == 1.0f);
    }
  }
}

TEST_CASE("a centre crop sits at ((W - w) / 2, (H - h) / 2) and lists only the patches it needs") {
  const std::vector<Bytes> files = files_of({{100, 70, 3, 16}, {41, 40, 1, 8}});
  DecodeOptions o;
  o.crop = CropMode::center;
  o.crop_width = 33;
  o.crop_height = 17;
  const BatchPlan plan = plan_batch(spans(files), o);
  CHECK(plan.images[0].crop_x == 33);  // (100 - 33) / 2 rounded down
  CHECK(plan.images[0].crop_y == 26);
  CHECK(plan.images[1].crop_x == 4);
  CHECK(plan.images[1].crop_y == 11);
  CHECK(plan.images[1].dst == 33 * 17 * 3);
  CHECK(plan.output_bytes == 33 * 17 * 4);
  // Exactly the patches that intersect the window, in image/patch/channel order.
  size_t t = 0;
  for (size_t i = 0; i < plan.images.size(); ++i) {
    const BatchImage& image = plan.images[i];
    const uint32_t n = image.patch, px = (image.width + n - 1) / n, py = (image.height + n - 1) / n;
    for (uint32_t p = 0; p < px * py; ++p) {
      const uint32_t x0 = p % px * n, y0 = p / px * n;
      const bool needed = x0 < image.crop_x + image.out_width && x0 + n > image.crop_x &&
                          y0 < image.crop_y + image.out_height && y0 + n > image.crop_y;
      if (!needed) continue;
      for (uint32_t c = 0; c < image.channels; ++c, ++t) {
        REQUIRE(t < plan.tasks.size());
        CHECK(plan.tasks[t].image == i);
        CHECK(plan.tasks[t].patch == p);
        CHECK(plan.tasks[t].channel == c);
        CHECK(plan.tasks[t].x0 == x0);
        CHECK(plan.tasks[t].y0 == y0);
      }
    }
  }
  CHECK(t == plan.tasks.size());
  for (uint64_t first : plan.patch_first_task) CHECK(plan.tasks.at(first).channel == 0);
}

TEST_CASE("a random crop is drawn per image from the seed, inside the image, reproducibly") {
  const std::vector<Bytes> files =
      files_of({{100, 70, 3, 16}, {100, 70, 3, 16}, {64, 64, 1, 8}, {30, 20, 3, 8}});
  DecodeOptions o;
  o.crop = CropMode::random;
  o.crop_width = 30;
  o.crop_height = 20;
  o.seed = 42;
  const BatchPlan a = plan_batch(spans(files), o), b = plan_batch(spans(files), o);
  for (size_t i = 0; i < files.size(); ++i) {
    CAPTURE(i);
    const BatchImage& image = a.images[i];
    const uint64_t r = crop_random(42, i);
    CHECK(image.crop_x == (r & 0xFFFFFFFFu) % (image.width - 30 + 1));
    CHECK(image.crop_y == (r >> 32) % (image.height - 20 + 1));
    CHECK(image.crop_x + 30 <= image.width);
    CHECK(image.crop_y + 20 <= image.height);
    CHECK(image.crop_x == b.images[i].crop_x);
    CHECK(image.crop_y == b.images[i].crop_y);
  }
  CHECK(a.images[3].crop_x == 0);  // the crop is the whole image: no freedom
  // Same shapes, different positions: the draw depends on the index (and on the seed).
  CHECK((a.images[0].crop_x != a.images[1].crop_x || a.images[0].crop_y != a.images[1].crop_y));
  o.seed = 43;
  const BatchPlan c = plan_batch(spans(files), o);
  CHECK((c.images[0].crop_x != a.images[0].crop_x || c.images[0].crop_y != a.images[0].crop_y));
}

TEST_CASE("plan_batch refuses options that make no sense") {
  const std::vector<Bytes> files = files_of({{40, 30, 3, 16}, {20, 10, 3, 8}});
  Errc code{};
  DecodeOptions o;
  o.mean = {1, 0, 0, 0};
  CHECK(error_of(files, o, &code).find("float layouts") != std::string::npos);
  CHECK(code == Errc::invalid_argument);
  o.layout = OutputLayout::nchw_f32;
  CHECK(error_of(files, o).empty());
  o.std = {1, 0, 1, 1};
  CHECK(error_of(files, o).find("channel 1") != std::string::npos);
  o.std = {1, 1, std::numeric_limits<float>::infinity(), 1};
  CHECK(error_of(files, o).find("channel 2") != std::string::npos);
  o.std = {1, 1, 1, 1e-39f};  // its inverse overflows
  CHECK(error_of(files, o).find("channel 3") != std::string::npos);
  o.std = {1, 1, 1, 1};
  o.mean = {std::nanf(""), 0, 0, 0};
  CHECK(error_of(files, o).find("channel 0") != std::string::npos);
  o = {};
  o.crop_width = 5;
  CHECK(error_of(files, o).find("crop mode") != std::string::npos);
  o.crop = CropMode::center;
  o.crop_height = 0;
  CHECK(error_of(files, o).find("1 to 65535") != std::string::npos);
  o.crop_width = 21;
  o.crop_height = 10;
  CHECK(error_of(files, o, &code) == "image 1: 20x10 is smaller than the crop 21x10");
  CHECK(code == Errc::invalid_argument);
}

TEST_CASE("the layouts and devices parse") {
  CHECK(parse_output_layout("nhwc-u8") == OutputLayout::nhwc_u8);
  CHECK(parse_output_layout("nchw-f32") == OutputLayout::nchw_f32);
  CHECK(parse_output_layout("nchw-f16") == OutputLayout::nchw_f16);
  CHECK_THROWS_AS(parse_output_layout("nhwc-f32"), Error);
  for (OutputLayout l : {OutputLayout::nhwc_u8, OutputLayout::nchw_f32, OutputLayout::nchw_f16})
    CHECK(parse_output_layout(output_layout_name(l)) == l);
}

}  // namespace
}  // namespace dlprep::l3
