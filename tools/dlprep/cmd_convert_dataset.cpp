// dlprep convert-dataset SRC DST --to FMT[:OPTS] | --mix FMT:RATIO,… | --mix-from REPORT: a
// dataset in one or several formats, optionally resized (man/dlprep-convert-dataset.1). The work
// is lib/dataset/convert.cpp's.
#include <charconv>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "channels_option.hpp"
#include "command.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "dataset/convert.hpp"
#include "dataset/tar_shards.hpp"
#include "option_checks.hpp"
#include "output.hpp"
#include "profile/report.hpp"
#include "version.hpp"

namespace dlprep::cli {
namespace {

constexpr const char* kConvertCommand = "convert-dataset";

struct ConvertDatasetOptions {
  std::string source, destination, to, mix, shard, shards, on_error = "fail";
  uint64_t seed = 0;
  uint64_t max_errors = 0;
  bool max_errors_given = false;
  bool shards_given = false;
  bool force = false;
  bool recheck = false;
  std::string resize, max_side, mix_from;  // --resize WxH, --max-side N, --mix-from REPORT
  image::Channels channels = image::Channels::keep;
  bool center_crop = false, mix_from_given = false, channels_given = false;
  bool shuffle = false;
};

// "K/N" with 0 <= K < N < 2^32.
void parse_shard(const std::string& text, uint32_t& index, uint32_t& count) {
  size_t slash = text.find('/');
  auto number = [&](std::string_view s, uint32_t& v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  };
  std::string_view all(text);
  if (slash == std::string::npos || !number(all.substr(0, slash), index) ||
      !number(all.substr(slash + 1), count) || count == 0 || index >= count)
    throw Error(Errc::invalid_argument,
                "--shard: '" + text + "' is not K/N with 0 <= K < N <= 4294967295 (e.g. 0/4)");
}

// --resize, --max-side and --center-crop as the library's transform.
image::Transform transform_of(const ConvertDatasetOptions& o) {
  image::Transform t;
  if (!o.resize.empty()) {
    try {
      t.resize = image::parse_size(o.resize);
    } catch (const Error& e) {
      throw e.with_context("--resize");
    }
  }
  if (!o.max_side.empty()) {
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(o.max_side.data(), o.max_side.data() + o.max_side.size(), n);
    if (ec != std::errc() || end != o.max_side.data() + o.max_side.size() || n == 0 ||
        n > limits::kMaxSide)
      throw Error(Errc::invalid_argument, "--max-side: '" + o.max_side + "' is not 1 to " +
                                              std::to_string(limits::kMaxSide) + " pixels");
    t.max_side = n;
  }
  t.center_crop = o.center_crop;
  t.channels = o.channels;
  if (t.center_crop && t.resize.width == 0)
    throw Error(Errc::invalid_argument,
                "--center-crop needs --resize WxH (it crops to that aspect ratio)");
  return t;
}

// --mix-from REPORT: the mix a profile-mix report chose. A report that cannot be used is a bad
// option value (exit 2), and the message names the file.
// The report's mix, its --channels in `channels` and its dataset's transform in `transform`
// (what the mix was measured with).
std::vector<dataset::MixEntry> mix_from_report(const std::string& path, std::string& channels,
                                               std::string& transform) {
  try {
    return dataset::parse_mix(profile::read_report_mix(path, &channels, &transform));
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind(path, 0) != 0) what = path + ": " + what;
    throw Error(Errc::invalid_argument, "--mix-from: " + what);
  }
}

// The stages in the order a sample goes through them, for the report and -v.
std::vector<std::pair<const char*, double>> stages(const dataset::ConvertStageSeconds& s) {
  return {{"read", s.read},     {"decode", s.decode}, {"transform", s.transform},
          {"encode", s.encode}, {"record", s.record}, {"write", s.write}};
}

Json report(const dataset::ConvertResult& r, double seconds, unsigned threads) {
  const dataset::Manifest& m = r.manifest;
  Json formats = Json::object();
  for (const auto& [name, c] : m.formats)
    formats[name] = {{"samples", c.samples}, {"bytes", c.bytes}};
  Json stage_seconds = Json::object();
  for (const auto& [name, value] : stages(r.stage_seconds)) stage_seconds[name] = value;
  return {{"schema", "dlprep.convert-dataset/1"},
          {"samples", m.samples},
          {"converted", r.converted},
          {"up_to_date", r.up_to_date},
          {"failed", r.failed},
          {"removed", r.removed},
          {"not_images", r.not_images},
          {"source_bytes", r.source_bytes},
          {"output_bytes", r.output_bytes},
          {"dataset_bytes", m.bytes},
          {"classes", m.classes.size()},
          {"shard", std::to_string(m.shard_index) + "/" + std::to_string(m.shard_count)},
          {"layout", m.layout},
          {"transform", m.transform.empty() ? Json() : Json(m.transform)},
          {"shard_files", m.shard_files},
          {"seconds", seconds},
          {"threads", threads},
          {"stage_seconds", stage_seconds},
          {"formats", formats}};
}

int run_convert(const ConvertDatasetOptions& o, const Globals& globals) {
  dataset::ConvertOptions c;
  c.source = o.source;
  c.destination = o.destination;
  std::string report_channels = "keep";  // the --mix-from report's --channels
  std::string report_transform;          // and its dataset's transform
  if (!o.to.empty()) {
    c.mix = {{dataset::parse_target(o.to), 1.0}};
  } else if (o.mix_from_given) {
    c.mix = mix_from_report(o.mix_from, report_channels, report_transform);
  } else {
    c.mix = dataset::parse_mix(o.mix);
  }
  c.transform = transform_of(o);
  // A mix measured on RGB samples is for an RGB dataset (jpeg, webp may store nothing else), and
  // one measured on a dataset's resized images for images of those sizes.
  const image::Transform measured = image::parse_transform_text(report_transform);
  if ((report_channels == "rgb" || measured.channels == image::Channels::rgb) && !o.channels_given)
    c.transform.channels = image::Channels::rgb;
  if (o.resize.empty() && o.max_side.empty()) {
    c.transform.resize = measured.resize;
    c.transform.center_crop = measured.center_crop;
    c.transform.max_side = measured.max_side;
  }
  c.seed = o.seed;
  c.shuffle = o.shuffle;
  if (!o.shard.empty()) parse_shard(o.shard, c.shard_index, c.shard_count);
  if (o.shards_given) {
    try {
      c.max_shard_bytes = dataset::parse_shard_size(o.shards);
    } catch (const Error& e) {
      throw e.with_context("--shards");
    }
  }
  c.skip_errors = o.on_error == "skip";
  if (o.max_errors_given) {
    if (!c.skip_errors) throw Error(Errc::invalid_argument, "--max-errors needs --on-error skip");
    c.max_errors = o.max_errors;
  }
  c.force = o.force;
  c.recheck = o.recheck;
  c.threads = jobs_within_fd_limit(globals, kConvertCommand, dataset::kConvertFilesPerThread);
  c.tool = version_string();
  Progress progress(globals, kConvertCommand, 0, "files");
  if (progress.enabled())
    c.progress = [&progress](const ProgressEvent& e) {
      if (e.what == "scanning" || e.what == "listing" || e.what == "checking")
        progress.set(e.done, 0, e.what);
      else if (e.done == 0)  // the conversion starts: its rate and ETA count from here
        progress.restart(e.total, "samples");
      else
        progress.set(e.done, e.total);
    };
  c.warning = [&globals](const std::string& message) {
    print_warning(globals, kConvertCommand, message);
  };
  auto start = std::chrono::steady_clock::now();
  dataset::ConvertResult r = dataset::convert_dataset(c);
  progress.finish();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (globals.json) {
    print_json(report(r, seconds, c.threads));
  } else {
    std::string line = std::string(kConvertCommand) + ": " + std::to_string(r.manifest.samples) +
                       " samples in " + o.destination + ": " + std::to_string(r.converted) +
                       " converted";
    if (r.converted > 0)
      line += " (" + format_bytes(r.source_bytes) + " -> " + format_bytes(r.output_bytes) + ")";
    line += ", " + std::to_string(r.up_to_date) + " up to date";
    if (r.failed > 0) line += ", " + std::to_string(r.failed) + " failed and skipped";
    if (r.removed > 0)
      line += ", " + std::to_string(r.removed) + " removed (no longer in SRC" +
              (r.failed > 0 ? ", or skipped)" : ")");
    line += "; " + format_fixed(seconds, 2) + " s";
    print_note(globals, line);
    if (globals.verbose > 0 && r.converted > 0) {
      std::string per = std::string(kConvertCommand) + ": per converted sample (one thread's ms):";
      for (const auto& [name, value] : stages(r.stage_seconds))
        per += std::string(" ") + name + " " + format_fixed(value * 1e3 / double(r.converted), 2);
      print_note(globals, per);
    }
  }
  return kExitOk;
}

}  // namespace

