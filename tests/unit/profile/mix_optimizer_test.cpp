// The mix optimiser on cases whose answer is known in closed form.
#include "profile/mix_optimizer.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "core/error.hpp"

using namespace dlprep;
using namespace dlprep::profile;

namespace {

// Roughly FHD photos: PNG 1.8 MB and 30 ms to decode, BMP 6.2 MB and 1 ms, L3 4 MB and 8 ms.
std::vector<FormatCost> photo_costs() {
  return {{"png", "png", 1.8e6, 0.030}, {"bmp", "bmp", 6.2e6, 0.001}, {"l3", "l3", 4.0e6, 0.008}};
}

}  // namespace

TEST_CASE("predict takes the smallest of the storage, decode and compute bounds") {
  std::vector<FormatCost> c = photo_costs();
  Resources r{100e6, 2, 0};
  Bounds b = predict(c, r, {1, 0, 0});
  CHECK(b.load_images_per_s == doctest::Approx(100e6 / 1.8e6));
  CHECK(b.decode_images_per_s == doctest::Approx(2 / 0.030));
  CHECK(b.images_per_s == doctest::Approx(100e6 / 1.8e6));
  CHECK(b.bound == "storage");
  CHECK(std::isinf(b.compute_images_per_s));
  r.compute_images_per_s = 10;
  b = predict(c, r, {1, 0, 0});
  CHECK(b.images_per_s == 10);
  CHECK(b.bound == "compute");
  CHECK_THROWS_AS(predict(c, r, {1, 0}), Error);
  CHECK_THROWS_AS(predict(c, r, {0, 0, 0}), Error);
  CHECK_THROWS_AS(predict(c, Resources{0, 2, 0}, {1, 0, 0}), Error);
}

TEST_CASE("a storage-bound machine gets the smallest format") {
  // Plenty of cores, little bandwidth: every format is storage-bound, PNG is the smallest.
  MixChoice m = optimize_lp(photo_costs(), Resources{10e6, 64, 0});
  CHECK(m.ratios == std::vector<double>{1, 0, 0});
  CHECK(m.predicted.bound == "storage");
  CHECK(m.predicted.images_per_s == doctest::Approx(10e6 / 1.8e6));
}

TEST_CASE("a CPU-bound machine gets the cheapest format to decode") {
  MixChoice m = optimize_lp(photo_costs(), Resources{100e9, 1, 0});
  CHECK(m.ratios == std::vector<double>{0, 1, 0});
  CHECK(m.predicted.bound == "decode");
}

TEST_CASE("the balanced point is the analytic crossing of load and decode") {
  // Two formats: png (bytes p, cpu q) and bmp (bytes P, cpu Q). With share t of png,
  // load = S / (t p + (1-t) P), decode = W / (t q + (1-t) Q); they cross where
  // (t p + (1-t) P) / S = (t q + (1-t) Q) / W.
  std::vector<FormatCost> c = {{"png", "png", 2e6, 0.040}, {"bmp", "bmp", 6e6, 0.002}};
  double S = 150e6, W = 2;
  double p = 2e6 / S, P = 6e6 / S, q = 0.040 / W, Q = 0.002 / W;
  double t = (Q - P) / ((p - P) - (q - Q));
  REQUIRE(t > 0);
  REQUIRE(t < 1);
  MixChoice m = optimize_lp(c, Resources{S, W, 0});
  CHECK(m.ratios[0] == doctest::Approx(t));
  CHECK(m.ratios[1] == doctest::Approx(1 - t));
  CHECK(m.predicted.load_images_per_s == doctest::Approx(m.predicted.decode_images_per_s));
  // Better than either pure format and than any other share.
  for (int k = 0; k <= 100; ++k) {
    double s = k / 100.0;
    CHECK(predict(c, Resources{S, W, 0}, {s, 1 - s}).images_per_s <=
          m.predicted.images_per_s * (1 + 1e-9));
  }
}

TEST_CASE("with three formats the optimum is never worse than the best pair") {
  std::vector<FormatCost> c = photo_costs();
  Resources r{250e6, 2, 0};
  MixChoice all = optimize_lp(c, r);
  for (size_t a = 0; a < 3; ++a)
    for (size_t b = 0; b < 3; ++b)
      if (a != b)
        for (int k = 0; k <= 20; ++k) {
          double s = k / 20.0;
          std::vector<double> ratios(3, 0.0);
          ratios[a] = s;
          ratios[b] = 1 - s;
          CHECK(predict(c, r, ratios).images_per_s <= all.predicted.images_per_s * (1 + 1e-9));
        }
  int used = 0;
  for (double x : all.ratios) used += x > 0;
  CHECK(used <= 2);
}

TEST_CASE("a compute ceiling caps the throughput but keeps the best uncapped mix") {
  Resources r{10e6, 64, 5};
  MixChoice m = optimize_lp(photo_costs(), r);
  CHECK(m.predicted.images_per_s == 5);
  CHECK(m.predicted.bound == "compute");
  CHECK(m.ratios == std::vector<double>{1, 0, 0});
}

TEST_CASE("liquid's search picks the best of the 11 ratios") {
  std::vector<FormatCost> c = {{"png", "png", 2e6, 0.040}, {"bmp", "bmp", 6e6, 0.002}};
  Resources r{150e6, 2, 0};
  MixChoice m = optimize_liquid(c, r, 0, 1);
  double share = m.ratios[0];
  CHECK(std::abs(share * 10 - std::round(share * 10)) < 1e-9);
  for (const SweepPoint& p : sweep(c, r, 0, 1, 11))
    CHECK(p.predicted.images_per_s <= m.predicted.images_per_s);
  // Never better than the exact optimum, and within one step of it here.
  MixChoice exact = optimize_lp(c, r);
  CHECK(m.predicted.images_per_s <= exact.predicted.images_per_s * (1 + 1e-12));
  CHECK(std::abs(share - exact.ratios[0]) <= 0.1);
  // A measured score overrides the prediction.
  MixChoice scored = optimize_liquid(c, r, 0, 1, [](double t) { return t == 0.3 ? 1.0 : 0.0; });
  CHECK(scored.ratios[0] == doctest::Approx(0.3));
  CHECK_THROWS_AS(optimize_liquid(c, r, 0, 0), Error);
}

TEST_CASE("a sweep has evenly spaced shares from 0 to 1") {
  std::vector<FormatCost> c = photo_costs();
  std::vector<SweepPoint> s = sweep(c, Resources{100e6, 2, 0}, 0, 1, 11);
  REQUIRE(s.size() == 11);
  CHECK(s.front().ratio_a == 0);
  CHECK(s.back().ratio_a == 1);
  CHECK(s[3].ratio_a == doctest::Approx(0.3));
}
