// The max-min LP of profile-mix, solved by enumerating the vertices that can be optimal.
#include "profile/mix_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace dlprep::profile {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_resources(const Resources& r) {
  if (!(r.storage_bytes_per_s > 0) || !std::isfinite(r.storage_bytes_per_s))
    throw Error(Errc::invalid_argument, "storage bandwidth must be positive");
  if (!(r.decode_workers > 0)) throw Error(Errc::invalid_argument, "decode workers must be > 0");
  if (r.compute_images_per_s < 0 || std::isnan(r.compute_images_per_s))
    throw Error(Errc::invalid_argument, "compute rate must not be negative");
}

// Demand of one image of the mix on each resource, normalised by its capacity: seconds of the
// whole storage and of the whole worker pool per image. Throughput = 1 / max(demands).
struct Demand {
  double storage = 0, decode = 0;
};

Demand demand_of(const FormatCost& c, const Resources& r) {
  return {c.bytes_per_image / r.storage_bytes_per_s, c.decode_cpu_s_per_image / r.decode_workers};
}

// Uncapped throughput of the mix (share t of i, 1 - t of j).
double uncapped(const Demand& i, const Demand& j, double t) {
  double s = t * i.storage + (1 - t) * j.storage;
  double d = t * i.decode + (1 - t) * j.decode;
  double worst = std::max(s, d);
  return worst > 0 ? 1 / worst : kInf;
}

}  // namespace

Bounds predict(const std::vector<FormatCost>& costs, const Resources& resources,
               const std::vector<double>& ratios) {
  check_resources(resources);
  if (ratios.size() != costs.size())
    throw Error(Errc::invalid_argument, "one share per format is needed");
  double total = 0;
  for (double r : ratios) {
    if (!(r >= 0) || !std::isfinite(r))
      throw Error(Errc::invalid_argument, "shares must be finite and non-negative");
    total += r;
  }
  if (!(total > 0)) throw Error(Errc::invalid_argument, "the shares are all zero");
  double bytes = 0, cpu = 0;
  for (size_t i = 0; i < costs.size(); ++i) {
    bytes += ratios[i] / total * costs[i].bytes_per_image;
    cpu += ratios[i] / total * costs[i].decode_cpu_s_per_image;
  }
  Bounds b;
  b.load_images_per_s = bytes > 0 ? resources.storage_bytes_per_s / bytes : kInf;
  b.decode_images_per_s = cpu > 0 ? resources.decode_workers / cpu : kInf;
  b.compute_images_per_s = resources.compute_images_per_s > 0 ? resources.compute_images_per_s : kInf;
  b.images_per_s = b.load_images_per_s;
  b.bound = "storage";
  if (b.decode_images_per_s < b.images_per_s) {
    b.images_per_s = b.decode_images_per_s;
    b.bound = "decode";
  }
  if (b.compute_images_per_s < b.images_per_s) {
    b.images_per_s = b.compute_images_per_s;
    b.bound = "compute";
  }
  return b;
}

MixChoice optimize_lp(const std::vector<FormatCost>& costs, const Resources& resources) {
  check_resources(resources);
  if (costs.empty()) throw Error(Errc::invalid_argument, "no candidate formats");
  std::vector<Demand> d;
  for (const FormatCost& c : costs) d.push_back(demand_of(c, resources));

  // Best (uncapped throughput, formats used) so far; the compute ceiling caps every mix equally,
  // so it does not change which mix is best uncapped, and the uncapped figure breaks its ties.
  double best = -1;
  int best_used = 3;
  size_t best_i = 0, best_j = 0;
  double best_t = 1;
  auto consider = [&](size_t i, size_t j, double t) {
    t = std::clamp(t, 0.0, 1.0);
    double v = uncapped(d[i], d[j], t);
    int used = (t == 0 || t == 1 || i == j) ? 1 : 2;
    // Relative tolerance: a crossing that only beats an endpoint by rounding is not a reason to
    // store two formats.
    if (v > best * (1 + 1e-12) || (v >= best * (1 - 1e-12) && used < best_used)) {
      best = v;
      best_used = used;
      best_i = i;
      best_j = j;
      best_t = t;
    }
  };
  for (size_t i = 0; i < costs.size(); ++i) consider(i, i, 1);
  for (size_t i = 0; i < costs.size(); ++i)
    for (size_t j = i + 1; j < costs.size(); ++j) {
      // max(s(t), d(t)) with s, d linear in t: the minimum over [0, 1] lies at an endpoint or
      // where the lines cross, s(t) = d(t).
      double ds = d[i].storage - d[j].storage;  // s(t) = d[j].storage + t * ds
      double dd = d[i].decode - d[j].decode;
      double denom = ds - dd;
      if (denom != 0) {
        double t = (d[j].decode - d[j].storage) / denom;
        if (t > 0 && t < 1) consider(i, j, t);
      }
    }
  MixChoice choice;
  choice.ratios.assign(costs.size(), 0.0);
  if (best_i == best_j) {
    choice.ratios[best_i] = 1;
  } else {
    choice.ratios[best_i] = best_t;
    choice.ratios[best_j] = 1 - best_t;
  }
  choice.predicted = predict(costs, resources, choice.ratios);
  return choice;
}

std::vector<SweepPoint> sweep(const std::vector<FormatCost>& costs, const Resources& resources,
                              size_t a, size_t b, unsigned points) {
  if (a >= costs.size() || b >= costs.size() || a == b)
    throw Error(Errc::invalid_argument, "a sweep needs two different candidate formats");
  if (points < 2) throw Error(Errc::invalid_argument, "a sweep needs at least two points");
  std::vector<SweepPoint> out;
  for (unsigned k = 0; k < points; ++k) {
    SweepPoint p;
    p.ratio_a = static_cast<double>(k) / (points - 1);
    std::vector<double> ratios(costs.size(), 0.0);
    ratios[a] = p.ratio_a;
    ratios[b] = 1 - p.ratio_a;
    p.predicted = predict(costs, resources, ratios);
    out.push_back(p);
  }
  return out;
}

MixChoice optimize_liquid(const std::vector<FormatCost>& costs, const Resources& resources,
                          size_t a, size_t b, const std::function<double(double)>& score) {
  std::vector<SweepPoint> points = sweep(costs, resources, a, b, 11);
  size_t best = 0;
  double best_score = -1;
  for (size_t k = 0; k < points.size(); ++k) {
    double s = score ? score(points[k].ratio_a) : points[k].predicted.images_per_s;
    if (s > best_score) {
      best_score = s;
      best = k;
    }
  }
  MixChoice choice;
  choice.ratios.assign(costs.size(), 0.0);
  choice.ratios[a] = points[best].ratio_a;
  choice.ratios[b] = 1 - points[best].ratio_a;
  choice.predicted = points[best].predicted;
  return choice;
}

}  // namespace dlprep::profile
