// The x86 SIMD kernels, written once and compiled twice: by kernels_avx2.cpp (AVX2 only) and by
// kernels_gfni.cpp (AVX2 + GFNI). The including file defines L3_SIMD (the target attribute of
// every function here) and L3_GFNI (0 or 1) before including this file; everything stays in an
// anonymous namespace so no function compiled for a newer ISA can leak into portable code.
//
// Each kernel must produce exactly what its scalar twin in kernels_scalar.cpp produces; the
// unit tests compare them. The groups of 16 pixels map onto one 128-bit register.
#include <immintrin.h>

#include <cstring>

#include "l3/format.hpp"
#include "l3/kernels.hpp"

namespace dlprep::l3::detail {
namespace {

struct Tables {
  alignas(16) uint8_t tail_mask[17][16];  // lanes < n are 0xFF
  alignas(16) uint8_t gather[9][16];      // GFNI: plane bytes of width w into two 8x8 matrices
  alignas(16) uint8_t plane_mask[9][16];  // AVX2: the first 2w bytes are 0xFF
  alignas(16) uint8_t last_tr[17][16];    // TR of a row's last n pixels: lane j -> min(j+1, n-1)
  alignas(16) uint8_t chunk_mask[5][16];  // lanes 4q + g with g < n are 0xFF
  uint8_t averaging[kPredictors][5];      // AveragingMasks bytes (a_tl, a_x, a_hi, b_tl, b_tr)
  uint8_t base[16];                       // implicit base of a code (explicit codes: 0)
  uint8_t width[16];
  uint8_t is_explicit[16];
  constexpr Tables()
      : tail_mask(),
        gather(),
        plane_mask(),
        last_tr(),
        chunk_mask(),
        averaging(),
        base(),
        width(),
        is_explicit() {
    // A: T, TL, TR or avg(TL, TR); B: T, TL or TR; the prediction is avg(A, B).
    const uint8_t on = 0xFF;
    const uint8_t a_t[5] = {0, 0, 0, 0, 0}, a_tl[5] = {on, 0, 0, 0, 0}, a_tr[5] = {0, 0, on, 0, 0};
    const uint8_t a_x[5] = {0, on, on, 0, 0};
    auto set = [this](uint32_t code, const uint8_t* a, uint8_t b_tl, uint8_t b_tr) {
      for (int i = 0; i < 3; ++i) averaging[code][i] = a[i];
      averaging[code][3] = b_tl;
      averaging[code][4] = b_tr;
    };
    set(kPredTop, a_t, 0, 0);         // avg(T, T)
    set(kPredSmooth, a_x, 0, 0);      // avg(avg(TL, TR), T)
    set(kPredLeftHalf, a_tl, 0, 0);   // avg(TL, T)
    set(kPredRightHalf, a_tr, 0, 0);  // avg(TR, T)
    set(kPredTopLeft, a_tl, on, 0);   // avg(TL, TL)
    set(kPredTopRight, a_tr, 0, on);  // avg(TR, TR)
    for (int n = 0; n <= 4; ++n)
      for (int j = 0; j < 16; ++j) chunk_mask[n][j] = j % 4 < n ? 0xFF : 0;
    for (int n = 1; n <= 16; ++n)
      for (int j = 0; j < 16; ++j) last_tr[n][j] = static_cast<uint8_t>(j + 1 < n ? j + 1 : n - 1);
    for (int n = 0; n <= 16; ++n)
      for (int j = 0; j < 16; ++j) tail_mask[n][j] = j < n ? 0xFF : 0;
    for (int w = 0; w <= 8; ++w) {
      // gf2p8affine: result bit i of a byte = parity(A.byte[7-i] & x); with x = 1 << j this is
      // bit j of A.byte[7-i]. So A.byte[7-k] holds plane k (low bytes in qword 0, high in 1).
      for (int pos = 0; pos < 8; ++pos) {
        const int k = 7 - pos;
        gather[w][pos] = k < w ? static_cast<uint8_t>(2 * k) : 0x80;
        gather[w][8 + pos] = k < w ? static_cast<uint8_t>(2 * k + 1) : 0x80;
      }
      for (int j = 0; j < 16; ++j) plane_mask[w][j] = j < 2 * w ? 0xFF : 0;
    }
    for (uint32_t c = 0; c < 16; ++c) {
      base[c] = code_explicit(c) ? 0 : implicit_base(code_width(c));
      width[c] = static_cast<uint8_t>(code_width(c));
      is_explicit[c] = code_explicit(c) ? 1 : 0;
    }
  }
};
constexpr Tables kT;

// ---- Predictors over 16 pixels ----------------------------------------------------------------
// Template arguments of the row kernels besides the predictor codes: row 0 (left-deltas), and
// the "averaging" predictors (top, smooth, halves, top-left, top-right) that the decoder
// evaluates as one branch-free avg(A, B) with per-row blend masks: an 8-way switch per row
// mispredicted on most rows and cost a quarter of the decode time.
inline constexpr uint32_t kRowZero = kPredictors;
inline constexpr uint32_t kPredAveraging = kPredictors + 1;

// Per-row blend masks of kPredAveraging: A = a_hi ? (a_x ? avg(TL, TR) : TR) : (a_tl ? TL : T),
// B = b_tr ? TR : (b_tl ? TL : T), prediction avg(A, B).
struct AveragingMasks {
  __m128i a_tl, a_x, a_hi, b_tl, b_tr;
};

template <uint32_t P>
L3_SIMD inline __m128i predict16(__m128i tl, __m128i t, __m128i tr,
                                 const AveragingMasks* m = nullptr) {
  if constexpr (P == kPredAveraging) {
    const __m128i a_low = _mm_blendv_epi8(t, tl, m->a_tl);
    const __m128i a_high = _mm_blendv_epi8(tr, _mm_avg_epu8(tl, tr), m->a_x);
    const __m128i b = _mm_blendv_epi8(_mm_blendv_epi8(t, tl, m->b_tl), tr, m->b_tr);
    return _mm_avg_epu8(_mm_blendv_epi8(a_low, a_high, m->a_hi), b);
  } else if constexpr (P == kPredTop) {
    return t;
  } else if constexpr (P == kPredSmooth) {
    return _mm_avg_epu8(_mm_avg_epu8(tl, tr), t);
  } else if constexpr (P == kPredMedian) {
    return _mm_max_epu8(_mm_min_epu8(tl, t), _mm_min_epu8(_mm_max_epu8(tl, t), tr));
  } else if constexpr (P == kPredLeftHalf) {
    return _mm_avg_epu8(tl, t);
  } else if constexpr (P == kPredRightHalf) {
    return _mm_avg_epu8(t, tr);
  } else if constexpr (P == kPredTopLeft) {
    return tl;
  } else if constexpr (P == kPredTopRight) {
    return tr;
  } else {
    // Paeth: d_t = |TL + TR - 2T| needs 10 bits, so it is computed in 16-bit lanes.
    const __m256i tl16 = _mm256_cvtepu8_epi16(tl), t16 = _mm256_cvtepu8_epi16(t);
    const __m256i tr16 = _mm256_cvtepu8_epi16(tr);
    const __m256i d_t = _mm256_abs_epi16(
        _mm256_sub_epi16(_mm256_add_epi16(tl16, tr16), _mm256_add_epi16(t16, t16)));
    const __m256i d_tl = _mm256_abs_epi16(_mm256_sub_epi16(tr16, t16));
    const __m256i d_tr = _mm256_abs_epi16(_mm256_sub_epi16(tl16, t16));
    // pick T when d_t <= d_tl and d_t <= d_tr, else TL when d_tl <= d_tr, else TR.
    const __m256i not_t =
        _mm256_or_si256(_mm256_cmpgt_epi16(d_t, d_tl), _mm256_cmpgt_epi16(d_t, d_tr));
    const __m256i pick_tr = _mm256_cmpgt_epi16(d_tl, d_tr);
    const __m256i other = _mm256_blendv_epi8(tl16, tr16, pick_tr);
    const __m256i p16 = _mm256_blendv_epi8(t16, other, not_t);
    return _mm_packus_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1));
  }
}

