// criteo-preprocess on CUDA against the CPU reference, byte for byte (issue 5). A plain
// executable, not doctest: it probes the device once and exits 77 ("skipped: <reason>") when
// there is none, which ctest reports as skipped (SKIP_RETURN_CODE 77). Run it under
// compute-sanitizer on a GPU machine: tests/bench/criteo_cuda_bench.md.
//
// Every case runs the whole pipeline twice, --device cpu and --device cuda, with the same
// options, and compares every file the CPU wrote (outputs, vocabulary, state) with the CUDA run's;
// stats.json only in its counts. Cases: the real sample rows (golden outputs too), synthetic days
// from gen_criteo (several chunk sizes, days, moduli flat and hashed, min-freq, presets and
// layouts), gzip and binary input, malformed rows (same file:line message; skipped rows counted),
// CRLF and a last line without '\n', dense values across the whole int32 range with several log
// offsets, a vocabulary continued from a pass-1 checkpoint, --vocab-from (in one pass and two),
// rows kept on the device or read again, preloaded inputs, and a Preprocessor that keeps its
// backend from run to run.
//
// criteo_preprocess_cuda_test [--quick | --tiny] [--keep] [--device cpu]
//   --quick: small inputs (for compute-sanitizer); --tiny: smaller still (for the emulated device
//   in CI: criteo_preprocess_emulated_cuda_test); --keep: leave the scratch directory;
//   --device cpu: the CPU backend in CUDA's place (the suite's own test, without a GPU).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "expect.hpp"
#include "run_outputs.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/preprocess_backend.hpp"

namespace fs = std::filesystem;
using namespace dlprep;
using namespace dlprep::tabular;

