// The batch-decoder benchmark behind `dlprep l3 bench --device cuda|cpu` (issue 4): per batch
// size, the device-resident decode (input already on the device, kernel time alone), the
// end-to-end decode from pinned host memory through an overlapped pipeline (and from pageable
// memory through its staging buffers), the copy ceilings, the batch-1 latency, and nvJPEG on
// the same pictures as JPEG when it was built. Every tensor is compared with the CPU decoder's
// before any time is reported. Times go through the shared timing core (core/timing.hpp); the
// device's own figures come from CUDA events. Method and definitions: man/dlprep-l3.1 and
// tests/bench/l3_cuda_bench.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "core/image.hpp"
#include "core/timing.hpp"
#include "l3/batch_decode.hpp"

namespace dlprep::l3 {

struct BatchBenchParams {
  /// Batches are the distinct files repeated in order to this many images.
  std::vector<size_t> batch_sizes = {1, 16, 64, 256};
  /// Device-resident rows per layout; the first is the headline (and the end-to-end layout).
  std::vector<OutputLayout> layouts = {OutputLayout::nhwc_u8, OutputLayout::nchw_f16};
  /// Warm-up and timed runs of each device-resident measurement and of each copy.
  TimingParams timing = {2, 10, 0};
  unsigned pipeline_depth = 2;
  /// Images streamed through the pipeline per end-to-end measurement (at least 4 batches).
  size_t pipeline_images = 2048;
  /// Timed end-to-end runs (after one warm-up run).
  unsigned pipeline_repeats = 3;
  /// Size of each copy of the bandwidth measurement.
  uint64_t copy_bytes = uint64_t{256} << 20;
  unsigned cpu_threads = 1;  ///< the reference CPU decoder's threads (for the checks only)
};

/// One batch size and layout.
struct BatchBenchRow {
  size_t batch = 0;
  OutputLayout layout = OutputLayout::nhwc_u8;
  uint64_t input_bytes = 0;   ///< L3 bytes of the batch
  uint64_t pixel_bytes = 0;   ///< decoded pixel bytes (W x H x C summed): what GB/s count
  uint64_t output_bytes = 0;  ///< tensor bytes (pixel_bytes x element size)
  bool verified = false;      ///< the tensor equalled the CPU decoder's (else the bench throws)
  // Device-resident: input already on the device, decode time alone (CUDA events).
  TimingStats resident;                                 ///< seconds per batch
  double resident_images_per_s = 0, resident_gb_s = 0;  ///< at the median
  // End-to-end from pinned host memory: H2D + decode overlapped over `depth` batches in flight,
  // host clock from the first submit to the last wait (headline layout only).
  TimingStats pinned;  ///< seconds per streamed run of `pipeline_batches` batches
  double pinned_images_per_s = 0, pinned_gb_s = 0;
  double pinned_h2d_ms = 0, pinned_kernel_ms = 0;  ///< median per batch, from the events
  // The same from pageable memory, copied into the pipeline's pinned staging on the host.
  TimingStats pageable;
  double pageable_images_per_s = 0, pageable_gb_s = 0;
  size_t pipeline_batches = 0;  ///< batches per streamed run
};

/// nvJPEG on the JPEG versions of the pictures (the baseline of the issue).
struct JpegBenchRow {
  std::string decoder;  ///< "nvjpeg-hardware" or "nvjpeg-default"
  size_t batch = 0;
  uint64_t pixel_bytes = 0;  ///< decoded RGB bytes of the batch
  TimingStats time;          ///< seconds per batch: host clock around the batched decode
  double images_per_s = 0, gb_s = 0;
  double min_psnr_db = 0;  ///< worst image against the original pixels (a q90 JPEG: > 30 dB)
};

struct BatchBenchReport {
  std::string device;   ///< BatchDecoder::device_description()
  std::string backend;  ///< "cuda" or "cpu"
  unsigned distinct_images = 0;
  uint64_t distinct_file_bytes = 0, distinct_pixel_bytes = 0;
  double ratio = 0;  ///< L3 bytes / pixel bytes of the distinct images (compression ratio)
  CopyBandwidth copy;
  /// The end-to-end ceiling: pinned H2D GB/s / ratio, in GB/s of decoded pixels.
  double ceiling_gb_s = 0;
  // Batch 1, the first image: the kernel alone, pinned memory to a checked device tensor (one
  // batch, nothing overlapped), and host memory to host memory (BatchDecoder::decode).
  TimingStats latency_kernel, latency_pinned, latency_host;
  unsigned pipeline_depth = 0;
  std::vector<BatchBenchRow> rows;
  std::vector<JpegBenchRow> jpeg_rows;
  std::string jpeg_note;  ///< why there are no nvJPEG rows, when there are none
};

/// Runs the benchmark on `decoder` with `files` (distinct L3 files; batches repeat them). Throws
/// Error(mismatch) naming the batch, layout, image and element when a tensor differs from the
/// CPU decoder's, Error(invalid_argument) for no files, an empty or zero batch size, and what
/// the decoder throws.
BatchBenchReport run_batch_bench(BatchDecoder& decoder, std::span<const ByteSpan> files,
                                 const BatchBenchParams& params);

/// Empty when the nvJPEG baseline can run here; otherwise why not ("nvJPEG was not built in
/// (no nvjpeg.h next to the CUDA toolkit)", "no CUDA device ..."). Never throws.
std::string nvjpeg_unavailable_reason();

/// nvJPEG's batched decode (hardware engine when the GPU has one, then the default backend) of
/// `jpegs` repeated to each batch size, into interleaved RGB on the device; each decoded image
/// is compared with `originals[i]` (the pixels the JPEG was made from, same order) by PSNR and
/// must exceed 30 dB (Error(mismatch) otherwise, or for another size). A backend nvJPEG refuses
/// here (no hardware engine, a JPEG it cannot take) is left out and said in `note`. Throws
/// Error(device_unavailable) with nvjpeg_unavailable_reason() when it cannot run at all.
std::vector<JpegBenchRow> run_nvjpeg_bench(std::span<const ByteSpan> jpegs,
                                           std::span<const Image> originals,
                                           const BatchBenchParams& params, std::string* note);

}  // namespace dlprep::l3
