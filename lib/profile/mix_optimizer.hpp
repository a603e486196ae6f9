// The mix optimiser of profile-mix: which shares of the candidate formats maximise the throughput
// of a Load -> Decode pipeline, given what one image of each format costs each resource.
//
// Throughput of a mix r (shares summing to 1) is bounded by every resource it uses:
//   storage  S / sum_i r_i * bytes_i        (bytes/s over bytes per image)
//   decode   W / sum_i r_i * cpu_s_i        (worker cores over CPU-seconds per image)
//   compute  C                              (the training consumption ceiling, optional)
// and the pipeline runs at the smallest bound (Liquid, section 3; generalised to any number of
// formats). Maximising the minimum is a small linear program; see optimize_lp().
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dlprep::profile {

/// What one image of a format costs, measured on a sample (probe.hpp).
struct FormatCost {
  std::string format;               ///< codec name, e.g. "png"
  std::string spec;                 ///< target text for convert-dataset, e.g. "png" or "png:9"
  double bytes_per_image = 0;       ///< mean stored size
  double decode_cpu_s_per_image = 0;  ///< one core, mean over the sample of per-image medians
};

/// What the machine offers.
struct Resources {
  double storage_bytes_per_s = 0;  ///< read bandwidth; must be > 0
  double decode_workers = 1;       ///< cores decoding in parallel (-j); must be > 0
  double compute_images_per_s = 0;  ///< training consumption ceiling; 0 = none
};

/// The bounds of one mix, images/s.
struct Bounds {
  double load_images_per_s = 0;    ///< storage bound
  double decode_images_per_s = 0;  ///< CPU decode bound
  double compute_images_per_s = 0;  ///< the ceiling (infinity when none)
  double images_per_s = 0;         ///< the smallest of the three
  std::string bound;               ///< "storage", "decode" or "compute": which one binds
};

/// The bounds of the mix `ratios` (one share per cost, any non-negative weights; normalised
/// here). Throws Error(invalid_argument) on mismatched sizes, negative or all-zero shares, or
/// non-positive resources.
Bounds predict(const std::vector<FormatCost>& costs, const Resources& resources,
               const std::vector<double>& ratios);

/// A chosen mix with its prediction.
struct MixChoice {
  std::vector<double> ratios;  ///< one share per candidate format, summing to 1
  Bounds predicted;
};

/// The exact optimum over every mix of the candidates. With two resource constraints (storage and
/// decode; the compute ceiling is a constant) an optimal vertex of the LP uses at most two formats,
/// so every single format and every pair is tried, and for a pair the minimax of two linear
/// functions of the share is solved in closed form (the endpoints and the crossing). Ties (e.g.
/// everything capped by --compute-rate) are broken by the uncapped throughput, then by fewer
/// formats, then by candidate order. Throws Error(invalid_argument) when `costs` is empty.
MixChoice optimize_lp(const std::vector<FormatCost>& costs, const Resources& resources);

/// Liquid's search (Liquid section 4.2): two formats a and b, the 11 ratios 0.0, 0.1, ... 1.0 of
/// format a, and the best of them by `score(ratio_of_a)` (the predicted throughput when no score
/// is given; a measured one otherwise). Returns the chosen mix over all candidates (0 elsewhere).
/// The score sees the share of a; the first best ratio wins ties. Throws Error(invalid_argument)
/// when a or b is out of range or a == b.
MixChoice optimize_liquid(const std::vector<FormatCost>& costs, const Resources& resources,
                          size_t a, size_t b,
                          const std::function<double(double ratio_a)>& score = {});

/// One point of a two-format sweep.
struct SweepPoint {
  double ratio_a = 0;  ///< share of format a
  Bounds predicted;
  double measured_images_per_s = -1;  ///< < 0 when not measured
};

/// The predicted bounds at `points` evenly spaced shares of format a (0 to 1 inclusive) in a
/// two-format mix of a and b. points >= 2.
std::vector<SweepPoint> sweep(const std::vector<FormatCost>& costs, const Resources& resources,
                              size_t a, size_t b, unsigned points = 11);

}  // namespace dlprep::profile
