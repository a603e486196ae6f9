// The Criteo click-log schema and the constants that define the transform. Plain C++ without
// library headers beyond <cmath>/<cstdint>, so that g++, nvcc and the HLS C-simulation compile the
// same definitions (STYLE.md section 1): every backend computes bit-identical outputs from these.
#pragma once

#include <cmath>
#include <cstdint>

namespace dlprep::tabular {

/// A row: label, 13 integer ("dense") features I1..I13, 26 categorical features C1..C26.
inline constexpr int kNumDense = 13;
inline constexpr int kNumSparse = 26;
inline constexpr int kNumFields = 1 + kNumDense + kNumSparse;  // 40 tab-separated fields

/// Index of the first dense and the first sparse field in a row.
inline constexpr int kFirstDenseField = 1;
inline constexpr int kFirstSparseField = 1 + kNumDense;

/// FillMissing: an empty field reads as 0, in the label, dense and sparse columns alike. This is
/// what Meta DLRM's data_utils.py ('' -> '0'), TorchRec and NVTabular's Criteo scripts all do.
inline constexpr int32_t kMissingDense = 0;
inline constexpr uint32_t kMissingSparse = 0;

/// Longest categorical field: 8 hex digits (the 32-bit hashes of the Criteo release). Longer
/// fields are rejected instead of silently overflowing (DLRM's NumPy-2 overflow, dlrm#394).
inline constexpr int kMaxHexDigits = 8;
/// Longest dense field without its sign: 10 digits (int32 range; Criteo values are far smaller).
inline constexpr int kMaxDecimalDigits = 10;

/// DLRM's default log offset (log(x + 1)); legacy TorchRec used log(x + 3).
inline constexpr double kDefaultLogOffset = 1.0;

/// Neg2Zero then Logarithm: float(log(double(max(x, 0)) + offset)). Computed in double and rounded
/// once to float, so the result does not depend on a float log implementation.
inline float dense_log(int32_t x, double offset) {
  double v = x < 0 ? 0.0 : static_cast<double>(x);
  return static_cast<float>(std::log(v + offset));
}

/// Neg2Zero alone (when the log is left to the data loader, as in DLRM's binary format).
inline int32_t neg2zero(int32_t x) { return x < 0 ? 0 : x; }

/// Modulus of a 32-bit value by d (1 <= d < 2^32) without a division instruction: Lemire's
/// fastmod (Lemire, Kaser, Kurz 2019, "Faster remainder by direct computation"), exact for every
/// 32-bit value and divisor.
struct FastMod {
  uint64_t m = 0;  ///< ceil(2^64 / d)
  uint32_t d = 0;  ///< 0 means "no modulus"
  FastMod() = default;
  explicit FastMod(uint32_t divisor) : m(divisor ? ~uint64_t{0} / divisor + 1 : 0), d(divisor) {}
  uint32_t operator()(uint32_t a) const {
    if (d == 0) return a;
    uint64_t low = m * a;
    return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * d) >> 64);
  }
};

/// The binary row format (`--input-format bin`, `--emit-binary`): a 64-byte header, then rows of
/// 40 little-endian 32-bit words: int32 label, int32 I1..I13 (as parsed: missing 0, negatives
/// kept), uint32 C1..C26 (the raw hex values, missing 0, before any modulus). It is what the text
/// decoder produces, so the preprocessing options can change without decoding the text again.
inline constexpr char kBinaryMagic[8] = {'D', 'L', 'P', 'C', 'R', 'T', 'O', '1'};
inline constexpr uint32_t kBinaryVersion = 1;
inline constexpr uint32_t kBinaryHeaderBytes = 64;
inline constexpr uint32_t kBinaryRowBytes = kNumFields * 4;  // 160

}  // namespace dlprep::tabular
