// The work list of a batched L3 decode: plain data that the host builds once per batch from
// validated headers (plan_batch() in batch_decode.hpp) and that every backend consumes. Kept in
// its own header, apart from batch_decode.hpp, because the CUDA backend is compiled as C++17 by
// nvcc and must not see std::span; like format.hpp it needs nothing beyond the standard library.
//
// The output tensor (man/dlprep-l3.1, "BATCH TENSORS"): image i's output window (the whole image,
// or its crop) starts at byte images[i].dst; inside it, element (x, y, c) of the window lies at
// output_element() (batch_output.hpp): NHWC for uint8, NCHW for float and half.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlprep::l3 {

/// Element type and order of the batch tensor. The values are part of the device ABI.
enum class OutputLayout : uint8_t {
  nhwc_u8 = 0,   ///< the decoded bytes, channels interleaved (HWC per image)
  nchw_f32 = 1,  ///< float (x - mean[c]) * scale[c], one plane per channel (CHW per image)
  nchw_f16 = 2,  ///< the same float rounded to IEEE half (round to nearest even), CHW per image
};

/// One unit of decode work: one patch of one channel of one image of the batch. Every offset
/// here was derived from a header and patch table that passed the checks of inspect() (spec
/// steps 1-7), so a backend may use them without further bounds checks; the per-patch checks
/// (steps 8-9: checksum, code padding, payload size) remain the backend's job.
struct PatchTask {
  uint64_t src = 0;      ///< byte offset of the patch in the batch input (files back to back)
  uint32_t bytes = 0;    ///< compressed size of the patch (>= its head bytes)
  uint32_t sum = 0;      ///< the patch table's Adler-32 of those bytes
  uint32_t image = 0;    ///< index of the image in the batch
  uint32_t patch = 0;    ///< index of the patch in its channel (row-major over the grid)
  uint16_t x0 = 0;       ///< left column of the patch in the image (W <= 65535)
  uint16_t y0 = 0;       ///< top row of the patch in the image
  uint16_t width = 0;    ///< patch width, 1..256 (partial at the right edge)
  uint16_t height = 0;   ///< patch height, 1..256 (partial at the bottom edge)
  uint8_t channel = 0;   ///< plane decoded by this task
  uint8_t channels = 0;  ///< C of the image
  uint8_t reserved[6] = {};
};
static_assert(sizeof(PatchTask) == 40, "PatchTask is copied to the device as is");

/// One image of the batch: where its file sits in the batch input, which window of it is
/// decoded (the whole image, or the crop the plan chose) and where that window goes in the output.
struct BatchImage {
  uint64_t src = 0;  ///< byte offset of the file in the batch input
  uint64_t file_bytes = 0;
  uint64_t dst = 0;  ///< byte offset of the window's first element in the output tensor
  uint32_t width = 0, height = 0, channels = 0;
  uint32_t patch = 0;                      ///< patch side
  uint32_t crop_x = 0, crop_y = 0;         ///< top-left pixel of the output window in the image
  uint32_t out_width = 0, out_height = 0;  ///< size of the window (W x H without a crop)
  uint32_t subtract_green = 0;             ///< 1: planes 0 and 2 store R - G and B - G
  uint32_t reserved = 0;
  /// Decoded bytes of the whole image (W x H x C).
  uint64_t pixel_bytes() const { return uint64_t{width} * height * channels; }
  /// Elements of the output window (out_width x out_height x C).
  uint64_t out_elements() const { return uint64_t{out_width} * out_height * channels; }
};
static_assert(sizeof(BatchImage) == 64, "BatchImage is copied to the device as is");

/// The whole batch. Images may differ in size and channel count; each has its own offset.
struct BatchPlan {
  std::vector<BatchImage> images;
  /// The patches that intersect each image's window (all of them without a crop), ordered by
  /// image, then patch, then channel: the order in which the reference (the CPU backend) meets
  /// its checks, so every backend reports the same first failure.
  std::vector<PatchTask> tasks;
  /// For each decoded patch (all its channels, C consecutive tasks), the index of its channel-0
  /// task: the CUDA backend runs one thread block per entry.
  std::vector<uint64_t> patch_first_task;
  OutputLayout layout = OutputLayout::nhwc_u8;
  float mean[4] = {0, 0, 0, 0};   ///< subtracted from channel c (float layouts)
  float scale[4] = {1, 1, 1, 1};  ///< 1 / std[c], computed once on the host (float layouts)
  uint64_t input_bytes = 0;       ///< sum of the file sizes
  uint64_t output_bytes = 0;  ///< bytes of the output tensor (sum of the windows' elements x size)
  uint64_t pixel_bytes = 0;   ///< decoded pixel bytes delivered (sum of the windows' elements)
  uint32_t max_patch_width = 0;  ///< widest task: sizes a CUDA block (a thread per column or few)
  uint32_t max_patch_height = 0;  ///< tallest task (a narrow image's patches are taller than wide)
  uint32_t max_groups = 0;       ///< most groups (16-pixel row pieces) of one task's patch
  uint32_t max_channels = 0;     ///< most channels of an image of the batch
};

/// A backend's verdict on one task, in the order the checks run (spec steps 8-9, and the order
/// of check_patch() in decode_cpu.cpp). One byte per task; 0 means the patch decoded.
enum PatchStatus : uint8_t {
  kPatchOk = 0,
  kPatchChecksum = 1,
  kPatchWidthPadding = 2,
  kPatchPredictorPadding = 3,
  kPatchSizeMismatch = 4,
};

/// The words of the CPU decoder for a failed check.
inline const char* patch_status_message(uint8_t status) {
  switch (status) {
    case kPatchChecksum:
      return "checksum mismatch";
    case kPatchWidthPadding:
      return "padding bits of the width codes are not zero";
    case kPatchPredictorPadding:
      return "padding bits of the predictor codes are not zero";
    case kPatchSizeMismatch:
      return "group sizes do not match the patch size";
    default:
      return "unknown patch status";
  }
}

/// "image I: l3: patch P of channel C: <what>": the message of Error(corrupt_data) for a task
/// that failed, the same from every backend.
inline std::string patch_failure_message(const PatchTask& task, uint8_t status) {
  return "image " + std::to_string(task.image) + ": l3: patch " + std::to_string(task.patch) +
         " of channel " + std::to_string(task.channel) + ": " + patch_status_message(status);
}

/// Index of the first task whose status is not kPatchOk, or `count` when all passed: the failure
/// every backend reports.
inline size_t first_failed_task(const uint8_t* statuses, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (statuses[i] != kPatchOk) return i;
  return count;
}

}  // namespace dlprep::l3