// Walks the row above one group at a time and yields (TL, T, TR) with the border rule applied in
// registers: TL and TR come from the neighbouring groups' T by alignr, never from byte stores
// into the row (a byte store followed by an overlapping 16-byte load stalls store forwarding).
class AboveRow {
 public:
  L3_SIMD AboveRow(const uint8_t* above, uint32_t width) : above_(above), width_(width) {
    t_ = _mm_loadu_si128(reinterpret_cast<const __m128i*>(above));
    tl_ = _mm_shuffle_epi8(t_, _mm_setr_epi8(0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14));
  }
  // Neighbours of the group at x; call for x = 0, 16, 32, ... in order.
  L3_SIMD void at(uint32_t x, __m128i& tl, __m128i& t, __m128i& tr) {
    tl = tl_;
    t = t_;
    if (width_ - x > kGroupPixels) {
      const __m128i next =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(above_ + x + kGroupPixels));
      tr = _mm_alignr_epi8(next, t_, 1);
      tl_ = _mm_alignr_epi8(next, t_, 15);
      t_ = next;
    } else {  // last group: lane n-1 (the last pixel) takes itself as TR
      tr = _mm_shuffle_epi8(
          t_, _mm_load_si128(reinterpret_cast<const __m128i*>(kT.last_tr[width_ - x])));
    }
  }

 private:
  const uint8_t* above_;
  uint32_t width_;
  __m128i tl_, t_;
};

// ---- Bit planes -------------------------------------------------------------------------------
// Expands width w planes at p (16 bytes readable) into 16 values.
L3_SIMD inline __m128i unpack16(const uint8_t* p, uint32_t w) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
#if L3_GFNI
  const __m128i matrices =
      _mm_shuffle_epi8(raw, _mm_load_si128(reinterpret_cast<const __m128i*>(kT.gather[w])));
  const __m128i unit = _mm_set1_epi64x(0x8040201008040201LL);
  return _mm_gf2p8affine_epi64_epi8(unit, matrices, 0);
