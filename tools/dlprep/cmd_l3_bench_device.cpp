// dlprep l3 bench --device cpu|cuda|auto (or --batch): the batch-decoder benchmark of issue 4 on
// the user's images (l3::run_batch_bench), with the host baselines of the same run (PNG and L3
// on -j threads through image::run_codec_bench) and nvJPEG on the --jpeg files when it was built.
// Prints one table (or --json) with the targets checked. No algorithm here.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cmd_l3.hpp"
#include "core/directory_walk.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "image/codec.hpp"
#include "image/codec_bench.hpp"
#include "inputs.hpp"
#include "l3/batch_bench.hpp"
#include "l3/batch_decode.hpp"
#include "l3/l3.hpp"
#include "option_checks.hpp"
#include "output.hpp"

namespace dlprep::cli {
namespace {

// 65536 images is far past any batch a trainer uses, and keeps the tensor sizes sane.
std::vector<size_t> parse_batches(const std::string& text) {
  return parse_count_list(text, "--batch", "batch size", 65536);
}

std::vector<l3::OutputLayout> parse_layouts(const std::string& text) {
  std::vector<l3::OutputLayout> layouts;
  for (const std::string& item : split_list(text, "--layout")) {
    try {
      layouts.push_back(l3::parse_output_layout(item));
    } catch (const Error& e) {
      throw e.with_context("--layout");
    }
  }
  if (layouts.empty()) throw Error(Errc::invalid_argument, "--layout: empty list");
  return layouts;
}

// The inputs as L3 files (other images are encoded with the automatic patch size) and their
// pixels; a file that fails is reported and left out.
struct Set {
  std::vector<Bytes> files;
  std::vector<Image> images;
  std::vector<std::string> names;
};

Set read_set(const std::vector<std::string>& args, const Globals& globals, int& code) {
  std::vector<std::unique_ptr<Bytes>> files;
  std::vector<std::unique_ptr<Image>> images;
  const auto inputs = load_bench_inputs(
      args, globals, code,
      [&](size_t count) {
        files.resize(count);
        images.resize(count);
      },
      [&](size_t i, ByteSpan bytes) {
        const image::Codec* codec = image::sniff_codec(bytes);
        if (codec != nullptr && codec->name() == "l3") {
          files[i] = std::make_unique<Bytes>(bytes.begin(), bytes.end());
          images[i] = std::make_unique<Image>(l3::decode(bytes));
        } else {
          images[i] = std::make_unique<Image>(image::decode_any(bytes));
          files[i] = std::make_unique<Bytes>(l3::encode(*images[i]));
        }
      });
  Set set;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!files[i] || !images[i]) continue;
    set.files.push_back(std::move(*files[i]));
    set.images.push_back(std::move(*images[i]));
    set.names.push_back(display_path(inputs[i].path));
  }
  return set;
}

// The --jpeg arguments: files as named, directories walked recursively in sorted order keeping
// the files that start with a JPEG's SOI marker (FF D8 FF).
std::vector<std::filesystem::path> jpeg_files(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<fs::path> paths;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      paths.emplace_back(arg);
      continue;
    }
    std::vector<fs::path> found;
    DirectoryWalk walk(arg);
    while (walk.next(ec)) {
      if (walk.type() != fs::file_type::regular) continue;
      std::ifstream in(walk.path(), std::ios::binary);
      unsigned char magic[3] = {};
      if (in.read(reinterpret_cast<char*>(magic), 3) && magic[0] == 0xFF && magic[1] == 0xD8 &&
          magic[2] == 0xFF)
        found.push_back(walk.path());
    }
    if (ec)
      throw Error(Errc::io, walk.failed_folder() + ": cannot read directory: " + ec.message(),
                  ec.value());
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  return paths;
}

// PNG level 6 and L3 decoded on the host with -j threads (a whole image per thread): the figures
// the GPU is compared with, measured in the same run.
struct HostBaseline {
  unsigned threads = 0;
  double png_images_per_s = 0, png_gb_s = 0;
  double l3_images_per_s = 0, l3_gb_s = 0;
  bool measured = false;
};

