// dlprep profile-mix DATASET: the format mix that balances storage against decode CPU
// (man/dlprep-profile-mix.1). The work is lib/profile/profile_mix.cpp's.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "channels_option.hpp"
#include "command.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/manifest.hpp"
#include "dataset/target_spec.hpp"
#include "image/codec.hpp"
#include "option_checks.hpp"
#include "output.hpp"
#include "profile/profile_mix.hpp"
#include "profile/report.hpp"

namespace dlprep::cli {
namespace {

// The path as one shell word: as it is when it needs no quoting, else in single quotes.
std::string shell_word(const std::string& path) {
  const bool plain = !path.empty() && path.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./+-=:,@%") == std::string::npos;
  if (plain) return path;
  std::string out = "'";
  for (char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The convert-dataset flags that make a dataset of the images measured: the profiled dataset's
// transform and --channels (which --mix-from also applies by itself).
std::string transform_flags(const profile::ProfileReport& r) {
  const image::Transform t = image::parse_transform_text(r.transform);
  std::string flags;
  if (t.resize.width != 0)
    flags += " --resize " + std::to_string(t.resize.width) + "x" + std::to_string(t.resize.height) +
             (t.center_crop ? " --center-crop" : "");
  if (t.max_side != 0) flags += " --max-side " + std::to_string(t.max_side);
  if (t.channels == image::Channels::rgb || r.channels == "rgb") flags += " --channels rgb";
  return flags;
}

// SRC of the apply line: the profiled tree or list; for a dlprep dataset, the source it was made
// from (the line adds the dataset's transform) when it is found from here, else a placeholder. A
// relative name is relative to where that conversion ran: taken when its first sample's source
// file is found from here too, not some other folder of that name.
std::string apply_source(const std::string& profiled) {
  std::error_code ec;
  if (!dataset::is_dataset(profiled)) return shell_word(profiled);
  try {
    const std::string source = dataset::read_manifest(profiled).source_path;
    dataset::IndexReader index(std::filesystem::path(profiled) / dataset::kIndexName);
    dataset::SampleRecord first;
    if (!source.empty() && std::filesystem::exists(source, ec) && index.next(first) &&
        std::filesystem::exists(first.source, ec))
      return shell_word(source);
  } catch (const Error&) {
  }
  return "SRC";
}

constexpr const char* kProfileMixCommand = "profile-mix";

struct ProfileMixOptions {
  std::string dataset, formats, storage_bw = "measured", search = "lp", output, plot, work_dir;
  image::Channels channels = image::Channels::keep;
  size_t sample = 16;
  double compute_rate = 0;
  double pass_seconds = 2;
  unsigned repeats = 1;
  bool no_verify = false;
  bool no_refine = false;
  bool verify_flag = false, refine_flag = false;  ///< the defaults, spelled out
  bool measure_sweep = false;
};

std::vector<dataset::TargetSpec> parse_formats(const std::string& text) {
  std::vector<dataset::TargetSpec> out;
  for (const std::string& item : split_list(text, "--formats"))
    out.push_back(dataset::parse_target(item));
  return out;
}

// Absolute, normalised, links resolved as far as the path exists: two spellings of one file
// compare equal.
std::filesystem::path resolved(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  const std::filesystem::path p = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : p;
}

// The report and the plot may not replace what is profiled: the list file or folder itself,
// anything in a dlprep dataset (its dataset.json, data/), or an existing image (one a list names,
// one of a folder tree). A new file beside the images of a plain folder tree is no input. Nor
// may the work folder be the dataset or inside a dlprep one.
void check_not_an_input(const std::string& flag, const std::string& output,
                        const std::string& dataset) {
  namespace fs = std::filesystem;
  const fs::path out = resolved(output), in = resolved(dataset);
  if (out == in)
    throw Error(Errc::invalid_argument, flag + " " + output + ": is the dataset being profiled");
  const auto [in_end, out_end] = std::mismatch(in.begin(), in.end(), out.begin(), out.end());
  if (in_end == in.end() && dataset::is_dataset(in))
    throw Error(Errc::invalid_argument,
                flag + " " + output + ": is inside the dlprep dataset being profiled");
  std::error_code ec;
  if (!fs::is_regular_file(out, ec)) return;
  MappedFile existing(out);
  if (image::sniff_codec(existing.bytes()))
    throw Error(Errc::invalid_argument,
                flag + " " + output + ": is an image (one being profiled?)");
}

// Fails now, not after minutes of measuring, when an output cannot be created: its temp file
// is made and removed. Devices and FIFOs are opened only to be written.
void check_writable(const std::string& flag, const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status))  // a rename over it fails, after the measuring
    throw Error(Errc::io, flag + " " + path + ": is a directory (name a file in it)");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) return;
  // The folders made for the probe are removed with it (when still empty): a run that fails
  // later leaves none, and the report's own write makes them again.
  // Named without . and .. (n1/x/../r.json makes n1 alone), since rmdir takes no "n1/x/..".
  const std::filesystem::path file = std::filesystem::path(path).lexically_normal();
  const std::filesystem::path parent = file.parent_path();
  std::filesystem::path outermost_new;
  for (std::filesystem::path p = parent; !p.empty() && !std::filesystem::exists(p, ec);
       p = p.parent_path())
    outermost_new = p;
  { AtomicFile probe(file); }
  if (outermost_new.empty()) return;
  for (std::filesystem::path p = parent; std::filesystem::remove(p, ec) && p != outermost_new;
       p = p.parent_path()) {
  }
}

int run_profile_mix(const ProfileMixOptions& o, const Globals& globals) {
  profile::ProfileOptions p;
  p.dataset = o.dataset;
  if (!o.formats.empty()) p.formats = parse_formats(o.formats);
  p.sample = o.sample;
  if (o.storage_bw != "measured") {
    try {
      p.storage_bytes_per_s = profile::parse_bandwidth(o.storage_bw);
    } catch (const Error& e) {
      throw e.with_context("--storage-bw");
    }
  }
  p.compute_images_per_s = o.compute_rate;
  p.search = o.search;
  p.verify = !o.no_verify;
  p.measure_sweep = o.measure_sweep;
  p.refine = !o.no_refine;
  p.threads = globals.jobs;
  p.pass_seconds = o.pass_seconds;
  p.pass_repeats = o.repeats;
  p.work_dir = o.work_dir;
  p.channels = o.channels;
  if (!std::filesystem::exists(o.dataset))
    throw Error(Errc::io, o.dataset + ": cannot open: No such file or directory");
  // A folder on the storage being measured, which a typo must not create (with its parents).
  if (std::error_code ec; !o.work_dir.empty() && !std::filesystem::is_directory(o.work_dir, ec))
    throw Error(Errc::invalid_argument,
                "--work-dir " + o.work_dir +
                    (std::filesystem::exists(o.work_dir, ec) ? ": not a directory"
                                                             : ": no such directory"));
  // Its temporary files would be strays of the dataset's data/ while the run lasts (or for good,
  // after a SIGKILL).
  if (!o.work_dir.empty()) check_not_an_input("--work-dir", o.work_dir, o.dataset);
  const bool report_to_file = !o.output.empty() && o.output != "-";
  const bool plot_to_file = !o.plot.empty() && o.plot != "-";
  if (o.plot == "-" && (o.output == "-" || globals.json))
    throw Error(Errc::invalid_argument,
                "--plot - and the report (-o - or --json): standard output takes one of them");
  if (report_to_file) check_not_an_input("-o", o.output, o.dataset);
  if (plot_to_file) check_not_an_input("--plot", o.plot, o.dataset);
  if (report_to_file && plot_to_file && resolved(o.output) == resolved(o.plot))
    throw Error(Errc::invalid_argument, "-o and --plot name the same file: " + o.plot);
  if (report_to_file) check_writable("-o", o.output);
  if (plot_to_file) check_writable("--plot", o.plot);
  Progress progress(globals, kProfileMixCommand, 0, "steps");
  if (progress.enabled())
    p.progress = [&progress](const ProgressEvent& e) { progress.set(e.done, e.total, e.what); };
  profile::ProfileReport r = profile::profile_mix(p);
  progress.finish();
  const std::string json = profile::report_to_json(r);
  const std::string svg = o.plot.empty() ? std::string() : profile::plot_svg(r);
  {
    // Both appear together: never a report without the plot that failed.
    std::optional<AtomicFile> report_file, plot_file;
    if (report_to_file) report_file.emplace(o.output);
    if (plot_to_file) plot_file.emplace(o.plot);
    if (report_file) report_file->write(bytes_of(json));
    if (plot_file) plot_file->write(bytes_of(svg));
    auto hold = defer_interrupts();
    if (report_file) report_file->commit();
    if (plot_file) plot_file->commit();
  }
  if (o.plot == "-") {
    std::fflush(stdout);
    write_file_atomic("-", bytes_of(svg));  // the plot is the result
    return kExitOk;
  }
  if (o.output == "-") {
    // The report in place of the result (it is what --json prints): stdout holds one document.
    print_json(Json::parse(json));
  } else if (globals.json) {
    print_json(Json::parse(json));
  } else {
    std::string table = profile::report_table(r);
    // What to run with the result, ready to paste.
    table += "apply: dlprep convert-dataset " + apply_source(o.dataset) + " DST " +
             (report_to_file ? "--mix-from " + shell_word(o.output)
                             : "--mix " + r.mix_text(profile::kMixFromDigits)) +
             transform_flags(r) + "\n";
    std::fwrite(table.data(), 1, table.size(), stdout);
  }
  return kExitOk;
}

}  // namespace

