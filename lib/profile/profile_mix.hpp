// profile-mix as one library call: sample a dataset, probe each candidate format, find the mix
// that maximises Load -> Decode throughput, and verify it with a real throttled pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/progress.hpp"
#include "dataset/target_spec.hpp"
#include "image/transform.hpp"
#include "profile/report.hpp"

namespace dlprep::profile {

/// What to profile and how.
struct ProfileOptions {
  std::filesystem::path dataset;  ///< a dlprep dataset, an image directory or a list file
  /// Candidate formats (parse_target); empty: png, bmp and l3 (the lossless ones built in).
  std::vector<dataset::TargetSpec> formats;
  size_t sample = 16;               ///< images probed (and verified)
  double storage_bytes_per_s = 0;   ///< 0: measured on the dataset's own files
  double compute_images_per_s = 0;  ///< 0: no ceiling
  std::string search = "lp";        ///< "lp" (exact optimum) or "liquid" (11 ratios of 2 formats)
  bool verify = true;               ///< run the measured pass of the chosen mix
  /// When the verification pass is decode-bound below the prediction (a shared machine), re-solve
  /// with the cores the decoders really got and measure that mix too (see ProfileReport).
  bool refine = true;
  bool measure_sweep = false;       ///< also measure all 11 points of the two-format sweep
  unsigned threads = 1;             ///< decode workers (-j); also used to encode the sample
  /// Length each measured pass aims for (it loops over the sample as often as needed).
  double pass_seconds = 2;
  unsigned pass_repeats = 1;        ///< timed repeats of each pass (the median is reported)
  /// Where the temporary folder goes (deleted at the end); empty: the system temp directory.
  std::filesystem::path work_dir;
  /// The channels the sample gets, as convert-dataset --channels gives the dataset's.
  image::Channels channels = image::Channels::keep;
  ProgressCallback progress;  ///< after each step (what = the step)
};

/// Runs the whole profile. Throws Error: invalid_argument (bad options, no images), io,
/// corrupt_data/unsupported naming the file, unsupported for a codec not built in.
ProfileReport profile_mix(const ProfileOptions& options);

/// The default candidates: png, bmp and l3 where built in.
std::vector<dataset::TargetSpec> default_formats();

/// Parses "500MB/s", "1.5GB/s", "800MiB/s", "100M", "2e8": a size (core/byte_size.hpp: kB, MB,
/// GB, TB powers of 1000; K, M, G, T and KiB .. TiB powers of 1024) per second, the "/s" optional.
/// Throws Error(invalid_argument), also for a number without a unit under 1 MB/s (a unit left
/// out: "500").
double parse_bandwidth(std::string_view text);

}  // namespace dlprep::profile
