// The per-element code that the CPU backend and the CUDA kernel share (l3/batch_output.hpp):
// the layouts' index mapping, the window, the colour transform, the normalisation with its
// fixed operation order, the half conversion and the random crop's generator.
#include "l3/batch_output.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace dlprep::l3 {
namespace {

TEST_CASE("a normalised byte's half is the compiler's _Float16 of its float") {
  // Every float a normalised byte can take with the usual constants (core/float16.hpp's own test
  // sweeps the bit patterns).
  const float means[] = {0.0f, 123.675f, 116.28f, 103.53f, 127.5f, 255.0f};
  const float stds[] = {1.0f, 58.395f, 57.12f, 57.375f, 0.5f, 1e-3f, 255.0f};
  for (float mean : means)
    for (float sd : stds)
      for (int x = 0; x < 256; ++x) {
        const float v = normalize_byte(static_cast<uint8_t>(x), mean, 1.0f / sd);
        const uint16_t bits = float_to_half_bits(v);
        const _Float16 reference = static_cast<_Float16>(v);  // the compiler's IEEE conversion
        REQUIRE(std::memcmp(&bits, &reference, 2) == 0);
      }
}

TEST_CASE("normalize_byte is one rounded subtraction, then one rounded multiplication") {
  // Computed independently in double: the exact difference and product of floats fit in a
  // double, so rounding them to float is what IEEE float arithmetic must give, with or without
  // FMA hardware.
  const float means[] = {0.0f, 123.675f, 116.28f, 103.53f, 0.485f * 255, -3.5f};
  const float stds[] = {1.0f, 58.395f, 57.12f, 57.375f, 0.229f * 255, 3.0f};
  for (float mean : means)
    for (float sd : stds) {
      const float scale = 1.0f / sd;
      for (int x = 0; x < 256; ++x) {
        const float centred = static_cast<float>(static_cast<double>(x) - mean);
        const float want = static_cast<float>(static_cast<double>(centred) * scale);
        REQUIRE(normalize_byte(static_cast<uint8_t>(x), mean, scale) == want);
      }
    }
  // Reference values (ImageNet's red channel).
  CHECK(normalize_byte(0, 123.675f, 1.0f / 58.395f) == doctest::Approx(-2.1179039).epsilon(1e-7));
  CHECK(normalize_byte(255, 123.675f, 1.0f / 58.395f) == doctest::Approx(2.2489083).epsilon(1e-7));
  CHECK(normalize_byte(7, 0.0f, 1.0f) == 7.0f);
}

TEST_CASE("output_element maps NHWC and NCHW windows") {
  // A 5x3 window of 3 channels.
  CHECK(output_element(OutputLayout::nhwc_u8, 5, 3, 3, 0, 0, 0) == 0);
  CHECK(output_element(OutputLayout::nhwc_u8, 5, 3, 3, 1, 0, 2) == 5);
  CHECK(output_element(OutputLayout::nhwc_u8, 5, 3, 3, 4, 2, 2) == 44);
  CHECK(output_element(OutputLayout::nchw_f32, 5, 3, 3, 0, 0, 1) == 15);
  CHECK(output_element(OutputLayout::nchw_f16, 5, 3, 3, 4, 2, 2) == 44);
  CHECK(output_element(OutputLayout::nchw_f32, 5, 3, 3, 1, 2, 0) == 11);
  // Every element exactly once.
  for (OutputLayout layout :
       {OutputLayout::nhwc_u8, OutputLayout::nchw_f32, OutputLayout::nchw_f16}) {
    std::vector<int> seen(5 * 3 * 3, 0);
    for (uint32_t y = 0; y < 3; ++y)
      for (uint32_t x = 0; x < 5; ++x)
        for (uint32_t c = 0; c < 3; ++c) ++seen.at(output_element(layout, 5, 3, 3, x, y, c));
    for (int n : seen) CHECK(n == 1);
  }
  // The same index as a row's part, a column's part and channel strides, on a larger window.
  for (OutputLayout layout :
       {OutputLayout::nhwc_u8, OutputLayout::nchw_f32, OutputLayout::nchw_f16})
    for (uint32_t channels = 1; channels <= 4; ++channels)
      for (uint32_t y : {0u, 1u, 70000u})
        for (uint32_t x : {0u, 5u, 69999u})
          for (uint32_t c = 0; c < channels; ++c)
            CHECK(row_element(layout, 70000, channels, y) + column_element(layout, channels, x) +
                      c * channel_stride(layout, 70000, 70001) ==
                  output_element(layout, 70000, 70001, channels, x, y, c));
  CHECK(element_bytes(OutputLayout::nhwc_u8) == 1);
  CHECK(element_bytes(OutputLayout::nchw_f32) == 4);
  CHECK(element_bytes(OutputLayout::nchw_f16) == 2);
}

TEST_CASE("in_window and add_green") {
  BatchImage image;
  image.crop_x = 10;
  image.crop_y = 20;
  image.out_width = 4;
  image.out_height = 2;
  uint32_t ox = 99, oy = 99;
  CHECK(in_window(image, 10, 20, ox, oy));
  CHECK((ox == 0 && oy == 0));
  CHECK(in_window(image, 13, 21, ox, oy));
  CHECK((ox == 3 && oy == 1));
  CHECK_FALSE(in_window(image, 9, 20, ox, oy));
  CHECK_FALSE(in_window(image, 14, 20, ox, oy));
  CHECK_FALSE(in_window(image, 10, 22, ox, oy));
  CHECK_FALSE(in_window(image, 10, 19, ox, oy));
  CHECK(in_window_x(image, 13, ox));
  CHECK(ox == 3);
  CHECK_FALSE(in_window_x(image, 9, ox));
  CHECK_FALSE(in_window_x(image, 14, ox));
  CHECK(in_window_y(image, 21, oy));
  CHECK(oy == 1);
  CHECK_FALSE(in_window_y(image, 19, oy));
  CHECK_FALSE(in_window_y(image, 22, oy));
  uint8_t v[4] = {250, 10, 3, 77};
  add_green(v, 0);
  CHECK((v[0] == 250 && v[2] == 3));
  add_green(v, 1);
  CHECK((v[0] == 4 && v[1] == 10 && v[2] == 13 && v[3] == 77));  // mod 256
}

TEST_CASE("store_element writes each layout's element type") {
  uint8_t buffer[16] = {};
  store_element(buffer, OutputLayout::nhwc_u8, 3, 200, 5.0f, 2.0f);
  CHECK(buffer[3] == 200);
  store_element(buffer, OutputLayout::nchw_f32, 2, 200, 100.0f, 0.5f);
  float f;
  std::memcpy(&f, buffer + 8, 4);
  CHECK(f == 50.0f);
  store_element(buffer, OutputLayout::nchw_f16, 1, 0, 1.0f, 1.0f);
  uint16_t h;
  std::memcpy(&h, buffer + 2, 2);
  CHECK(h == 0xBC00);  // -1.0
}

TEST_CASE("crop_random is SplitMix64") {
  // The first outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
  CHECK(crop_random(0, 0) == 0xE220A8397B1DCDAFull);
  CHECK(crop_random(0, 1) == 0x6E789E6AA1B965F4ull);
  CHECK(crop_random(0, 2) == 0x06C45D188009454Full);
  CHECK(crop_random(1, 0) != crop_random(0, 0));
}

}  // namespace
}  // namespace dlprep::l3