#else
  // Two planes per 256-bit step: lane 0 tests plane k, lane 1 plane k + 4, each pixel's bit.
  const __m128i masked =
      _mm_and_si128(raw, _mm_load_si128(reinterpret_cast<const __m128i*>(kT.plane_mask[w])));
  const __m256i both = _mm256_broadcastsi128_si256(masked);
  const __m256i bit_select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  __m256i acc = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    const __m256i spread = _mm256_setr_epi8(
        2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1, 2 * k + 1, 2 * k + 1,
        2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 8, 2 * k + 8, 2 * k + 8,
        2 * k + 8, 2 * k + 8, 2 * k + 8, 2 * k + 8, 2 * k + 8, 2 * k + 9, 2 * k + 9, 2 * k + 9,
        2 * k + 9, 2 * k + 9, 2 * k + 9, 2 * k + 9, 2 * k + 9);
    const __m256i bytes = _mm256_shuffle_epi8(both, spread);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit_select), bit_select);
    const __m256i weight = _mm256_setr_m128i(_mm_set1_epi8(static_cast<char>(1 << k)),
                                             _mm_set1_epi8(static_cast<char>(1 << (k + 4))));
    acc = _mm256_or_si256(acc, _mm256_and_si256(set, weight));
  }
  return _mm_or_si128(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
#endif
}

// Writes the w planes of 16 values (bits above w are 0) as 2w bytes at out (16 bytes writable).
L3_SIMD inline void pack16(__m128i v, uint32_t w, uint8_t* out) {
#if L3_GFNI
  // Reverse the pixels of each 8-pixel half so that A.byte[7-i] = pixel i; the transpose then
  // leaves plane k's low byte at byte k and its high byte at byte 8 + k; interleave them.
  const __m128i reverse = _mm_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  const __m128i unit = _mm_set1_epi64x(0x8040201008040201LL);
  const __m128i planes = _mm_gf2p8affine_epi64_epi8(unit, _mm_shuffle_epi8(v, reverse), 0);
  const __m128i interleave = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_shuffle_epi8(planes, interleave));
  (void)w;
#else
  // movemask takes the top bit of each byte: shift bit k there (16-bit shifts keep bytes apart
  // because the bits that cross into the high byte are below its top bit).
  for (uint32_t k = 0; k < w; ++k) {
    const uint32_t plane =
        static_cast<uint32_t>(_mm_movemask_epi8(_mm_sll_epi16(v, _mm_cvtsi32_si128(7 - k))));
    out[2 * k] = static_cast<uint8_t>(plane);
    out[2 * k + 1] = static_cast<uint8_t>(plane >> 8);
  }
#endif
}

// ---- Decode ------------------------------------------------------------------------------------
template <uint32_t P>
L3_SIMD void decode_row(const uint8_t* above, uint8_t* row, uint32_t width, const uint8_t* codes,
                        uint32_t first_group, uint8_t seed, const uint8_t*& in,
                        const AveragingMasks* masks = nullptr) {
  const uint8_t* p = in;
  AboveRow neighbours(P == kRowZero ? row : above, width);  // row 0 does not read it
  __m128i carry = _mm_set1_epi8(static_cast<char>(seed));
  for (uint32_t x = 0, g = first_group; x < width; x += kGroupPixels, ++g) {
    const uint32_t code = (codes[g >> 1] >> ((g & 1) * 4)) & 0xF;
    const uint32_t is_explicit = kT.is_explicit[code];
    // Branch-free (explicit codes come and go at random): kT.base is 0 for explicit codes.
    const uint8_t base = static_cast<uint8_t>((p[0] & (0u - is_explicit)) | kT.base[code]);
    p += is_explicit;
    const uint32_t w = kT.width[code];
    const __m128i r = _mm_add_epi8(unpack16(p, w), _mm_set1_epi8(static_cast<char>(base)));
    p += 2 * w;
    if constexpr (P ==
                  kRowZero) {  // row 0: left-deltas, a prefix sum continued from the previous group
      __m128i s = _mm_add_epi8(r, _mm_slli_si128(r, 1));
      s = _mm_add_epi8(s, _mm_slli_si128(s, 2));
      s = _mm_add_epi8(s, _mm_slli_si128(s, 4));
      s = _mm_add_epi8(s, _mm_slli_si128(s, 8));
      s = _mm_add_epi8(s, carry);
      carry = _mm_shuffle_epi8(s, _mm_set1_epi8(15));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + x), s);
    } else {
      __m128i tl, t, tr;
      neighbours.at(x, tl, t, tr);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + x),
                       _mm_add_epi8(predict16<P>(tl, t, tr, masks), r));
    }
  }
  in = p;
}

