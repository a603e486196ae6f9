// dlprep convert-dataset SRC DST --to FMT[:OPTS] | --mix FMT:RATIO,…: a dataset in one or several
// formats (man/dlprep-convert-dataset.1). The work is lib/dataset/convert.cpp's.
#include <charconv>
#include <chrono>
#include <memory>
#include <string>

#include "command.hpp"
#include "core/error.hpp"
#include "dataset/convert.hpp"
#include "output.hpp"
#include "version.hpp"

namespace dlprep::cli {
namespace {

constexpr const char* kCommand = "convert-dataset";

struct ConvertDatasetOptions {
  std::string source, destination, to, mix, shard, on_error = "fail";
  uint64_t seed = 0;
  uint64_t max_errors = 0;
  bool max_errors_given = false;
  bool force = false;
};

// "K/N" with 0 <= K < N.
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
                "--shard: '" + text + "' is not K/N with 0 <= K < N (e.g. 0/4)");
}

Json report(const dataset::ConvertResult& r, double seconds) {
  const dataset::Manifest& m = r.manifest;
  Json formats = Json::object();
  for (const auto& [name, c] : m.formats)
    formats[name] = {{"samples", c.samples}, {"bytes", c.bytes}};
  return {{"schema", "dlprep.convert-dataset/1"},
          {"samples", m.samples},
          {"converted", r.converted},
          {"up_to_date", r.up_to_date},
          {"failed", r.failed},
          {"source_bytes", r.source_bytes},
          {"output_bytes", r.output_bytes},
          {"dataset_bytes", m.bytes},
          {"classes", m.classes.size()},
          {"shard", std::to_string(m.shard_index) + "/" + std::to_string(m.shard_count)},
          {"seconds", seconds},
          {"formats", formats}};
}

int run_convert(const ConvertDatasetOptions& o, const Globals& globals) {
  dataset::ConvertOptions c;
  c.source = o.source;
  c.destination = o.destination;
  if (!o.to.empty()) {
    c.mix = {{dataset::parse_target(o.to), 1.0}};
  } else {
    c.mix = dataset::parse_mix(o.mix);
  }
  c.seed = o.seed;
  if (!o.shard.empty()) parse_shard(o.shard, c.shard_index, c.shard_count);
  c.skip_errors = o.on_error == "skip";
  if (o.max_errors_given) {
    if (!c.skip_errors) throw Error(Errc::invalid_argument, "--max-errors needs --on-error skip");
    c.max_errors = o.max_errors;
  }
  c.force = o.force;
  c.threads = globals.jobs;
  c.tool = version_string();
  Progress progress(globals, kCommand, 0, "samples");
  if (progress.enabled())
    c.progress = [&progress](const ProgressEvent& e) { progress.set(e.done, e.total); };
  c.warning = [&globals](const std::string& message) { print_warning(globals, kCommand, message); };
  auto start = std::chrono::steady_clock::now();
  dataset::ConvertResult r = dataset::convert_dataset(c);
  progress.finish();
  if (r.manifest.samples == 0 && r.failed == 0)
    print_warning(globals, kCommand, o.source + ": no image files found");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (globals.json) {
    print_json(report(r, seconds));
  } else {
    std::string line = std::string(kCommand) + ": " + std::to_string(r.manifest.samples) +
                       " samples in " + o.destination + ": " + std::to_string(r.converted) +
                       " converted";
    if (r.converted > 0)
      line += " (" + format_bytes(r.source_bytes) + " -> " + format_bytes(r.output_bytes) + ")";
    line += ", " + std::to_string(r.up_to_date) + " up to date";
    if (r.failed > 0) line += ", " + std::to_string(r.failed) + " failed and skipped";
    line += "; " + format_fixed(seconds, 2) + " s";
    print_note(globals, line);
  }
  return kExitOk;
}

}  // namespace

Action add_convert_dataset_command(CLI::App& app) {
  auto o = std::make_shared<ConvertDatasetOptions>();
  CLI::App* cmd = app.add_subcommand(
      kCommand, "convert images into a dlprep dataset in one format or a mix of formats");
  cmd->add_option("SRC", o->source, "image folder tree, list file, or dlprep dataset")
      ->required()
      ->type_name("SRC");
  cmd->add_option("DST", o->destination, "dataset directory to create or update")
      ->required()
      ->type_name("DST");
  auto* to = cmd->add_option("--to", o->to,
                             "one target format: l3, png[:LEVEL], bmp, ppm, "
                             "webp[:lossless|QUALITY], jpeg[:QUALITY]")
                 ->type_name("FMT[:OPTS]");
  auto* mix = cmd->add_option("--mix", o->mix, "formats and their shares, e.g. l3:0.6,bmp:0.4")
                  ->type_name("FMT[:OPTS]:RATIO,...");
  to->excludes(mix);
  mix->excludes(to);
  cmd->add_option("--seed", o->seed, "seed of the mix assignment")->capture_default_str();
  cmd->add_option("--shard", o->shard, "convert only part K of N (0 <= K < N) into DST")
      ->type_name("K/N");
  cmd->add_option("--on-error", o->on_error,
                  "a sample that cannot be read or decoded: fail (stop) or skip (leave it out)")
      ->type_name("fail|skip")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "skip"}).description(""));
  cmd->add_option("--max-errors", o->max_errors,
                  "with --on-error skip: fail once more than N samples failed")
      ->type_name("N")
      ->each([o](const std::string&) { o->max_errors_given = true; });
  cmd->add_flag("-f,--force", o->force, "convert every sample, even those up to date");
  cmd->footer(
      "SRC is a directory tree whose first-level folders are the class labels (ImageFolder), a\n"
      "list file with one PATH or PATH<TAB>LABEL per line, or an existing dlprep dataset. Images\n"
      "are recognised by their magic bytes, never their names; hidden files are skipped.\n"
      "Exactly one of --to and --mix is required. With --mix every sample is assigned a format\n"
      "by a seeded hash of its key, stratified so that every class gets the ratios; the same\n"
      "seed gives the same assignment on every run, machine, shard and -j.\n"
      "\n"
      "DST gets dataset.json (summary), samples.jsonl (one line per sample: key, label, format,\n"
      "location, bytes, width, height, channels, crc32) and data/<key>.<ext>. A rerun converts\n"
      "only samples whose file is missing, older than its source, or made with other options;\n"
      "an interrupted run (exit 130) resumes. Samples are converted in parallel (-j).\n"
      "\n"
      "Examples:\n"
      "  dlprep convert-dataset train/ train-l3/ --to l3\n"
      "  dlprep -j16 convert-dataset train/ train-mix/ --mix png:0.7,bmp:0.3 --seed 1\n"
      "  dlprep convert-dataset train/ part3/ --to l3 --shard 3/8   # then: dlprep dataset "
      "merge\n");
  return [o, to, mix](const Globals& globals) {
    if (to->count() == 0 && mix->count() == 0)
      throw Error(Errc::invalid_argument, "one of --to and --mix is required");
    return run_convert(*o, globals);
  };
}

}  // namespace dlprep::cli
