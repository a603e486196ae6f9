// Separable Lanczos-3 resampling: a horizontal pass and a vertical pass, each a 1-D convolution
// whose taps and fixed-point weights are computed once per output column (row). Trigonometry runs
// only there, never per pixel; the inner loops are integer multiply-adds.
//
// The conventions are Pillow's (src/libImaging/Resample.c), so that dlprep reproduces the
// benchmark sets that tests/bench/make_photo_sets.py makes with PIL bit for bit:
//  - output pixel i covers input [i*s, (i+1)*s) with s = in/out, centred at (i + 0.5) * s;
//  - the kernel L(x) = sinc(x) sinc(x/3) on [-3, 3) is stretched by max(s, 1): a reduction by 2
//    averages over about 12 input pixels (low-pass before decimation), an enlargement
//    interpolates over 6;
//  - taps outside the box are dropped and the others renormalised to sum to 1 (the edge is
//    neither repeated nor mirrored);
//  - weights have 22 fraction bits and accumulators start at half a unit, so the final shift
//    rounds to nearest;
//  - the image between the two passes is 8-bit (rounded and clamped).
// Pass order: horizontal first (Pillow's), over only the input rows the vertical pass reads;
// but when the width grows while the height shrinks the vertical pass goes first, so that the
// intermediate image is never larger than the input or the output (1x65535 -> 65535x1 would
// otherwise need a 65535x65535 intermediate). That case differs from Pillow by the rounding of
// the intermediate only (199x301 -> 640x100: mean 0.11 level, at most 2).
#include "image/resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dlprep::image {
namespace {

// Fixed-point weights: 22 fraction bits leave 8 bits for the pixel value and 1 for the sign, and
// the positive taps of a normalised Lanczos-3 sum to less than 2 (about 1.3), so an int32
// accumulator cannot overflow; make_taps() checks this for every output pixel.
constexpr int kFractionBits = 22;
constexpr int32_t kHalf = int32_t{1} << (kFractionBits - 1);
constexpr double kLobes = 3.0;  // Lanczos-3: the kernel spans three lobes on each side

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos3(double x) {
  return (-kLobes <= x && x < kLobes) ? sinc(x) * sinc(x / kLobes) : 0.0;
}

inline uint8_t clip8(int32_t acc) {
  int32_t v = acc >> kFractionBits;  // arithmetic shift: floor, so acc + kHalf rounds
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// The taps of one axis: output i reads count[i] inputs from first[i] with the weights at
// weights[i * ksize]. first[] and first[] + count[] never decrease with i.
struct Taps {
  uint32_t ksize = 0;
  std::vector<uint32_t> first, count;
  std::vector<int32_t> weights;
  uint32_t begin() const { return first.front(); }
  uint32_t end() const { return first.back() + count.back(); }
};

Taps make_taps(uint32_t in_size, uint32_t out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = kLobes * filter_scale;
  const double step = 1.0 / filter_scale;
  Taps t;
  // Inputs fit: in_size, out_size <= 65535 (limits.hpp), so ksize <= 2 * 3 * 65535 + 3.
  t.ksize = static_cast<uint32_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.weights.assign(size_t{out_size} * t.ksize, 0);
  std::vector<double> w(t.ksize);
  constexpr int64_t kMaxPositive = (std::numeric_limits<int32_t>::max() - kHalf) / 255;
  for (uint32_t i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // Rounded by truncation toward zero (as Pillow's int cast), then clamped to the box.
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size);
    const int64_t n = hi - lo;
    if (n < 1 || n > t.ksize)
      throw Error(Errc::internal, "resize: bad filter taps for " + std::to_string(in_size) +
                                      " -> " + std::to_string(out_size));
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      w[j] = lanczos3((static_cast<double>(j + lo) - center + 0.5) * step);
      sum += w[j];
    }
    int32_t* k = &t.weights[size_t{i} * t.ksize];
    int64_t positive = 0, negative = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double v = (sum != 0.0 ? w[j] / sum : w[j]) * (1 << kFractionBits);
      k[j] = static_cast<int32_t>(v < 0 ? v - 0.5 : v + 0.5);
      (k[j] > 0 ? positive : negative) += k[j];
    }
    if (positive > kMaxPositive || -negative > kMaxPositive)
      throw Error(Errc::internal, "resize: filter weights could overflow");
    t.first[i] = static_cast<uint32_t>(lo);
    t.count[i] = static_cast<uint32_t>(n);
  }
  return t;
}

// Resamples `rows` rows along x: src rows (stride src_stride, already offset to the box's first
// pixel) -> dst rows of out_width pixels.
template <uint32_t C>
void horizontal_pass(const uint8_t* src, size_t src_stride, uint32_t rows, const Taps& t,
                     uint32_t out_width, uint8_t* dst, size_t dst_stride) {
  for (uint32_t y = 0; y < rows; ++y) {
    const uint8_t* in = src + y * src_stride;
    uint8_t* out = dst + y * dst_stride;
    for (uint32_t i = 0; i < out_width; ++i) {
      const uint8_t* p = in + size_t{t.first[i]} * C;
      const int32_t* k = &t.weights[size_t{i} * t.ksize];
      int32_t acc[C];
      for (uint32_t c = 0; c < C; ++c) acc[c] = kHalf;
      for (uint32_t j = 0, n = t.count[i]; j < n; ++j, p += C)
        for (uint32_t c = 0; c < C; ++c) acc[c] += int32_t{p[c]} * k[j];
      for (uint32_t c = 0; c < C; ++c) out[size_t{i} * C + c] = clip8(acc[c]);
    }
  }
}

