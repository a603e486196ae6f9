// dlprep l3 bench INPUT…: the codec benchmark (image::run_codec_bench) on the user's own images:
// compression ratio and encode/decode MB/s of L3 against PNG, WebP and JPEG, every decode checked.
// With --device or --batch: the batch-decoder benchmark instead (cmd_l3_bench_device.cpp).
#include <algorithm>
#include <charconv>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "cmd_l3.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "image/codec.hpp"
#include "image/codec_bench.hpp"
#include "inputs.hpp"
#include "option_checks.hpp"
#include "output.hpp"

namespace dlprep::cli {
namespace {

constexpr const char* kBenchCommand = "l3 bench";

struct BenchOptions {
  std::vector<std::string> inputs;
  std::string codecs;   // empty: every default codec this build has
  std::string threads;  // empty: 1 and -j
  unsigned repeats = 5;
  double max_seconds = 0;
  // The batch-decoder benchmark (any of these selects it).
  std::string device, batches, layouts;
  std::vector<std::string> jpegs;
  unsigned depth = 2;
  bool depth_given = false;
  bool device_mode() const {
    return !device.empty() || !batches.empty() || !layouts.empty() || !jpegs.empty() || depth_given;
  }
};

std::vector<unsigned> parse_threads(const std::string& text, unsigned jobs) {
  if (text.empty()) return jobs > 1 ? std::vector<unsigned>{1, jobs} : std::vector<unsigned>{1};
  std::vector<unsigned> counts;
  for (size_t n : parse_count_list(text, "--threads", "thread count", 4096))
    counts.push_back(static_cast<unsigned>(n));
  return counts;
}

std::vector<std::string> default_codecs() {
  std::vector<std::string> codecs;
  for (const char* name : {"l3", "png", "webp", "jpeg"})
    if (image::find_codec(name)) codecs.push_back(name);
  return codecs;
}

std::string mb_s(double value) { return format_fixed(value, value < 100 ? 1 : 0); }
std::string times(double value) { return value > 0 ? format_fixed(value, 2) + "x" : "-"; }

void print_table(const image::CodecBenchReport& report) {
  // --max-seconds stops repeating early: say so when a measurement had fewer runs.
  unsigned fewest = report.repeats;
  for (const auto& row : report.rows)
    for (unsigned runs : {row.encode_runs, row.decode_runs})
      if (runs > 0) fewest = std::min(fewest, runs);
  std::cout << "l3 bench: " << report.images << (report.images == 1 ? " image, " : " images, ")
            << format_bytes(report.raw_bytes) << " raw; median of "
            << (fewest < report.repeats ? "up to " : "") << report.repeats << " runs";
  if (fewest < report.repeats) std::cout << " (as few as " << fewest << " under --max-seconds)";
  std::cout << " after " << report.warmup << " warm-up; MB/s of raw pixels\n";
  bool vs_png = !report.size_reference.empty();
  std::vector<std::string> header = {"codec", "threads", "ratio"};
  if (vs_png) header.push_back("size/" + report.size_reference);
  for (const char* h : {"encode MB/s", "best", "decode MB/s", "best"}) header.push_back(h);
  if (vs_png) header.insert(header.end(), {"enc/png", "dec/png"});
  header.push_back("verified");
  Table table(header);
  for (const image::CodecBenchRow& r : report.rows) {
    std::string codec = r.codec;
    if (r.parallel != "images") codec += "@" + r.parallel;
    if (!r.lossless) codec += " (lossy)";
    std::vector<std::string> row = {codec, std::to_string(r.threads), format_fixed(r.ratio, 3)};
    if (vs_png) row.push_back(times(r.size_vs_png));
    row.insert(row.end(), {mb_s(r.median_encode_mb_s), mb_s(r.min_time_encode_mb_s),
                           mb_s(r.median_decode_mb_s), mb_s(r.min_time_decode_mb_s)});
    if (vs_png)
      row.insert(row.end(), {times(r.encode_speedup_vs_png), times(r.decode_speedup_vs_png)});
    row.push_back(r.verified ? "yes" : "no");
    table.add_row(std::move(row));
  }
  table.print();
}

Json to_json(const image::CodecBenchReport& report, const image::CodecBenchParams& p) {
  Json rows = Json::array();
  for (const image::CodecBenchRow& r : report.rows) {
    Json row = {
        {"codec", r.codec},
        {"lossless", r.lossless},
        {"threads", r.threads},
        {"parallel", r.parallel},
        {"raw_bytes", r.raw_bytes},
        {"compressed_bytes", r.compressed_bytes},
        {"ratio", r.ratio},
        {"mean_ratio", r.mean_ratio},
        {"median_encode_mb_per_s", r.median_encode_mb_s},
        {"min_time_encode_mb_per_s", r.min_time_encode_mb_s},
        {"median_decode_mb_per_s", r.median_decode_mb_s},
        {"min_time_decode_mb_per_s", r.min_time_decode_mb_s},
        {"median_encode_seconds", r.median_encode_s},
        {"min_encode_seconds", r.min_encode_s},
        {"median_decode_seconds", r.median_decode_s},
        {"min_decode_seconds", r.min_decode_s},
        {"median_encode_cpu_seconds", r.median_encode_cpu_s},
        {"median_decode_cpu_seconds", r.median_decode_cpu_s},
        {"encode_mb_per_cpu_s", r.encode_mb_per_cpu_s},
        {"decode_mb_per_cpu_s", r.decode_mb_per_cpu_s},
        {"encode_runs", r.encode_runs},
        {"decode_runs", r.decode_runs},
        {"verified", r.verified},
    };
    if (!report.size_reference.empty()) {
      row["size_vs_png"] = r.size_vs_png;
      row["mean_size_vs_png"] = r.mean_size_vs_png;
      row["median_size_vs_png"] = r.median_size_vs_png;
      row["worst_size_vs_png"] = r.worst_size_vs_png;
      row["worst_size_vs_png_image"] = r.worst_size_vs_png_image;
      row["encode_speedup_vs_png"] = r.encode_speedup_vs_png;
      row["decode_speedup_vs_png"] = r.decode_speedup_vs_png;
      row["encode_cpu_speedup_vs_png"] = r.encode_cpu_speedup_vs_png;
      row["decode_cpu_speedup_vs_png"] = r.decode_cpu_speedup_vs_png;
    }
    rows.push_back(std::move(row));
  }
  return {{"schema", "dlprep.l3-bench/1"},
          {"images", report.images},
          {"raw_bytes", report.raw_bytes},
          {"repeats", report.repeats},
          {"warmup", report.warmup},
          {"codecs", p.codecs},
          {"thread_counts", p.thread_counts},
          {"size_reference", report.size_reference},
          {"rows", rows}};
}

// Every codec is measured on the same images: those that all of them can store (webp: 3 or 4
// channels; jpeg, ppm: 1 or 3; bmp: not 2). The others are left out with a warning, so that a
// few gray or RGBA pictures do not cost the comparison. Where no image suits every default
// codec (webp on a gray set), the default codecs that cannot store every image go instead.
void keep_storable_images(std::vector<Image>& images, image::CodecBenchParams& params,
                          bool default_codecs, const Globals& globals) {
  std::vector<std::string>& codecs = params.codecs;
  auto stores = [](const std::string& spec, const Image& img) {
    return image::codec_spec_stores(spec, img.channels());
  };
  auto storable = [&](const Image& img) {
    return std::all_of(codecs.begin(), codecs.end(),
                       [&](const std::string& spec) { return stores(spec, img); });
  };
  if (default_codecs && std::none_of(images.begin(), images.end(), storable)) {
    std::erase_if(codecs, [&](const std::string& spec) {
      for (const Image& img : images)
        if (!stores(spec, img)) {
          print_warning(globals, kBenchCommand,
                        spec + " cannot store " + std::to_string(img.channels()) +
                            "-channel images: left out");
          return true;
        }
      return false;
    });
  }

  std::vector<Image> kept;
  std::vector<std::string> names;
  std::vector<Bytes> sources;
  std::set<std::string> refusing;
  std::map<uint32_t, size_t> left_out;  // by channel count
  for (size_t i = 0; i < images.size(); ++i) {
    if (!storable(images[i])) {
      for (const std::string& spec : codecs)
        if (!stores(spec, images[i])) refusing.insert(spec);
      ++left_out[images[i].channels()];
      continue;
    }
    kept.push_back(std::move(images[i]));
    names.push_back(std::move(params.image_names[i]));
    if (!params.source_files.empty()) sources.push_back(std::move(params.source_files[i]));
  }
  if (!left_out.empty()) {
    std::string counts, by;
    size_t total = 0;
    for (const auto& [channels, n] : left_out) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " with " +
                std::to_string(channels) + (channels == 1 ? " channel" : " channels");
      total += n;
    }
    for (const std::string& spec : refusing) by += (by.empty() ? "" : ", ") + spec;
    if (kept.empty())
      throw Error(Errc::unsupported, "no image of the set can be stored by every codec (" + by +
                                         ": " + counts + "); choose codecs with --codecs");
    print_warning(globals, kBenchCommand,
                  "left out " + std::to_string(total) + " of " + std::to_string(images.size()) +
                      " images that " + by + " cannot store (" + counts +
                      "), so that every codec is measured on the same images");
  }
  images = std::move(kept);
  params.image_names = std::move(names);
  params.source_files = std::move(sources);
}

int run_bench(const BenchOptions& options, const Globals& globals) {
  if (options.device_mode()) {
    if (!options.codecs.empty() || !options.threads.empty())
      throw Error(Errc::invalid_argument,
                  "--codecs and --threads choose the codec benchmark; --device, --batch, --layout, "
                  "--jpeg and --depth the batch-decoder benchmark: not both");
    BenchDeviceOptions device;
    device.inputs = options.inputs;
    device.jpegs = options.jpegs;
    device.device = options.device;
    device.batches = options.batches;
    device.layouts = options.layouts;
    device.repeats = options.repeats;
    device.depth = options.depth;
    device.max_seconds = options.max_seconds;
    return run_l3_device_bench(device, globals);
  }
  image::CodecBenchParams params;
  params.codecs =
      options.codecs.empty() ? default_codecs() : split_list(options.codecs, "--codecs");
  if (params.codecs.empty()) throw Error(Errc::invalid_argument, "--codecs: empty list");
  for (const std::string& spec : params.codecs) image::canonical_codec_spec(spec);  // usage check
  params.thread_counts = parse_threads(options.threads, globals.jobs);
  params.repeats = options.repeats;
  params.max_seconds_per_measurement = options.max_seconds;

  // Decode the set once, in parallel; a file that fails is reported and left out. The "source"
  // row decodes the files themselves, so it keeps their bytes.
  const bool keep_files = std::find(params.codecs.begin(), params.codecs.end(), "source") !=
                          params.codecs.end();
  std::vector<std::unique_ptr<Image>> decoded;
  std::vector<Bytes> files;
  int code = kExitOk;
  const auto inputs = load_bench_inputs(
      options.inputs, globals, code,
      [&](size_t count) {
        decoded.resize(count);
        files.resize(count);
      },
      [&](size_t i, ByteSpan bytes) {
        decoded[i] = std::make_unique<Image>(image::decode_any(bytes));
        if (keep_files) files[i].assign(bytes.begin(), bytes.end());
      });
  std::vector<Image> images;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (decoded[i]) {
      images.push_back(std::move(*decoded[i]));
      params.image_names.push_back(display_path(inputs[i].path));
      if (keep_files) params.source_files.push_back(std::move(files[i]));
    }
  }
  if (images.empty()) throw Error(Errc::io, "no images to benchmark");  // exit 1
  keep_storable_images(images, params, options.codecs.empty(), globals);
  Progress progress(globals, kBenchCommand, 0, "rows");
  params.progress = [&progress](const ProgressEvent& e) { progress.set(e.done, e.total); };
  image::CodecBenchReport report = image::run_codec_bench(images, params);
  progress.finish();
  if (globals.json)
    print_json(to_json(report, params));
  else
    print_table(report);
  return code;
}

}  // namespace