L3_SIMD void decode_plane_simd(const PatchView& patch, uint8_t* plane, size_t stride) {
  const uint32_t w = patch.width, gpr = groups_per_row(w);
  const uint8_t* in = patch.payload;
  decode_row<kRowZero>(nullptr, plane, w, patch.width_codes, 0, patch.seed, in);
  for (uint32_t y = 1; y < patch.height; ++y) {
    uint8_t* row = plane + y * stride;
    const uint8_t* above = row - stride;
    const uint32_t predictor = predictor_code(patch.predictor_codes, y);
    const uint32_t g = y * gpr;
    if (predictor == kPredMedian) {
      decode_row<kPredMedian>(above, row, w, patch.width_codes, g, 0, in);
    } else if (predictor == kPredPaeth) {
      decode_row<kPredPaeth>(above, row, w, patch.width_codes, g, 0, in);
    } else {
      const uint8_t* f = kT.averaging[predictor];
      const AveragingMasks masks = {
          _mm_set1_epi8(static_cast<char>(f[0])), _mm_set1_epi8(static_cast<char>(f[1])),
          _mm_set1_epi8(static_cast<char>(f[2])), _mm_set1_epi8(static_cast<char>(f[3])),
          _mm_set1_epi8(static_cast<char>(f[4]))};
      decode_row<kPredAveraging>(above, row, w, patch.width_codes, g, 0, in, &masks);
    }
  }
}

// ---- Planar to HWC -----------------------------------------------------------------------------
L3_SIMD void store_hwc_simd(const uint8_t* const* planes, size_t plane_stride, uint32_t width,
                            uint32_t height, uint32_t channels, bool subtract_green, uint8_t* out,
                            size_t out_stride) {
  const uint32_t full = width & ~15u;
  for (uint32_t y = 0; y < height; ++y) {
    const size_t off = y * plane_stride;
    uint8_t* o = out + y * out_stride;
    uint32_t x = 0;
    if (channels == 1) {
      std::memcpy(o, planes[0] + off, width);
      continue;
    }
    if (channels == 2) {
      for (; x < full; x += 16) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes[0] + off + x));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes[1] + off + x));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 2 * x), _mm_unpacklo_epi8(a, b));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 2 * x + 16), _mm_unpackhi_epi8(a, b));
      }
    } else {
      for (; x < full; x += 16) {
        const __m128i g = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes[1] + off + x));
        __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes[0] + off + x));
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes[2] + off + x));
        if (subtract_green) {
          r = _mm_add_epi8(r, g);
          b = _mm_add_epi8(b, g);
        }
        if (channels == 4) {
          const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes[3] + off + x));
          const __m128i rg_lo = _mm_unpacklo_epi8(r, g), rg_hi = _mm_unpackhi_epi8(r, g);
          const __m128i ba_lo = _mm_unpacklo_epi8(b, a), ba_hi = _mm_unpackhi_epi8(b, a);
          __m128i* d = reinterpret_cast<__m128i*>(o + 4 * x);
          _mm_storeu_si128(d, _mm_unpacklo_epi16(rg_lo, ba_lo));
          _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(rg_lo, ba_lo));
          _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(rg_hi, ba_hi));
          _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(rg_hi, ba_hi));
        } else {
          // 16 RGB pixels = 48 bytes: each output vector takes bytes from all three planes.
          const __m128i r0 =
              _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5);
          const __m128i g0 =
              _mm_setr_epi8(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1);
          const __m128i b0 =
              _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
          const __m128i r1 =
              _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1);
          const __m128i g1 =
              _mm_setr_epi8(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10);
          const __m128i b1 =
              _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1);
          const __m128i r2 =
              _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1);
          const __m128i g2 =
              _mm_setr_epi8(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1);
          const __m128i b2 =
              _mm_setr_epi8(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15);
          __m128i* d = reinterpret_cast<__m128i*>(o + 3 * x);
          _mm_storeu_si128(
              d, _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r0), _mm_shuffle_epi8(g, g0)),
                              _mm_shuffle_epi8(b, b0)));
          _mm_storeu_si128(
              d + 1, _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r1), _mm_shuffle_epi8(g, g1)),
                                  _mm_shuffle_epi8(b, b1)));
          _mm_storeu_si128(
              d + 2, _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r2), _mm_shuffle_epi8(g, g2)),
                                  _mm_shuffle_epi8(b, b2)));
        }
      }
    }
    for (; x < width; ++x) {  // the tail of a partial patch, one pixel at a time
      for (uint32_t c = 0; c < channels; ++c) {
        uint8_t v = planes[c][off + x];
        if (subtract_green && (c == 0 || c == 2)) v = static_cast<uint8_t>(v + planes[1][off + x]);
        o[x * channels + c] = v;
      }
    }
  }
}

