// The Criteo benchmark (tests/bench/criteo_bench.sh runs it): in one process and one run, the
// memchr line-count ceiling, the straightforward C++ baseline, and dlprep's CPU pipeline on UTF-8,
// gzip and binary input (a single pass, the default where every ID is final at first sight; UTF-8
// and binary rows also in two passes, what the single pass gains; UTF-8 with its own vocabulary
// given, --vocab-from, and with --emit-binary, in one pass and two); every output checked against
// the baseline's (or the UTF-8 run's) before any time is reported. Timing through
// lib/core/timing.hpp (warm-up, median, min).
//
// criteo_bench --input FILE.tsv [--gz FILE.gz] [--bin FILE.bin] [--modulus M] [--threads T]
//              [--repeats N] [--baseline-repeats N] [--scratch DIR] [--no-baseline] [--rss-only]
// criteo_bench --cuda --input FILE.tsv [--gz FILE.gz] [--bin FILE.bin] [--modulus M]
//              [--repeats N] [--e2e-repeats N] ...
//   The CUDA figures of BENCHMARKS.md, per input (binary rows first, whose target is the highest,
//   then UTF-8, then gzip): the CUDA outputs are first checked byte-equal to the CPU backend's;
//   then, median of --repeats, from the input in pinned host memory to the arrays back in host
//   memory (preloaded, outputs discarded: stats' compute seconds), the target row, in a single
//   pass with a fresh backend each run (every buffer allocated again, as one CLI run does); then
//   the same in two passes (rows kept on the device for pass 2), with one tabular::Preprocessor
//   across the runs (buffers kept, as a long-lived process does), and for binary rows in two
//   passes with pass 2 copying them in again; then, median of --e2e-repeats (3), writing the arrays
//   to disk on its own (stats' write seconds), and file to disk end to end next to the CPU
//   backend's in the same run. Progress on stderr with the seconds elapsed, so that a run stopped
//   at a time limit shows where its time went. Exits 77 when no CUDA device is usable.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "core/timing.hpp"
#include "run_outputs.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/gzip_reader.hpp"
#include "tabular/preprocess_backend.hpp"
#include "tabular/row_transform.hpp"

uint64_t criteo_baseline(const std::string& input, const std::string& out_dir, uint32_t modulus,
                         double log_offset);
uint64_t criteo_memchr_lines(const std::string& input);

namespace fs = std::filesystem;
using namespace dlprep;