HostBaseline host_baseline(const Set& set, const BenchDeviceOptions& options,
                           const Globals& globals) {
  HostBaseline b;
  b.threads = globals.jobs;
  image::CodecBenchParams params;
  params.codecs = {"l3"};
  if (image::find_codec("png")) params.codecs.insert(params.codecs.begin(), "png:6");
  params.thread_counts = {globals.jobs};
  params.repeats = options.repeats;
  params.max_seconds_per_measurement = options.max_seconds;
  params.image_names = set.names;
  const image::CodecBenchReport report = image::run_codec_bench(set.images, params);
  const double per_image = double(report.raw_bytes) / std::max(1u, report.images);
  for (const image::CodecBenchRow& r : report.rows) {
    const double mb_s = r.median_decode_mb_s;
    if (r.codec == "png:6") {
      b.png_gb_s = mb_s / 1e3;
      b.png_images_per_s = mb_s * 1e6 / per_image;
    } else if (r.codec == "l3" && r.parallel == "images") {
      b.l3_gb_s = mb_s / 1e3;
      b.l3_images_per_s = mb_s * 1e6 / per_image;
    }
  }
  b.measured = true;
  return b;
}

std::string fixed(double v, int decimals) { return format_fixed(v, decimals); }
std::string rate(double v) { return format_fixed(v, v < 100 ? 1 : 0); }
std::string ms(const TimingStats& t) { return format_fixed(t.median_s * 1e3, 3); }

// The targets, from the same run.
struct Targets {
  double best_resident_gb_s = 0;   // at batch >= 64, headline layout
  bool resident_measured = false;  // a batch >= 64 ran
  double best_pinned_gb_s = 0, best_pinned_images_per_s = 0;
  bool resident_200 = false, e2e_70pct = false, e2e_30x_png = false;
};

Targets targets_of(const l3::BatchBenchReport& r, const HostBaseline& host) {
  Targets t;
  for (const l3::BatchBenchRow& row : r.rows) {
    if (row.layout != r.rows.front().layout) continue;
    if (row.batch >= 64) {
      t.resident_measured = true;
      t.best_resident_gb_s = std::max(t.best_resident_gb_s, row.resident_gb_s);
    }
    t.best_pinned_gb_s = std::max(t.best_pinned_gb_s, row.pinned_gb_s);
    t.best_pinned_images_per_s = std::max(t.best_pinned_images_per_s, row.pinned_images_per_s);
  }
  t.resident_200 = t.best_resident_gb_s >= 200;
  t.e2e_70pct = r.ceiling_gb_s > 0 && t.best_pinned_gb_s >= 0.7 * r.ceiling_gb_s;
  t.e2e_30x_png =
      host.png_images_per_s > 0 && t.best_pinned_images_per_s >= 30 * host.png_images_per_s;
  return t;
}

