// The Liquid-style plot of profile-mix, written as SVG by hand (no plotting dependency): load,
// decode and pipeline throughput across the share of one format in a two-format mix.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "profile/report.hpp"

namespace dlprep::profile {
namespace {

// Canvas and plot area, in SVG user units (pixels at 100%).
constexpr double kWidth = 960, kHeight = 600;
constexpr double kLeft = 90, kRight = 210, kTop = 60, kBottom = 80;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr int kCurvePoints = 201;  // smooth enough for the 1/x shape of the load curve

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` intervals.
double nice_step(double range, int ticks) {
  double raw = range / ticks;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string label_number(double v) {
  char buf[32];
  if (v >= 1000 || v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string plot_svg(const ProfileReport& r) {
  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" +
         num(kHeight) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) +
         "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"13\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (r.formats.size() < 2 || r.sweep_a == r.sweep_b) {
    svg += "<text x=\"40\" y=\"60\">profile-mix: a plot needs two candidate formats</text>\n</svg>\n";
    return svg;
  }
  const std::string a = r.formats[r.sweep_a].spec, b = r.formats[r.sweep_b].spec;

  // The curves, predicted from the costs.
  struct P {
    double x, load, decode, pipe;
  };
  std::vector<P> curve;
  for (int k = 0; k < kCurvePoints; ++k) {
    double t = static_cast<double>(k) / (kCurvePoints - 1);
    std::vector<double> ratios(r.formats.size(), 0.0);
    ratios[r.sweep_a] = t;
    ratios[r.sweep_b] = 1 - t;
    Bounds bd = predict(r.formats, r.resources, ratios);
    curve.push_back({t, bd.load_images_per_s, bd.decode_images_per_s, bd.images_per_s});
  }
  // The y range: the pipeline curve, measured points and the chosen mix, with head room; the
  // load and decode curves run off the top where they are far from binding (clipped).
  double top = 0;
  for (const P& p : curve) top = std::max(top, p.pipe);
  for (const SweepPoint& s : r.sweep) top = std::max(top, s.measured_images_per_s);
  if (r.measured) top = std::max(top, r.measured->images_per_s);
  if (std::isfinite(r.predicted.images_per_s)) top = std::max(top, r.predicted.images_per_s);
  if (!(top > 0) || !std::isfinite(top)) top = 1;
  double step = nice_step(top * 1.5, 6);
  double ymax = std::ceil(top * 1.5 / step) * step;
  auto X = [](double t) { return kLeft + t * kPlotW; };
  auto Y = [&](double v) { return kTop + kPlotH - std::min(v, ymax * 1.05) / ymax * kPlotH; };

  svg += "<text x=\"" + num(kLeft) + "\" y=\"30\" font-size=\"17\" font-weight=\"bold\">" +
         escape("profile-mix: " + a + " : " + b + " mix — " + r.dataset) + "</text>\n";
  svg += "<text x=\"" + num(kLeft) + "\" y=\"48\" fill=\"#555\">" +
         escape("storage " + label_number(r.resources.storage_bytes_per_s / 1e6) + " MB/s (" +
                r.storage_source + "), -j" + std::to_string(r.jobs) + " decode workers" +
                (r.decode_workers_source == "measured"
                     ? " getting " + label_number(r.resources.decode_workers) + " cores"
                     : std::string()) +
                ", sample of " + std::to_string(r.sample_images) + " images") +
         "</text>\n";
  svg += "<defs><clipPath id=\"plot\"><rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) +
         "\" width=\"" + num(kPlotW) + "\" height=\"" + num(kPlotH) + "\"/></clipPath></defs>\n";

  // Grid and axes.
  for (double v = 0; v <= ymax + step / 2; v += step) {
    svg += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(Y(v)) + "\" x2=\"" + num(kLeft + kPlotW) +
           "\" y2=\"" + num(Y(v)) + "\" stroke=\"#e4e4e4\"/>\n";
    svg += "<text x=\"" + num(kLeft - 8) + "\" y=\"" + num(Y(v) + 4) +
           "\" text-anchor=\"end\">" + label_number(v) + "</text>\n";
  }
  for (int k = 0; k <= 10; ++k) {
    double t = k / 10.0;
    svg += "<line x1=\"" + num(X(t)) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(X(t)) +
           "\" y2=\"" + num(kTop + kPlotH) + "\" stroke=\"#f0f0f0\"/>\n";
    char tick[16];
    std::snprintf(tick, sizeof tick, "%.1f", t);
    svg += "<text x=\"" + num(X(t)) + "\" y=\"" + num(kTop + kPlotH + 20) +
           "\" text-anchor=\"middle\">" + tick + "</text>\n";
  }
  svg += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kPlotW) +
         "\" height=\"" + num(kPlotH) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  svg += "<text x=\"" + num(kLeft + kPlotW / 2) + "\" y=\"" + num(kHeight - 30) +
         "\" text-anchor=\"middle\" font-size=\"14\">" +
         escape("share of " + a + " (the rest " + b + ")") + "</text>\n";
  svg += "<text transform=\"translate(24 " + num(kTop + kPlotH / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"14\">throughput (images/s)</text>\n";

  auto polyline = [&](auto value, const char* color, double width, const char* dash) {
    std::string pts;
    for (const P& p : curve) {
      double v = value(p);
      if (!std::isfinite(v)) v = ymax * 1.05;
      pts += num(X(p.x)) + "," + num(Y(v)) + " ";
    }
    svg += "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke=\"" + std::string(color) +
           "\" stroke-width=\"" + num(width) + "\"" +
           (dash[0] ? " stroke-dasharray=\"" + std::string(dash) + "\"" : std::string()) +
           " points=\"" + pts + "\"/>\n";
  };
  polyline([](const P& p) { return p.load; }, "#1f77b4", 2, "");
  polyline([](const P& p) { return p.decode; }, "#ff7f0e", 2, "");
  polyline([](const P& p) { return p.pipe; }, "#222", 3.5, "6,4");
  if (r.resources.compute_images_per_s > 0)
    svg += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(Y(r.resources.compute_images_per_s)) +
           "\" x2=\"" + num(kLeft + kPlotW) + "\" y2=\"" + num(Y(r.resources.compute_images_per_s)) +
           "\" stroke=\"#888\" stroke-dasharray=\"2,3\"/>\n";

  bool any_measured = false;
  for (const SweepPoint& s : r.sweep)
    if (s.measured_images_per_s >= 0) {
      any_measured = true;
      svg += "<circle cx=\"" + num(X(s.ratio_a)) + "\" cy=\"" + num(Y(s.measured_images_per_s)) +
             "\" r=\"4.5\" fill=\"#d62728\"/>\n";
    }

  // The chosen mix.
  bool on_axis = true;
  for (size_t i = 0; i < r.mix.size(); ++i)
    if (i != r.sweep_a && i != r.sweep_b && r.mix[i] > 0) on_axis = false;
  std::string chosen_label = "chosen " + r.mix_text() + ": " +
                             label_number(std::round(r.predicted.images_per_s)) + " img/s predicted";
  if (r.measured)
    chosen_label += ", " + label_number(std::round(r.measured->images_per_s)) + " measured";
  if (on_axis && r.sweep_a < r.mix.size()) {
    double cx = X(r.mix[r.sweep_a]);
    double cy = Y(r.predicted.images_per_s);
    svg += "<line x1=\"" + num(cx) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(cx) + "\" y2=\"" +
           num(kTop + kPlotH) + "\" stroke=\"#2ca02c\" stroke-dasharray=\"4,4\"/>\n";
    svg += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) +
           "\" r=\"8\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"3\"/>\n";
    if (r.measured)
      svg += "<rect x=\"" + num(cx - 5) + "\" y=\"" + num(Y(r.measured->images_per_s) - 5) +
             "\" width=\"10\" height=\"10\" fill=\"#2ca02c\"/>\n";
    bool right = r.mix[r.sweep_a] < 0.6;
    svg += "<text x=\"" + num(cx + (right ? 12 : -12)) + "\" y=\"" + num(kTop + 18) +
           "\" text-anchor=\"" + (right ? "start" : "end") +
           "\" fill=\"#2ca02c\" stroke=\"white\" stroke-width=\"4\" paint-order=\"stroke\">" +
           escape(chosen_label) + "</text>\n";
  } else {
    // A mix with a third format has no place on the a:b axis: its predicted (and measured)
    // throughput as horizontal lines, labelled at the right end above the line.
    auto hline = [&](double v, const char* dash, const std::string& text) {
      svg += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(Y(v)) + "\" x2=\"" +
             num(kLeft + kPlotW) + "\" y2=\"" + num(Y(v)) + "\" stroke=\"#2ca02c\" stroke-width=\"2\"" +
             " stroke-dasharray=\"" + dash + "\"/>\n";
      svg += "<text x=\"" + num(kLeft + kPlotW - 6) + "\" y=\"" + num(Y(v) - 6) +
             "\" text-anchor=\"end\" fill=\"#2ca02c\" stroke=\"white\" stroke-width=\"4\" "
             "paint-order=\"stroke\">" + escape(text) + "</text>\n";
    };
    hline(r.predicted.images_per_s, "8,4",
          "chosen " + r.mix_text() + ": " + label_number(std::round(r.predicted.images_per_s)) +
              " img/s predicted");
    if (r.measured)
      hline(r.measured->images_per_s, "2,3",
            "chosen " + r.mix_text() + ": " + label_number(std::round(r.measured->images_per_s)) +
                " img/s measured");
  }

  // Legend.
  double lx = kLeft + kPlotW + 20, ly = kTop + 10;
  auto legend = [&](const char* color, const char* dash, double width, const std::string& text) {
    svg += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 28) + "\" y2=\"" +
           num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"" + num(width) + "\"" +
           (dash[0] ? " stroke-dasharray=\"" + std::string(dash) + "\"" : std::string()) + "/>\n";
    svg += "<text x=\"" + num(lx + 36) + "\" y=\"" + num(ly + 4) + "\">" + escape(text) +
           "</text>\n";
    ly += 24;
  };
  legend("#1f77b4", "", 2, "load (storage)");
  legend("#ff7f0e", "", 2, "decode (CPU)");
  legend("#222", "6,4", 3.5, "pipeline = min");
  if (r.resources.compute_images_per_s > 0) legend("#888", "2,3", 1, "compute ceiling");
  if (any_measured) {
    svg += "<circle cx=\"" + num(lx + 14) + "\" cy=\"" + num(ly) + "\" r=\"4.5\" fill=\"#d62728\"/>\n";
    svg += "<text x=\"" + num(lx + 36) + "\" y=\"" + num(ly + 4) + "\">measured</text>\n";
    ly += 24;
  }
  svg += "<circle cx=\"" + num(lx + 14) + "\" cy=\"" + num(ly) +
         "\" r=\"7\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"3\"/>\n";
  svg += "<text x=\"" + num(lx + 36) + "\" y=\"" + num(ly + 4) + "\">chosen mix</text>\n";
  if (r.measured && on_axis) {
    ly += 24;
    svg += "<rect x=\"" + num(lx + 9) + "\" y=\"" + num(ly - 5) +
           "\" width=\"10\" height=\"10\" fill=\"#2ca02c\"/>\n";
    svg += "<text x=\"" + num(lx + 36) + "\" y=\"" + num(ly + 4) + "\">chosen, measured</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace dlprep::profile