namespace {

struct Args {
  std::string input, gz, bin, scratch = "tests/bench/cache/criteo/scratch";
  uint32_t modulus = 5000;
  unsigned threads = 0, repeats = 3, baseline_repeats = 1, e2e_repeats = 3;
  bool baseline = true, rss_only = false, cuda = false;
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

// The options of one run of either suite: `input` into `out` from scratch (no resume), on
// `device`. --decode-cache is the CPU suite's; the CUDA suite leaves the choice to the library.
tabular::PreprocessOptions run_options(const Args& a, const std::string& input, const fs::path& out,
                                       tabular::Device device = tabular::Device::cpu) {
  tabular::PreprocessOptions o;
  o.inputs = {input};
  o.out_dir = out;
  o.modulus.fill(a.modulus);
  o.threads = a.threads;
  o.resume = false;
  o.device = device;
  if (!a.cuda) o.decode_cache = a.cache;
  return o;
}

// One timed dlprep run into an empty output directory: the outputs of the previous run are
// removed first, untimed (replacing them would otherwise charge the kernel's eviction of the old
// files' pages to this run), and so is the --emit-binary file `emit`.
TimingStats time_dlprep(const Args& a, const TimingParams& params, const std::string& input,
                        const fs::path& out, uint64_t& rows, bool single_pass = true,
                        const std::optional<fs::path>& vocab_from = std::nullopt,
                        const std::optional<fs::path>& emit = std::nullopt) {
  return measure_self_timed(params, [&](bool) {
    fs::remove_all(out);
    if (emit) fs::remove(*emit);
    Stopwatch sw;
    tabular::PreprocessOptions o = run_options(a, input, out);
    o.single_pass = single_pass;
    o.vocab_from = vocab_from;
    o.emit_binary = emit;
    rows = tabular::preprocess(o).rows;
    return sw.seconds();
  });
}

// A braced Row{name, timed(..., n), n} reads n after the run that sets it: a braced
// initializer list is evaluated left to right.
struct Row {
  std::string name;
  TimingStats t;
  uint64_t rows;
};

// Every file of two runs (outputs, vocabulary, checkpoints) as tests/criteo/run_outputs.hpp
// compares them: the same files, the same contents.
bool same_dirs(const fs::path& a, const fs::path& b) {
  const std::vector<fs::path> files = criteo_test::compared_files(a);
  if (files != criteo_test::compared_files(b)) {
    std::fprintf(stderr, "criteo_bench: %s and %s hold other files\n", a.c_str(), b.c_str());
    return false;
  }
  for (const fs::path& rel : files)
    if (criteo_test::compared_contents(a / rel) != criteo_test::compared_contents(b / rel)) {
      std::fprintf(stderr, "criteo_bench: %s differs between %s and %s\n", rel.c_str(), a.c_str(),
                   b.c_str());
      return false;
    }
  return !files.empty();
}

// One line on stderr at the end of each phase of the CUDA suite, with the seconds since `clock`
// started.
[[gnu::format(printf, 3, 4)]] void progress(const Stopwatch& clock, const char* label,
                                            const char* format, ...) {
  std::fprintf(stderr, "criteo_bench: %7.1f s  %s: ", clock.seconds(), label);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
}

// The CUDA suite for one input (see the header). Returns 0, or 3 when outputs differ.
int cuda_input(const Args& a, const std::string& label, const std::string& input, bool binary,
               const fs::path& scratch, const Stopwatch& clock) {
  using tabular::Device;
  TimingParams params;
  params.warmup = 1;
  params.repeats = a.repeats;
  TimingParams e2e_params = params;
  e2e_params.repeats = a.e2e_repeats;
  // 1. Correctness first: the CPU backend's files and the CUDA backend's, from the file.
  fs::remove_all(scratch / "cpu");
  fs::remove_all(scratch / "cuda");
  tabular::PreprocessStats ref =
      tabular::preprocess(run_options(a, input, scratch / "cpu", Device::cpu));
  tabular::PreprocessStats chk =
      tabular::preprocess(run_options(a, input, scratch / "cuda", Device::cuda));
  if (chk.device != "cuda") {
    std::fprintf(stderr, "criteo_bench: the cuda run ran on %s\n", chk.device.c_str());
    return 3;
  }
  if (chk.rows != ref.rows || !same_dirs(scratch / "cpu", scratch / "cuda")) return 3;
  progress(clock, label.c_str(), "outputs equal to the CPU backend's");
  const double rows = static_cast<double>(ref.rows);
  // 2. Pinned host memory -> arrays back in host memory: on a fresh backend each run (`reuse`
  // null) or on one kept between runs; in a single pass, or in two with the rows kept on the
  // device for pass 2 or copied in again.
  tabular::PreprocessStats last;
  std::vector<double> preload_s;  // reading the input into pinned memory: not timed, but paid
  enum class Passes { single, two_kept, two_reread };
  auto in_memory = [&](const TimingParams& p, tabular::Preprocessor* reuse, Passes passes) {
    return measure_self_timed(p, [&](bool) {
      fs::remove_all(scratch / "mem");
      tabular::PreprocessOptions o = run_options(a, input, scratch / "mem", Device::cuda);
      o.preload_inputs = true;
      o.discard_outputs = true;
      o.single_pass = passes == Passes::single;
      if (passes == Passes::two_reread) o.decode_cache = tabular::DecodeCache::off;
      last = reuse != nullptr ? reuse->run(o) : tabular::preprocess(o);
      preload_s.push_back(last.preload_seconds);
      return last.compute_seconds;
    });
  };
  auto compute = in_memory(params, nullptr, Passes::single);
  tabular::PreprocessStats mem = last;
  progress(clock, label.c_str(),
           "pinned memory -> host arrays timed (%zu runs with the warm-up; reading the input "
           "into pinned memory, untimed: median %.2f s a run)",
           preload_s.size(), median(preload_s));
  // 2b. The variants, at most 5 runs each (each run reads the input into pinned memory first:
  // about 1 s per 1.6 GB on the H100 host). Two passes, as before the single pass: what it saves.
  TimingParams few = params;
  few.repeats = std::min(params.repeats, 5u);
  const TimingStats two = in_memory(few, nullptr, Passes::two_kept);
  const tabular::PreprocessStats two_mem = last;
  progress(clock, label.c_str(), "the same in two passes timed");
  // 2c. On one Preprocessor: the warm-up run allocates, the timed ones reuse.
  tabular::Preprocessor reused;
  const TimingStats warm = in_memory(few, &reused, Passes::single);
  const tabular::PreprocessStats warm_mem = last;
  progress(clock, label.c_str(), "the same on a reused backend timed");
  // 2d. Binary rows in two passes, pass 2 copying the rows in again from pinned memory instead
  // of keeping them on the device (no device memory for them to allocate; the copy in runs while
  // the copy back does, in the other direction).
  TimingStats reread{};
  tabular::PreprocessStats reread_mem;
  if (binary) {
    reread = in_memory(few, nullptr, Passes::two_reread);
    reread_mem = last;
    progress(clock, label.c_str(), "two passes with the rows copied in again for pass 2 timed");
  }
  // 3. The same with the arrays written to disk: the write phase alone.
  double compute_with_writes = 0;
  auto writes = measure_self_timed(e2e_params, [&](bool) {
    fs::remove_all(scratch / "disk");
    tabular::PreprocessOptions o = run_options(a, input, scratch / "disk", Device::cuda);
    o.preload_inputs = true;
    last = tabular::preprocess(o);
    compute_with_writes = last.compute_seconds;
    return last.write_seconds;
  });
  if (!same_dirs(scratch / "cpu", scratch / "disk")) return 3;
  progress(clock, label.c_str(), "writes timed");
  // 4. File (page cache) to files, end to end, CUDA and CPU in the same run.
  auto e2e = [&](Device d, const char* dir) {
    return measure_self_timed(e2e_params, [&](bool) {
      fs::remove_all(scratch / dir);
      Stopwatch sw;
      tabular::preprocess(run_options(a, input, scratch / dir, d));
      return sw.seconds();
    });
  };
  TimingStats cuda_e2e = e2e(Device::cuda, "e2e_cuda");
  TimingStats cpu_e2e = e2e(Device::cpu, "e2e_cpu");
  progress(clock, label.c_str(), "end to end timed");
  std::printf("%-10s %-44s %9.4f %9.4f %12.0f\n", label.c_str(),
              mem.single_pass ? "cuda pinned memory -> host arrays, 1 pass"
                              : "cuda pinned memory -> host arrays, 2 passes",
              compute.median_s, compute.min_s, compute.median_rate(rows));
  std::printf(
      "%-10s %-44s %9.4f %9.4f %12s   (h2d %.4f, kernels %.4f, d2h %.4f s summed; "
      "%llu chunks; rows kept on the device: %s; %llu logs on the host)\n",
      "", "  of which device time (CUDA events, summed)",
      mem.h2d_seconds + mem.kernel_seconds + mem.d2h_seconds, 0.0, "", mem.h2d_seconds,
      mem.kernel_seconds, mem.d2h_seconds, static_cast<unsigned long long>(mem.device_chunks),
      mem.decode_cache ? "yes" : "no", static_cast<unsigned long long>(mem.log_values_on_host));
  // The last timed run's wall time by pass (the vocabulary's readback ends pass 1), and its host
  // time allocating buffers, blocked on the device while chunks went through, and setting up the
  // passes: where the rest of the time beside the device goes.
  std::printf(
      "%-10s %-44s %9.4f %9s %12s   (last run: %llu allocations; pass 1 %.4f s, pass 2 %.4f "
      "s; host blocked on the device %.4f s, setting up the passes %.4f s)\n",
      "", "  of which allocating buffers (host)", mem.alloc_seconds, "", "",
      static_cast<unsigned long long>(mem.allocations), mem.pass1_seconds, mem.pass2_seconds,
      mem.wait_seconds, mem.setup_seconds);
  // What allocating costs a run (a reused backend) and what keeping the rows on the device does
  // (binary rows), each against the target row, with its last run's host and device times.
  auto variant = [&](const char* what, const TimingStats& t, const tabular::PreprocessStats& m) {
    std::printf(
        "%-10s %-44s %9.4f %9.4f %12.0f   (%.2fx; last run: %llu allocations, %.4f s; host "
        "blocked %.4f s, setup %.4f s; h2d %.4f, kernels %.4f, d2h %.4f s; pass 1 %.4f s, "
        "pass 2 %.4f s)\n",
        "", what, t.median_s, t.min_s, t.median_rate(rows), compute.median_s / t.median_s,
        static_cast<unsigned long long>(m.allocations), m.alloc_seconds, m.wait_seconds,
        m.setup_seconds, m.h2d_seconds, m.kernel_seconds, m.d2h_seconds, m.pass1_seconds,
        m.pass2_seconds);
  };
  variant("  the same in two passes, rows kept on device", two, two_mem);
  variant("  the same, backend reused across runs", warm, warm_mem);
  if (binary) variant("  two passes, pass 2 copying the rows in again", reread, reread_mem);
  std::printf("%-10s %-44s %9.4f %9.4f %12.0f   (compute with writes %.4f s)\n", "",
              "cuda writing the arrays to disk (npy)", writes.median_s, writes.min_s,
              writes.median_rate(rows), compute_with_writes);
  std::printf("%-10s %-44s %9.4f %9.4f %12.0f\n", "", "cuda file -> files, end to end",
              cuda_e2e.median_s, cuda_e2e.min_s, cuda_e2e.median_rate(rows));
  std::printf("%-10s %-44s %9.4f %9.4f %12.0f   (%u threads; cuda end to end %.1fx)\n", "",
              "cpu  file -> files, end to end", cpu_e2e.median_s, cpu_e2e.min_s,
              cpu_e2e.median_rate(rows), ref.threads, cpu_e2e.median_s / cuda_e2e.median_s);
  std::fflush(stdout);
  return 0;
}

int run_cuda_suite(const Args& a) {
  if (std::string reason = tabular::criteo_cuda_unavailable_reason(); !reason.empty()) {
    std::printf("criteo_bench --cuda: skipped: %s\n", reason.c_str());
    return 77;
  }
  Stopwatch clock;
  fs::path scratch = a.scratch;
  fs::create_directories(scratch);
  uint64_t lines = criteo_memchr_lines(a.input);
  std::printf(
      "criteo_bench --cuda: %s, %llu rows, modulus %u, %u repeats of the pinned-memory row and "
      "%u of the others, each after 1 warm-up; outputs checked equal to the CPU backend's\n",
      a.input.c_str(), static_cast<unsigned long long>(lines), a.modulus, a.repeats, a.e2e_repeats);
  std::printf("%-10s %-44s %9s %9s %12s\n", "input", "step", "median_s", "min_s", "rows/s");
  std::fflush(stdout);  // before the progress lines on stderr
  struct In {
    const char* label;
    std::string path;
  };
  // Binary rows first: their target (100M rows/s) is the one a time limit must not cut off.
  for (const In& in : {In{"binary", a.bin}, In{"utf-8", a.input}, In{"gzip", a.gz}}) {
    if (in.path.empty()) continue;
    if (int rc = cuda_input(a, in.label, in.path, in.path == a.bin, scratch / in.label, clock);
        rc != 0)
      return rc;
  }
  return 0;
}

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
    else if (k == "--e2e-repeats")
      a.e2e_repeats = static_cast<unsigned>(std::stoul(val()));
    else if (k == "--baseline-repeats")
      a.baseline_repeats = static_cast<unsigned>(std::stoul(val()));
    else if (k == "--scratch")
      a.scratch = val();
    else if (k == "--no-baseline")
      a.baseline = false;
    else if (k == "--rss-only")
      a.rss_only = true;
    else if (k == "--cuda")
      a.cuda = true;
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
                 "[--threads T] [--repeats N] [--no-baseline] [--rss-only]\n"
                 "       criteo_bench --cuda --input FILE.tsv [--gz F] [--bin F] [--modulus M] "
                 "[--repeats N] [--e2e-repeats N]\n");
    return 2;
  }
  if (a.cuda) return run_cuda_suite(a);
  unsigned threads = a.threads ? a.threads : hardware_threads();
  fs::path scratch = a.scratch;
  fs::create_directories(scratch);
  if (a.rss_only) {
    // One run in a fresh process: peak RSS (getrusage) is this run's alone.
    auto s = tabular::preprocess(run_options(a, a.input, scratch / "rss"));
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
                  measure(params, [&] { lines = criteo_memchr_lines(a.input); }), lines});

  fs::path out_utf8 = scratch / "dlprep_utf8";
  uint64_t n = 0;
  rows.push_back({"dlprep UTF-8", time_dlprep(a, params, a.input, out_utf8, n), n});
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
                    bn});
    baseline_s = rows.back().t.median_s;
    if (!same_outputs(out_utf8, out)) return 3;
  }

  {
    fs::path out = scratch / "dlprep_utf8_2";
    rows.push_back({"dlprep UTF-8, two passes", time_dlprep(a, params, a.input, out, n, false), n});
    if (!same_outputs(out_utf8, out)) return 3;
    // Its own vocabulary given (--vocab-from, as for a test day): the same IDs.
    rows.push_back(
        {"dlprep UTF-8, --vocab-from", time_dlprep(a, params, a.input, out, n, true, out_utf8), n});
    if (!same_outputs(out_utf8, out)) return 3;
    rows.push_back({"dlprep UTF-8, --vocab-from, two passes",
                    time_dlprep(a, params, a.input, out, n, false, out_utf8), n});
    if (!same_outputs(out_utf8, out)) return 3;
    // With --emit-binary (the rows for later runs): the same arrays, and rows equal in one pass
    // and two, and to the binary input's where there is one.
    const fs::path one = scratch / "emit_1.bin", two = scratch / "emit_2.bin";
    rows.push_back({"dlprep UTF-8, --emit-binary",
                    time_dlprep(a, params, a.input, out, n, true, std::nullopt, one), n});
    if (!same_outputs(out_utf8, out)) return 3;
    rows.push_back({"dlprep UTF-8, --emit-binary, two passes",
                    time_dlprep(a, params, a.input, out, n, false, std::nullopt, two), n});
    if (!same_outputs(out_utf8, out)) return 3;
    if (!same_file(one, two) || (!a.bin.empty() && !same_file(one, a.bin))) {
      std::fprintf(stderr, "criteo_bench: the rows --emit-binary wrote differ\n");
      return 3;
    }
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
    rows.push_back({"dlprep gzip", time_dlprep(a, params, a.gz, out, n), n});
    if (!same_outputs(out_utf8, out)) return 3;
  }
  if (!a.bin.empty()) {
    fs::path out = scratch / "dlprep_bin";
    rows.push_back({"dlprep binary rows", time_dlprep(a, params, a.bin, out, n), n});
    if (!same_outputs(out_utf8, out)) return 3;
    rows.push_back(
        {"dlprep binary rows, two passes", time_dlprep(a, params, a.bin, out, n, false), n});
    if (!same_outputs(out_utf8, out)) return 3;
  }

  double memchr_s = rows[0].t.median_s;
  std::printf(
      "criteo_bench: %s, %llu rows, modulus %u, %u threads, %s kernels, outputs checked equal\n",
      a.input.c_str(), static_cast<unsigned long long>(lines), a.modulus, threads,
      std::string(tabular::active_row_kernels().name).c_str());
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