void print_report(const l3::BatchBenchReport& r, const HostBaseline& host, const Targets& t,
                  const BenchDeviceOptions& options) {
  std::cout << "l3 bench on " << r.backend << ": " << r.device << "\n"
            << "set: " << r.distinct_images << (r.distinct_images == 1 ? " image, " : " images, ")
            << format_bytes(r.distinct_pixel_bytes) << " of pixels, "
            << format_bytes(r.distinct_file_bytes) << " as L3 (ratio " << fixed(r.ratio, 3)
            << "); batches repeat the set; median of " << options.repeats
            << " runs; GB/s of decoded pixels\n"
            << "copies: pinned H2D " << fixed(r.copy.h2d_pinned_gb_s, 1) << " GB/s, pageable H2D "
            << fixed(r.copy.h2d_pageable_gb_s, 1) << ", D2H " << fixed(r.copy.d2h_pinned_gb_s, 1)
            << ", D2D " << fixed(r.copy.d2d_gb_s, 0)
            << " (one direction); ceiling = H2D / ratio = " << fixed(r.ceiling_gb_s, 1)
            << " GB/s of pixels\n"
            << "latency, batch 1 (first image): kernel " << ms(r.latency_kernel)
            << " ms, pinned host to checked device tensor " << ms(r.latency_pinned)
            << " ms, host to host " << ms(r.latency_host) << " ms\n";
  Table table({"batch", "layout", "resident img/s", "GB/s", "e2e pinned img/s", "GB/s",
               "of ceiling", "pageable img/s", "GB/s", "h2d ms", "kernel ms", "verified"});
  for (const l3::BatchBenchRow& row : r.rows) {
    const bool e2e = row.pipeline_batches > 0;
    auto opt = [&](double v, int d) { return e2e ? fixed(v, d) : std::string("-"); };
    table.add_row(
        {std::to_string(row.batch), std::string(l3::output_layout_name(row.layout)),
         rate(row.resident_images_per_s), fixed(row.resident_gb_s, 1),
         e2e ? rate(row.pinned_images_per_s) : "-", opt(row.pinned_gb_s, 1),
         e2e && r.ceiling_gb_s > 0 ? fixed(100 * row.pinned_gb_s / r.ceiling_gb_s, 0) + "%"
                                   : std::string("-"),
         e2e ? rate(row.pageable_images_per_s) : "-", opt(row.pageable_gb_s, 1),
         opt(row.pinned_h2d_ms, 3), opt(row.pinned_kernel_ms, 3), row.verified ? "yes" : "no"});
  }
  table.print();
  if (host.measured)
    std::cout << "host, " << host.threads << " threads (an image per thread): png "
              << rate(host.png_images_per_s) << " img/s (" << fixed(host.png_gb_s, 2)
              << " GB/s), l3 " << rate(host.l3_images_per_s) << " img/s (" << fixed(host.l3_gb_s, 2)
              << " GB/s)\n";
  for (const l3::JpegBenchRow& j : r.jpeg_rows)
    std::cout << j.decoder << " (JPEG q90 of the same images), batch " << j.batch << ": "
              << rate(j.images_per_s) << " img/s, " << fixed(j.gb_s, 1) << " GB/s, worst PSNR "
              << fixed(j.min_psnr_db, 1) << " dB\n";
  if (!r.jpeg_note.empty()) std::cout << "nvjpeg: " << r.jpeg_note << "\n";
  // The targets are the CUDA decoder's: another backend's figures are shown against them only
  // for comparison.
  std::cout << (r.backend == "cuda" ? "targets: " : "targets (the CUDA decoder's): ")
            << "resident >= 200 GB/s at batch >= 64: "
            << (t.resident_measured ? std::string(t.resident_200 ? "yes" : "no") + " (" +
                                          fixed(t.best_resident_gb_s, 1) + ")"
                                    : std::string("not measured (no batch >= 64)"))
            << "; end-to-end >= 70% of the ceiling: " << (t.e2e_70pct ? "yes" : "no") << " ("
            << (r.ceiling_gb_s > 0 ? fixed(100 * t.best_pinned_gb_s / r.ceiling_gb_s, 0) : "-")
            << "%); end-to-end >= 30x png on " << host.threads
            << " threads: " << (t.e2e_30x_png ? "yes" : "no") << " ("
            << (host.png_images_per_s > 0
                    ? fixed(t.best_pinned_images_per_s / host.png_images_per_s, 1) + "x"
                    : std::string("-"))
            << ")\n";
}

Json timing_json(const TimingStats& t) {
  return {{"median_seconds", t.median_s}, {"min_seconds", t.min_s}, {"runs", t.runs()}};
}