InputList load_bench_inputs(const std::vector<std::string>& args, const Globals& globals, int& code,
                            const std::function<void(size_t count)>& prepare,
                            const std::function<void(size_t i, ByteSpan bytes)>& load) {
  std::vector<std::string> empty_dirs;
  auto inputs = collect_inputs(
      args, [](const image::Codec&) { return true; }, &empty_dirs, /*keep_unreadable_images=*/true);
  report_empty_dirs(globals, kBenchCommand, empty_dirs, inputs.size(), "image");
  prepare(inputs.size());
  std::vector<int> codes(inputs.size(), kExitOk);
  Progress progress(globals, "l3 bench: reading", inputs.size());
  parallel_for(inputs.size(), globals.jobs, [&](size_t i) {
    try {
      MappedFile file(inputs[i].path, image::check_image_head);
      load(i, file.bytes());
    } catch (const Error& e) {
      print_error(kBenchCommand, with_path(inputs[i].path, e).what());
      codes[i] = item_exit_code(e.code());
    } catch (const std::bad_alloc&) {
      print_error(kBenchCommand, display_path(inputs[i].path) + ": " + out_of_memory_message());
      codes[i] = kExitFailure;
    }
    progress.step();
  });
  for (int c : codes) code = worse_exit(code, c);
  return inputs;
}

