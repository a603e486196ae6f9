// The profile-mix report: one schema-versioned JSON document ("dlprep.profile-mix/1") that
// convert-dataset --mix-from and bench-train read, the human table, and the SVG plot.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/mix_optimizer.hpp"

namespace dlprep::profile {

inline constexpr const char* kReportSchema = "dlprep.profile-mix/1";
/// Significant digits of the shares --mix-from takes from a report (and its JSON mix_text).
inline constexpr int kMixFromDigits = 6;

/// A measured Load -> Decode pass in a report.
struct MeasuredThroughput {
  double images_per_s = 0;
  double seconds = 0;
  uint64_t images = 0;
  double storage_bytes_per_s = 0;  ///< bandwidth actually delivered by the throttled reader
  double decode_cores = 0;  ///< decoder CPU seconds / wall seconds: the cores decoding really got
};

/// Everything profile-mix found.
struct ProfileReport {
  std::string schema = kReportSchema;
  std::string dataset;        ///< the DATASET argument
  uint64_t sample_images = 0;
  std::vector<FormatCost> formats;  ///< the candidates, in the order given
  Resources resources;
  std::string storage_source;  ///< "given" (--storage-bw) or "measured"
  unsigned jobs = 1;           ///< -j: the decode worker threads
  /// "jobs": resources.decode_workers is -j; "measured": the verification pass was decode-bound
  /// below the prediction, so the model was re-solved with the cores the decoders really got
  /// (a shared machine) and the better of the two mixes measured is reported.
  std::string decode_workers_source = "jobs";
  std::optional<MeasuredThroughput> first_measured;  ///< the first mix's pass, when re-solved
  std::vector<double> first_mix;                      ///< the first mix, when re-solved
  /// The re-solved mix and its pass, when it differed enough from the first to be measured: the
  /// chosen mix when it was faster, else the one that lost to the first.
  std::optional<MeasuredThroughput> resolved_measured;
  std::vector<double> resolved_mix;
  std::string reader;          ///< how reads bypassed the page cache: "o_direct" or "fadvise"
  std::string search;          ///< "lp" or "liquid"
  /// --channels: "keep", or "rgb" (the sample measured as RGB, as the dataset must then be made)
  std::string channels = "keep";
  /// The transform a profiled dlprep dataset was made with (its dataset.json's, "" for none or
  /// for another source): the sample's sizes are its, so the mix is for a dataset made with it.
  std::string transform;
  std::vector<double> mix;     ///< the chosen share of each format (same order as formats)
  Bounds predicted;            ///< of the chosen mix
  std::optional<MeasuredThroughput> measured;  ///< the verification pass, when run
  /// The two formats of the sweep and the plot (indices into formats), and its 11 points.
  size_t sweep_a = 0, sweep_b = 0;
  std::vector<SweepPoint> sweep;
  double probe_seconds = 0;  ///< sampling, probes and optimisation (what profiling costs)
  double verify_seconds = 0;  ///< the verification pass
  double sweep_seconds = 0;  ///< measuring the sweep (0 when it was only predicted)
  double total_seconds = 0;

  /// "png:0.7,bmp:0.3": the chosen mix as convert-dataset --mix takes it (zero shares left
  /// out), to `significant` digits: 3 for people (finer than a sample can realise), and
  /// kMixFromDigits in the JSON report, the text --mix-from builds from its ratios.
  std::string mix_text(int significant = 3) const { return mix_text(mix, significant); }
  /// The same for other shares of these formats (first_mix, resolved_mix).
  std::string mix_text(const std::vector<double>& shares, int significant = 3) const;
};

/// The report as JSON text (two-space indent, trailing newline). Infinite bounds (no compute
/// ceiling) are written as null.
std::string report_to_json(const ProfileReport& report);
/// Parses a report; throws Error(corrupt_data) for malformed text, Error(unsupported) for another
/// schema.
ProfileReport report_from_json(std::string_view text);

/// The chosen mix of the report file at `path` as convert-dataset --mix takes it
/// ("png:0.7,bmp:0.3", shares with 6 significant digits), for --mix-from. Reads only "schema" and
/// "mix", so a report trimmed by hand still works. Throws Error naming the file: io (missing, a
/// directory, unreadable), corrupt_data (not JSON, no "mix" or an empty one, a malformed entry),
/// unsupported (another schema or version). With `channels`, also the report's "channels"
/// ("keep" when absent: a report of an older dlprep, or trimmed), and with `transform` its
/// "transform" ("" when absent), checked by image::parse_transform_text.
std::string read_report_mix(const std::filesystem::path& path, std::string* channels = nullptr,
                            std::string* transform = nullptr);

/// The human summary: one row per format, then resources, the mix and the throughputs.
std::string report_table(const ProfileReport& report);

/// The Liquid-style plot as a standalone SVG document: load, decode and pipeline (their minimum)
/// throughput across the share of sweep_a in a mix of sweep_a and sweep_b, measured points when
/// the sweep was measured, the chosen mix marked (a point on the curve when it uses only those two
/// formats, else a labelled horizontal line).
std::string plot_svg(const ProfileReport& report);

}  // namespace dlprep::profile
