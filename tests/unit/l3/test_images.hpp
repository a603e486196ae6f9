// Synthetic images and file surgery shared by the L3 tests. Fixed seeds throughout.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/image.hpp"
#include "l3/format.hpp"
#include "l3/kernels.hpp"

namespace dlprep::l3::testing {

enum class Content { noise, flat, gradient, black, white, mixed };

/// An image of the given content: noise (uniform bytes), flat (one value per channel),
/// gradient (smooth ramps), black, white, mixed (smooth ramps plus noise whose amplitude
/// varies by region, so that every width and predictor occurs).
inline Image make_image(uint32_t w, uint32_t h, uint32_t c, Content content, uint32_t seed = 1) {
  Image image(w, h, c);
  std::mt19937 rng(seed);
  for (uint32_t y = 0; y < h; ++y) {
    uint8_t* row = image.row(y);
    for (uint32_t x = 0; x < w; ++x) {
      for (uint32_t k = 0; k < c; ++k) {
        uint32_t v = 0;
        switch (content) {
          case Content::noise:
            v = rng();
            break;
          case Content::flat:
            v = 37 + 50 * k;
            break;
          case Content::gradient:
            v = x * (k + 1) + y * 2 + k * 40;
            break;
          case Content::black:
            v = 0;
            break;
          case Content::white:
            v = 255;
            break;
          case Content::mixed:
            v = x * (k + 1) + y * 3 + rng() % (1u << ((x / 16 + y / 7 + k) % 9));
            break;
        }
        row[x * c + k] = static_cast<uint8_t>(v);
      }
    }
  }
  return image;
}

/// Rows that are the row above plus a per-group offset and noise of a chosen width, so that the
/// "top" residuals of a group are exactly that offset plus noise: every width code appears.
inline Image width_ladder(uint32_t c) {
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

inline uint32_t get_u32(const uint8_t* p) {
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

/// Recomputes the header checksum after a test edited the header or the patch table, so that
/// the decoder's later checks (not the checksum) are what the test exercises.
inline void resign_header(std::vector<uint8_t>& file, size_t table_bytes) {
  const auto& k = detail::kScalarKernels;
  uint32_t sum = k.adler32(1, file.data(), kOffHeaderSum);
  sum = k.adler32(sum, file.data() + kHeaderBytes, table_bytes);
  put_u32(file.data() + kOffHeaderSum, sum);
}

}  // namespace dlprep::l3::testing