Action add_profile_mix_command(CLI::App& app) {
  auto o = std::make_shared<ProfileMixOptions>();
  CLI::App* cmd = app.add_subcommand(
      kProfileMixCommand, "find the mix of formats that balances storage against decode (Liquid)");
  cmd->add_option("DATASET", o->dataset, "dlprep dataset, image folder tree, or list file")
      ->required()
      ->type_name("DIR|LIST");
  cmd->add_option("--formats", o->formats,
                  "candidate formats, comma-separated (default: png,bmp,l3)")
      ->type_name("FMT[:OPTS],...");
  cmd->add_option("--sample", o->sample, "images probed and verified")
      ->type_name("N")
      ->capture_default_str()
      ->transform(kDecimal)
      ->check(number_in(1, 100000, true));
  cmd->add_option("--storage-bw", o->storage_bw,
                  "storage read bandwidth, e.g. 500MB/s, or 'measured' on the dataset's files")
      ->type_name("BW")
      ->capture_default_str();
  cmd->add_option("--compute-rate", o->compute_rate,
                  "training consumption ceiling in images/s (default: none)")
      ->type_name("IMG/S")
      ->check(positive_number());
  cmd->add_option("--search", o->search,
                  "lp: exact optimum over all mixes; liquid: best of 11 PNG:BMP ratios")
      ->type_name("lp|liquid")
      ->capture_default_str()
      ->check(CLI::IsMember({"lp", "liquid"}).description(""));
  // Separate flags (not CLI11's "--verify,!--no-verify") so that --help lists each on its own.
  auto* verify = cmd->add_flag("--verify", o->verify_flag, std::string("measure the chosen mix with a real throttled "
                                           "load+decode pass (the default)"));
  auto* no_verify = cmd->add_flag("--no-verify", o->no_verify, "only predict");
  verify->excludes(no_verify);
  auto* refine = cmd->add_flag("--refine", o->refine_flag, std::string(
                               "if the verified mix is decode-bound short of the prediction (a busy "
                               "machine), re-solve with the cores the decoders really got and "
                               "measure again (the default)"));
  auto* no_refine = cmd->add_flag("--no-refine", o->no_refine, "keep the first mix");
  refine->excludes(no_refine);
  cmd->add_flag("--measure-sweep", o->measure_sweep,
                "also measure all 11 ratios of the two sweep formats (slow; for benchmarks)");
  cmd->add_option("--pass-seconds", o->pass_seconds, "target length of each measured pass")
      ->type_name("S")
      ->capture_default_str()
      ->check(number_in(0, 3600));
  cmd->add_option("--repeats", o->repeats, "timed repeats of each measured pass (median)")
      ->type_name("N")
      ->capture_default_str()
      ->transform(kDecimal)
      ->check(number_in(1, 100, true));
  cmd->add_option(
         "-o,--output", o->output,
         "write the JSON report (dlprep.profile-mix/1) here; - prints it instead of the table")
      ->type_name("FILE");
  cmd->add_option("--plot", o->plot,
                  "draw load, decode and their minimum across the ratio (SVG); - prints it "
                  "instead of the table")
      ->type_name("FILE.svg");
  add_channels_option(*cmd, o->channels,
                      "keep or rgb: the channels the sample gets, as convert-dataset --channels "
                      "gives the dataset's (rgb: jpeg takes RGBA and gray-alpha images)");
  cmd->add_option("--work-dir", o->work_dir,
                  "an existing folder where the temporary converted sample goes (default: the "
                  "system temp folder)")
      ->type_name("DIR");
  cmd->footer(
      "The sample (every N-th image, the same on every run) is converted to each candidate in a\n"
      "temporary folder, deleted at the end. Per format it measures bytes per image and decode\n"
      "CPU-seconds per image (one thread; a checked warm-up decode, then the median of 3); the\n"
      "decode workers are -j. The mix that maximises min(storage / bytes, workers / CPU-seconds,\n"
      "--compute-rate) is computed exactly and then verified: the sample, converted in that mix,\n"
      "is loaded through a reader that bypasses the page cache (O_DIRECT) and is throttled to\n"
      "--storage-bw, and decoded by -j workers. The table names the lossy candidates (jpeg,\n"
      "webp:QUALITY) and ends with the command that applies the mix: convert-dataset\n"
      "--mix-from the report (-o), or --mix with its shares.\n"
      "\n"
      "Examples:\n"
      "  dlprep -j8 profile-mix train/ --storage-bw 500MB/s -o mix.json --plot mix.svg\n"
      "  dlprep profile-mix train/ --formats png,bmp --search liquid\n"
      "  dlprep --json profile-mix train-ds/ --formats png,bmp,l3 --compute-rate 3000\n");
  return [o](const Globals& globals) { return run_profile_mix(*o, globals); };
}

}  // namespace dlprep::cli