// ---- Encode ------------------------------------------------------------------------------------
L3_SIMD void load_planes_simd(const uint8_t* in, size_t in_stride, uint32_t width, uint32_t height,
                              uint32_t channels, bool subtract_green, uint8_t* const* planes,
                              size_t plane_stride) {
  const uint32_t full = width & ~15u;
  for (uint32_t y = 0; y < height; ++y) {
    const uint8_t* row = in + y * in_stride;
    const size_t off = y * plane_stride;
    uint32_t x = 0;
    if (channels == 1) {
      std::memcpy(planes[0] + off, row, width);
      continue;
    }
    for (; x < full; x += 16) {
      const __m128i* src = reinterpret_cast<const __m128i*>(row + x * channels);
      __m128i out[4];
      if (channels == 2) {
        const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
        const __m128i a = _mm_shuffle_epi8(_mm_loadu_si128(src), split);
        const __m128i b = _mm_shuffle_epi8(_mm_loadu_si128(src + 1), split);
        out[0] = _mm_unpacklo_epi64(a, b);
        out[1] = _mm_unpackhi_epi64(a, b);
      } else if (channels == 3) {
        const __m128i a = _mm_loadu_si128(src), b = _mm_loadu_si128(src + 1),
                      c = _mm_loadu_si128(src + 2);
        out[0] = _mm_or_si128(
            _mm_or_si128(_mm_shuffle_epi8(a, _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1,
                                                           -1, -1, -1, -1, -1)),
                         _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14,
                                                           -1, -1, -1, -1, -1))),
            _mm_shuffle_epi8(
                c, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13)));
        out[1] = _mm_or_si128(
            _mm_or_si128(_mm_shuffle_epi8(a, _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1,
                                                           -1, -1, -1, -1, -1)),
                         _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15,
                                                           -1, -1, -1, -1, -1))),
            _mm_shuffle_epi8(
                c, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14)));
        out[2] = _mm_or_si128(
            _mm_or_si128(_mm_shuffle_epi8(a, _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1,
                                                           -1, -1, -1, -1, -1)),
                         _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1,
                                                           -1, -1, -1, -1, -1))),
            _mm_shuffle_epi8(
                c, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15)));
      } else {
        const __m128i split = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        const __m128i a = _mm_shuffle_epi8(_mm_loadu_si128(src), split);
        const __m128i b = _mm_shuffle_epi8(_mm_loadu_si128(src + 1), split);
        const __m128i c = _mm_shuffle_epi8(_mm_loadu_si128(src + 2), split);
        const __m128i d = _mm_shuffle_epi8(_mm_loadu_si128(src + 3), split);
        const __m128i ab_lo = _mm_unpacklo_epi32(a, b), ab_hi = _mm_unpackhi_epi32(a, b);
        const __m128i cd_lo = _mm_unpacklo_epi32(c, d), cd_hi = _mm_unpackhi_epi32(c, d);
        out[0] = _mm_unpacklo_epi64(ab_lo, cd_lo);
        out[1] = _mm_unpackhi_epi64(ab_lo, cd_lo);
        out[2] = _mm_unpacklo_epi64(ab_hi, cd_hi);
        out[3] = _mm_unpackhi_epi64(ab_hi, cd_hi);
      }
      if (subtract_green) {
        out[0] = _mm_sub_epi8(out[0], out[1]);
        out[2] = _mm_sub_epi8(out[2], out[1]);
      }
      for (uint32_t c = 0; c < channels; ++c)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(planes[c] + off + x), out[c]);
    }
    for (; x < width; ++x) {  // the tail of a partial patch, one pixel at a time
      const uint8_t* px = row + x * channels;
      for (uint32_t c = 0; c < channels; ++c) {
        uint8_t v = px[c];
        if (subtract_green && (c == 0 || c == 2)) v = static_cast<uint8_t>(v - px[1]);
        planes[c][off + x] = v;
      }
    }
  }
}

template <uint32_t P>
L3_SIMD void residuals_row(const uint8_t* above, const uint8_t* row, uint32_t width, uint8_t seed,
                           uint8_t* out) {
  AboveRow neighbours(P == kRowZero ? row : above, width);
  __m128i previous = _mm_set1_epi8(static_cast<char>(seed));  // row 0: left of pixel 0 is the seed
  for (uint32_t x = 0; x < width; x += kGroupPixels) {
    const __m128i cur = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + x));
    __m128i pred;
    if constexpr (P == kRowZero) {
      pred = _mm_alignr_epi8(cur, previous, 15);  // the left neighbours, in registers
      previous = cur;
    } else {
      __m128i tl, t, tr;
      neighbours.at(x, tl, t, tr);
      pred = predict16<P>(tl, t, tr);
    }
    __m128i r = _mm_sub_epi8(cur, pred);
    if (width - x < kGroupPixels)
      r = _mm_and_si128(r,
                        _mm_load_si128(reinterpret_cast<const __m128i*>(kT.tail_mask[width - x])));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x), r);
  }
}

L3_SIMD void residuals_simd(uint32_t predictor, const uint8_t* above, const uint8_t* row,
                            uint32_t width, uint8_t seed, uint8_t* out) {
  if (above == nullptr) {
    residuals_row<kRowZero>(nullptr, row, width, seed, out);
    return;
  }
  switch (predictor) {
    case kPredTop:
      residuals_row<kPredTop>(above, row, width, 0, out);
      break;
    case kPredSmooth:
      residuals_row<kPredSmooth>(above, row, width, 0, out);
      break;
    case kPredMedian:
      residuals_row<kPredMedian>(above, row, width, 0, out);
      break;
    case kPredPaeth:
      residuals_row<kPredPaeth>(above, row, width, 0, out);
      break;
    case kPredLeftHalf:
      residuals_row<kPredLeftHalf>(above, row, width, 0, out);
      break;
    case kPredRightHalf:
      residuals_row<kPredRightHalf>(above, row, width, 0, out);
      break;
    case kPredTopLeft:
      residuals_row<kPredTopLeft>(above, row, width, 0, out);
      break;
    default:
      residuals_row<kPredTopRight>(above, row, width, 0, out);
      break;
  }
}

