// profile-mix: sample -> probes -> optimiser -> verification (Liquid section 4, generalised).
#include "profile/profile_mix.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/timing.hpp"
#include "dataset/manifest.hpp"
#include "dataset/sample_source.hpp"
#include "image/codec.hpp"
#include "profile/load_decode.hpp"
#include "profile/probe.hpp"
#include "profile/storage.hpp"

namespace dlprep::profile {
namespace {

namespace fs = std::filesystem;

// Most reads in one measured pass (a bound on its list, whatever rate was predicted); at least
// one per sample image (--sample is at most 100,000).
constexpr size_t kMaxPassImages = 1000000;
// A pass sized by an optimistic prediction stops at this multiple of --pass-seconds.
constexpr double kPassOverrun = 1.25;

// The pass of a mix: `count` reads of sample files, image k % n, formats dealt out so that each
// gets its share exactly (largest remainder), then shuffled with a fixed seed so that no image is
// tied to one format.
std::vector<PassItem> pass_items(const std::vector<std::vector<fs::path>>& files,
                                 const std::vector<ProbedFormat>& probed,
                                 const std::vector<double>& ratios, size_t count) {
  size_t n = files.front().size();
  std::vector<size_t> formats;
  std::vector<double> error(ratios.size(), 0.0);
  for (size_t k = 0; k < count; ++k) {
    size_t pick = 0;
    for (size_t i = 0; i < ratios.size(); ++i) {
      error[i] += ratios[i];
      if (error[i] > error[pick]) pick = i;
    }
    error[pick] -= 1;
    formats.push_back(pick);
  }
  std::mt19937_64 rng(0x5eed);  // fixed: the same pass on every run
  std::shuffle(formats.begin(), formats.end(), rng);
  std::vector<PassItem> items;
  for (size_t k = 0; k < count; ++k)
    items.push_back({&files[formats[k]][k % n], probed[formats[k]].cost.format});
  return items;
}

// A dlprep dataset's index gives every sample's shape: a candidate that cannot store one of them
// (webp and a gray image the sample missed) is refused before anything is measured, as
// convert-dataset would fail that sample.
void check_storable(const std::vector<dataset::TargetSpec>& targets,
                    const std::vector<dataset::SourceEntry>& recorded, image::Channels channels,
                    const std::filesystem::path& dataset) {
  for (const dataset::TargetSpec& t : targets) {
    const image::Codec* codec = image::find_codec(t.format);
    if (!codec) continue;  // named when it is probed
    for (const dataset::SourceEntry& e : recorded) {
      const uint32_t c = channels == image::Channels::rgb ? 3 : e.shape.channels;
      const std::string why = dataset::unstorable_reason(*codec, c, e.shape.width, e.shape.height);
      if (!why.empty())
        throw Error(Errc::unsupported, dataset::source_name(e) + " as " + t.text + ": " + why +
                                           " (from " + dataset.string() + "'s index)");
    }
  }
}

}  // namespace

std::vector<dataset::TargetSpec> default_formats() {
  std::vector<dataset::TargetSpec> out;
  for (const char* name : {"png", "bmp", "l3"})
    if (image::find_codec(name)) out.push_back(dataset::parse_target(name));
  return out;
}

double parse_bandwidth(std::string_view text) {
  auto bad = [&] {
    return Error(
        Errc::invalid_argument,
        "'" + std::string(text) + "' is not a bandwidth (e.g. 500MB/s, 1.5GB/s, 800MiB/s)");
  };
  std::string_view size = text;  // a size per second: "/s" in any case, or left out
  if (size.size() >= 2 && size[size.size() - 2] == '/' &&
      (size.back() == 's' || size.back() == 'S'))
    size.remove_suffix(2);
  const std::optional<ByteSize> parsed = parse_byte_size(size);
  if (!parsed) throw bad();
  const double bytes = parsed->bytes;
  if (!(bytes > 0) || !std::isfinite(bytes)) throw bad();
  // A bare number is bytes/s, and under 1 MB/s it is rather a unit left out ("500" for 500MB/s).
  if (!parsed->unit_given && bytes < 1e6)
    throw Error(Errc::invalid_argument, "'" + std::string(text) +
                                            "' without a unit is bytes/s: a unit missing? (e.g. " +
                                            "500MB/s; 500kB/s for a slow storage)");
  return bytes;
}

ProfileReport profile_mix(const ProfileOptions& o) {
  if (o.search != "lp" && o.search != "liquid")
    throw Error(Errc::invalid_argument, "--search must be lp or liquid");
  if (o.sample == 0) throw Error(Errc::invalid_argument, "--sample must be at least 1");
  if (o.storage_bytes_per_s < 0 || o.compute_images_per_s < 0)
    throw Error(Errc::invalid_argument, "rates must not be negative");
  std::vector<dataset::TargetSpec> targets = o.formats.empty() ? default_formats() : o.formats;
  if (targets.empty()) throw Error(Errc::invalid_argument, "no candidate formats");
  for (size_t i = 0; i < targets.size(); ++i)
    for (size_t j = i + 1; j < targets.size(); ++j)
      if (targets[i].format == targets[j].format)  // a dataset's mix has one spec per format
        throw Error(Errc::invalid_argument,
                    "--formats names " + targets[i].format + " twice" +
                        (targets[i].text == targets[j].text
                             ? std::string()
                             : " (" + targets[i].text + ", " + targets[j].text +
                                   "): a mix holds one variant of each format; compare "
                                   "variants in runs of their own"));
  unsigned threads = std::max(o.threads, 1u);
  auto step = [&](const std::string& what, uint64_t done, uint64_t total) {
    if (o.progress) o.progress(ProgressEvent{what, done, total, ""});
  };

  Stopwatch total_watch;
  ProfileReport report;
  report.dataset = o.dataset.string();
  report.search = o.search;
  report.channels = o.channels == image::Channels::rgb ? "rgb" : "keep";

  // 1. The sample, and the storage bandwidth of the dataset's own files.
  std::vector<dataset::SourceEntry> recorded;
  std::vector<dataset::SourceEntry> files = select_sample(o.dataset, o.sample, &recorded);
  check_storable(targets, recorded, o.channels, o.dataset);
  // A dlprep dataset's images are what its transform made of the source's.
  if (dataset::is_dataset(o.dataset))
    report.transform = dataset::read_manifest(o.dataset).transform;
  report.sample_images = files.size();
  report.resources.decode_workers = threads;
  report.jobs = threads;
  report.resources.compute_images_per_s = o.compute_images_per_s;
  if (o.storage_bytes_per_s > 0) {
    report.resources.storage_bytes_per_s = o.storage_bytes_per_s;
    report.storage_source = "given";
  } else {
    // A few reads in flight, as a loader keeps; the files are read once, page cache bypassed.
    report.resources.storage_bytes_per_s = measure_read_bandwidth(files, 4);
    report.storage_source = "measured";
  }
  step("sample", 0, targets.size());
  std::vector<SampleImage> sample = load_sample(files, threads, o.channels);

  // 2. Probe each candidate; its encoded sample goes to the work folder for the passes.
  TempDirectory work(o.work_dir, "dlprep-profile");
  TimingParams timing;
  timing.warmup = 0;  // probe_format's untimed correctness decode of each file warms up
  timing.repeats = 3;
  std::vector<ProbedFormat> probed;
  std::vector<std::vector<fs::path>> stored;
  for (size_t f = 0; f < targets.size(); ++f) {
    probed.push_back(probe_format(sample, targets[f], threads, timing));
    report.formats.push_back(probed.back().cost);
    fs::path dir = work.path() / std::to_string(f);
    fs::create_directories(dir);
    std::vector<fs::path> paths;
    for (size_t i = 0; i < probed.back().files.size(); ++i) {
      paths.push_back(dir / (std::to_string(i) + "." + probed.back().extension));
      write_file_atomic(paths.back(), probed.back().files[i]);
    }
    probed.back().files.clear();  // on disk now; keep memory to one format's sample
    probed.back().files.shrink_to_fit();
    stored.push_back(std::move(paths));
    step("probe", f + 1, targets.size());
  }
  sample.clear();
  sample.shrink_to_fit();
  // Written files are dirty in the page cache; flush and drop them so the passes read the disk.
  for (const auto& paths : stored)
    for (const fs::path& p : paths) evict_from_page_cache(p);

  // 3. The two formats of the sweep and the plot: Liquid's PNG and BMP when both are candidates.
  auto index_of = [&](const char* name) -> long {
    for (size_t i = 0; i < report.formats.size(); ++i)
      if (report.formats[i].format == name) return static_cast<long>(i);
    return -1;
  };
  long png = index_of("png"), bmp = index_of("bmp");
  if (bmp < 0) bmp = index_of("ppm");
  if (report.formats.size() >= 2) {
    if (png >= 0 && bmp >= 0) {
      report.sweep_a = static_cast<size_t>(png);
      report.sweep_b = static_cast<size_t>(bmp);
    } else {
      report.sweep_a = 0;
      report.sweep_b = 1;
    }
  }

  // 4. The mix (and the predicted sweep), from the costs and report.resources.
  if (o.search == "liquid" && report.formats.size() < 2)
    throw Error(Errc::invalid_argument, "--search liquid needs two candidate formats");
  auto solve = [&] {
    MixChoice c = o.search == "liquid" ? optimize_liquid(report.formats, report.resources,
                                                         report.sweep_a, report.sweep_b)
                                       : optimize_lp(report.formats, report.resources);
    report.mix = c.ratios;
    report.predicted = c.predicted;
    if (report.formats.size() >= 2)
      report.sweep = sweep(report.formats, report.resources, report.sweep_a, report.sweep_b, 11);
  };
  solve();
  report.probe_seconds = total_watch.seconds();
  report.reader = "none";  // until a pass reads something

  // 5. Measured passes: long enough to average over the sample, at least one read per file.
  auto measure_mix = [&](const std::vector<double>& ratios, double predicted) {
    size_t n = report.sample_images;
    double want = std::isfinite(predicted) ? predicted * o.pass_seconds : 0;
    size_t count = static_cast<size_t>(std::clamp(want, double(n), double(kMaxPassImages)));
    std::vector<PassItem> items = pass_items(stored, probed, ratios, count);
    TimingParams params;
    params.warmup = 0;
    params.repeats = std::max(o.pass_repeats, 1u);
    std::vector<PassResult> passes;
    double cpu = 0, wall = 0;
    measure_self_timed(params, [&](bool) {
      // Each stored file once: the items repeat them, up to a million times over on tiny images.
      for (const auto& paths : stored)
        for (const fs::path& p : paths) evict_from_page_cache(p);
      // Items are shuffled, so the part read before the deadline keeps the mix's ratios.
      const PassResult& last = passes.emplace_back(
          run_load_decode(items, report.resources.storage_bytes_per_s, threads,
                          std::max(4u, threads), PassDeadline{o.pass_seconds * kPassOverrun, n}));
      if (report.reader != "fadvise")
        report.reader = last.direct_reads < last.images ? "fadvise" : "o_direct";
      cpu += last.decode_cpu_seconds;
      wall += last.seconds;
      return last.seconds;
    });
    // The pass of the median rate: a pass stopped by the deadline reads its own number of images
    // in about the same time as the others, so counts and times are not mixed across passes.
    std::sort(passes.begin(), passes.end(), [](const PassResult& a, const PassResult& b) {
      return a.images_per_s < b.images_per_s;
    });
    const PassResult& median = passes[passes.size() / 2];
    MeasuredThroughput m;
    m.images = median.images;
    m.seconds = median.seconds;
    m.images_per_s = median.images_per_s;
    m.storage_bytes_per_s = median.storage_bytes_per_s;
    m.decode_cores = wall > 0 ? cpu / wall : 0;
    return m;
  };
  if (o.verify) {
    Stopwatch w;
    step("verify", 0, 1);
    report.measured = measure_mix(report.mix, report.predicted.images_per_s);
    step("verify", 1, 1);
    // Closing the loop on a shared machine: the probes count CPU time, so they assume the -j
    // workers get whole cores. If the pass fell short while the storage was not saturated, the
    // decoders were the limit, and the cores they really got (their CPU seconds over the wall
    // time) is the decode capacity. Re-solve with it once; measure the new mix if it differs,
    // and keep whichever measured faster.
    const MeasuredThroughput first = *report.measured;
    double storage = report.resources.storage_bytes_per_s;
    if (o.refine && first.images_per_s < 0.95 * report.predicted.images_per_s &&
        first.storage_bytes_per_s < 0.9 * storage && first.decode_cores > 0 &&
        first.decode_cores < 0.95 * report.resources.decode_workers) {
      ProfileReport before = report;
      report.resources.decode_workers = first.decode_cores;
      report.decode_workers_source = "measured";
      solve();
      double moved = 0;
      for (size_t i = 0; i < report.mix.size(); ++i)
        moved += std::abs(report.mix[i] - before.mix[i]);
      report.first_mix = before.mix;
      report.first_measured = first;
      if (moved > 0.02) {
        step("verify", 1, 2);
        MeasuredThroughput second = measure_mix(report.mix, report.predicted.images_per_s);
        step("verify", 2, 2);
        report.resolved_mix = report.mix;
        report.resolved_measured = second;
        if (second.images_per_s >= first.images_per_s) {
          report.measured = second;
        } else {
          // The first mix measured faster: keep it, predicted with the measured capacity.
          report.mix = before.mix;
          report.predicted = predict(report.formats, report.resources, report.mix);
          report.measured = first;
        }
      }
    }
    report.verify_seconds = w.seconds();
  }
  if (o.measure_sweep && !report.sweep.empty()) {
    Stopwatch w;
    for (size_t k = 0; k < report.sweep.size(); ++k) {
      step("sweep", k, report.sweep.size());
      std::vector<double> ratios(report.formats.size(), 0.0);
      ratios[report.sweep_a] = report.sweep[k].ratio_a;
      ratios[report.sweep_b] = 1 - report.sweep[k].ratio_a;
      report.sweep[k].measured_images_per_s =
          measure_mix(ratios, report.sweep[k].predicted.images_per_s).images_per_s;
    }
    step("sweep", report.sweep.size(), report.sweep.size());
    report.sweep_seconds = w.seconds();
  }
  report.total_seconds = total_watch.seconds();
  return report;
}

}  // namespace dlprep::profile
