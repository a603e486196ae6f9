// The Criteo benchmark (tests/bench/criteo_bench.sh runs it): in one process and one run, the
// memchr line-count ceiling, the straightforward C++ baseline, and dlprep's CPU pipeline on UTF-8,
// gzip and binary input; every output checked against the baseline's (or the UTF-8 run's)
// before any time is reported. Timing through lib/core/timing.hpp (warm-up, median, min).
//
// criteo_bench --input FILE.tsv [--gz FILE.gz] [--bin FILE.bin] [--modulus M] [--threads T]
//              [--repeats N] [--baseline-repeats N] [--scratch DIR] [--no-baseline] [--rss-only]
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "core/timing.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/gzip_reader.hpp"

uint64_t criteo_baseline(const std::string& input, const std::string& out_dir, uint32_t modulus,
                         double log_offset);
uint64_t criteo_memchr_lines(const std::string& input);

namespace fs = std::filesystem;
using namespace dlprep;

namespace {

struct Args {
  std::string input, gz, bin, scratch = "tests/bench/cache/criteo/scratch";
  uint32_t modulus = 5000;
  unsigned threads = 0, repeats = 3, baseline_repeats = 1;
  bool baseline = true, rss_only = false;
  tabular::DecodeCache cache = tabular::DecodeCache::auto_select;
};

bool same_file(const fs::path& a, const fs::path& b) {
  Bytes x = read_file(a), y = read_file(b);
  return x == y;
}

bool same_outputs(const fs::path& a, const fs::path& b) {
  for (const char* n : {"day_0_dense.npy", "day_0_sparse.npy", "day_0_labels.npy"}) {
    if (!same_file(a / n, b / n)) {
      std::fprintf(stderr, "criteo_bench: %s differs between %s and %s\n", n, a.c_str(), b.c_str());
      return false;
    }
  }
  return true;
}

// One timed dlprep run into an empty output directory: the outputs of the previous run are
// removed first, untimed (replacing them would otherwise charge the kernel's eviction of the old
// files' pages to this run).
TimingStats time_dlprep(const Args& a, const TimingParams& params, const std::string& input,
                        const fs::path& out, uint64_t& rows) {
  return measure_self_timed(params, [&](bool) {
    fs::remove_all(out);
    Stopwatch sw;
    tabular::PreprocessOptions o;
    o.inputs = {input};
    o.out_dir = out;
    o.modulus.fill(a.modulus);
    o.threads = a.threads;
    o.resume = false;
    o.decode_cache = a.cache;
    rows = tabular::preprocess(o).rows;
    return sw.seconds();
  });
}

tabular::PreprocessStats run_dlprep(const Args& a, const std::string& input, const fs::path& out) {
  tabular::PreprocessOptions o;
  o.inputs = {input};
  o.out_dir = out;
  o.modulus.fill(a.modulus);
  o.threads = a.threads;
  o.resume = false;
  o.decode_cache = a.cache;
  return tabular::preprocess(o);
}

struct Row {
  std::string name;
  TimingStats t;
  uint64_t rows;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "criteo_bench: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--input")
      a.input = val();
    else if (k == "--gz")
      a.gz = val();
    else if (k == "--bin")
      a.bin = val();
    else if (k == "--modulus")
      a.modulus = static_cast<uint32_t>(std::stoul(val()));
    else if (k == "--threads")
      a.threads = static_cast<unsigned>(std::stoul(val()));
    else if (k == "--repeats")
      a.repeats = static_cast<unsigned>(std::stoul(val()));
    else if (k == "--baseline-repeats")
      a.baseline_repeats = static_cast<unsigned>(std::stoul(val()));
    else if (k == "--scratch")
      a.scratch = val();
    else if (k == "--no-baseline")
      a.baseline = false;
    else if (k == "--rss-only")
      a.rss_only = true;
    else if (k == "--decode-cache") {
      std::string v = val();
      a.cache = v == "on"    ? tabular::DecodeCache::on
                : v == "off" ? tabular::DecodeCache::off
                             : tabular::DecodeCache::auto_select;
    } else {
      std::fprintf(stderr, "criteo_bench: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.input.empty()) {
    std::fprintf(stderr,
                 "usage: criteo_bench --input FILE.tsv [--gz F] [--bin F] [--modulus M] "
                 "[--threads T] [--repeats N] [--no-baseline] [--rss-only]\n");
    return 2;
  }
  unsigned threads = a.threads ? a.threads : hardware_threads();
  fs::path scratch = a.scratch;
  fs::create_directories(scratch);
  if (a.rss_only) {
    // One run in a fresh process: peak RSS (getrusage) is this run's alone.
    auto s = run_dlprep(a, a.input, scratch / "rss");
    std::printf(
        "rss_only rows=%llu seconds=%.3f rows_per_s=%.0f peak_rss_mib=%.1f modulus=%u "
        "threads=%u decode_cache=%d\n",
        static_cast<unsigned long long>(s.rows), s.total_seconds, s.rows / s.total_seconds,
        s.peak_rss_bytes / 1048576.0, a.modulus, threads, s.decode_cache ? 1 : 0);
    return 0;
  }
  TimingParams params;
  params.warmup = 1;
  params.repeats = a.repeats;
  std::vector<Row> rows;

  uint64_t lines = 0;
  rows.push_back({"memchr line count (scan ceiling)",
                  measure(params, [&] { lines = criteo_memchr_lines(a.input); }), 0});
  rows.back().rows = lines;

  fs::path out_utf8 = scratch / "dlprep_utf8";
  uint64_t n = 0;
  rows.push_back({"dlprep UTF-8", time_dlprep(a, params, a.input, out_utf8, n), 0});
  rows.back().rows = n;
  if (n != lines) {
    std::fprintf(stderr, "criteo_bench: dlprep read %llu rows, the file has %llu lines\n",
                 static_cast<unsigned long long>(n), static_cast<unsigned long long>(lines));
    return 3;
  }

  double baseline_s = 0;
  if (a.baseline) {
    fs::path out = scratch / "baseline";
    fs::create_directories(out);
    TimingParams bp;
    bp.warmup = 0;
    bp.repeats = a.baseline_repeats;
    uint64_t bn = 0;
    rows.push_back({"C++ baseline (getline+strtol+unordered_map)",
                    measure_self_timed(bp,
                                       [&](bool) {
                                         fs::remove_all(out);
                                         fs::create_directories(out);
                                         Stopwatch sw;
                                         bn =
                                             criteo_baseline(a.input, out.string(), a.modulus, 1.0);
                                         return sw.seconds();
                                       }),
                    0});
    rows.back().rows = bn;
    baseline_s = rows.back().t.median_s;
    if (!same_outputs(out_utf8, out)) return 3;
  }

  if (!a.gz.empty()) {
    uint64_t bytes = 0;
    rows.push_back({std::string("gzip decompression alone (") + tabular::gzip_backend_name() + ")",
                    measure(params,
                            [&] {
                              int fd = ::open(a.gz.c_str(), O_RDONLY);
                              auto r = tabular::open_gzip_reader(fd, a.gz);
                              std::vector<uint8_t> buf(size_t{4} << 20);
                              bytes = 0;
                              while (size_t k = r->read(buf.data(), buf.size())) bytes += k;
                              ::close(fd);
                            }),
                    lines});
    fs::path out = scratch / "dlprep_gzip";
    rows.push_back({"dlprep gzip", time_dlprep(a, params, a.gz, out, n), 0});
    rows.back().rows = n;
    if (!same_outputs(out_utf8, out)) return 3;
  }
  if (!a.bin.empty()) {
    fs::path out = scratch / "dlprep_bin";
    rows.push_back({"dlprep binary rows", time_dlprep(a, params, a.bin, out, n), 0});
    rows.back().rows = n;
    if (!same_outputs(out_utf8, out)) return 3;
  }

  double memchr_s = rows[0].t.median_s;
  std::printf("criteo_bench: %s, %llu rows, modulus %u, %u threads, outputs checked equal\n",
              a.input.c_str(), static_cast<unsigned long long>(lines), a.modulus, threads);
  std::printf("%-46s %9s %9s %12s %10s %10s\n", "step", "median_s", "min_s", "rows/s", "vs_memchr",
              "vs_base");
  for (const Row& r : rows) {
    std::printf(
        "%-46s %9.3f %9.3f %12.0f %10.3f %10s\n", r.name.c_str(), r.t.median_s, r.t.min_s,
        r.t.median_rate(static_cast<double>(r.rows)), memchr_s / r.t.median_s,
        baseline_s > 0 ? std::to_string(baseline_s / r.t.median_s).substr(0, 6).c_str() : "-");
  }
  return 0;
}
