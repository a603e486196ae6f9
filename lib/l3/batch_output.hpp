// How a decoded pixel becomes an element of the batch tensor: the index mapping of the layouts,
// the crop window, the colour transform, the normalisation and the half conversion. Every
// function here is compiled by g++ for the CPU backend and by nvcc for the CUDA kernel, so both
// backends run the same per-element code and agree bit for bit (man/dlprep-l3.1, "BATCH
// TENSORS"). Plain C++17, like batch_plan.hpp.
//
// The float value of a byte x of channel c is (float(x) - mean[c]) * scale[c], scale = 1/std
// computed once on the host: one IEEE subtraction, then one IEEE multiplication, each rounded to
// nearest even. The device code spells them __fsub_rn/__fmul_rn so that nvcc can never contract
// them into an FMA; on the host no FMA form exists for (a - b) * c and the build uses no
// -ffast-math. float(x) is exact for every byte. Half: the float rounded to nearest even
// (overflow to infinity, subnormals kept): float_to_half_bits() of core/float16.hpp.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/float16.hpp"
#include "l3/batch_plan.hpp"

#if defined(__CUDACC__)
#define DLPREP_L3_OUT_HD __host__ __device__ __forceinline__
#else
#define DLPREP_L3_OUT_HD inline
#endif

namespace dlprep::l3 {

/// Bytes of one element of the layout: 1, 4 or 2.
DLPREP_L3_OUT_HD uint32_t element_bytes(OutputLayout layout) {
  return layout == OutputLayout::nhwc_u8 ? 1u : layout == OutputLayout::nchw_f32 ? 4u : 2u;
}

/// Index (in elements, from the window's first element) of channel c of window pixel (ox, oy),
/// for a window of out_width x out_height pixels of `channels` channels.
DLPREP_L3_OUT_HD uint64_t output_element(OutputLayout layout, uint32_t out_width,
                                         uint32_t out_height, uint32_t channels, uint32_t ox,
                                         uint32_t oy, uint32_t c) {
  return layout == OutputLayout::nhwc_u8
             ? (static_cast<uint64_t>(oy) * out_width + ox) * channels + c
             : (static_cast<uint64_t>(c) * out_height + oy) * out_width + ox;
}

/// output_element() as a row's part plus a column's part plus c channel strides, so that a
/// caller can take each part once (the CUDA kernel's per-layout builds): row_element(oy) +
/// column_element(ox) + c * channel_stride() == output_element(..., ox, oy, c).
DLPREP_L3_OUT_HD uint64_t row_element(OutputLayout layout, uint32_t out_width, uint32_t channels,
                                      uint32_t oy) {
  return layout == OutputLayout::nhwc_u8 ? uint64_t{oy} * out_width * channels
                                         : uint64_t{oy} * out_width;
}
DLPREP_L3_OUT_HD uint64_t column_element(OutputLayout layout, uint32_t channels, uint32_t ox) {
  return layout == OutputLayout::nhwc_u8 ? uint64_t{ox} * channels : uint64_t{ox};
}
DLPREP_L3_OUT_HD uint64_t channel_stride(OutputLayout layout, uint32_t out_width,
                                         uint32_t out_height) {
  return layout == OutputLayout::nhwc_u8 ? 1u : uint64_t{out_height} * out_width;
}

/// Whether image column x lies in the window's columns [crop_x, crop_x + out_width); sets ox to
/// its window column (a huge value left of the window).
DLPREP_L3_OUT_HD bool in_window_x(const BatchImage& image, uint32_t x, uint32_t& ox) {
  ox = x - image.crop_x;
  return x >= image.crop_x && ox < image.out_width;
}
/// The same for image row y and the window's rows.
DLPREP_L3_OUT_HD bool in_window_y(const BatchImage& image, uint32_t y, uint32_t& oy) {
  oy = y - image.crop_y;
  return y >= image.crop_y && oy < image.out_height;
}

/// Whether image pixel (x, y) lies in the window [crop_x, crop_x + out_width) x [crop_y, ...);
/// sets (ox, oy) to its window coordinates when it does.
DLPREP_L3_OUT_HD bool in_window(const BatchImage& image, uint32_t x, uint32_t y, uint32_t& ox,
                                uint32_t& oy) {
  ox = x - image.crop_x;  // wraps to a huge value left of / above the window
  oy = y - image.crop_y;
  return x >= image.crop_x && y >= image.crop_y && ox < image.out_width && oy < image.out_height;
}

/// Undoes the subtract-green colour transform on one pixel's planes (spec "COLOUR TRANSFORM").
DLPREP_L3_OUT_HD void add_green(uint8_t (&v)[4], uint32_t subtract_green) {
  if (subtract_green) {
    v[0] = static_cast<uint8_t>(v[0] + v[1]);
    v[2] = static_cast<uint8_t>(v[2] + v[1]);
  }
}

/// (float(x) - mean) * scale, each operation rounded to nearest even, never fused.
DLPREP_L3_OUT_HD float normalize_byte(uint8_t x, float mean, float scale) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(__fsub_rn(static_cast<float>(x), mean), scale);
#else
  const float centred = static_cast<float>(x) - mean;
  return centred * scale;
#endif
}

/// Stores byte x of channel c as element `element` of the window starting at `window` (the
/// output tensor plus the image's dst), in the plan's layout.
DLPREP_L3_OUT_HD void store_element(uint8_t* window, OutputLayout layout, uint64_t element,
                                    uint8_t x, float mean, float scale) {
  if (layout == OutputLayout::nhwc_u8) {
    window[element] = x;
    return;
  }
  const float value = normalize_byte(x, mean, scale);
#if defined(__CUDA_ARCH__)
  // dst is a multiple of the element size (plan_batch), so these stores are aligned.
  if (layout == OutputLayout::nchw_f32)
    reinterpret_cast<float*>(window)[element] = value;
  else
    reinterpret_cast<uint16_t*>(window)[element] = float_to_half_bits(value);
#else
  if (layout == OutputLayout::nchw_f32) {
    std::memcpy(window + 4 * element, &value, sizeof value);
  } else {
    const uint16_t bits = float_to_half_bits(value);
    std::memcpy(window + 2 * element, &bits, sizeof bits);
  }
#endif
}

/// The random crop's generator: the (index + 1)-th output of SplitMix64 seeded with `seed`
/// (Steele, Lea and Flood 2014; the constants of Vigna's reference code).
inline uint64_t crop_random(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace dlprep::l3
