// The codec benchmark behind `dlprep l3 bench` and tests/bench/: encode and decode a set of
// images with several codecs, single-threaded and with N threads, each decode checked.
//
// Method (tests/bench/RESULTS.md has the long form):
// - Every image is encoded once untimed (the warm-up) and the files are kept in memory, so no I/O
//   is ever timed. Every decode of those files is compared with the original (bit for bit for a
//   lossless codec, the shape for a lossy one) right after it is timed and before its time is
//   added; a wrong decode throws Error(mismatch) naming the codec and the image.
// - Threads run over images: each thread encodes or decodes whole images, one at a time (how
//   libpng, libjpeg and libwebp scale), the same for every codec. Codec spec "l3@patches" instead
//   decodes one image at a time with the threads over its patches (L3's latency mode).
// - One warm-up run, then `repeats` timed runs of the whole set; the time of a run is the busiest
//   thread's summed encode (or decode) time, so the checks done between images are not counted
//   (with one thread: the sum of the per-image times).
// - MB/s count raw pixel bytes (width x height x channels, MB = 10^6 bytes), for encode and decode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "core/image.hpp"
#include "core/progress.hpp"

namespace dlprep::image {

class Codec;

/// What to benchmark.
struct CodecBenchParams {
  // clang-format off
  /// Codec specs, `name[:N]` (see parse in codec_bench.cpp and `dlprep l3 bench --help`):
  ///   l3        L3, auto patch size; l3:N patch N; l3@patches (or l3:N@patches) threads
  ///             over patches
  ///   png       libpng zlib level 6; png:N level N
  ///   webp      WebP lossless, the codec's default effort; webp-lossless:N effort N;
  ///             webp-lossy WebP lossy q90; webp-lossy:Q quality Q (webp:N is refused: it
  ///             is quality N to convert-dataset, effort N to earlier versions of this)
  ///   jpeg      JPEG quality 90 (4:2:0, lossy reference); jpeg:Q quality Q
  ///   bmp, ppm  uncompressed formats of the registry
  ///   memcpy    copy of the raw pixels: the decode ceiling (always added when missing)
  ///   source    the input files as they are (source_files), each decoded by its own codec: what
  ///             decoding the user's files costs today; its "encode" is a copy of the file
  // clang-format on
  std::vector<std::string> codecs = {"l3", "png", "webp", "jpeg"};
  std::vector<unsigned> thread_counts = {1};  ///< e.g. {1, all cores}
  unsigned repeats = 5;  ///< timed runs after one warm-up; median and min kept
  unsigned warmup = 1;   ///< untimed runs of the whole set before the timed ones (at least 1)
  /// Stop repeating a row's encode (or decode) once its timed runs add up to this many seconds
  /// (0: always `repeats`); at least one timed run is always done. Keeps slow encoders (WebP
  /// lossless, PNG-6) from eating the machine; the runs done are reported.
  double max_seconds_per_measurement = 0;
  /// Names of the images, for messages and the worst-image figure; "image N" (1-based) when empty.
  std::vector<std::string> image_names;
  /// The files the images were decoded from, in the same order: needed by the "source" spec only.
  /// Each must decode to exactly its image (no transform between them).
  std::vector<Bytes> source_files;
  /// Codecs outside the registry, looked up by name before it (a backend under test, unit tests).
  std::vector<const Codec*> extra_codecs;
  ProgressCallback progress;  ///< optional; one event per finished row
};

/// One codec at one thread count over the whole set.
struct CodecBenchRow {
  std::string codec;  ///< canonical spec, e.g. "l3", "png:6", "webp", "jpeg:90", "memcpy" (for
                      ///< "l3@patches": "l3", with parallel = "patches")
  bool lossless = true;
  unsigned threads = 1;
  std::string parallel = "images";  ///< "images" (a thread per image) or "patches" (l3@patches)
  uint64_t raw_bytes = 0;           ///< decoded pixel bytes of the set
  uint64_t compressed_bytes = 0;    ///< sum of encoded sizes
  double ratio = 0;                 ///< compressed_bytes / raw_bytes (the aggregate ratio)
  double mean_ratio = 0;            ///< mean over images of compressed / raw
  double median_encode_mb_s = 0, min_time_encode_mb_s = 0;  ///< MB/s of raw pixels
  double median_decode_mb_s = 0, min_time_decode_mb_s = 0;
  double median_encode_s = 0, min_encode_s = 0;  ///< seconds for the whole set
  double median_decode_s = 0, min_decode_s = 0;
  /// CPU seconds of the whole set summed over the threads (median of the same timed runs), and
  /// MB of raw pixels per CPU second. Robust to a loaded machine, where the wall-clock figures
  /// above also count the time a thread waits for a core; on an idle machine, MB per CPU second
  /// is close to the 1-thread MB/s at every thread count (less when threads slow each other).
  double median_encode_cpu_s = 0, median_decode_cpu_s = 0;
  double encode_mb_per_cpu_s = 0, decode_mb_per_cpu_s = 0;
  unsigned encode_runs = 0, decode_runs = 0;  ///< timed runs done (warm-up excluded)
  bool verified = false;  ///< every decode equalled the original (lossless) or had its shape

  /// Size against the PNG level-6 row of the same run (all 0 when png:6 is not benchmarked).
  double size_vs_png = 0;         ///< compressed_bytes / png:6 compressed_bytes (aggregate)
  double mean_size_vs_png = 0;    ///< mean over images of bytes / png:6 bytes
  double median_size_vs_png = 0;  ///< median over images
  double worst_size_vs_png = 0;   ///< largest per-image ratio
  std::string worst_size_vs_png_image;  ///< the image with the largest ratio
  /// Median MB/s divided by png:6's median MB/s at the same thread count (0 without png:6).
  double encode_speedup_vs_png = 0, decode_speedup_vs_png = 0;
  /// The same ratios from MB per CPU second (the load-robust cross-check).
  double encode_cpu_speedup_vs_png = 0, decode_cpu_speedup_vs_png = 0;
};

struct CodecBenchReport {
  unsigned images = 0;
  uint64_t raw_bytes = 0;
  unsigned repeats = 0;  ///< requested timed runs per measurement
  unsigned warmup = 0;
  std::string size_reference;  ///< "png:6" when the *_vs_png fields are filled, else empty
  std::vector<CodecBenchRow> rows;  ///< codec-major: each codec at every thread count in order
};

/// Runs the benchmark. Throws Error(mismatch) if a lossless decode differs from its original or a
/// lossy one has another shape (no time is reported for a wrong result), Error(invalid_argument)
/// for an unknown or malformed codec spec, an empty image list or a thread count of 0, and
/// Error(unsupported) when a codec cannot store an image's channel count.
CodecBenchReport run_codec_bench(const std::vector<Image>& images, const CodecBenchParams& params);

/// The canonical form of a codec spec ("png" -> "png:6", "l3@patches" stays); throws like
/// run_codec_bench. Use it to check a user's list before loading the images.
std::string canonical_codec_spec(const std::string& spec);

/// Whether the codec of a spec stores images of this many channels, as run_codec_bench needs
/// (memcpy and source: any); throws like canonical_codec_spec.
bool codec_spec_stores(const std::string& spec, uint32_t channels);

}  // namespace dlprep::image
