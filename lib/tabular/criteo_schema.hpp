// The Criteo click-log schema and the constants that define the transform. Plain C++ without
// library headers beyond <cmath>/<cstdint>, so that g++, nvcc and the HLS C-simulation compile the
// same definitions (STYLE.md section 1): every backend computes bit-identical outputs from these.
#pragma once

#include <cmath>
#include <cstdint>

// Functions that the CUDA kernels share with the CPU code are marked DLPREP_HD. This #if says
// which compiler reads the file (nvcc or not), never which backends were built.
#if defined(__CUDACC__)
#define DLPREP_HD __host__ __device__
#else
#define DLPREP_HD
#endif

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
/// once to float, so the result does not depend on a float log implementation. This is the
/// reference: every backend's dense output equals it bit for bit (host code only: the C library's
/// log is what defines it).
inline float dense_log(int32_t x, double offset) {
  double v = x < 0 ? 0.0 : static_cast<double>(x);
  return static_cast<float>(std::log(v + offset));
}

/// Dense values below this go through a table of dense_log results made on the host (the CPU's
/// fast path, and the GPU's way to be exact for nearly every Criteo value without a log at all).
inline constexpr int32_t kLogTableSize = 1 << 16;

/// How far (in units in the last place of the double result) a device's double log may be from
/// the host C library's for log_rounding_is_safe to hold: CUDA documents 1 ulp for log(), glibc
/// under 1 ulp; 8 leaves a wide margin.
inline constexpr int kLogUlpMargin = 8;

/// Whether f == float(e) is certainly the float the host gets by rounding its own double log g
/// of the same argument, for any g within kLogUlpMargin ulps of e: true when no float rounding
/// boundary (a midpoint between two floats) lies that close to e. A GPU computes log in double,
/// keeps f when this holds (all but about 2^-25 of the values) and has the host recompute the
/// rest with dense_log, so that its outputs are bit-identical to the CPU's. Exact arithmetic
/// only (frexp, ldexp, nextafterf, sums of two floats in double), so host and device agree.
DLPREP_HD inline bool log_rounding_is_safe(double e, float f) {
  // Only normal, moderate magnitudes (logs of values >= kLogTableSize are about 11 to 710).
  double a = e < 0 ? -e : e;
  if (!(a >= 0x1p-900 && a <= 0x1p900)) return false;
  int exp = 0;
  (void)frexp(e, &exp);  // |e| in [2^(exp-1), 2^exp)
  double margin = ldexp(static_cast<double>(kLogUlpMargin), exp - 1 - 52);  // ulp: 2^(exp-1-52)
  double f_d = static_cast<double>(f);
  double lo = (f_d + static_cast<double>(nextafterf(f, -HUGE_VALF))) * 0.5;  // exact in double
  double hi = (f_d + static_cast<double>(nextafterf(f, HUGE_VALF))) * 0.5;
  return e - lo > margin && hi - e > margin;
}

/// Neg2Zero alone (when the log is left to the data loader, as in DLRM's binary format).
DLPREP_HD inline int32_t neg2zero(int32_t x) { return x < 0 ? 0 : x; }

/// Modulus of a 32-bit value by d (1 <= d < 2^32) without a division instruction: Lemire's
/// fastmod (Lemire, Kaser, Kurz 2019, "Faster remainder by direct computation"), exact for every
/// 32-bit value and divisor.
struct FastMod {
  uint64_t m = 0;  ///< ceil(2^64 / d)
  uint32_t d = 0;  ///< 0 means "no modulus"
  FastMod() = default;
  DLPREP_HD explicit FastMod(uint32_t divisor)
      : m(divisor ? ~uint64_t{0} / divisor + 1 : 0), d(divisor) {}
  DLPREP_HD uint32_t operator()(uint32_t a) const {
    if (d == 0) return a;
    uint64_t low = m * a;
    // The high 64 bits of low * d: the same exact product on the host and on the device.
#if defined(__CUDA_ARCH__)
    return static_cast<uint32_t>(__umul64hi(low, d));
#else
    return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * d) >> 64);
#endif
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