Action add_convert_dataset_command(CLI::App& app) {
  auto o = std::make_shared<ConvertDatasetOptions>();
  CLI::App* cmd = app.add_subcommand(
      kConvertCommand, "convert images into a dlprep dataset in one format or a mix of formats");
  cmd->add_option("SRC", o->source, "image folder tree, list file, or dlprep dataset")
      ->required()
      ->type_name("DIR|LIST");
  auto* dst = cmd->add_option("DST", o->destination, "dataset directory to create or update")
                  ->type_name("DIR");
  // -o as every other writing command spells it; DST as cp and rsync do.
  auto* output =
      cmd->add_option("-o,--output", o->destination, "the same as DST")->type_name("DIR");
  dst->excludes(output);
  output->excludes(dst);
  auto* to = cmd->add_option("--to", o->to,
                             "one target format: l3[:PATCH], png[:LEVEL], bmp, ppm, "
                             "webp[:lossless|QUALITY] (or webp-lossless, webp-lossy[:QUALITY]), "
                             "jpeg[:QUALITY]")
                 ->type_name("FMT[:OPTS]");
  auto* mix = cmd->add_option("--mix", o->mix, "formats and their shares, e.g. l3:0.6,bmp:0.4")
                  ->type_name("FMT[:OPTS]:RATIO,...");
  to->excludes(mix);
  mix->excludes(to);
  auto* mix_from =
      cmd->add_option("--mix-from", o->mix_from,
                      "use the mix a profile-mix report chose (dlprep profile-mix -o REPORT), "
                      "with the channels and the dataset transform it was measured with")
          ->type_name("REPORT")
          ->each([o](const std::string&) { o->mix_from_given = true; });
  mix_from->excludes(to)->excludes(mix);
  to->excludes(mix_from);
  mix->excludes(mix_from);
  auto* resize = cmd->add_option("--resize", o->resize,
                                 "resize every image to exactly WxH pixels (Lanczos-3); "
                                 "stretches unless --center-crop")
                     ->type_name("WxH");
  auto* max_side = cmd->add_option("--max-side", o->max_side,
                                   "shrink images whose longer side exceeds N to exactly N, "
                                   "keeping the aspect ratio (never enlarges)")
                       ->type_name("N");
  resize->excludes(max_side);
  max_side->excludes(resize);
  cmd->add_flag("--center-crop", o->center_crop,
                "with --resize: first crop the largest centred region with WxH's aspect ratio");
  add_channels_option(*cmd, o->channels,
                      "keep: each image's own channels; rgb: every image RGB (gray replicated, "
                      "alpha dropped, as PIL's convert('RGB')), for jpeg and for trainers that "
                      "expect 3 (default: keep, or the --mix-from report's)")
      ->each([o](const std::string&) { o->channels_given = true; });
  cmd->add_option("--seed", o->seed, "seed of the mix assignment and of the --shuffle order")
      ->capture_default_str()
      ->type_name("N")
      ->transform(kDecimal)
      ->check(kNotNegative);
  cmd->add_option("--shard", o->shard, "convert only part K of N (0 <= K < N) into DST")
      ->type_name("K/N");
  cmd->add_option("--shards", o->shards,
                  "write tar shards of at most SIZE (e.g. 1GiB, 500MB) instead of a file tree")
      ->type_name("SIZE")
      ->each([o](const std::string&) { o->shards_given = true; });
  cmd->add_flag("--shuffle", o->shuffle,
                "samples in an order drawn from --seed, not the source's, so that each tar shard "
                "holds a mix of classes (the source's list is held in memory)");
  cmd->add_option("--on-error", o->on_error,
                  "a sample that cannot be read or decoded: fail (stop) or skip (leave it "
                  "out); an output that cannot be written (disk full) always stops")
      ->type_name("fail|skip")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "skip"}).description(""));
  cmd->add_option("--max-errors", o->max_errors,
                  "with --on-error skip: fail once more than N samples failed (default: no "
                  "limit)")
      ->type_name("N")
      ->transform(kDecimal)
      ->check(kNotNegative)
      ->each([o](const std::string&) { o->max_errors_given = true; });
  cmd->add_flag("-f,--force", o->force,
                "convert every sample, even those up to date (also after a damaged or deleted "
                "dataset.json)");
  cmd->add_flag("--recheck", o->recheck,
                "read every file already in DST and keep it only if its bytes match the index "
                "(crc32), instead of trusting its modification time: mends what dataset verify "
                "found damaged, converting only those samples");
  cmd->footer(
      "SRC is a directory tree whose first-level folders are the class labels (ImageFolder), a\n"
      "list file with one PATH or PATH<TAB>LABEL per line, or an existing dlprep dataset. Images\n"
      "are recognised by their magic bytes, never their names; hidden files are skipped.\n"
      "Exactly one of --to, --mix and --mix-from is required. With --mix every sample is\n"
      "assigned a format by a seeded hash of its key, stratified so that every class gets the\n"
      "ratios; the same seed gives the same assignment on every run, machine, shard and -j.\n"
      "--mix-from REPORT takes the mix from a profile-mix report (its \"mix\").\n"
      "\n"
      "Images can be resized after decoding, with Lanczos-3 (the same pixels as PIL's\n"
      "Image.resize(size, Image.LANCZOS)). --resize WxH makes every image exactly WxH,\n"
      "stretching it if its aspect ratio differs; with --center-crop it first crops the largest\n"
      "centred region with WxH's aspect ratio, so nothing is distorted. --max-side N shrinks\n"
      "only images whose longer side exceeds N: that side becomes N, the other\n"
      "round(side * N / longer side), at least 1. The transform is recorded in dataset.json; a\n"
      "rerun with another one reconverts every sample. A source already in the target format is\n"
      "copied byte for byte only when the transform leaves its pixels unchanged.\n"
      "\n"
      "DST gets dataset.json (summary), samples.jsonl (one line per sample: i, key, label,\n"
      "format, location, bytes, width, height, channels, crc32, source, and in tar shards\n"
      "offset) and data/<key>.<ext> (ext: jpg for jpeg, else the format). A rerun converts\n"
      "only samples whose file is missing, older than its source, or made with other options;\n"
      "an interrupted run (exit 130) resumes. Samples are converted in parallel (-j). A run with\n"
      "other options (or --force) first checks every sample's key, file and, where its new\n"
      "format may not store it (channels, size), header: it stops at the first whose key, file\n"
      "or header would fail (with --on-error skip: past --max-errors), DST unchanged.\n"
      "Until a run completes, dataset.json says \"complete\": false and is dated 1970, so that a\n"
      "Makefile rule whose target it is runs again after a failure (declare it .PRECIOUS:\n"
      "make deletes a target its failed recipe changed).\n"
      "\n"
      "With --shards SIZE the data are tar shards in the WebDataset convention instead:\n"
      "data/shard-NNNNNN.tar (data/part-K-of-N-NNNNNN.tar with --shard K/N), each sample as\n"
      "<key>.<ext> plus <key>.cls (the class index: the label's position in tar.labels of\n"
      "dataset.json); index records add the member's data offset. Samples go in source order,\n"
      "so a class-folder tree gives a class or a few per shard; --shuffle mixes the classes in\n"
      "every shard (an order drawn from --seed, the same on every rerun). Read them with\n"
      "e.g. webdataset.WebDataset(\"DST/data/shard-{000000..000009}.tar\").decode(\"pil\").\n"
      "A rerun keeps the shards whose samples are all up to date and rewrites from the first\n"
      "stale one on.\n"
      "\n"
      "Examples:\n"
      "  dlprep convert-dataset train/ train-l3/ --to l3\n"
      "  dlprep -j16 convert-dataset train/ train-mix/ --mix png:0.7,bmp:0.3 --seed 1\n"
      "  dlprep convert-dataset train/ part3/ --to l3 --shard 3/8   # then: dlprep dataset "
      "merge\n"
      "  dlprep -j16 convert-dataset train/ train-tar/ --to jpeg:95 --channels rgb --shards 1GiB "
      "\\\n"
      "      --shuffle\n"
      "  dlprep convert-dataset photos/ fhd/ --to png --resize 1920x1080 --center-crop\n"
      "  dlprep convert-dataset train/ small/ --to jpeg:90 --channels rgb --max-side 512\n"
      "  dlprep profile-mix train/ --formats png,bmp -o mix.json\n"
      "  dlprep convert-dataset train/ train-mix/ --mix-from mix.json\n");
  return [o, dst, output, to, mix, mix_from](const Globals& globals) {
    if (dst->count() == 0 && output->count() == 0)
      throw Error(Errc::invalid_argument, "DST is required (the dataset directory, or -o DIR)");
    if (to->count() == 0 && mix->count() == 0 && mix_from->count() == 0)
      throw Error(Errc::invalid_argument, "one of --to, --mix and --mix-from is required");
    return run_convert(*o, globals);
  };
}

}  // namespace dlprep::cli
