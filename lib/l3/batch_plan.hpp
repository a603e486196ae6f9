// The work list of a batched L3 decode: plain data that the host builds once per batch from
// validated headers (plan_batch() in batch_decode.hpp) and that every backend consumes. Kept in
// its own header, apart from batch_decode.hpp, because the CUDA backend is compiled as C++17 by
// nvcc and must not see std::span; like format.hpp it needs nothing beyond the standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlprep::l3 {

/// One unit of decode work: one patch of one channel of one image of the batch. Every offset
/// here was derived from a header and patch table that passed the checks of inspect() (spec
/// steps 1-7), so a backend may use them without further bounds checks; the per-patch checks
/// (steps 8-9: checksum, code padding, payload size) remain the backend's job.
struct PatchTask {
  uint64_t src = 0;         ///< byte offset of the patch in the batch input (files back to back)
  uint64_t dst = 0;         ///< output byte of the patch's pixel (x0, y0), channel 0
  uint32_t bytes = 0;       ///< compressed size of the patch (>= its head bytes)
  uint32_t sum = 0;         ///< the patch table's Adler-32 of those bytes
  uint32_t row_stride = 0;  ///< output bytes per image row: W x C
  uint32_t image = 0;       ///< index of the image in the batch
  uint32_t patch = 0;       ///< index of the patch in its channel (row-major over the grid)
  uint16_t width = 0;       ///< patch width, 1..256 (partial at the right edge)
  uint16_t height = 0;      ///< patch height, 1..256 (partial at the bottom edge)
  uint8_t channel = 0;      ///< plane decoded by this task
  uint8_t channels = 0;     ///< C of the image: the output pixel pitch in bytes
  uint8_t reserved[6] = {};
};
static_assert(sizeof(PatchTask) == 48, "PatchTask is copied to the device as is");

/// One image of the batch: where its file sits in the batch input and its pixels in the output.
struct BatchImage {
  uint64_t src = 0;  ///< byte offset of the file in the batch input
  uint64_t file_bytes = 0;
  uint64_t dst = 0;  ///< byte offset of pixel (0, 0) in the output tensor
  uint32_t width = 0, height = 0, channels = 0;
  uint32_t patch = 0;  ///< patch side
  bool subtract_green = false;
  uint64_t pixel_bytes() const { return uint64_t{width} * height * channels; }
};

/// The whole batch: the output is "NHWC uint8" with per-image offsets (images may differ in size),
/// image i's rows of W x C bytes back to back at `images[i].dst`.
struct BatchPlan {
  std::vector<BatchImage> images;
  /// Ordered by image, then patch, then channel: the order in which the CPU decoder (one thread)
  /// meets its checks, so both backends report the same first failure.
  std::vector<PatchTask> tasks;
  uint64_t input_bytes = 0;      ///< sum of the file sizes
  uint64_t output_bytes = 0;     ///< sum of the images' pixel bytes
  uint32_t max_patch_width = 0;  ///< widest task: a CUDA block needs this many threads
};

}  // namespace dlprep::l3