// Signed min and max of four groups at once: a transposing reduction (unpack + min) leaves the
// minimum of group i in byte i; the maxima come along in the upper 128-bit lane as minima of the
// complemented values.
L3_SIMD inline void min_max4(const __m128i r[4], uint32_t& mins, uint32_t& maxs) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  __m256i v[4];
  for (int i = 0; i < 4; ++i) {
    const __m128i biased = _mm_xor_si128(r[i], flip);  // signed order as unsigned order
    v[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(biased),
                                   _mm_xor_si128(biased, _mm_set1_epi8(-1)), 1);
  }
  const __m256i ab =
      _mm256_min_epu8(_mm256_unpacklo_epi8(v[0], v[1]), _mm256_unpackhi_epi8(v[0], v[1]));
  const __m256i cd =
      _mm256_min_epu8(_mm256_unpacklo_epi8(v[2], v[3]), _mm256_unpackhi_epi8(v[2], v[3]));
  __m256i m = _mm256_min_epu8(_mm256_unpacklo_epi16(ab, cd), _mm256_unpackhi_epi16(ab, cd));
  m = _mm256_min_epu8(m, _mm256_srli_si256(m, 8));
  m = _mm256_min_epu8(m, _mm256_srli_si256(m, 4));
  mins = static_cast<uint32_t>(_mm256_cvtsi256_si32(m)) ^ 0x80808080u;  // back to two's complement
  maxs = ~static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(m, 1))) ^ 0x80808080u;
}

// Bit length of each byte: the larger of the lengths of its high nibble (+4) and low nibble.
L3_SIMD inline __m128i bit_length16(__m128i x) {
  const __m128i low_lut = _mm_setr_epi8(0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4);
  const __m128i high_lut = _mm_setr_epi8(0, 5, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 8);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i high = _mm_and_si128(_mm_srli_epi16(x, 4), nibble);
  return _mm_max_epu8(_mm_shuffle_epi8(high_lut, high),
                      _mm_shuffle_epi8(low_lut, _mm_and_si128(x, nibble)));
}

// Codes, bases and costs (bits, at most 128: a byte) of 16 groups from their signed min and max:
// the rule of plan_row_scalar, one lane per group.
struct Plan16 {
  __m128i codes, bases, cost;
};
L3_SIMD inline Plan16 plan16(__m128i smin, __m128i smax) {
  const __m128i zero = _mm_setzero_si128(), ones = _mm_set1_epi8(1);
  // Largest magnitude in the implicit range [-2^(w-1), 2^(w-1)): -1 counts as 0.
  const __m128i magnitude = _mm_max_epi8(smax, _mm_xor_si128(smin, _mm_set1_epi8(-1)));
  const __m128i all_zero = _mm_cmpeq_epi8(_mm_or_si128(smin, smax), zero);
  const __m128i implicit_width =
      _mm_andnot_si128(all_zero, _mm_add_epi8(bit_length16(magnitude), ones));
  const __m128i explicit_width = bit_length16(_mm_sub_epi8(smax, smin));
  const __m128i use_explicit =
      _mm_and_si128(_mm_cmpgt_epi8(implicit_width, explicit_width),
                    _mm_cmpgt_epi8(_mm_set1_epi8(kMaxExplicitWidth + 1), explicit_width));
  Plan16 plan;
  plan.codes = _mm_blendv_epi8(implicit_width,
                               _mm_add_epi8(explicit_width, _mm_set1_epi8(kFirstExplicitCode)),
                               use_explicit);
  const __m128i base_lut = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kT.base));
  plan.bases = _mm_blendv_epi8(_mm_shuffle_epi8(base_lut, implicit_width), smin, use_explicit);
  plan.cost =
      _mm_add_epi8(_mm_slli_epi16(_mm_blendv_epi8(implicit_width, explicit_width, use_explicit), 4),
                   _mm_and_si128(use_explicit, _mm_set1_epi8(8)));
  return plan;
}

// Puts 32-bit word `chunk` of min/max vectors into byte lanes 4 * chunk .. 4 * chunk + 3 of
// the running vectors (built in registers: storing words and reloading them as one vector
// stalls store forwarding; measured: a fifth of the encoder's time).
L3_SIMD inline void insert_chunk(__m128i& v, uint32_t word, uint32_t chunk) {
  switch (chunk) {
    case 0:
      v = _mm_cvtsi32_si128(static_cast<int>(word));
      break;
    case 1:
      v = _mm_insert_epi32(v, static_cast<int>(word), 1);
      break;
    case 2:
      v = _mm_insert_epi32(v, static_cast<int>(word), 2);
      break;
    default:
      v = _mm_insert_epi32(v, static_cast<int>(word), 3);
      break;
  }
}