Json to_json(const l3::BatchBenchReport& r, const HostBaseline& host, const Targets& t,
             const BenchDeviceOptions& options) {
  Json rows = Json::array();
  for (const l3::BatchBenchRow& row : r.rows) {
    Json j = {{"batch", row.batch},
              {"layout", l3::output_layout_name(row.layout)},
              {"input_bytes", row.input_bytes},
              {"pixel_bytes", row.pixel_bytes},
              {"output_bytes", row.output_bytes},
              {"verified", row.verified},
              {"resident", timing_json(row.resident)},
              {"resident_images_per_s", row.resident_images_per_s},
              {"resident_gb_per_s", row.resident_gb_s}};
    if (row.pipeline_batches > 0) {
      j["pipeline_batches"] = row.pipeline_batches;
      j["pinned"] = timing_json(row.pinned);
      j["pinned_images_per_s"] = row.pinned_images_per_s;
      j["pinned_gb_per_s"] = row.pinned_gb_s;
      j["pinned_fraction_of_ceiling"] = r.ceiling_gb_s > 0 ? row.pinned_gb_s / r.ceiling_gb_s : 0;
      j["pinned_h2d_ms"] = row.pinned_h2d_ms;
      j["pinned_kernel_ms"] = row.pinned_kernel_ms;
      j["pageable"] = timing_json(row.pageable);
      j["pageable_images_per_s"] = row.pageable_images_per_s;
      j["pageable_gb_per_s"] = row.pageable_gb_s;
    }
    rows.push_back(std::move(j));
  }
  Json jpeg = Json::array();
  for (const l3::JpegBenchRow& j : r.jpeg_rows)
    jpeg.push_back({{"decoder", j.decoder},
                    {"batch", j.batch},
                    {"pixel_bytes", j.pixel_bytes},
                    {"time", timing_json(j.time)},
                    {"images_per_s", j.images_per_s},
                    {"gb_per_s", j.gb_s},
                    {"min_psnr_db", j.min_psnr_db}});
  Json doc = {
      {"schema", "dlprep.l3-device-bench/1"},
      {"backend", r.backend},
      {"device", r.device},
      {"images", r.distinct_images},
      {"file_bytes", r.distinct_file_bytes},
      {"pixel_bytes", r.distinct_pixel_bytes},
      {"ratio", r.ratio},
      {"repeats", options.repeats},
      {"pipeline_depth", r.pipeline_depth},
      {"copy",
       {{"bytes", r.copy.bytes},
        {"h2d_pinned_gb_per_s", r.copy.h2d_pinned_gb_s},
        {"h2d_pageable_gb_per_s", r.copy.h2d_pageable_gb_s},
        {"d2h_pinned_gb_per_s", r.copy.d2h_pinned_gb_s},
        {"d2d_gb_per_s", r.copy.d2d_gb_s}}},
      {"ceiling_gb_per_s", r.ceiling_gb_s},
      {"latency",
       {{"kernel", timing_json(r.latency_kernel)},
        {"pinned", timing_json(r.latency_pinned)},
        {"host", timing_json(r.latency_host)}}},
      {"rows", rows},
      {"nvjpeg", {{"rows", jpeg}, {"note", r.jpeg_note}}},
      {"targets",
       {{"resident_gb_per_s_at_batch_64_up",
         t.resident_measured ? Json(t.best_resident_gb_s) : Json(nullptr)},
        {"resident_200_gb_per_s", t.resident_measured ? Json(t.resident_200) : Json(nullptr)},
        {"end_to_end_70_percent_of_ceiling", t.e2e_70pct},
        {"end_to_end_30x_png", t.e2e_30x_png}}},
  };
  if (host.measured)
    doc["host"] = {{"threads", host.threads},
                   {"png_images_per_s", host.png_images_per_s},
                   {"png_gb_per_s", host.png_gb_s},
                   {"l3_images_per_s", host.l3_images_per_s},
                   {"l3_gb_per_s", host.l3_gb_s}};
  return doc;
}

}  // namespace

int run_l3_device_bench(const BenchDeviceOptions& options, const Globals& globals) {
  // Usage first, then the device (an unavailable one is exit 77 before any file is read).
  l3::BatchBenchParams params;
  params.batch_sizes = parse_batches(options.batches.empty() ? "1,16,64,256" : options.batches);
  params.layouts = parse_layouts(options.layouts.empty() ? "nhwc-u8,nchw-f16" : options.layouts);
  params.timing = {2, options.repeats, options.max_seconds};
  params.pipeline_depth = options.depth;
  params.cpu_threads = globals.jobs;
  const auto decoder = l3::make_batch_decoder(
      l3::parse_decode_device(options.device.empty() ? "auto" : options.device), globals.jobs);
  if (decoder->device_name() == "cpu") params.copy_bytes = uint64_t{64} << 20;

  int code = kExitOk;
  const Set set = read_set(options.inputs, globals, code);
  if (set.files.empty()) throw Error(Errc::io, "no images to benchmark");  // exit 1
  std::vector<ByteSpan> files(set.files.begin(), set.files.end());
  l3::BatchBenchReport report = l3::run_batch_bench(*decoder, files, params);

  if (!options.jpegs.empty()) {
    // The JPEG bytes as they are (this build may have no JPEG codec: found by their magic).
    std::vector<Bytes> raw;
    for (const std::filesystem::path& path : jpeg_files(options.jpegs))
      raw.push_back(read_file(path));
    std::vector<ByteSpan> jpeg_spans(raw.begin(), raw.end());
    try {
      report.jpeg_rows = l3::run_nvjpeg_bench(jpeg_spans, set.images, params, &report.jpeg_note);
    } catch (const Error& e) {
      if (e.code() != Errc::device_unavailable) throw;
      report.jpeg_note = std::string(e.what()) +
                         "; tests/bench/nvjpeg_torchvision.py measures nvJPEG through torchvision";
    }
  } else {
    report.jpeg_note = "no --jpeg files given";
  }

  const HostBaseline host = host_baseline(set, options, globals);
  const Targets targets = targets_of(report, host);
  if (globals.json)
    print_json(to_json(report, host, targets, options));
  else
    print_report(report, host, targets, options);
  return code;
}

}  // namespace dlprep::cli
