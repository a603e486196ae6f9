// Synthetic images and comparisons shared by the image codec tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "core/image.hpp"

namespace dlprep::test {

enum class Pattern { random, gradient, flat };

inline const char* pattern_name(Pattern p) {
  return p == Pattern::random ? "random" : p == Pattern::gradient ? "gradient" : "flat";
}

/// A deterministic image: uniform noise (seeded), a smooth diagonal gradient, or one flat colour.
inline Image make_image(ImageShape shape, Pattern pattern, uint32_t seed = 1) {
  Image image(shape);
  std::mt19937 rng(seed);
  const uint32_t c = shape.channels;
  for (uint32_t y = 0; y < shape.height; ++y) {
    uint8_t* row = image.row(y);
    for (uint32_t x = 0; x < shape.width; ++x) {
      for (uint32_t k = 0; k < c; ++k) {
        uint32_t v = 0;
        switch (pattern) {
          case Pattern::random:
            v = rng() & 0xff;
            break;
          case Pattern::gradient:
            v = x * 180 / shape.width + y * 60 / shape.height + k * 5;
            break;
          case Pattern::flat:
            v = 37 + 61 * k;
            break;
        }
        row[x * c + k] = static_cast<uint8_t>(v);
      }
    }
  }
  return image;
}

/// Peak signal-to-noise ratio in dB over all samples; infinity for identical images.
inline double psnr(const Image& a, const Image& b) {
  double se = 0;
  for (size_t i = 0; i < a.size_bytes(); ++i) {
    const double d = double(a.data()[i]) - double(b.data()[i]);
    se += d * d;
  }
  if (se == 0) return INFINITY;
  return 10 * std::log10(255.0 * 255.0 * double(a.size_bytes()) / se);
}

inline std::string shape_str(const ImageShape& s) {
  return std::to_string(s.width) + "x" + std::to_string(s.height) + "x" +
         std::to_string(s.channels);
}

}  // namespace dlprep::test
