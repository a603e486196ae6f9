// The codec benchmark behind `dlprep l3 bench` and tests/bench/: encode and decode a set of
// images with several codecs, single-threaded and with N threads, each decode checked.
#pragma once

#include <string>
#include <vector>

#include "core/image.hpp"
#include "core/progress.hpp"

namespace dlprep::image {

/// What to benchmark.
struct CodecBenchParams {
  std::vector<std::string> codecs = {"l3", "png", "webp", "jpeg"};  ///< registry names (+options)
  std::vector<unsigned> thread_counts = {1};  ///< e.g. {1, all cores}
  unsigned repeats = 5;                       ///< timed runs after one warm-up; median and min kept
  ProgressCallback progress;                  ///< optional
};

/// One codec at one thread count over the whole set.
struct CodecBenchRow {
  std::string codec;        ///< e.g. "l3", "png:6", "jpeg:90", "memcpy"
  bool lossless = true;
  unsigned threads = 1;
  uint64_t raw_bytes = 0;         ///< decoded pixel bytes of the set
  uint64_t compressed_bytes = 0;  ///< sum of encoded sizes
  double mean_ratio = 0;          ///< mean over images of compressed / raw
  double median_encode_mb_s = 0, min_time_encode_mb_s = 0;  ///< MB/s of raw pixels
  double median_decode_mb_s = 0, min_time_decode_mb_s = 0;
  bool verified = false;  ///< every decode equalled the original (lossless) or had its shape
};

struct CodecBenchReport {
  unsigned images = 0;
  uint64_t raw_bytes = 0;
  std::vector<CodecBenchRow> rows;
};

/// Runs the benchmark. Throws Error(mismatch) if a lossless decode differs from its original
/// (no time is reported for a wrong result) and Error(invalid_argument) for an unknown codec.
CodecBenchReport run_codec_bench(const std::vector<Image>& images, const CodecBenchParams& params);

}  // namespace dlprep::image