// Same choice as plan_row_scalar: min and max of four groups per step, then the codes of all
// (up to 16) groups of the row in one register.
L3_SIMD void plan_row_simd(const uint8_t* residuals, uint32_t width, RowPlan& plan) {
  const uint32_t groups = groups_per_row(width);
  __m128i smin = _mm_setzero_si128(), smax = _mm_setzero_si128();
  for (uint32_t g0 = 0; g0 < groups; g0 += 4) {
    __m128i r[4];
    for (uint32_t i = 0; i < 4; ++i) {  // groups past the row are computed and ignored
      const uint32_t x = (g0 + i) * kGroupPixels;
      r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(residuals + x));
      if (x < width && width - x < kGroupPixels)  // lanes past the row repeat lane 0
        r[i] = _mm_blendv_epi8(
            _mm_broadcastb_epi8(r[i]), r[i],
            _mm_load_si128(reinterpret_cast<const __m128i*>(kT.tail_mask[width - x])));
    }
    uint32_t mins, maxs;
    min_max4(r, mins, maxs);
    insert_chunk(smin, mins, g0 / 4);
    insert_chunk(smax, maxs, g0 / 4);
  }
  const Plan16 p = plan16(smin, smax);
  const __m128i valid = _mm_load_si128(reinterpret_cast<const __m128i*>(kT.tail_mask[groups]));
  const __m128i sums = _mm_sad_epu8(_mm_and_si128(p.cost, valid), _mm_setzero_si128());
  plan.bits = static_cast<uint32_t>(_mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(plan.codes), p.codes);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(plan.bases), p.bases);
}

// Residuals of predictor P over a row (stored at out) and the signed min and max of each group
// (byte g of mins/maxs), in one pass.
template <uint32_t P>
L3_SIMD inline void row_min_max(const uint8_t* above, const uint8_t* row, uint32_t width,
                                uint8_t* out, __m128i& smin, __m128i& smax) {
  AboveRow neighbours(above, width);
  const uint32_t groups = groups_per_row(width);
  for (uint32_t g0 = 0; g0 < groups; g0 += 4) {
    __m128i r[4];
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t x = (g0 + i) * kGroupPixels;
      if (x >= width) {  // past the row: computed and ignored
        r[i] = _mm_setzero_si128();
        continue;
      }
      __m128i tl, t, tr;
      neighbours.at(x, tl, t, tr);
      __m128i v = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + x)),
                               predict16<P>(tl, t, tr));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x), v);  // lanes past the row: unused
      if (width - x < kGroupPixels)  // lanes past the row repeat lane 0: min and max unchanged
        v = _mm_blendv_epi8(
            _mm_broadcastb_epi8(v), v,
            _mm_load_si128(reinterpret_cast<const __m128i*>(kT.tail_mask[width - x])));
      r[i] = v;
    }
    uint32_t mins, maxs;
    min_max4(r, mins, maxs);
    insert_chunk(smin, mins, g0 / 4);
    insert_chunk(smax, maxs, g0 / 4);
  }
}

// Word `chunk` of four vectors side by side: lanes 4q..4q+3 hold word `chunk` of v[q].
L3_SIMD inline __m128i pick_word(__m128i v, __m128i index) {
  return _mm_castps_si128(_mm_permutevar_ps(_mm_castsi128_ps(v), index));
}
L3_SIMD inline __m128i gather_chunk(const __m128i* v, __m128i chunk) {
  return _mm_unpacklo_epi64(_mm_unpacklo_epi32(pick_word(v[0], chunk), pick_word(v[1], chunk)),
                            _mm_unpacklo_epi32(pick_word(v[2], chunk), pick_word(v[3], chunk)));
}

