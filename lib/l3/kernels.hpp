// Internal to lib/l3: the per-ISA kernels of the codec (scalar reference, AVX2, AVX2+GFNI)
// behind one table chosen once at run time. Not installed; tests include it to compare backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "l3/l3.hpp"  // Bytes, Image, EncodeParams

namespace dlprep::l3::detail {

/// Rows of a decoded or encoded plane patch live in scratch buffers with this much slack before
/// each row (room for the replicated TL border pixel) and after it (room for 16-byte stores of a
/// partial last group and the replicated TR border pixel).
inline constexpr size_t kRowSlackBefore = 16;
inline constexpr size_t kRowSlackAfter = 48;
/// Bytes a kernel may read past the start of a group's payload (one unaligned 16-byte load).
inline constexpr size_t kReadSlack = 16;

/// A validated patch of one channel: its code arrays and payload, whose total size was checked
/// against the patch table before decode.
struct PatchView {
  const uint8_t* predictor_codes;  ///< 3 bits per row 1..h-1
  const uint8_t* width_codes;      ///< 4 bits per group
  const uint8_t* payload;          ///< group payloads, exactly sum(code_bytes) bytes
  uint8_t seed;                    ///< pixel (0, 0)
  uint32_t width, height;          ///< of this patch (partial at the image's right/bottom edges)
};

/// What one row of an encoder's candidate costs: the codes and bases of its groups.
struct RowPlan {
  uint32_t bits = 0;  ///< payload bits of the row (base bytes and planes)
  uint8_t codes[16];  ///< width code of each group (<= 256 / 16 groups)
  uint8_t bases[16];  ///< base of each group (explicit or implicit)
};

struct Kernels;

/// Spec steps 8-9 for one channel patch of `size` bytes at `p` (w x h pixels): the Adler-32
/// against `sum`, the padding bits of both code arrays, and the payload size the width codes
/// announce against the patch size. Returns a PatchStatus (batch_plan.hpp; kPatchOk = 0) and
/// fills `v` when the patch passes. Every CPU decode path checks patches here (decode_cpu.cpp).
uint8_t check_patch_bytes(const uint8_t* p, uint32_t size, uint32_t sum, uint32_t w, uint32_t h,
                          const Kernels& k, PatchView& v);

struct Kernels {
  std::string_view name;
  /// Adler-32 continued from `adler` (start with 1).
  uint32_t (*adler32)(uint32_t adler, const uint8_t* data, size_t size);
  /// Decodes a patch into rows at `plane` with `stride` (slack as kRowSlack*).
  void (*decode_plane)(const PatchView& patch, uint8_t* plane, size_t stride);
  /// Interleaves up to 4 planes (rows at plane_stride) into HWC output, undoing subtract-green.
  void (*store_hwc)(const uint8_t* const* planes, size_t plane_stride, uint32_t width,
                    uint32_t height, uint32_t channels, bool subtract_green, uint8_t* out,
                    size_t out_stride);
  /// The inverse of store_hwc: splits HWC pixels into planes, applying subtract-green.
  void (*load_planes)(const uint8_t* in, size_t in_stride, uint32_t width, uint32_t height,
                      uint32_t channels, bool subtract_green, uint8_t* const* planes,
                      size_t plane_stride);
  /// Residuals of one row of `width` pixels: row 0 (above == nullptr) as left-deltas from
  /// `seed`, other rows against `predictor` over the row above (above[-1] and above[width] hold
  /// the replicated border pixels). Writes whole groups of 16 bytes; bytes past the row are
  /// unspecified (plan_row and pack_row ignore them).
  void (*residuals)(uint32_t predictor, const uint8_t* above, const uint8_t* row, uint32_t width,
                    uint8_t seed, uint8_t* out);
  /// Chooses each group's code and base for residuals of `width` pixels; returns payload bits.
  void (*plan_row)(const uint8_t* residuals, uint32_t width, RowPlan& plan);
  /// For a row y >= 1: the predictor whose plan takes the fewest bits (ties: the lowest code).
  /// Leaves the residuals of every predictor p in residuals[p * kMaxPatch ...] and the chosen
  /// plan in `plan`; returns the predictor.
  uint32_t (*choose_row)(const uint8_t* above, const uint8_t* row, uint32_t width,
                         uint8_t* residuals, RowPlan& plan);
  /// Appends the payloads of the row's groups at `out`; returns bytes written.
  size_t (*pack_row)(const uint8_t* residuals, uint32_t width, const RowPlan& plan, uint8_t* out);
};

extern const Kernels kScalarKernels;
/// The AVX2 and AVX2+GFNI tables, or nullptr when the CPU lacks them.
const Kernels* avx2_kernels();
const Kernels* gfni_kernels();

/// The kernels used by encode()/decode(): the best the CPU supports, chosen once. The
/// environment variable DLPREP_L3_ISA=scalar|avx2|gfni caps the choice (tests, benchmarks).
const Kernels& active_kernels();

/// encode() and decode_into() with an explicit kernel table (tests prove backends bit-identical).
Bytes encode_with(const Image& image, const EncodeParams& params, const Kernels& kernels);
void decode_into_with(ByteSpan file, uint8_t* out, size_t row_stride, unsigned threads,
                      const Kernels& kernels);
}  // namespace dlprep::l3::detail
