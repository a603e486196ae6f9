// The L3 bitstream (version 1): every constant and layout a decoder needs, CPU, CUDA or HLS.
// The normative text is man/dlprep-l3.5; this header must match it exactly. Plain C++ that nvcc
// and Vitis HLS compile: nothing beyond <cstdint> and <cstddef>.
//
// File   = Header (40 bytes) | patch table (channels x patches x 8 bytes) | channel 0 data | ...
// Patch  = seed byte | predictor codes (3 bits per row 1..h-1) | width codes (4 bits per group) |
//          group payloads in row-major group order: [base byte] + width x 2 bytes of bit planes.
// All multi-byte integers are little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define DLPREP_L3_HD __host__ __device__ __forceinline__ constexpr
#else
#define DLPREP_L3_HD constexpr inline
#endif

namespace dlprep::l3 {

/// First 8 bytes of every L3 file. Like PNG's signature: a non-ASCII first byte, CR LF, ^Z and LF,
/// so that text-mode transfers and `type` on Windows are detected.
inline constexpr uint8_t kMagic[8] = {0x8B, 'L', '3', 'I', '\r', '\n', 0x1A, '\n'};
/// Bitstream version written by this code; a decoder rejects any other value as unsupported.
inline constexpr uint8_t kVersion = 1;

// ---- Header: byte offsets ----------------------------------------------------------------------
inline constexpr size_t kOffMagic = 0;       ///< 8 bytes, kMagic
inline constexpr size_t kOffVersion = 8;     ///< u8, kVersion
inline constexpr size_t kOffChannels = 9;    ///< u8, 1..4
inline constexpr size_t kOffPatchLog2 = 10;  ///< u8, kMinPatchLog2..kMaxPatchLog2
inline constexpr size_t kOffFlags = 11;      ///< u8, kFlag* bits; others must be 0
inline constexpr size_t kOffMode = 12;       ///< u8, coding mode: kModePacked
inline constexpr size_t kOffReserved0 = 13;  ///< 3 bytes, must be 0
inline constexpr size_t kOffWidth = 16;      ///< u32, 1..65535
inline constexpr size_t kOffHeight = 20;     ///< u32, 1..65535
inline constexpr size_t kOffFileSize = 24;   ///< u64, total bytes of the file
inline constexpr size_t kOffHeaderSum = 32;  ///< u32, Adler-32 of bytes [0,32) then the table
inline constexpr size_t kOffReserved1 = 36;  ///< u32, must be 0 (keeps the table 8-aligned)
inline constexpr size_t kHeaderBytes = 40;

/// Channels 0 and 2 are stored as R-G and B-G (mod 256); only with 3 or 4 channels.
inline constexpr uint8_t kFlagSubtractGreen = 0x01;
inline constexpr uint8_t kKnownFlags = kFlagSubtractGreen;
/// The only coding mode of version 1: bit-packed groups (an entropy-coded mode may follow).
inline constexpr uint8_t kModePacked = 0;

/// Patch sides are powers of two, 8..256: 8 is the smallest that still amortises the per-patch
/// seed and table entry; 256 keeps one channel patch (64 KiB) in L2 and a GPU block's shared
/// memory.
inline constexpr uint32_t kMinPatchLog2 = 3;
inline constexpr uint32_t kMaxPatchLog2 = 8;
inline constexpr uint32_t kMaxPatch = 1u << kMaxPatchLog2;

// ---- Patch table -------------------------------------------------------------------------------
/// One entry per (channel, patch), channel-major, patches row-major over the patch grid:
/// u32 end offset of the patch relative to its channel's data start (the patch starts at the
/// previous entry's end, or 0), then u32 Adler-32 of the patch's bytes.
inline constexpr size_t kTableEntryBytes = 8;

// ---- Groups ------------------------------------------------------------------------------------
/// A group is 16 horizontally adjacent pixels of one patch row (the last group of a row may be
/// shorter). A group of width w stores w bit planes of 16 bits: 2w bytes, so it stays byte-aligned.
inline constexpr uint32_t kGroupPixels = 16;
inline constexpr uint32_t kMaxWidth = 8;

/// A 4-bit width code: 0..8 = width 0..8 with the implicit base; 9..15 = width 0..6 with an
/// explicit base byte in front of the planes.
inline constexpr uint32_t kFirstExplicitCode = 9;
inline constexpr uint32_t kMaxExplicitWidth = 6;

DLPREP_L3_HD uint32_t code_width(uint32_t code) {
  return code < kFirstExplicitCode ? code : code - kFirstExplicitCode;
}
DLPREP_L3_HD bool code_explicit(uint32_t code) { return code >= kFirstExplicitCode; }
/// Payload bytes of a group with this code: the optional base, then 2 bytes per plane.
DLPREP_L3_HD uint32_t code_bytes(uint32_t code) {
  return 2 * code_width(code) + (code_explicit(code) ? 1u : 0u);
}
/// The implicit base centres the range on 0: residuals -2^(w-1) .. 2^(w-1)-1 (w = 0: only 0).
DLPREP_L3_HD uint8_t implicit_base(uint32_t width) {
  return width == 0 ? uint8_t{0} : static_cast<uint8_t>(256u - (1u << (width - 1)));
}

// ---- Row predictors (rows 1..h-1 of a patch) ----------------------------------------------------
/// TL, T, TR are the pixels of the row above at x-1, x, x+1. Outside the patch (x-1 < 0 or
/// x+1 >= patch row width) the nearest in-patch pixel of the row above is used instead (T itself).
/// Eight predictors, 3 bits per row: measured on FHD photos, 8 beat 4 by 3% of the file size and
/// 12 (4 bits) gained nothing more.
enum Predictor : uint32_t {
  kPredTop = 0,        ///< T
  kPredSmooth = 1,     ///< avg(avg(TL, TR), T)
  kPredMedian = 2,     ///< median(TL, T, TR)
  kPredPaeth = 3,      ///< the L3 paper's Paeth over (TL, T, TR), see paeth()
  kPredLeftHalf = 4,   ///< avg(TL, T)
  kPredRightHalf = 5,  ///< avg(T, TR)
  kPredTopLeft = 6,    ///< TL
  kPredTopRight = 7,   ///< TR
};
inline constexpr uint32_t kPredictors = 8;
inline constexpr uint32_t kPredictorBits = 3;

/// avg(a, b) = (a + b + 1) >> 1 without wrap-around (x86 pavgb, CUDA __vavgu4).
DLPREP_L3_HD uint8_t avg_up(uint8_t a, uint8_t b) {
  return static_cast<uint8_t>((uint32_t{a} + b + 1) >> 1);
}
DLPREP_L3_HD uint8_t min_u8(uint8_t a, uint8_t b) { return a < b ? a : b; }
DLPREP_L3_HD uint8_t max_u8(uint8_t a, uint8_t b) { return a < b ? b : a; }
DLPREP_L3_HD uint8_t median3(uint8_t a, uint8_t b, uint8_t c) {
  return max_u8(min_u8(a, b), min_u8(max_u8(a, b), c));
}
DLPREP_L3_HD int32_t abs_i32(int32_t v) { return v < 0 ? -v : v; }
/// Paeth over (TL, T, TR): estimate p = TL + TR - T and take the neighbour nearest to p; on a tie
/// T wins, then TL. (|p-T| = |TL+TR-2T|, |p-TL| = |TR-T|, |p-TR| = |TL-T|.)
DLPREP_L3_HD uint8_t paeth(uint8_t tl, uint8_t t, uint8_t tr) {
  const int32_t d_t = abs_i32(int32_t{tl} + tr - 2 * int32_t{t});
  const int32_t d_tl = abs_i32(int32_t{tr} - t);
  const int32_t d_tr = abs_i32(int32_t{tl} - t);
  if (d_t <= d_tl && d_t <= d_tr) return t;
  return d_tl <= d_tr ? tl : tr;
}
DLPREP_L3_HD uint8_t predict(uint32_t predictor, uint8_t tl, uint8_t t, uint8_t tr) {
  switch (predictor) {
    case kPredTop:
      return t;
    case kPredSmooth:
      return avg_up(avg_up(tl, tr), t);
    case kPredMedian:
      return median3(tl, t, tr);
    case kPredPaeth:
      return paeth(tl, t, tr);
    case kPredLeftHalf:
      return avg_up(tl, t);
    case kPredRightHalf:
      return avg_up(t, tr);
    case kPredTopLeft:
      return tl;
    default:
      return tr;
  }
}

// ---- Patch geometry ----------------------------------------------------------------------------
/// Bytes of a patch before its group payloads: the seed (pixel (0,0)), the predictor codes of
/// rows 1..h-1 (3 bits each, a little-endian bit string: row y at bit 3(y-1)) and the width codes
/// (2 per byte, even group in the low nibble). Unused high bits of the last code bytes are 0.
DLPREP_L3_HD uint32_t groups_per_row(uint32_t patch_width) {
  return (patch_width + kGroupPixels - 1) / kGroupPixels;
}
DLPREP_L3_HD uint32_t predictor_bytes(uint32_t patch_height) {
  return ((patch_height - 1) * kPredictorBits + 7) / 8;
}
/// The predictor code of row y >= 1. Reads the byte after the code too: the width codes always
/// follow the predictor codes, so that byte is inside the patch.
DLPREP_L3_HD uint32_t predictor_code(const uint8_t* codes, uint32_t row) {
  const uint32_t bit = (row - 1) * kPredictorBits;
  const uint32_t pair = codes[bit / 8] | (uint32_t{codes[bit / 8 + 1]} << 8);
  return (pair >> (bit % 8)) & ((1u << kPredictorBits) - 1);
}
DLPREP_L3_HD uint32_t width_code_bytes(uint32_t patch_width, uint32_t patch_height) {
  return (groups_per_row(patch_width) * patch_height + 1) / 2;
}
DLPREP_L3_HD uint32_t patch_head_bytes(uint32_t patch_width, uint32_t patch_height) {
  return 1 + predictor_bytes(patch_height) + width_code_bytes(patch_width, patch_height);
}
/// Largest valid patch: every group at width 8 (16 bytes; an explicit group has at most 13).
DLPREP_L3_HD uint64_t patch_max_bytes(uint32_t patch_width, uint32_t patch_height) {
  return patch_head_bytes(patch_width, patch_height) +
         uint64_t{groups_per_row(patch_width)} * patch_height * (2 * kMaxWidth);
}

// ---- Integrity ---------------------------------------------------------------------------------
/// Adler-32 (RFC 1950): s1 = 1 + sum of bytes, s2 = sum of the s1 after each byte, both mod 65521;
/// value s2 << 16 | s1. Chosen because it splits into blocks that combine (GPU block reductions).
inline constexpr uint32_t kAdlerMod = 65521;

}  // namespace dlprep::l3