namespace {

using ::dlprep::testing::failures;
int cases = 0;
bool quick = false, tiny = false;
size_t synthetic_rows = 300000;  // the larger generated day; the wide-values day is 2/3 of it
// The backend under test: cuda, or (--device cpu) the CPU in its place, which proves the suite
// itself on a machine without a GPU (both sides then agree trivially).
Device device = Device::cuda;
std::string device_name = "cuda";

const fs::path kSamples = fs::path(DLPREP_SAMPLE_DATA) / "criteo";
fs::path scratch_root;
std::string last_error;  // the error both runs of the last case stopped with ("" when none)
// When set, the device side of each case runs on it (its backend kept from case to case).
Preprocessor* reused = nullptr;

// A progress event of the pass that reads the inputs first (pass 1 of two, or a single pass).
bool reads_inputs(const ProgressEvent& e) { return e.what == "pass 1" || e.what == "single pass"; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

fs::path fresh(const std::string& name) {
  fs::path d = scratch_root / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void compare_dirs(const std::string& name, const fs::path& cpu, const fs::path& gpu) {
  std::vector<fs::path> a = criteo_test::compared_files(cpu), b = criteo_test::compared_files(gpu);
  EXPECT(a == b, "%s: the cuda run wrote other files (%zu vs %zu)", name.c_str(), b.size(),
         a.size());
  for (const fs::path& f : a) {
    if (!fs::exists(gpu / f)) continue;
    const Bytes x = criteo_test::compared_contents(cpu / f),
                y = criteo_test::compared_contents(gpu / f);
    if (x == y) continue;
    size_t i = 0;
    while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
    EXPECT(false, "%s: %s differs at byte %zu (sizes %zu, %zu)", name.c_str(), f.c_str(), i,
           x.size(), y.size());
  }
}

// Runs `o` on the CPU and on CUDA (output dirs .../cpu and .../cuda); compares everything.
// Returns the CUDA run's stats.
PreprocessStats both(const std::string& name, PreprocessOptions o,
                     const std::function<void(PreprocessOptions&)>& cuda_only = {}) {
  ++cases;
  fs::path dir = fresh(name);
  PreprocessOptions c = o;
  o.device = Device::cpu;
  o.single_pass = false;  // the reference: two passes, whatever the CUDA run does
  o.out_dir = dir / "cpu";
  c.device = device;
  c.out_dir = dir / "cuda";
  if (cuda_only) cuda_only(c);
  PreprocessStats s1, s2;
  std::string e1, e2;
  try {
    s1 = preprocess(o);
  } catch (const Error& e) {
    e1 = e.what();
  }
  try {
    s2 = reused != nullptr ? reused->run(c) : preprocess(c);
  } catch (const Error& e) {
    e2 = e.what();
  }
  EXPECT(e1 == e2, "%s: errors differ:\n  cpu:  %s\n  cuda: %s", name.c_str(), e1.c_str(),
         e2.c_str());
  last_error = e1;
  if (!e1.empty()) {
    std::printf("ok   %-34s both stopped: %s\n", name.c_str(), e1.c_str());
    return s2;
  }
  EXPECT(s2.device == device_name, "%s: ran on %s", name.c_str(), s2.device.c_str());
  EXPECT(s1.rows == s2.rows && s1.bad_rows == s2.bad_rows, "%s: rows %llu/%llu, bad %llu/%llu",
         name.c_str(), static_cast<unsigned long long>(s1.rows),
         static_cast<unsigned long long>(s2.rows), static_cast<unsigned long long>(s1.bad_rows),
         static_cast<unsigned long long>(s2.bad_rows));
  EXPECT(s1.cardinality == s2.cardinality && s1.kept == s2.kept, "%s: cardinalities differ",
         name.c_str());
  for (size_t d = 0; d < s1.days.size() && d < s2.days.size(); ++d)
    EXPECT(s1.days[d].rows == s2.days[d].rows && s1.days[d].bad_rows == s2.days[d].bad_rows,
           "%s: day %zu counts differ", name.c_str(), d);
  compare_dirs(name, o.out_dir, c.out_dir);
  // The host's share (stats' cuda.*_seconds) is timed in disjoint parts of the passes.
  if (s2.device == "cuda")
    EXPECT(s2.setup_seconds > 0 && s2.wait_seconds >= 0 && s2.alloc_seconds >= 0 &&
               s2.setup_seconds + s2.wait_seconds + s2.alloc_seconds <=
                   s2.pass1_seconds + s2.pass2_seconds,
           "%s: host times setup %.6f + wait %.6f + alloc %.6f s beyond the passes' %.6f s",
           name.c_str(), s2.setup_seconds, s2.wait_seconds, s2.alloc_seconds,
           s2.pass1_seconds + s2.pass2_seconds);
  // The CUDA backend reads the inputs once whenever the options allow it.
  // A split last day with bad rows skipped: only while it is at most half of the input.
  uint64_t total = 0;
  for (const auto& in : c.inputs) total += fs::file_size(in);
  const bool split_counted = c.split_last == SplitLast::none ||
                             c.on_bad_row == BadRowPolicy::error ||
                             2 * fs::file_size(c.inputs.back()) <= total;
  // Its IDs final at first sight: a given vocabulary's, or first appearances without a threshold
  // (and for the split layout, whose ID types need the final table sizes, a given vocabulary's).
  const bool ids_known =
      c.vocab_from || (c.min_freq <= 1 && c.output_format != OutputFormat::split);
  const bool single =
      c.single_pass && ids_known && c.output_format != OutputFormat::none && split_counted;
  EXPECT(s2.single_pass == single && !s1.single_pass, "%s: single pass %d, expected %d",
         name.c_str(), s2.single_pass, single);
  std::printf(
      "ok   %-34s %9llu rows  %s %.3f s (compute %.3f, %llu device chunks, %s, %llu logs on "
      "host)\n",
      name.c_str(), static_cast<unsigned long long>(s2.rows), device_name.c_str(), s2.total_seconds,
      s2.compute_seconds, static_cast<unsigned long long>(s2.device_chunks),
      s2.single_pass    ? "single pass"
      : s2.decode_cache ? "rows kept for pass 2"
                        : "pass 2 re-read",
      static_cast<unsigned long long>(s2.log_values_on_host));
  std::fflush(stdout);
  return s2;
}

// both() with --emit-binary: the rows each run emits (scratch_root/NAME_{cpu,cuda}.bin) must be
// the same bytes too.
void both_emitting(const std::string& name, PreprocessOptions o) {
  const fs::path cpu = scratch_root / (name + "_cpu.bin"),
                 cuda = scratch_root / (name + "_cuda.bin");
  o.emit_binary = cpu;
  both(name, o, [&](PreprocessOptions& c) { c.emit_binary = cuda; });
  EXPECT(slurp(cpu) == slurp(cuda), "%s: emitted rows differ", name.c_str());
}

PreprocessOptions opts(std::vector<fs::path> inputs, uint32_t modulus = 5000) {
  PreprocessOptions o;
  o.inputs = std::move(inputs);
  o.modulus.fill(modulus);
  o.resume = false;
  return o;
}

fs::path gen(const fs::path& dir, uint64_t rows, uint64_t seed) {
  fs::path out = dir / ("gen_" + std::to_string(rows) + "_" + std::to_string(seed) + ".tsv");
  if (fs::exists(out)) return out;
  std::string cmd = std::string(DLPREP_GEN_CRITEO) + " " + std::to_string(rows) + " " +
                    std::to_string(seed) + " > " + out.string();
  if (std::system(cmd.c_str()) != 0) throw Error(Errc::io, "gen_criteo failed: " + cmd);
  return out;
}

std::string row_text(std::mt19937_64& rng, const std::vector<int64_t>& dense_pool) {
  std::string s = std::to_string(rng() % 2);
  for (int k = 0; k < kNumDense; ++k) {
    s += '\t';
    if (rng() % 9 == 0) continue;
    s += std::to_string(dense_pool[rng() % dense_pool.size()]);
  }
  static const char* kHex = "0123456789abcdefABCDEF";
  for (int j = 0; j < kNumSparse; ++j) {
    s += '\t';
    if (rng() % 7 == 0) continue;
    int digits = rng() % 5 == 0 ? 1 + static_cast<int>(rng() % 8) : 8;
    for (int d = 0; d < digits; ++d) s += kHex[rng() % 22];
  }
  return s;
}

// Dense values over the whole int32 range (the device's log path above kLogTableSize) and
// sparse values of every width and case; CRLF on some lines; no '\n' after the last.
fs::path wide_values(const fs::path& dir, size_t rows) {
  std::mt19937_64 rng(99);
  std::vector<int64_t> pool = {0,       1,       -1, 65535, 65536, 65537, 2147483647, -2147483648LL,
                               1000000, 12345678};
  for (int i = 0; i < 4000; ++i) pool.push_back(65536 + static_cast<int64_t>(rng() % 2147418111));
  std::string text;
  for (size_t r = 0; r < rows; ++r) {
    text += row_text(rng, pool);
    if (r + 1 < rows) text += rng() % 5 == 0 ? "\r\n" : "\n";
  }
  put(dir / "wide.tsv", text);
  return dir / "wide.tsv";
}

// gen_criteo rows with malformed lines of every kind at known places.
fs::path with_bad_rows(const fs::path& dir, const fs::path& good, std::vector<size_t>& bad_lines) {
  std::string in = slurp(good), out;
  const std::vector<std::string> bad = {
      "1\t2\t3",                                                    // too few
      std::string(40, '\t'),                                        // too many
      "x" + std::string(39, '\t'),                                  // bad character
      "1\t12345678901" + std::string(38, '\t'),                     // overlong dense
      "1\t-" + std::string(38, '\t'),                               // '-' alone
      "1\t2147483648" + std::string(38, '\t'),                      // out of range
      std::string(14, '\t') + "123456789" + std::string(25, '\t'),  // overlong hex
      "",                                                           // empty line
      "0\t1\r2" + std::string(38, '\t'),                            // lone '\r'
  };
  size_t line = 0, pos = 0, k = 0;
  while (pos < in.size()) {
    size_t nl = in.find('\n', pos);
    out.append(in, pos, nl - pos + 1);
    ++line;
    pos = nl + 1;
    if (line % (tiny ? 97 : 997) == 0) {
      out += bad[k++ % bad.size()] + "\n";
      ++line;
      bad_lines.push_back(line);
    }
  }
  put(dir / "bad.tsv", out);
  return dir / "bad.tsv";
}

void run_all() {
  fs::path data = fresh("data");
  const size_t big = synthetic_rows;
  fs::path deepctr = kSamples / "deepctr_200.tsv", nvt = kSamples / "nvtabular_day_0.gz",
           edge = kSamples / "edge_cases.tsv";

  // The real sample rows, and the golden outputs of the piper preset.
  {
    PreprocessOptions o = opts({deepctr});
    apply_preset("piper", o);
    both("piper_golden", o);
    for (const char* f : {"day_0_dense.npy", "day_0_sparse.npy", "day_0_labels.npy"})
      EXPECT(slurp(scratch_root / "piper_golden" / "cuda" / f) ==
                 slurp(kSamples / "expected_piper" / f),
             "golden %s", f);
  }
  const std::vector<fs::path> samples = {deepctr, nvt, edge};
  both("samples_mod5000", opts(samples));
  both("samples_full_hex", opts(samples, 0));
  {
    PreprocessOptions o = opts(samples);
    o.modulus = parse_modulus_list(
        "7,100,1000,5000,3,11,1000000,2,97,65536,1,10,4096,4294967295,13,17,19,23,29,31,37,41,"
        "43,47,53,4194305");
    o.min_freq = 3;
    both("samples_per_column_modulus", o);
  }
  {
    PreprocessOptions o = opts(samples, 0);
    apply_preset("torchrec", o);
    o.min_freq = 2;
    both("samples_torchrec_minfreq", o);
  }
  {
    PreprocessOptions o = opts(samples, 1000);
    apply_preset("dlrm", o);
    o.modulus.fill(1000);
    both("samples_dlrm_layout", o);
  }
  {
    PreprocessOptions o = opts(samples);
    o.output_format = OutputFormat::split;
    o.id_base = 5;
    both("samples_split_layout", o);
  }

  // Synthetic days: chunk sizes, moduli (flat, and hashed with growing tables), device-kept
  // rows or re-read input, preloaded input.
  fs::path g1 = gen(data, big, 1), g2 = gen(data, big / 3, 2);
  for (uint32_t m : {5000u, 1000000u, 0u}) {
    for (size_t chunk : {size_t{64} << 10, size_t{1} << 20, size_t{0}}) {
      if (quick && chunk == (size_t{1} << 20)) continue;
      // Flat tables of 1M entries per column cost the emulated device seconds each to fill.
      if (tiny && m == 1000000u && chunk != 0) continue;
      PreprocessOptions o = opts({g1, g2}, m);
      o.chunk_bytes = chunk;
      both("gen_m" + std::to_string(m) + "_chunk" + std::to_string(chunk >> 10) + "k", o);
    }
  }
  {
    PreprocessOptions o = opts({g1, g2});
    o.decode_cache = DecodeCache::off;
    both("gen_reread_pass2", o);
    o.decode_cache = DecodeCache::auto_select;
    o.preload_inputs = true;
    both("gen_preloaded", o);
    // A small budget for kept rows: the first (larger) day is dropped part-way, the second kept.
    const std::string budget = std::to_string(big / 3 * kBinaryRowBytes + big * 40);
    ::setenv("DLPREP_CUDA_KEEP_BYTES", budget.c_str(), 1);
    o.preload_inputs = false;
    o.chunk_bytes = 64 << 10;
    both("gen_keep_budget_exceeded", o);
    ::unsetenv("DLPREP_CUDA_KEEP_BYTES");
    o.chunk_bytes = 0;
    o.discard_outputs = true;
    both("gen_discarded_outputs", o);
  }
  {
    // Two passes where one would do: the two-pass path of the CUDA backend stays covered.
    PreprocessOptions o = opts({g1, g2});
    o.single_pass = false;
    o.chunk_bytes = 64 << 10;
    both("gen_two_passes", o);
    o.modulus.fill(0);
    both("gen_hash_two_passes", o);
  }
  {
    PreprocessOptions o = opts({g1}, 0);
    o.min_freq = 2;
    o.id_base = 2;
    o.oov_id = 1;
    o.split_last = SplitLast::val_test;
    both("gen_hash_minfreq_split", o);
    o.min_freq = 1;  // the split last day's rows counted first: a single pass
    both("gen_hash_split", o);
  }

  // gzip and binary rows.
  {
    std::string cmd = "gzip -c " + g2.string() + " > " + (data / "g2.gz").string();
    EXPECT(std::system(cmd.c_str()) == 0, "gzip failed");
    both("gen_gzip", opts({data / "g2.gz", g1}));
    PreprocessOptions e = opts({g1, g2});
    e.device = Device::cpu;
    e.out_dir = data / "emit";
    e.emit_binary = data / "rows.bin";
    e.output_format = OutputFormat::none;
    preprocess(e);
    PreprocessOptions b = opts({data / "rows.bin"});
    b.input_format = InputFormat::bin;
    both("bin_rows", b);
    b.chunk_bytes = 64 << 10;
    both("bin_rows_chunk64k", b);
    b.preload_inputs = true;  // the rows' copies queued back to back (stable chunks)
    both("bin_rows_preloaded", b);
    b.single_pass = false;  // pass 2 copies the pinned rows in again (criteo_bench --cuda)
    b.decode_cache = DecodeCache::off;
    both("bin_rows_preloaded_reread", b);
    PreprocessOptions m = opts({data / "rows.bin", g2}, 0);
    both("bin_and_text_days", m);
    // Days with no rows between others: .npy files of shape (0, 13) and the like, IDs going on.
    put(data / "empty.tsv", "");
    put(data / "only_bad.tsv", "1\t2\n\n");
    PreprocessOptions z = opts({g2, data / "empty.tsv", data / "only_bad.tsv", deepctr});
    z.on_bad_row = BadRowPolicy::skip;
    both("empty_days", z);
    z.output_format = OutputFormat::split;
    both("empty_days_split_layout", z);
    // --emit-binary itself from the CUDA run (a single pass), from text with a bad row skipped
    // and from binary rows, and in two passes.
    both_emitting("emit_binary", opts({g2, deepctr}));
    PreprocessOptions xs = opts({g2, data / "only_bad.tsv", deepctr});
    xs.on_bad_row = BadRowPolicy::skip;
    both_emitting("emit_binary_skip", xs);
    PreprocessOptions xb = opts({data / "rows.bin", g2});
    xb.chunk_bytes = 64 << 10;
    both_emitting("emit_binary_from_rows", xb);
    PreprocessOptions x2 = opts({g2, deepctr});
    x2.single_pass = false;
    both_emitting("emit_binary_two_passes", x2);
  }

  // Malformed rows: the first one stops both runs with the same file:line message; skipped,
  // they are counted the same and leave the same outputs.
  {
    std::vector<size_t> bad_lines;
    fs::path bad = with_bad_rows(data, g2, bad_lines);
    PreprocessOptions o = opts({g1, bad});
    o.chunk_bytes = 64 << 10;
    both("bad_rows_error", o);
    EXPECT(!bad_lines.empty(), "no bad rows made");
    const std::string want = bad.string() + ":" +
                             std::to_string(bad_lines.empty() ? 0 : bad_lines[0]) +
                             ": too few fields (3, expected 40)";
    EXPECT(last_error == want, "bad_rows_error: '%s', expected '%s'", last_error.c_str(),
           want.c_str());
    o.on_bad_row = BadRowPolicy::skip;
    PreprocessStats s = both("bad_rows_skip", o);
    EXPECT(s.bad_rows == bad_lines.size(), "%llu bad rows, %zu made",
           static_cast<unsigned long long>(s.bad_rows), bad_lines.size());
    o.chunk_bytes = 0;
    both("bad_rows_skip_one_chunk", o);
    o.split_last = SplitLast::test_val;  // the split day's valid rows counted on the host first
    both("bad_rows_skip_split", o);
    o.inputs = {bad};  // alone, that day is all the input: two passes
    both("bad_rows_skip_split_alone", o);
    PreprocessOptions csv = opts({deepctr, kSamples / "README.md"});
    both("not_criteo_text", csv);
    EXPECT(last_error.find("README.md:1: ") != std::string::npos, "not_criteo_text: '%s'",
           last_error.c_str());
  }

  // Dense values across int32 with several log offsets, sparse values of every width and case.
  {
    fs::path wide = wide_values(data, big * 2 / 3);
    for (double offset : {1.0, 3.0, 0.5, 1e-3, 12345.678}) {
      PreprocessOptions o = opts({wide}, 0);
      o.log_offset = offset;
      both("wide_values_log" + std::to_string(offset), o);
    }
    PreprocessOptions n = opts({wide}, 77);
    n.apply_log = false;
    both("wide_values_nolog", n);
  }

  // A vocabulary continued from a partial checkpoint (the device tables seeded from it). A single
  // pass continues after the days whose outputs its checkpoint records; a checkpoint of two
  // passes, or one whose outputs are gone, resumes pass 1 and runs pass 2 over every day.
  {
    fs::path dir = fresh("resume");
    std::vector<fs::path> days = {g2, deepctr, nvt, edge};
    struct Variant {
      const char* name;
      uint32_t modulus;
      bool first_single;  // the interrupted run may read its inputs once
      bool lose_output;   // day 0's outputs deleted before the rerun
    };
    for (const Variant& v :
         {Variant{"resume_m5000", 5000, true, false}, Variant{"resume_m0", 0, true, false},
          Variant{"resume_after_two_passes", 5000, false, false},
          Variant{"resume_outputs_lost", 0, true, true}}) {
      PreprocessOptions clean = opts(days, v.modulus);
      clean.device = Device::cpu;
      clean.single_pass = false;
      clean.out_dir = dir / (std::string(v.name) + "_clean");
      preprocess(clean);
      PreprocessOptions o = opts(days, v.modulus);
      o.device = device;
      o.out_dir = dir / v.name;
      o.resume = true;
      o.checkpoint_seconds = 0;
      o.single_pass = v.first_single;
      o.progress = [&](const ProgressEvent& e) {
        if (reads_inputs(e) && e.item == days[2].string()) throw Error(Errc::interrupted, "stop");
      };
      bool stopped = false;
      try {
        preprocess(o);
      } catch (const Error&) {
        stopped = true;
      }
      EXPECT(stopped, "%s: the interruption did not happen", v.name);
      if (v.lose_output) fs::remove(o.out_dir / "day_0_sparse.npy");
      o.progress = nullptr;
      o.single_pass = true;
      PreprocessStats s = preprocess(o);
      EXPECT(s.days_resumed_in_pass1 == 2, "%s: resumed %zu days", v.name, s.days_resumed_in_pass1);
      const bool single = v.first_single && !v.lose_output;
      EXPECT(s.single_pass == single, "%s: single pass %d", v.name, s.single_pass);
      EXPECT(s.days[0].skipped == single && s.days[2].skipped == false, "%s: days skipped %d %d",
             v.name, s.days[0].skipped, s.days[2].skipped);
      ++cases;
      compare_dirs(v.name, clean.out_dir, o.out_dir);
      // Complete: a rerun reuses everything.
      s = preprocess(o);
      bool all_skipped = s.vocab_reused;
      for (const DayStats& d : s.days) all_skipped = all_skipped && d.skipped;
      EXPECT(all_skipped, "%s: a rerun of the complete run did work again", v.name);
      compare_dirs(v.name, clean.out_dir, o.out_dir);
      std::printf("ok   %-34s %s\n", v.name, single ? "single pass" : "two passes");
    }
  }

  // --vocab-from: a CPU-built vocabulary applied on the device to other days.
  {
    PreprocessOptions train = opts({g1});
    train.device = Device::cpu;
    train.out_dir = fresh("vocab_train");
    preprocess(train);
    PreprocessOptions o = opts({g2, nvt});
    o.modulus = {};
    o.vocab_from = train.out_dir;
    both("vocab_from", o);  // a single pass: pass 2 alone
    o.single_pass = false;
    both("vocab_from_two_passes", o);
    o.single_pass = true;
    o.chunk_bytes = 64 << 10;
    o.split_last = SplitLast::val_test;  // the split day's lines counted first
    both("vocab_from_split", o);
    // Binary rows, and a split day whose bad rows are skipped (its valid rows counted first).
    std::vector<size_t> bad_lines;
    o.inputs = {data / "rows.bin", g1, with_bad_rows(data, g2, bad_lines)};
    o.on_bad_row = BadRowPolicy::skip;
    o.split_last = SplitLast::test_val;
    both("vocab_from_bin_bad_rows_split", o);
    both_emitting("vocab_from_emit_binary", o);  // pass 2 alone hands back the rows too
    o.split_last = SplitLast::none;
    o.preload_inputs = true;  // as criteo_bench --cuda times it
    o.discard_outputs = true;
    o.resume = true;  // checkpoints due after every day, but nothing to record
    o.checkpoint_seconds = 0;
    const PreprocessStats s = both("vocab_from_preloaded_discarded", o);
    EXPECT(!fs::exists(scratch_root / "vocab_from_preloaded_discarded" / "cuda" / "state.json"),
           "vocab_from_preloaded_discarded: state.json written without outputs");
    EXPECT(s.rows + s.bad_rows > 0, "vocab_from_preloaded_discarded: no rows");
  }

  // One Preprocessor for runs of every kind in turn, as a long-lived process would use it: each
  // run's outputs as a fresh backend's, also after a run that failed (its backend is made again)
  // and after one interrupted in pass 1; a repeated run allocates less the second time.
  {
    Preprocessor p;
    reused = &p;
    PreprocessOptions text = opts({g1, g2});
    text.chunk_bytes = 64 << 10;
    const PreprocessStats first = both("reuse_text", text);
    const PreprocessStats again = both("reuse_text_again", text);
    if (again.device == "cuda")
      EXPECT(again.allocations < first.allocations,
             "reuse_text_again: %llu allocations, %llu in the first run",
             static_cast<unsigned long long>(again.allocations),
             static_cast<unsigned long long>(first.allocations));
    PreprocessOptions offset = text;  // another log table than the run before
    offset.log_offset = 3;
    both("reuse_log_offset3", offset);
    PreprocessOptions two = offset;  // the two-pass tables after a single pass's, and back
    two.single_pass = false;
    both("reuse_two_passes", two);
    PreprocessOptions given = opts({g2, nvt});  // pass 2 alone after the runs before
    given.modulus = {};
    given.vocab_from = scratch_root / "vocab_train";
    both("reuse_vocab_from", given);
    PreprocessOptions bin = opts({data / "rows.bin"}, 0);
    bin.input_format = InputFormat::bin;
    both("reuse_bin_rows_hashed", bin);
    PreprocessOptions bad = opts({g1, data / "bad.tsv"});
    bad.chunk_bytes = 64 << 10;
    both("reuse_bad_rows_error", bad);
    EXPECT(!last_error.empty(), "reuse_bad_rows_error: the run did not stop");
    PreprocessOptions pre = opts({g2, deepctr}, 1000000);
    pre.preload_inputs = true;
    pre.output_format = OutputFormat::split;
    both("reuse_after_error_preloaded", pre);
    PreprocessOptions stop = opts({g2, deepctr, nvt});
    stop.device = device;
    stop.out_dir = fresh("reuse_interrupted");
    stop.progress = [&](const ProgressEvent& e) {
      if (reads_inputs(e) && e.item == nvt.string()) throw Error(Errc::interrupted, "stop");
    };
    bool stopped = false;
    try {
      p.run(stop);
    } catch (const Error&) {
      stopped = true;
    }
    EXPECT(stopped, "reuse: the interruption did not happen");
    both("reuse_after_interruption", opts({g2, deepctr, nvt}, 0));
    reused = nullptr;
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick" || a == "--tiny") {
      quick = true;
      tiny = a == "--tiny";
      synthetic_rows = tiny ? 2500 : 20000;
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--device" && i + 1 < argc && std::string(argv[i + 1]) == "cpu") {
      device = Device::cpu;
      device_name = "cpu";
      ++i;
    } else {
      std::fprintf(stderr,
                   "usage: criteo_preprocess_cuda_test [--quick | --tiny] [--keep] "
                   "[--device cpu]\n");
      return 2;
    }
  }
  const std::string reason = criteo_cuda_unavailable_reason();
  if (device == Device::cuda && !reason.empty()) {
    std::printf("skipped: %s\n", reason.c_str());
    return 77;
  }
  // A folder per program (real and emulated GPU) and device, as ctest may run them at once.
  const std::string program = fs::path(argc > 0 ? argv[0] : "test").filename().string();
  scratch_root = fs::path(DLPREP_CRITEO_CUDA_SCRATCH) / (program + "-" + device_name);
  fs::remove_all(scratch_root);
  fs::create_directories(scratch_root);
  try {
    run_all();
  } catch (const std::exception& e) {
    ++failures;
    std::fprintf(stderr, "FAIL: uncaught: %s\n", e.what());
  }
  if (!keep && failures == 0) fs::remove_all(scratch_root);
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
