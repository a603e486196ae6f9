// The public API of the L3 lossless image format (spec: man/dlprep-l3.5). CPU encoder and decoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/file_io.hpp"
#include "core/image.hpp"

namespace dlprep::l3 {

/// Encoder settings.
struct EncodeParams {
  uint32_t patch = 0;    ///< patch side in pixels; 0 = auto_patch_size()
  unsigned threads = 1;  ///< threads over patches
};

/// The paper's rule: 32 up to HD (1280x720), 64 up to FHD (1920x1080), 128 above; by pixel count.
uint32_t auto_patch_size(uint32_t width, uint32_t height);

/// Encodes an image (1-4 channels) losslessly. Patch sizes are powers of two from 8 to 256 (0 =
/// auto_patch_size()). Throws Error(invalid_argument) for a bad patch size or an empty image.
Bytes encode(const Image& image, const EncodeParams& params = {});

/// What an L3 header says, after its structure and header checksum were validated.
struct FileInfo {
  uint32_t version = 0;
  ImageShape shape;
  uint32_t patch = 0;
  bool subtract_green = false;          ///< colour transform applied (3-4 channels)
  std::vector<uint64_t> channel_bytes;  ///< compressed bytes of each channel plane
  uint64_t file_bytes = 0;
};

/// Parses and validates the header and offset tables (no pixel decode). Throws
/// Error(corrupt_data | unsupported | limit_exceeded) with the offset when known.
FileInfo inspect(ByteSpan file);

/// The file size a file's first bytes declare (its header's file size field), unchecked: what a
/// reader of a stream stops at. nullopt before the field, or when they are no L3 file.
std::optional<uint64_t> declared_file_size(ByteSpan head);

/// Checks a whole file as decode() does (the header, the tables, and every patch's checksum and
/// code arrays: man/dlprep-l3.5 steps 1-9) without decoding or allocating its pixels. Returns what
/// inspect() does; throws like decode().
FileInfo verify(ByteSpan file, unsigned threads = 1);

/// Decodes a whole file, checking every patch checksum. `threads` parallelises over patches.
/// Throws like inspect(), and Error(corrupt_data) "l3: patch I of channel C: ..." for a damaged
/// patch; never returns pixels from a file that failed a check. An output over 256 MiB is
/// allocated only once every patch passed its checks: a damaged file can declare an image
/// about 30 times its own size.
Image decode(ByteSpan file, unsigned threads = 1);

/// Like decode() but into caller memory laid out HWC with `row_stride` bytes per row; the shape
/// must match inspect(file).shape. Used by benchmarks and pipelines that own their buffers.
void decode_into(ByteSpan file, uint8_t* out, size_t row_stride, unsigned threads = 1);

/// Name of the CPU kernels in use: "scalar", "avx2" or "gfni" (AVX2 + GFNI), the best this CPU
/// supports, chosen once per process; the environment variable DLPREP_L3_ISA=scalar|avx2|gfni
/// caps the choice. For benchmark reports and --version.
std::string_view kernels_name();

}  // namespace dlprep::l3