void horizontal(uint32_t channels, const uint8_t* src, size_t src_stride, uint32_t rows,
                const Taps& t, uint32_t out_width, uint8_t* dst, size_t dst_stride) {
  switch (channels) {
    case 1:
      return horizontal_pass<1>(src, src_stride, rows, t, out_width, dst, dst_stride);
    case 2:
      return horizontal_pass<2>(src, src_stride, rows, t, out_width, dst, dst_stride);
    case 3:
      return horizontal_pass<3>(src, src_stride, rows, t, out_width, dst, dst_stride);
    default:
      return horizontal_pass<4>(src, src_stride, rows, t, out_width, dst, dst_stride);
  }
}

// Resamples along y: output row i is a weighted sum of whole src rows first[i] - row_offset …,
// accumulated a row at a time (contiguous, so the compiler vectorises it) in `acc`.
void vertical(const uint8_t* src, size_t src_stride, uint32_t row_offset, size_t row_bytes,
              const Taps& t, uint32_t out_height, uint8_t* dst, size_t dst_stride) {
  std::vector<int32_t> acc(row_bytes);
  for (uint32_t i = 0; i < out_height; ++i) {
    std::fill(acc.begin(), acc.end(), kHalf);
    const int32_t* k = &t.weights[size_t{i} * t.ksize];
    for (uint32_t j = 0; j < t.count[i]; ++j) {
      const uint8_t* row = src + size_t{t.first[i] - row_offset + j} * src_stride;
      const int32_t w = k[j];
      int32_t* a = acc.data();
      for (size_t x = 0; x < row_bytes; ++x) a[x] += int32_t{row[x]} * w;
    }
    uint8_t* out = dst + size_t{i} * dst_stride;
    for (size_t x = 0; x < row_bytes; ++x) out[x] = clip8(acc[x]);
  }
}

}  // namespace

Image resize_lanczos(const Image& src, const Rect& box, uint32_t width, uint32_t height) {
  if (src.empty()) throw Error(Errc::invalid_argument, "resize: empty source image");
  if (box.width == 0 || box.height == 0 || uint64_t{box.x} + box.width > src.width() ||
      uint64_t{box.y} + box.height > src.height())
    throw Error(Errc::invalid_argument,
                "resize: region " + std::to_string(box.width) + "x" + std::to_string(box.height) +
                    "+" + std::to_string(box.x) + "+" + std::to_string(box.y) + " is not inside " +
                    std::to_string(src.width()) + "x" + std::to_string(src.height()));
  if (width == 0 || height == 0)
    throw Error(Errc::invalid_argument, "resize: empty output size " + std::to_string(width) + "x" +
                                            std::to_string(height));
  const uint32_t c = src.channels();
  Image out(width, height, c);  // checks the limits before allocating
  const size_t stride = src.row_bytes();
  const uint8_t* origin = src.data() + box.y * stride + size_t{box.x} * c;
  const bool along_x = width != box.width, along_y = height != box.height;

  if (!along_x && !along_y) {  // a crop
    for (uint32_t y = 0; y < height; ++y)
      std::memcpy(out.row(y), origin + y * stride, out.row_bytes());
  } else if (!along_y) {
    horizontal(c, origin, stride, height, make_taps(box.width, width), width, out.data(),
               out.row_bytes());
  } else if (!along_x) {
    vertical(origin, stride, 0, out.row_bytes(), make_taps(box.height, height), height, out.data(),
             out.row_bytes());
  } else if (width > box.width && height < box.height) {
    // Vertical first: the intermediate (box.width x height) is smaller than input and output.
    Taps ty = make_taps(box.height, height);
    Image mid(box.width, height, c);
    vertical(origin, stride, 0, mid.row_bytes(), ty, height, mid.data(), mid.row_bytes());
    horizontal(c, mid.data(), mid.row_bytes(), height, make_taps(box.width, width), width,
               out.data(), out.row_bytes());
  } else {
    // Horizontal first, over the rows the vertical pass reads; the intermediate (width x rows)
    // is no larger than the input (width shrinks) or the output (height grows).
    Taps ty = make_taps(box.height, height);
    const uint32_t y0 = ty.begin(), rows = ty.end() - ty.begin();
    Image mid(width, rows, c);
    horizontal(c, origin + y0 * stride, stride, rows, make_taps(box.width, width), width,
               mid.data(), mid.row_bytes());
    vertical(mid.data(), mid.row_bytes(), y0, mid.row_bytes(), ty, height, out.data(),
             out.row_bytes());
  }
  return out;
}

Image resize_lanczos(const Image& src, uint32_t width, uint32_t height) {
  return resize_lanczos(src, Rect{0, 0, src.width(), src.height()}, width, height);
}

}  // namespace dlprep::image