std::vector<size_t> parse_count_list(const std::string& text, const std::string& flag,
                                     const std::string& noun, size_t max) {
  std::vector<size_t> counts;
  for (const std::string& item : split_list(text, flag)) {
    size_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || end != item.data() + item.size() || value == 0 || value > max)
      throw Error(Errc::invalid_argument, flag + ": '" + item + "' is not a " + noun +
                                              " from 1 to " + std::to_string(max));
    counts.push_back(value);
  }
  if (counts.empty()) throw Error(Errc::invalid_argument, flag + ": empty list");
  return counts;
}

Action add_l3_bench_command(CLI::App& l3) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = l3.add_subcommand(
      "bench", "benchmark L3 against png, webp and jpeg on your images (size, encode/decode MB/s)");
  cmd->add_option("INPUT", options->inputs, "images (any format) or directories")
      ->required()
      ->type_name("FILE|DIR");
  cmd->add_option("--codecs", options->codecs, "codec specs (default: l3,png,webp,jpeg)")
      ->type_name("LIST");
  cmd->add_option("--repeats", options->repeats, "timed runs per measurement")
      ->type_name("N")
      ->capture_default_str()
      ->transform(kDecimal)
      ->check(number_in(1, 1000, true));
  cmd->add_option("--threads", options->threads, "thread counts (default: 1,J with J from -j)")
      ->type_name("LIST");
  cmd->add_option("--max-seconds", options->max_seconds, "cap on timed runs per measurement")
      ->type_name("S")
      ->capture_default_str()
      ->check(not_negative_number());
  cmd->add_option("--device", options->device,
                  "batch-decoder benchmark on cpu, cuda, or auto (cuda when present)")
      ->type_name("DEVICE")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}).description(""));
  cmd->add_option("--batch", options->batches, "batch sizes (default: 1,16,64,256)")
      ->type_name("LIST");
  cmd->add_option("--layout", options->layouts, "tensor layouts (default: nhwc-u8,nchw-f16)")
      ->type_name("LIST");
  cmd->add_option("--jpeg", options->jpegs, "the same images as JPEG, for the nvJPEG baseline")
      ->type_name("FILE|DIR")
      ->expected(1)  // one per --jpeg, so that the inputs may follow it
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--depth", options->depth, "batches in flight in the end-to-end pipeline")
      ->type_name("N")
      ->capture_default_str()
      ->transform(kDecimal)
      ->check(number_in(1, 16, true))
      ->each([options](const std::string&) { options->depth_given = true; });
  cmd->footer(
      "Codec specs (comma-separated): l3 (auto patch), l3:N (patch N), l3@patches (threads over\n"
      "patches instead of images); png, png:LEVEL (default 6); webp, webp-lossless:EFFORT\n"
      "(lossless); webp-lossy, webp-lossy:Q; jpeg, jpeg:Q (default 90); bmp; ppm; memcpy (the\n"
      "ceiling, always added); source (your files as they are, each decoded by its own codec:\n"
      "what decoding them costs today; its encode column is a plain copy). Only codecs built\n"
      "into this dlprep are defaults (see dlprep --version).\n"
      "--threads: comma-separated counts, e.g. 1,4. --max-seconds S: stop repeating a\n"
      "measurement after S seconds of timed runs (0: never; one run is always timed).\n"
      "\n"
      "The images are decoded once, then each codec encodes and decodes the whole set, on one\n"
      "thread and then on -j threads (a thread per image). Every decode is compared with the\n"
      "original before its time counts: a lossless codec that differs stops the run (exit 3).\n"
      "Ratios are compressed/raw bytes; MB/s are megabytes of raw (decoded) pixels per second,\n"
      "median and best of the timed runs. memcpy is the ceiling.\n"
      "\n"
      "With --device (or --batch, --layout, --jpeg, --depth): the batch-decoder benchmark\n"
      "instead. The inputs (L3 files, or images encoded to L3) are repeated to each --batch\n"
      "size; per size it measures the device-resident decode (input already on the device,\n"
      "kernel time), the end-to-end decode from pinned host memory with --depth batches in\n"
      "flight (and from pageable memory), the copy ceilings (pinned H2D / compression ratio),\n"
      "the batch-1 latency, PNG and L3 on -j host threads, and nvJPEG on the --jpeg files (same\n"
      "order as the inputs) when this build has it. Every tensor is compared with the CPU\n"
      "decoder's first (a difference: exit 3). --device cuda without CUDA in the build or a\n"
      "GPU: exit 77.\n"
      "Layouts: nhwc-u8, nchw-f32, nchw-f16 (the float layouts with ImageNet's mean/std).\n"
      "\n"
      "Examples:\n"
      "  dlprep l3 bench photos/\n"
      "  dlprep --json l3 bench photos/ --codecs l3,png --threads 1,4 --repeats 3 > bench.json\n"
      "  dlprep l3 bench --device cuda fhd-l3/ --jpeg fhd-jpeg/ --batch 1,16,64,256\n");
  return [options](const Globals& globals) { return run_bench(*options, globals); };
}

}  // namespace dlprep::cli