// The choice of choose_row_scalar, with the eight predictors' plans computed four at a time
// (lane 4q + g: predictor q, group g of a chunk of four groups) and the cheapest picked by
// phminposuw, which returns the lowest index among equal minima as the scalar loop does.
L3_SIMD uint32_t choose_row_simd(const uint8_t* above, const uint8_t* row, uint32_t width,
                                 uint8_t* residuals, RowPlan& plan) {
  __m128i mins[kPredictors], maxs[kPredictors];
  for (uint32_t p = 0; p < kPredictors; ++p) mins[p] = maxs[p] = _mm_setzero_si128();
  row_min_max<kPredTop>(above, row, width, residuals + 0 * kMaxPatch, mins[0], maxs[0]);
  row_min_max<kPredSmooth>(above, row, width, residuals + 1 * kMaxPatch, mins[1], maxs[1]);
  row_min_max<kPredMedian>(above, row, width, residuals + 2 * kMaxPatch, mins[2], maxs[2]);
  row_min_max<kPredPaeth>(above, row, width, residuals + 3 * kMaxPatch, mins[3], maxs[3]);
  row_min_max<kPredLeftHalf>(above, row, width, residuals + 4 * kMaxPatch, mins[4], maxs[4]);
  row_min_max<kPredRightHalf>(above, row, width, residuals + 5 * kMaxPatch, mins[5], maxs[5]);
  row_min_max<kPredTopLeft>(above, row, width, residuals + 6 * kMaxPatch, mins[6], maxs[6]);
  row_min_max<kPredTopRight>(above, row, width, residuals + 7 * kMaxPatch, mins[7], maxs[7]);
  static_assert(kPredictors == 8, "two halves of four predictors");

  const uint32_t groups = groups_per_row(width);
  alignas(16) uint8_t codes[kPredictors][16], bases[kPredictors][16];
  __m128i totals[2] = {_mm_setzero_si128(), _mm_setzero_si128()};
  const __m128i ones8 = _mm_set1_epi8(1), ones16 = _mm_set1_epi16(1);
  for (uint32_t chunk = 0; chunk * 4 < groups; ++chunk) {
    const __m128i select = _mm_set1_epi32(static_cast<int>(chunk));
    const uint32_t in_chunk = groups - chunk * 4 < 4 ? groups - chunk * 4 : 4;
    const __m128i valid = _mm_load_si128(reinterpret_cast<const __m128i*>(kT.chunk_mask[in_chunk]));
    for (uint32_t half = 0; half < 2; ++half) {
      const Plan16 p =
          plan16(gather_chunk(mins + 4 * half, select), gather_chunk(maxs + 4 * half, select));
      // Bits per predictor: bytes summed in pairs, then pairs of pairs.
      const __m128i cost = _mm_and_si128(p.cost, valid);
      totals[half] =
          _mm_add_epi32(totals[half], _mm_madd_epi16(_mm_maddubs_epi16(cost, ones8), ones16));
      alignas(16) uint8_t c[16], b[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(c), p.codes);
      _mm_store_si128(reinterpret_cast<__m128i*>(b), p.bases);
      for (uint32_t q = 0; q < 4; ++q) {
        std::memcpy(&codes[4 * half + q][4 * chunk], c + 4 * q, 4);
        std::memcpy(&bases[4 * half + q][4 * chunk], b + 4 * q, 4);
      }
    }
  }
  // At most 16 groups x 128 bits = 2048 per predictor: fits the 16-bit lanes of phminposuw.
  const __m128i best = _mm_minpos_epu16(_mm_packus_epi32(totals[0], totals[1]));
  const uint32_t predictor = static_cast<uint32_t>(_mm_extract_epi16(best, 1));
  plan.bits = static_cast<uint32_t>(_mm_extract_epi16(best, 0));
  std::memcpy(plan.codes, codes[predictor], 16);
  std::memcpy(plan.bases, bases[predictor], 16);
  return predictor;
}

L3_SIMD size_t pack_row_simd(const uint8_t* residuals, uint32_t width, const RowPlan& plan,
                             uint8_t* out) {
  uint8_t* o = out;
  for (uint32_t g = 0, x = 0; x < width; ++g, x += kGroupPixels) {
    const uint32_t code = plan.codes[g], w = kT.width[code];
    __m128i v = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(residuals + x)),
                             _mm_set1_epi8(static_cast<char>(plan.bases[g])));
    if (width - x < kGroupPixels)  // padding bits of a partial group are 0
      v = _mm_and_si128(v,
                        _mm_load_si128(reinterpret_cast<const __m128i*>(kT.tail_mask[width - x])));
    if (kT.is_explicit[code]) *o++ = plan.bases[g];
    pack16(v, w, o);
    o += 2 * w;
  }
  return static_cast<size_t>(o - out);
}

// ---- Adler-32 ----------------------------------------------------------------------------------
// 32 bytes per step: s1 gains the byte sum (psadbw); s2 gains 32 * s1 before the step plus the
// bytes weighted 32..1 (pmaddubsw + pmaddwd). Blocks of at most 5536 bytes keep every lane below
// 2^32 before the modulo, as zlib's NMAX does for the scalar loop.
L3_SIMD uint32_t adler32_simd(uint32_t adler, const uint8_t* data, size_t size) {
  uint64_t s1 = adler & 0xFFFF, s2 = adler >> 16;
  const __m256i weights =
      _mm256_setr_epi8(32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14,
                       13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
  const __m256i ones = _mm256_set1_epi16(1);
  while (size >= 32) {
    size_t chunks = size / 32;
    if (chunks > 173) chunks = 173;
    __m256i vs1 = _mm256_setzero_si256(), vs2 = _mm256_setzero_si256(),
            prefix = _mm256_setzero_si256();
    for (size_t i = 0; i < chunks; ++i) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data));
      prefix = _mm256_add_epi32(prefix, vs1);
      vs1 = _mm256_add_epi32(vs1, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
      vs2 = _mm256_add_epi32(vs2, _mm256_madd_epi16(_mm256_maddubs_epi16(bytes, weights), ones));
      data += 32;
    }
    alignas(32) uint32_t a[8], b[8], c[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(a), vs1);
    _mm256_store_si256(reinterpret_cast<__m256i*>(b), vs2);
    _mm256_store_si256(reinterpret_cast<__m256i*>(c), prefix);
    uint64_t sum1 = 0, sum2 = 0, sum_prefix = 0;
    for (int i = 0; i < 8; ++i) {
      sum1 += a[i];
      sum2 += b[i];
      sum_prefix += c[i];
    }
    s2 = (s2 + 32 * chunks * s1 + 32 * sum_prefix + sum2) % kAdlerMod;
    s1 = (s1 + sum1) % kAdlerMod;
    size -= chunks * 32;
  }
  while (size--) {
    s1 += *data++;
    s2 += s1;
  }
  return static_cast<uint32_t>(((s2 % kAdlerMod) << 16) | (s1 % kAdlerMod));
}

}  // namespace
}  // namespace dlprep::l3::detail
