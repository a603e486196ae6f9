// The portable scalar kernels: the reference every SIMD backend must match bit for bit. Written
// for clarity, one pixel at a time, exactly as man/dlprep-l3.5 states the rules.
#include <cstring>

#include "l3/format.hpp"
#include "l3/kernels.hpp"

namespace dlprep::l3::detail {
namespace {

uint32_t adler32_scalar(uint32_t adler, const uint8_t* data, size_t size) {
  uint32_t s1 = adler & 0xFFFF, s2 = adler >> 16;
  // 5552 is the most bytes after which s2 still fits 32 bits before the modulo (zlib's NMAX).
  while (size > 0) {
    size_t n = size < 5552 ? size : 5552;
    size -= n;
    while (n--) {
      s1 += *data++;
      s2 += s1;
    }
    s1 %= kAdlerMod;
    s2 %= kAdlerMod;
  }
  return (s2 << 16) | s1;
}

inline uint32_t width_code_at(const uint8_t* codes, uint32_t group) {
  return (codes[group >> 1] >> ((group & 1) * 4)) & 0xF;
}

void decode_plane_scalar(const PatchView& patch, uint8_t* plane, size_t stride) {
  const uint8_t* in = patch.payload;
  const uint32_t w = patch.width, gpr = groups_per_row(w);
  uint8_t residual[kMaxPatch];
  for (uint32_t y = 0; y < patch.height; ++y) {
    for (uint32_t g = 0; g < gpr; ++g) {
      const uint32_t code = width_code_at(patch.width_codes, y * gpr + g);
      const uint32_t width = code_width(code);
      const uint8_t base = code_explicit(code) ? *in++ : implicit_base(width);
      const uint32_t n =
          (w - g * kGroupPixels) < kGroupPixels ? w - g * kGroupPixels : kGroupPixels;
      for (uint32_t j = 0; j < n; ++j) {
        uint32_t v = 0;
        for (uint32_t k = 0; k < width; ++k) {
          const uint32_t plane_word = in[2 * k] | (uint32_t{in[2 * k + 1]} << 8);
          v |= ((plane_word >> j) & 1) << k;
        }
        residual[g * kGroupPixels + j] = static_cast<uint8_t>(v + base);
      }
      in += 2 * width;
    }
    uint8_t* row = plane + y * stride;
    if (y == 0) {
      uint8_t acc = patch.seed;  // row 0: p(x) = p(x-1) + r(x), with p(-1) = seed
      for (uint32_t x = 0; x < w; ++x) row[x] = acc = static_cast<uint8_t>(acc + residual[x]);
    } else {
      uint8_t* above = row - stride;
      above[-1] = above[0];  // border rule: outside the patch, the nearest in-patch pixel above
      above[w] = above[w - 1];
      const uint32_t predictor = predictor_code(patch.predictor_codes, y);
      for (uint32_t x = 0; x < w; ++x)
        row[x] = static_cast<uint8_t>(predict(predictor, (above + x)[-1], above[x], above[x + 1]) +
                                      residual[x]);
    }
  }
}

void store_hwc_scalar(const uint8_t* const* planes, size_t plane_stride, uint32_t width,
                      uint32_t height, uint32_t channels, bool subtract_green, uint8_t* out,
                      size_t out_stride) {
  for (uint32_t y = 0; y < height; ++y) {
    uint8_t* o = out + y * out_stride;
    for (uint32_t x = 0; x < width; ++x) {
      for (uint32_t c = 0; c < channels; ++c) {
        uint8_t v = planes[c][y * plane_stride + x];
        if (subtract_green && (c == 0 || c == 2))
          v = static_cast<uint8_t>(v + planes[1][y * plane_stride + x]);
        o[x * channels + c] = v;
      }
    }
  }
}

void load_planes_scalar(const uint8_t* in, size_t in_stride, uint32_t width, uint32_t height,
                        uint32_t channels, bool subtract_green, uint8_t* const* planes,
                        size_t plane_stride) {
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* row = in + y * in_stride;
    for (uint32_t x = 0; x < width; ++x) {
      const uint8_t* px = row + x * channels;
      for (uint32_t c = 0; c < channels; ++c) {
        uint8_t v = px[c];
        if (subtract_green && (c == 0 || c == 2)) v = static_cast<uint8_t>(v - px[1]);
        planes[c][y * plane_stride + x] = v;
      }
    }
  }
}

void residuals_scalar(uint32_t predictor, const uint8_t* above, const uint8_t* row, uint32_t width,
                      uint8_t seed, uint8_t* out) {
  for (uint32_t x = 0; x < width; ++x) {
    const uint8_t p = above == nullptr
                          ? (x == 0 ? seed : row[x - 1])
                          : predict(predictor, (above + x)[-1], above[x], above[x + 1]);
    out[x] = static_cast<uint8_t>(row[x] - p);
  }
  const uint32_t padded = groups_per_row(width) * kGroupPixels;
  for (uint32_t x = width; x < padded; ++x) out[x] = 0;
}

inline uint32_t bit_length(uint32_t v) { return v == 0 ? 0 : 32 - __builtin_clz(v); }

// Group choice (the decoder accepts any valid choice; this is what the encoders produce, SIMD
// and scalar alike): the implicit width covers the residuals as signed values; the explicit base
// is the signed minimum with the width of the signed range; explicit wins only when strictly
// cheaper (8 + 16w < 16w'). Measured: the explicit base saves ~5%; trying the unsigned arc as
// well saved nothing on photos.
void plan_row_scalar(const uint8_t* residuals, uint32_t width, RowPlan& plan) {
  plan.bits = 0;
  for (uint32_t g = 0; g * kGroupPixels < width; ++g) {
    const uint8_t* r = residuals + g * kGroupPixels;
    const uint32_t n =
        width - g * kGroupPixels < kGroupPixels ? width - g * kGroupPixels : kGroupPixels;
    int32_t smin = 127, smax = -128;
    for (uint32_t j = 0; j < n; ++j) {
      const int32_t s = static_cast<int8_t>(r[j]);
      smin = s < smin ? s : smin;
      smax = s > smax ? s : smax;
    }
    // Largest magnitude in the implicit range [-2^(w-1), 2^(w-1)): -1 needs as few bits as 0.
    const uint32_t magnitude = static_cast<uint32_t>(smax > -1 - smin ? smax : -1 - smin);
    const uint32_t implicit_width = (smin | smax) != 0 ? bit_length(magnitude) + 1 : 0;
    const uint32_t explicit_width = bit_length(static_cast<uint32_t>(smax - smin));
    if (explicit_width < implicit_width && explicit_width <= kMaxExplicitWidth) {
      plan.codes[g] = static_cast<uint8_t>(kFirstExplicitCode + explicit_width);
      plan.bases[g] = static_cast<uint8_t>(smin);
      plan.bits += 8 + 16 * explicit_width;
    } else {
      plan.codes[g] = static_cast<uint8_t>(implicit_width);
      plan.bases[g] = implicit_base(implicit_width);
      plan.bits += 16 * implicit_width;
    }
  }
}

uint32_t choose_row_scalar(const uint8_t* above, const uint8_t* row, uint32_t width,
                           uint8_t* residuals, RowPlan& plan) {
  uint32_t best = 0;
  RowPlan candidate;
  for (uint32_t p = 0; p < kPredictors; ++p) {
    residuals_scalar(p, above, row, width, 0, residuals + p * kMaxPatch);
    plan_row_scalar(residuals + p * kMaxPatch, width, candidate);
    if (p == 0 || candidate.bits < plan.bits) {
      plan = candidate;
      best = p;
    }
  }
  return best;
}

size_t pack_row_scalar(const uint8_t* residuals, uint32_t width, const RowPlan& plan,
                       uint8_t* out) {
  uint8_t* o = out;
  for (uint32_t g = 0; g * kGroupPixels < width; ++g) {
    const uint8_t* r = residuals + g * kGroupPixels;
    const uint32_t n =
        width - g * kGroupPixels < kGroupPixels ? width - g * kGroupPixels : kGroupPixels;
    const uint32_t code = plan.codes[g], w = code_width(code);
    if (code_explicit(code)) *o++ = plan.bases[g];
    for (uint32_t k = 0; k < w; ++k) {
      uint32_t plane_word = 0;
      for (uint32_t j = 0; j < n; ++j)
        plane_word |= ((static_cast<uint8_t>(r[j] - plan.bases[g]) >> k) & 1u) << j;
      *o++ = static_cast<uint8_t>(plane_word);
      *o++ = static_cast<uint8_t>(plane_word >> 8);
    }
  }
  return static_cast<size_t>(o - out);
}

}  // namespace

const Kernels kScalarKernels = {"scalar",         adler32_scalar,     decode_plane_scalar,
                                store_hwc_scalar, load_planes_scalar, residuals_scalar,
                                plan_row_scalar,  choose_row_scalar,  pack_row_scalar};

}  // namespace dlprep::l3::detail
