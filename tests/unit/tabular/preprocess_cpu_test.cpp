// The whole CPU pipeline on real Criteo rows (sample_data/criteo): golden outputs, and the
// invariances that make it a reference: thread count, chunk size, gzip, binary input, decode
// cache, a single pass and resume never change a byte.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/float16.hpp"
#include "criteo_test_rows.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/npy_format.hpp"
#include "tabular/preprocess_backend.hpp"
#include "tabular/writers.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::tabular;
using nlohmann::json;
using testing::gunzip;
namespace fs = std::filesystem;

namespace {

const fs::path kSamples = fs::path(DLPREP_SAMPLE_DATA) / "criteo";

fs::path scratch(const std::string& name) { return test_scratch::fresh("criteo", name); }

std::string slurp(const fs::path& p) {
  Bytes b = read_file(p);
  return std::string(b.begin(), b.end());
}

void put(const fs::path& p, const std::string& s) {
  write_file_atomic(p, ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

// A ~1.5 MB day made of the 200 DeepCTR rows repeated, so small chunks cut it many times.
fs::path big_day(const fs::path& dir) {
  std::string rows = slurp(kSamples / "deepctr_200.tsv"), all;
  for (int i = 0; i < 30; ++i) all += rows;
  put(dir / "big.tsv", all);
  return dir / "big.tsv";
}

PreprocessOptions base(std::vector<fs::path> inputs, const fs::path& out) {
  PreprocessOptions o;
  o.inputs = std::move(inputs);
  o.out_dir = out;
  o.modulus.fill(5000);
  o.resume = false;
  return o;
}

// Options of a run into dir/out that applies the vocabulary of a run on deepctr_200.tsv (made
// first, into dir/train).
PreprocessOptions with_trained_vocab(std::vector<fs::path> inputs, const fs::path& dir) {
  preprocess(base({kSamples / "deepctr_200.tsv"}, dir / "train"));
  PreprocessOptions o = base(std::move(inputs), dir / "out");
  o.modulus = {};
  o.vocab_from = dir / "train";
  return o;
}

void check_same_files(const fs::path& a, const fs::path& b, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    INFO(n);
    REQUIRE(fs::exists(a / n));
    REQUIRE(fs::exists(b / n));
    CHECK(slurp(a / n) == slurp(b / n));
  }
}

const std::vector<std::string> kDay0 = {"day_0_dense.npy", "day_0_sparse.npy", "day_0_labels.npy"};
const std::vector<std::string> kDay01 = {
    "day_0_dense.npy",  "day_0_sparse.npy", "day_0_labels.npy",    "day_1_dense.npy",
    "day_1_sparse.npy", "day_1_labels.npy", "vocab/C1_values.npy", "vocab/C26_counts.npy"};

}  // namespace

TEST_CASE("the piper preset reproduces the golden outputs of the DeepCTR rows") {
  fs::path out = scratch("golden");
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv"}, out);
  apply_preset("piper", o);
  PreprocessStats s = preprocess(o);
  CHECK(s.rows == 200);
  CHECK(s.bad_rows == 0);
  check_same_files(out, kSamples / "expected_piper", kDay0);
}

TEST_CASE(
    "outputs do not depend on the thread count, the chunk size, the decode cache or the "
    "passes") {
  fs::path dir = scratch("invariance");
  fs::path day = big_day(dir);
  std::vector<fs::path> days = {day, kSamples / "nvtabular_day_0.gz"};
  PreprocessOptions ref = base(days, dir / "ref");
  ref.threads = 1;
  ref.decode_cache = DecodeCache::off;
  ref.single_pass = false;
  CHECK_FALSE(preprocess(ref).single_pass);
  enum class Mode { cache, no_cache, single };
  for (unsigned threads : {1u, 2u, 3u}) {
    for (size_t chunk : {size_t{64} << 10, size_t{64} << 20}) {
      for (Mode mode : {Mode::cache, Mode::no_cache, Mode::single}) {
        INFO("threads " << threads << ", chunk " << chunk << ", mode " << static_cast<int>(mode));
        fs::path out = dir / ("t" + std::to_string(threads) + "_" + std::to_string(chunk) + "_" +
                              std::to_string(static_cast<int>(mode)));
        PreprocessOptions o = base(days, out);
        o.threads = threads;
        o.chunk_bytes = chunk;
        o.decode_cache = mode == Mode::cache ? DecodeCache::on : DecodeCache::off;
        o.single_pass = mode == Mode::single;
        PreprocessStats s = preprocess(o);
        CHECK(s.rows == 7000);
        CHECK(s.single_pass == (mode == Mode::single));
        CHECK(s.decode_cache == (mode == Mode::cache));
        check_same_files(ref.out_dir, out, kDay01);
      }
    }
  }
}

TEST_CASE("a single pass writes what two passes write, in every layout and ID convention") {
  fs::path dir = scratch("single_pass");
  fs::path day = big_day(dir);
  // Text, gzip and binary days (binary rows of the DeepCTR rows), bad rows skipped in one.
  PreprocessOptions e = base({kSamples / "deepctr_200.tsv"}, dir / "emit");
  e.emit_binary = dir / "rows.bin";
  e.output_format = OutputFormat::none;
  preprocess(e);
  std::string bad =
      slurp(kSamples / "edge_cases.tsv") + "1\t2\t3\n" + slurp(kSamples / "deepctr_200.tsv");
  put(dir / "bad.tsv", bad);
  struct Variant {
    const char* name;
    OutputFormat format;
    uint32_t modulus;  // 0: hashed columns
    int64_t id_base;
    bool apply_log;
    double log_offset;
    SplitLast split;
    fs::path last;  // the last day; bad.tsv's bad row is skipped (split: its valid rows counted)
  };
  const fs::path bad_day = dir / "bad.tsv", edge = kSamples / "edge_cases.tsv";
  size_t index = 0;
  for (const Variant& v :
       {Variant{"npy", OutputFormat::npy, 5000, 0, true, 1, SplitLast::none, bad_day},
        Variant{"npy_hashed_base2", OutputFormat::npy, 0, 2, true, 3, SplitLast::none, bad_day},
        Variant{"split_layout", OutputFormat::split, 1000000, 1, true, 1, SplitLast::none, bad_day},
        Variant{"dlrm", OutputFormat::dlrm, 7, 0, true, 1, SplitLast::none, bad_day},
        // Split last days counted first: a mapped text file's lines, a gzip day's and binary
        // rows through the reader, a day's valid rows decoded.
        Variant{"dlrm_test_val", OutputFormat::dlrm, 0, 0, false, 1, SplitLast::test_val, edge},
        Variant{"torchrec_val_test", OutputFormat::npy, 0, 2, true, 3, SplitLast::val_test, edge},
        Variant{"split_gzip_last", OutputFormat::npy, 5000, 0, true, 1, SplitLast::test_val,
                kSamples / "nvtabular_day_0.gz"},
        Variant{"split_binary_last", OutputFormat::split, 5000, 0, true, 1, SplitLast::val_test,
                dir / "rows.bin"},
        Variant{"split_skip_bad", OutputFormat::npy, 5000, 0, true, 1, SplitLast::val_test,
                bad_day}}) {
    INFO(v.name);
    const bool bad_rows = v.last == bad_day;
    const bool emit = index++ % 2 == 0;  // --emit-binary: the decoded rows of the single pass too
    std::vector<fs::path> days = {day, kSamples / "nvtabular_day_0.gz", dir / "rows.bin", v.last};
    const auto run = [&](bool single, unsigned threads) {
      const std::string name = std::string(v.name) + (single ? "_1" : "_2");
      PreprocessOptions o = base(days, dir / name);
      if (emit) o.emit_binary = dir / (name + ".bin");
      o.output_format = v.format;
      o.modulus.fill(v.modulus);
      o.id_base = v.id_base;
      o.apply_log = v.apply_log && v.format != OutputFormat::dlrm;
      o.log_offset = v.log_offset;
      o.split_last = v.split;
      o.on_bad_row = bad_rows ? BadRowPolicy::skip : BadRowPolicy::error;
      o.chunk_bytes = size_t{64} << 10;
      o.single_pass = single;
      o.threads = threads;
      PreprocessStats s = preprocess(o);
      // The split layout's ID types need the final table sizes: two passes.
      CHECK(s.single_pass == (single && v.format != OutputFormat::split));
      CHECK(s.bad_rows == (bad_rows ? 1 : 0));
      return o.out_dir;
    };
    const fs::path two = run(false, 1), one = run(true, 2);
    if (emit) {
      const std::string rows = slurp(two.string() + ".bin");
      CHECK(rows.size() > 64 + 160 * 200);
      CHECK(slurp(one.string() + ".bin") == rows);
    }
    std::vector<std::string> stems = {"day_0", "day_1", "day_2", "day_3"};
    if (v.split != SplitLast::none) stems.back() = "test", stems.push_back("val");
    std::vector<std::string> files = {"vocab/C1_values.npy", "vocab/C26_counts.npy"};
    for (const auto& stem : stems)
      for (const auto& f : output_files(v.format, "", stem)) files.push_back(f.string());
    check_same_files(two, one, files);
    // vocab.json also records each run's own --emit-binary FILE (its path and mtime).
    json vocab_two = json::parse(slurp(two / "vocab" / "vocab.json"));
    json vocab_one = json::parse(slurp(one / "vocab" / "vocab.json"));
    CHECK(vocab_two.contains("emit") == emit);
    vocab_two.erase("emit");
    vocab_one.erase("emit");
    CHECK(vocab_two == vocab_one);
  }
  // A split day whose bad rows are skipped is decoded twice in a single pass (once to count its
  // rows): only while it is at most half of the input. Its lines alone cost a scan.
  PreprocessOptions alone = base({bad_day}, dir / "alone");
  alone.split_last = SplitLast::test_val;
  alone.on_bad_row = BadRowPolicy::skip;
  CHECK_FALSE(preprocess(alone).single_pass);
  alone.inputs = {edge};
  alone.on_bad_row = BadRowPolicy::error;
  CHECK(preprocess(alone).single_pass);
}

TEST_CASE("a single pass that fails leaves no output; its checkpoints publish the days before") {
  fs::path dir = scratch("single_pass_failure");
  PreprocessOptions train = base({kSamples / "deepctr_200.tsv"}, dir / "train");
  preprocess(train);
  put(dir / "bad.tsv", slurp(kSamples / "deepctr_200.tsv") + "1\t2\t3\n");
  std::vector<fs::path> days = {kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz",
                                dir / "bad.tsv"};
  struct Variant {
    OutputFormat format;
    bool given;  // --vocab-from: pass 2 alone, whose checkpoint is state.json
  };
  // (The split layout takes a single pass with a given vocabulary only.)
  for (const Variant& v : {Variant{OutputFormat::npy, false}, Variant{OutputFormat::split, true},
                           Variant{OutputFormat::npy, true}}) {
    INFO("format " << static_cast<int>(v.format) << ", vocab_from " << v.given);
    PreprocessOptions o = base(days, dir / "out");
    o.output_format = v.format;
    const fs::path emitted = dir / "rows.bin";
    o.emit_binary = emitted;
    if (v.given) {
      o.modulus = {};
      o.vocab_from = dir / "train";
    }
    // Before any checkpoint: days 0 and 1 were complete, but none of their files appear, and the
    // output directory the run created goes again (with the split layout's day directories).
    CHECK_THROWS_WITH_AS(preprocess(o), doctest::Contains("bad.tsv:201: too few fields"), Error);
    CHECK_FALSE(fs::exists(o.out_dir));
    CHECK_FALSE(fs::exists(emitted));
    // A checkpoint after every day: the days it covers appear before it is written.
    o.resume = true;
    o.checkpoint_seconds = 0;
    CHECK_THROWS_AS(preprocess(o), Error);
    for (size_t d = 0; d < 3; ++d)
      for (const auto& f : output_files(v.format, o.out_dir, "day_" + std::to_string(d)))
        CHECK(fs::exists(f) == (d < 2));
    // (A single pass records its day count in a state.json that lists no day complete.)
    const fs::path state = o.out_dir / "state.json";
    CHECK(fs::exists(state) ==
          (v.given || slurp(state).find("\"days_done\": []") != std::string::npos));
    CHECK(fs::exists(o.out_dir / "vocab" / "vocab.json") == !v.given);
    CHECK_FALSE(fs::exists(emitted));  // one file of every day's rows: at the end or never
    fs::remove_all(o.out_dir);
  }
}

TEST_CASE("gzip input (multi-member too) gives the same outputs as the plain text") {
  fs::path dir = scratch("gzip");
  std::string text = gunzip(kSamples / "nvtabular_day_0.gz");
  put(dir / "plain.tsv", text + text);
  std::string gz = slurp(kSamples / "nvtabular_day_0.gz");
  put(dir / "two_members.gz", gz + gz);
  PreprocessOptions a = base({dir / "plain.tsv"}, dir / "a");
  PreprocessOptions b = base({dir / "two_members.gz"}, dir / "b");
  CHECK(preprocess(a).rows == 2000);
  CHECK(preprocess(b).rows == 2000);
  check_same_files(a.out_dir, b.out_dir, kDay0);
  put(dir / "truncated.gz", gz.substr(0, gz.size() / 2));
  PreprocessOptions t = base({dir / "truncated.gz"}, dir / "t");
  CHECK_THROWS_AS(preprocess(t), Error);
}

TEST_CASE("binary rows written by emit_binary preprocess to the same outputs") {
  fs::path dir = scratch("binary");
  std::vector<fs::path> days = {kSamples / "deepctr_200.tsv", kSamples / "edge_cases.tsv"};
  PreprocessOptions a = base(days, dir / "a");
  a.emit_binary = dir / "rows.bin";
  preprocess(a);
  CHECK(fs::file_size(dir / "rows.bin") == 64 + 160 * (200 + 40));
  // The binary file holds both days; as one day it must equal the text days concatenated.
  std::string cat = slurp(days[0]) + slurp(days[1]) + "\n";
  put(dir / "cat.tsv", cat);
  PreprocessOptions t = base({dir / "cat.tsv"}, dir / "t");
  PreprocessOptions b = base({dir / "rows.bin"}, dir / "b");
  b.input_format = InputFormat::bin;
  CHECK(preprocess(t).rows == 240);
  CHECK(preprocess(b).rows == 240);
  check_same_files(t.out_dir, b.out_dir, kDay0);
  // Two binary days kept mapped between the passes (the decode cache of binary input), or
  // mapped again in pass 2, in chunks of 64 KiB: the same bytes either way.
  fs::copy_file(dir / "rows.bin", dir / "rows2.bin");
  auto two_days = [&](const char* name, DecodeCache cache, bool single) {
    PreprocessOptions o = base({dir / "rows.bin", dir / "rows2.bin"}, dir / name);
    o.input_format = InputFormat::bin;
    o.chunk_bytes = size_t{64} << 10;
    o.decode_cache = cache;
    o.single_pass = single;
    return preprocess(o);
  };
  CHECK(two_days("kept", DecodeCache::auto_select, false).decode_cache);
  CHECK_FALSE(two_days("off", DecodeCache::off, false).decode_cache);
  CHECK(two_days("once", DecodeCache::auto_select, true).single_pass);
  for (const char* other : {"off", "once"})
    check_same_files(dir / "kept", dir / other,
                     {"day_0_dense.npy", "day_0_sparse.npy", "day_0_labels.npy", "day_1_dense.npy",
                      "day_1_sparse.npy", "day_1_labels.npy"});
  check_same_files(dir / "kept", dir / "b", kDay0);
  put(dir / "short.bin", slurp(dir / "rows.bin").substr(0, 64 + 160 * 3 + 7));
  PreprocessOptions s = base({dir / "short.bin"}, dir / "s");
  CHECK_THROWS_WITH_AS(preprocess(s), doctest::Contains("truncated binary row"), Error);
}

TEST_CASE("a malformed row is reported with its file and line, across chunks") {
  fs::path dir = scratch("bad_row");
  std::string rows = slurp(kSamples / "deepctr_200.tsv"), all;
  for (int i = 0; i < 30; ++i) all += rows;
  size_t pos = 0;
  for (int line = 1; line < 4321; ++line) pos = all.find('\n', pos) + 1;
  all.insert(pos, "1\t2\t3\n");  // line 4321
  put(dir / "bad.tsv", all);
  PreprocessOptions o = base({dir / "bad.tsv"}, dir / "out");
  o.chunk_bytes = 64 << 10;
  try {
    preprocess(o);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()) ==
          (dir / "bad.tsv").string() + ":4321: too few fields (3, expected 40)");
  }
  CHECK_FALSE(fs::exists(dir / "out" / "day_0_dense.npy"));
  o.on_bad_row = BadRowPolicy::skip;
  std::vector<std::string> warnings;
  o.warning = [&](const std::string& w) { warnings.push_back(w); };
  PreprocessStats s = preprocess(o);
  CHECK(s.rows == 6000);
  CHECK(s.bad_rows == 1);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(":4321: too few fields") != std::string::npos);
}

TEST_CASE("the DeepCTR CSV file is rejected as malformed input") {
  fs::path out = scratch("csv");
  PreprocessOptions o = base({fs::path(DLPREP_SAMPLE_DATA) / "criteo" / "deepctr_200.tsv"}, out);
  put(out / "x.csv", "label,I1,I2\n0,1.0,2\n");
  o.inputs = {out / "x.csv"};
  CHECK_THROWS_WITH_AS(preprocess(o), doctest::Contains("x.csv:1: field 1 (label)"), Error);
}

TEST_CASE("a rerun reuses the vocabulary and the finished days; new settings rewrite them") {
  fs::path out = scratch("resume");
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz"}, out);
  o.resume = true;
  PreprocessStats first = preprocess(o);
  CHECK_FALSE(first.vocab_reused);
  std::string before = slurp(out / "day_1_sparse.npy");
  PreprocessStats second = preprocess(o);
  CHECK(second.vocab_reused);
  CHECK(second.days[0].skipped);
  CHECK(second.days[1].skipped);
  CHECK(second.rows == first.rows);
  CHECK(second.cardinality == first.cardinality);
  fs::remove(out / "day_1_dense.npy");  // as if interrupted while writing day 1
  PreprocessStats third = preprocess(o);
  CHECK(third.days[0].skipped);
  CHECK_FALSE(third.days[1].skipped);
  CHECK(slurp(out / "day_1_sparse.npy") == before);
  o.log_offset = 3;
  PreprocessStats fourth = preprocess(o);
  CHECK(fourth.vocab_reused);
  CHECK_FALSE(fourth.days[0].skipped);
}

TEST_CASE(
    "a run removes its layout's files of days an earlier run into OUTDIR had and it has not") {
  fs::path out = scratch("stale_days");
  const fs::path day = kSamples / "deepctr_200.tsv";
  PreprocessOptions o = base({day, day, day}, out);
  preprocess(o);
  REQUIRE(fs::exists(out / "day_2_sparse.npy"));
  put(out / "day_2_notes.txt", "mine\n");  // not a file of the layout: kept
  o.output_format = OutputFormat::dlrm;
  o.apply_log = false;
  preprocess(o);  // day_0.bin .. day_2.bin beside the npy files: another layout, left alone
  o = base({day, day}, out);
  PreprocessStats two = preprocess(o);
  CHECK(two.removed_outputs ==
        std::vector<std::string>{"day_2_dense.npy", "day_2_sparse.npy", "day_2_labels.npy"});
  CHECK_FALSE(fs::exists(out / "day_2_sparse.npy"));
  CHECK(fs::exists(out / "day_2_notes.txt"));
  CHECK(fs::exists(out / "day_2.bin"));
  CHECK(fs::exists(out / "day_1_sparse.npy"));
  // Splitting the last day now: day_1's files go, test and val come; and back again.
  o.split_last = SplitLast::test_val;
  CHECK(preprocess(o).removed_outputs.size() == 3);
  CHECK_FALSE(fs::exists(out / "day_1_sparse.npy"));
  CHECK(fs::exists(out / "test_sparse.npy"));
  o.split_last = SplitLast::none;
  CHECK(preprocess(o).removed_outputs.size() == 6);
  CHECK_FALSE(fs::exists(out / "test_sparse.npy"));
  CHECK_FALSE(fs::exists(out / "val_sparse.npy"));
  CHECK(preprocess(o).removed_outputs.empty());
  // Another tool's arrays (TorchRec's scripts write day_N_*.npy): OUTDIR holds no record of a
  // run, so none is removed; then, with a run's record of 2 days, day_5's stay all the same.
  const fs::path theirs = scratch("stale_days_theirs");
  for (const char* f : {"day_1_sparse.npy", "day_5_sparse.npy", "test_sparse.npy"})
    put(theirs / f, "theirs\n");
  PreprocessOptions mine = base({day}, theirs);
  CHECK(preprocess(mine).removed_outputs.empty());
  CHECK(fs::exists(theirs / "day_1_sparse.npy"));
  CHECK(fs::exists(theirs / "test_sparse.npy"));
  mine.inputs = {day, day};
  preprocess(mine);
  mine.inputs = {day};
  CHECK(preprocess(mine).removed_outputs ==
        std::vector<std::string>{"day_1_dense.npy", "day_1_sparse.npy", "day_1_labels.npy"});
  CHECK(fs::exists(theirs / "day_5_sparse.npy"));
}

TEST_CASE("an input whose name is not UTF-8 runs, is named %XX in the JSON files, and resumes") {
  fs::path out = scratch("latin1_input");
  const fs::path input = out.parent_path() / "latin1_day_\xe9.tsv";
  fs::copy_file(kSamples / "deepctr_200.tsv", input, fs::copy_options::overwrite_existing);
  PreprocessOptions o = base({input}, out);
  o.resume = true;
  PreprocessStats first = preprocess(o);
  CHECK(first.days[0].input == (out.parent_path() / "latin1_day_%E9.tsv").string());
  CHECK(slurp(out / "stats.json").find("latin1_day_%E9.tsv") != std::string::npos);
  PreprocessStats again = preprocess(o);
  CHECK(again.days[0].skipped);  // state.json's identity of the input matched
}

TEST_CASE("vocab_from applies an earlier vocabulary: the same IDs, unseen values OOV") {
  fs::path dir = scratch("vocab_from");
  PreprocessOptions again = with_trained_vocab({kSamples / "deepctr_200.tsv"}, dir);
  PreprocessStats s = preprocess(again);
  CHECK(s.vocab_reused);
  check_same_files(dir / "train", again.out_dir, kDay0);
  PreprocessOptions test = base({kSamples / "nvtabular_day_0.gz"}, dir / "test");
  test.vocab_from = dir / "train" / "vocab";
  CHECK(preprocess(test).rows == 1000);
  PreprocessOptions clash = base({kSamples / "deepctr_200.tsv"}, dir / "clash");
  clash.modulus.fill(7);
  clash.vocab_from = dir / "train";
  CHECK_THROWS_AS(preprocess(clash), Error);
  // Into the directory of the vocabulary's run, whose day files it would replace: refused.
  const std::string train_day = slurp(dir / "train" / "day_0_sparse.npy");
  for (const fs::path& from : {dir / "train", dir / "train" / "vocab"}) {
    PreprocessOptions over = base({kSamples / "nvtabular_day_0.gz"}, dir / "train");
    over.modulus = {};
    over.vocab_from = from;
    CHECK_THROWS_WITH_AS(preprocess(over), doctest::Contains("holds the --vocab-from vocabulary"),
                         Error);
  }
  CHECK(slurp(dir / "train" / "day_0_sparse.npy") == train_day);
}

TEST_CASE("a vocab_from run reads its inputs once and writes what two passes write") {
  fs::path dir = scratch("vocab_from_single");
  PreprocessOptions train = base({big_day(dir)}, dir / "train");
  preprocess(train);
  // Days with values the vocabulary lacks (OOV); one with a bad row to skip.
  put(dir / "bad.tsv",
      slurp(kSamples / "edge_cases.tsv") + "1\t2\t3\n" + slurp(kSamples / "deepctr_200.tsv"));
  PreprocessOptions e = base({kSamples / "deepctr_200.tsv"}, dir / "emit");
  e.emit_binary = dir / "rows.bin";
  e.output_format = OutputFormat::none;
  preprocess(e);
  const fs::path bad_day = dir / "bad.tsv", edge = kSamples / "edge_cases.tsv";
  struct Variant {
    const char* name;
    OutputFormat format;
    SplitLast split;
    fs::path last;  // bad.tsv's bad row is skipped (split: its valid rows counted first)
  };
  size_t index = 0;
  for (const Variant& v :
       {Variant{"npy", OutputFormat::npy, SplitLast::none, bad_day},
        Variant{"split_layout", OutputFormat::split, SplitLast::none, edge},
        Variant{"dlrm_test_val", OutputFormat::dlrm, SplitLast::test_val, edge},
        Variant{"npy_val_test_skip", OutputFormat::npy, SplitLast::val_test, bad_day},
        Variant{"binary_last", OutputFormat::npy, SplitLast::val_test, dir / "rows.bin"}}) {
    INFO(std::string(v.name));
    const bool bad_rows = v.last == bad_day;
    const std::vector<fs::path> days = {kSamples / "nvtabular_day_0.gz", dir / "big.tsv", v.last};
    const bool emit = index++ % 2 == 0;  // --emit-binary: pass 2 alone hands back the rows too
    const auto emitted = [&](bool single) {
      return dir / (std::string(v.name) + (single ? "_1" : "_2") + ".bin");
    };
    const auto run = [&](bool single) {
      PreprocessOptions o = base(days, dir / (std::string(v.name) + (single ? "_1" : "_2")));
      if (emit) o.emit_binary = emitted(single);
      o.modulus = {};
      o.vocab_from = dir / "train";
      o.output_format = v.format;
      o.apply_log = v.format != OutputFormat::dlrm;
      o.id_base = 2;
      o.oov_id = 1;
      o.split_last = v.split;
      o.on_bad_row = bad_rows ? BadRowPolicy::skip : BadRowPolicy::error;
      o.chunk_bytes = size_t{64} << 10;
      o.single_pass = single;
      o.resume = true;  // state.json: the same either way
      PreprocessStats s = preprocess(o);
      CHECK(s.single_pass == single);
      CHECK(s.vocab_reused);
      CHECK(s.decode_cache == !single);  // two passes: pass 1's decoded rows or mapping
      CHECK(s.bad_rows == (bad_rows ? 1 : 0));
      return s;
    };
    const PreprocessStats two = run(false), one = run(true);
    if (emit) {
      CHECK(fs::file_size(emitted(false)) == 64 + 160 * two.rows);
      CHECK(slurp(emitted(true)) == slurp(emitted(false)));
    }
    CHECK(one.rows == two.rows);
    CHECK(one.cardinality == two.cardinality);
    for (size_t d = 0; d < days.size(); ++d)
      CHECK(one.days[d].input_bytes == two.days[d].input_bytes);
    std::vector<std::string> stems = {"day_0", "day_1", "day_2"};
    if (v.split != SplitLast::none) stems.back() = "test", stems.push_back("val");
    std::vector<std::string> files;
    for (const auto& stem : stems)
      for (const auto& f : output_files(v.format, "", stem)) files.push_back(f.string());
    const fs::path out2 = dir / (std::string(v.name) + "_2"),
                   out1 = dir / (std::string(v.name) + "_1");
    check_same_files(out2, out1, files);
    // state.json also records each run's own day files (their sizes, mtimes and inodes) and
    // --emit-binary FILE.
    json state2 = json::parse(slurp(out2 / "state.json")),
         state1 = json::parse(slurp(out1 / "state.json"));
    CHECK(state2["day_files"].size() == state2["days_done"].size());
    for (json* state : {&state2, &state1}) {
      state->erase("day_files");
      if (emit) {
        // One record, under its run's own FILE.
        REQUIRE((*state)["emit_files"].size() == 1);
        json record = state->at("emit_files").begin().value();
        record["record"].erase("file");
        (*state)["emit_files"] = record;
      }
    }
    CHECK(state2 == state1);
  }
}

TEST_CASE("a vocab_from rerun leaves --emit-binary's FILE as it is while it is complete") {
  fs::path dir = scratch("vocab_from_emit_rerun");
  PreprocessOptions train = base({kSamples / "deepctr_200.tsv"}, dir / "train");
  preprocess(train);
  for (bool single : {false, true}) {
    INFO("single pass " << single);
    const std::string name = single ? "one" : "two";
    PreprocessOptions o =
        base({kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz"}, dir / name);
    o.modulus = {};
    o.vocab_from = dir / "train";
    o.resume = true;
    o.single_pass = single;
    o.emit_binary = dir / (name + ".bin");
    CHECK(preprocess(o).single_pass == single);
    const std::string rows = slurp(*o.emit_binary);
    const auto written = fs::last_write_time(*o.emit_binary);
    PreprocessStats again = preprocess(o);
    CHECK(again.days[0].skipped);
    CHECK(again.days[1].skipped);
    CHECK(fs::last_write_time(*o.emit_binary) == written);
    // A day's files gone: that day is redone, and FILE still left alone.
    fs::remove(o.out_dir / "day_1_dense.npy");
    again = preprocess(o);
    CHECK_FALSE(again.days[1].skipped);
    CHECK(fs::last_write_time(*o.emit_binary) == written);
    // FILE changed since: written again, whole. A single pass so reads and writes every day;
    // two passes write it in the first, which reads every day anyway.
    fs::resize_file(*o.emit_binary, 64);
    again = preprocess(o);
    CHECK(again.days[0].skipped == !single);
    CHECK(slurp(*o.emit_binary) == rows);
    // Other inputs: another FILE.
    o.inputs = {kSamples / "deepctr_200.tsv"};
    preprocess(o);
    CHECK(slurp(*o.emit_binary) != rows);
    // --emit-binary added to an OUTDIR whose days are all done: written once, then kept (no
    // checkpoint after FILE but the one that records it).
    PreprocessOptions added = o;
    added.out_dir = dir / (name + "_added");
    added.emit_binary.reset();
    preprocess(added);
    added.emit_binary = dir / (name + "_added.bin");
    preprocess(added);
    const auto added_written = fs::last_write_time(*added.emit_binary);
    preprocess(added);
    CHECK(fs::last_write_time(*added.emit_binary) == added_written);
  }
  // Without outputs (--output-format none) there is no pass 2 to checkpoint: FILE is kept too.
  PreprocessOptions none = base({kSamples / "deepctr_200.tsv"}, dir / "none");
  none.modulus = {};
  none.vocab_from = dir / "train";
  none.resume = true;
  none.output_format = OutputFormat::none;
  none.emit_binary = dir / "none.bin";
  preprocess(none);
  const auto none_written = fs::last_write_time(*none.emit_binary);
  preprocess(none);
  CHECK(fs::last_write_time(*none.emit_binary) == none_written);
  // Into an OUTDIR whose days a run with outputs wrote: they stay recorded, so that run's rerun
  // still finds them up to date, and FILE is kept as well.
  PreprocessOptions days = none;
  days.out_dir = dir / "days";
  days.output_format = PreprocessOptions().output_format;
  days.emit_binary.reset();
  preprocess(days);
  none.out_dir = days.out_dir;
  none.emit_binary = dir / "days.bin";
  preprocess(none);
  const auto days_bin_written = fs::last_write_time(*none.emit_binary);
  CHECK(preprocess(days).days[0].skipped);
  preprocess(none);
  CHECK(fs::last_write_time(*none.emit_binary) == days_bin_written);
}

TEST_CASE("runs sharing an OUTDIR keep each other's --emit-binary FILE and vocabulary") {
  fs::path dir = scratch("shared_outdir_emit");
  PreprocessOptions train = base({kSamples / "deepctr_200.tsv"}, dir / "train");
  preprocess(train);
  // The arrays' run: its own vocabulary, or --vocab-from with a FILE of its own.
  PreprocessOptions own = base({kSamples / "deepctr_200.tsv"}, dir / "out");
  own.resume = true;
  PreprocessOptions from = own;
  from.modulus = {};
  from.vocab_from = dir / "train";
  from.emit_binary = dir / "from.bin";
  // A run that writes only its FILE into the same OUTDIR.
  PreprocessOptions none = from;
  none.output_format = OutputFormat::none;
  none.emit_binary = dir / "none.bin";
  for (PreprocessOptions* arrays : {&own, &from}) {
    const std::string vocabulary = arrays->vocab_from ? "--vocab-from" : "their own vocabulary";
    INFO("arrays with " << vocabulary);
    fs::remove_all(own.out_dir);
    const PreprocessStats first = preprocess(*arrays);
    // OUTDIR's stats.json stays the arrays' (their counts, their num_embeddings).
    const std::string arrays_stats = slurp(own.out_dir / "stats.json");
    preprocess(none);
    CHECK(slurp(own.out_dir / "stats.json") == arrays_stats);
    const auto none_written = fs::last_write_time(*none.emit_binary);
    const auto stats_written = fs::last_write_time(none.out_dir / "stats.json");
    // The arrays' rerun writes nothing: their vocabulary, days and FILE are all still there.
    CHECK(fs::exists(own.out_dir / "vocab" / "vocab.json") == !arrays->vocab_from);
    const auto state_written = fs::last_write_time(own.out_dir / "state.json");
    const PreprocessStats again = preprocess(*arrays);
    CHECK(again.days[0].skipped);
    CHECK(fs::last_write_time(own.out_dir / "state.json") == state_written);
    // The FILE-only rerun reads nothing, writes nothing, and reports the counts of its run.
    const PreprocessStats none_again = preprocess(none);
    CHECK(none_again.days[0].skipped);
    CHECK(none_again.days[0].rows == first.days[0].rows);
    CHECK(fs::last_write_time(*none.emit_binary) == none_written);
    CHECK(fs::last_write_time(none.out_dir / "stats.json") == stats_written);
    // A rerun of the arrays that writes state.json anew (another --id-base) keeps the record.
    PreprocessOptions changed = *arrays;
    changed.id_base = 5;
    CHECK_FALSE(preprocess(changed).days[0].skipped);
    preprocess(none);
    CHECK(fs::last_write_time(*none.emit_binary) == none_written);
    // So does one that runs its pass again from scratch (its state.json replaced first).
    changed = *arrays;
    changed.resume = false;
    preprocess(changed);
    CHECK(preprocess(none).days[0].skipped);
    CHECK(fs::last_write_time(*none.emit_binary) == none_written);
    // A record whose FILE changed since is dropped by the next state.json, and FILE written again.
    fs::resize_file(*none.emit_binary, 64);
    changed.id_base = 7;
    preprocess(changed);
    CHECK(json::parse(slurp(own.out_dir / "state.json"))["emit_files"].size() ==
          (arrays->emit_binary ? 1u : 0u));
    CHECK_FALSE(preprocess(none).days[0].skipped);
    CHECK(fs::file_size(*none.emit_binary) == 64 + 160 * first.days[0].rows);
  }
  // A state.json edited to nest deeper than the dump that writes it back could recurse: not
  // read, and replaced.
  std::ofstream(own.out_dir / "state.json")
      << R"({"schema": "dlprep.criteo-state/1", "emit_files": {"x": )" << std::string(100000, '[')
      << std::string(100000, ']') << "}}";
  preprocess(from);
  CHECK(json::parse(slurp(own.out_dir / "state.json"))["emit_files"].size() == 1);
}

TEST_CASE("vocab_from refuses a vocabulary whose run is writing it, and holds it while read") {
  fs::path dir = scratch("vocab_from_locked");
  PreprocessOptions test = with_trained_vocab({kSamples / "nvtabular_day_0.gz"}, dir);
  {
    DirectoryLock writing(dir / "train");  // as a training rerun into it holds it
    try {
      preprocess(test);
      FAIL("read a vocabulary being written");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::invalid_argument);
      CHECK(std::string(e.what()).find("another dlprep run is writing into it") !=
            std::string::npos);
    }
  }
  CHECK(preprocess(test).rows == 1000);
  // Released once read: a training rerun can take the directory again.
  CHECK_NOTHROW(DirectoryLock(dir / "train"));
}

TEST_CASE("an --emit-binary FILE keeps its record under a name not UTF-8, or another spelling") {
  fs::path dir = scratch("emit_file_names");
  PreprocessOptions none = with_trained_vocab({kSamples / "deepctr_200.tsv"}, dir);
  none.resume = true;
  none.output_format = OutputFormat::none;
  fs::create_directory(dir / "real");
  fs::create_directory_symlink("real", dir / "linked");
  PreprocessOptions other = none;
  other.emit_binary = dir / "other.bin";
  // Each run in turn: any run's state.json carries the other's record, so neither is rewritten.
  for (const fs::path& file : {dir / "B\xff.bin", dir / "linked" / "T.bin"}) {
    INFO(file.string());
    none.emit_binary = file;
    preprocess(none);
    preprocess(other);
    const auto written = fs::last_write_time(file);
    if (file.parent_path().filename() == "linked") none.emit_binary = dir / "real" / "T.bin";
    CHECK(preprocess(none).days[0].skipped);
    preprocess(other);
    CHECK(preprocess(none).days[0].skipped);
    CHECK(fs::last_write_time(file) == written);
  }
  // "B%FF.bin" escapes to the key of "B\xff.bin": the same size and time make it no FILE of it.
  const fs::path look_alike = dir / "B%FF.bin";
  std::ofstream(look_alike) << std::string(fs::file_size(dir / "B\xff.bin"), '\0');
  fs::last_write_time(look_alike, fs::last_write_time(dir / "B\xff.bin"));
  none.emit_binary = look_alike;
  CHECK_FALSE(preprocess(none).days[0].skipped);
  CHECK(slurp(look_alike) == slurp(dir / "B\xff.bin"));
}

TEST_CASE("a vocab_from single pass resumes from state.json, with the counts it records") {
  fs::path dir = scratch("vocab_from_resume");
  PreprocessOptions o =
      with_trained_vocab({kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz"}, dir);
  o.resume = true;
  // Complete, then rerun: every day skipped with its counts; a day whose files went is redone.
  const PreprocessStats first = preprocess(o);
  CHECK(first.single_pass);
  CHECK(first.rows == 1200);
  const std::string before = slurp(o.out_dir / "day_1_sparse.npy");
  const auto state_written = fs::last_write_time(o.out_dir / "state.json");
  PreprocessStats again = preprocess(o);
  CHECK(again.days[0].skipped);
  CHECK(again.days[1].skipped);
  CHECK(again.rows == 1200);
  CHECK(again.days[1].input_bytes == first.days[1].input_bytes);
  // Nothing written, not even the same state.json anew (a Makefile rule on it would rerun).
  CHECK(fs::last_write_time(o.out_dir / "state.json") == state_written);
  // The vocabulary named another way (its vocab/ folder, through "."): the same one.
  PreprocessOptions spelled = o;
  spelled.vocab_from = dir / "." / "train" / "vocab";
  CHECK(preprocess(spelled).days[1].skipped);
  CHECK(fs::last_write_time(o.out_dir / "state.json") == state_written);
  // Without outputs, the reused vocabulary is all there is: every day is up to date.
  PreprocessOptions none = base({kSamples / "deepctr_200.tsv"}, dir / "none");
  none.output_format = OutputFormat::none;
  none.resume = true;
  CHECK_FALSE(preprocess(none).days[0].skipped);
  const auto stats_written = fs::last_write_time(none.out_dir / "stats.json");
  CHECK(preprocess(none).days[0].skipped);
  CHECK(fs::last_write_time(none.out_dir / "stats.json") == stats_written);
  fs::remove(o.out_dir / "day_1_dense.npy");
  again = preprocess(o);
  CHECK(again.days[0].skipped);
  CHECK_FALSE(again.days[1].skipped);
  CHECK(again.rows == 1200);
  CHECK(slurp(o.out_dir / "day_1_sparse.npy") == before);
  // A damaged state.json (a negative count) only means that the days are read again.
  std::string state = slurp(o.out_dir / "state.json");
  const size_t at = state.find("\"rows\": 200\n");
  REQUIRE(at != std::string::npos);
  put(o.out_dir / "state.json", state.replace(at, 11, "\"rows\": -200"));
  again = preprocess(o);
  CHECK_FALSE(again.days[0].skipped);
  CHECK_FALSE(again.days[1].skipped);
  CHECK(again.days[0].rows == 200);
  // Another bad-row policy is another output setting: everything is written again.
  o.on_bad_row = BadRowPolicy::skip;
  again = preprocess(o);
  CHECK_FALSE(again.days[0].skipped);
  // With --emit-binary no day is skipped: its file holds the rows of every day.
  o.emit_binary = dir / "rows.bin";
  again = preprocess(o);
  CHECK(again.single_pass);
  CHECK_FALSE(again.days[0].skipped);
  CHECK_FALSE(again.days[1].skipped);
  CHECK(fs::file_size(dir / "rows.bin") == 64 + 160 * 1200);
}

TEST_CASE("a vocabulary records its run's conventions, which a vocab_from run can take") {
  fs::path dir = scratch("vocab_conventions");
  PreprocessOptions train = base({kSamples / "deepctr_200.tsv"}, dir / "torchrec");
  apply_preset("torchrec", train);
  train.split_last = SplitLast::none;
  train.min_freq = 2;
  preprocess(train);
  PreprocessOptions o;
  apply_vocab_conventions(dir / "torchrec", o);
  CHECK(o.min_freq == 2);
  CHECK(o.id_base == 2);
  CHECK(o.oov_id == std::optional<int64_t>(1));
  CHECK(o.apply_log);
  CHECK(o.log_offset == 3);
  CHECK(o.output_format == OutputFormat::npy);
  CHECK(o.split_last == SplitLast::none);  // a choice of each run, not a convention
  // The dlrm layout and no OOV ID of its own; a vocabulary-only run leaves the layout alone.
  PreprocessOptions dlrm = base({kSamples / "deepctr_200.tsv"}, dir / "dlrm");
  apply_preset("dlrm", dlrm);
  preprocess(dlrm);
  apply_vocab_conventions(dir / "dlrm" / "vocab", o);
  CHECK(o.id_base == 0);
  CHECK_FALSE(o.oov_id.has_value());
  CHECK_FALSE(o.apply_log);
  CHECK(o.output_format == OutputFormat::dlrm);
  PreprocessOptions none = base({kSamples / "deepctr_200.tsv"}, dir / "none");
  none.output_format = OutputFormat::none;
  none.log_offset = 5;
  preprocess(none);
  apply_vocab_conventions(dir / "none", o);
  CHECK(o.log_offset == 5);
  CHECK(o.output_format == OutputFormat::dlrm);
  // min_freq 0 (NVTabular's freq_threshold=0) keeps every value, as 1 does, and is recorded as 1,
  // so that a vocab_from run takes it.
  PreprocessOptions all = base({kSamples / "deepctr_200.tsv"}, dir / "all");
  all.min_freq = 0;
  const PreprocessStats kept_all = preprocess(all);
  apply_vocab_conventions(dir / "all", o);
  CHECK(o.min_freq == 1);
  CHECK(kept_all.kept == kept_all.cardinality);
  PreprocessOptions applied = base({kSamples / "deepctr_200.tsv"}, dir / "applied");
  applied.vocab_from = dir / "all";
  CHECK(preprocess(applied).num_embeddings == kept_all.num_embeddings);
  // Damaged fields are corrupt data naming the file, and change nothing.
  const fs::path vj = dir / "torchrec" / "vocab" / "vocab.json";
  const std::string good = slurp(vj);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"id_base\": 2", "\"id_base\": -2"},
           {"\"oov_id\": 1", "\"oov_id\": 1.5"},
           {"\"min_freq\": 2", "\"min_freq\": -1"},
           {"\"log_offset\": 3.0", "\"log_offset\": -1"},
           {"\"output_format\": \"npy\"", "\"output_format\": \"csv\""},
           {"\"apply_log\": true", "\"apply_log\": 1"},
           {"\"apply_log\": true,", ""}}) {
    INFO(from << " -> " << to);
    std::string bad = good;
    const size_t at = bad.find(from);
    REQUIRE(at != std::string::npos);
    put(vj, bad.replace(at, from.size(), to));
    PreprocessOptions kept;
    CHECK_THROWS_WITH_AS(apply_vocab_conventions(dir / "torchrec", kept),
                         doctest::Contains("vocab.json: bad conventions"), Error);
    CHECK(kept.id_base == 0);
  }
  // A vocabulary of an older dlprep, without them: the options stay as they are.
  std::string old = good;
  const size_t from = old.find("  \"conventions\"");
  REQUIRE(from != std::string::npos);
  old.erase(from, old.find('}', from) + 3 - from);
  put(vj, old);
  PreprocessOptions same;
  apply_vocab_conventions(dir / "torchrec", same);
  CHECK(same.id_base == 0);
  CHECK(same.log_offset == kDefaultLogOffset);
}

TEST_CASE("num_embeddings holds every ID of each column, the OOV ID included") {
  fs::path dir = scratch("num_embeddings");
  // Each column's largest ID in a day's sparse array.
  const auto largest_ids = [](const fs::path& sparse) {
    const NpyArray a = read_npy(sparse);
    REQUIRE(a.descr == "<i4");
    REQUIRE(a.cols == kNumSparse);
    std::array<int64_t, kNumSparse> top;
    top.fill(-1);
    const auto* ids = reinterpret_cast<const int32_t*>(a.data.data());
    for (uint64_t r = 0; r < a.rows; ++r)
      for (int j = 0; j < kNumSparse; ++j)
        top[j] = std::max<int64_t>(top[j], ids[r * kNumSparse + j]);
    return top;
  };
  struct Variant {
    const char* preset;
    int64_t extra;  // rows beyond the kept values: the IDs below id_base, or the OOV ID after them
  };
  for (const Variant& v : {Variant{"piper", 1}, Variant{"torchrec", 2}}) {
    INFO(v.preset);
    PreprocessOptions train = base({kSamples / "deepctr_200.tsv"}, dir / v.preset);
    apply_preset(v.preset, train);
    const PreprocessStats s = preprocess(train);
    const auto top = largest_ids(train.out_dir / "day_0_sparse.npy");
    for (int j = 0; j < kNumSparse; ++j) {
      CHECK(s.num_embeddings[j] == s.kept[j] + v.extra);
      CHECK(top[j] < static_cast<int64_t>(s.num_embeddings[j]));
    }
    // Days with values the vocabulary lacks get the OOV ID, which the tables hold too.
    PreprocessOptions test =
        base({kSamples / "nvtabular_day_0.gz"}, dir / (std::string(v.preset) + "_test"));
    test.modulus = {};
    test.vocab_from = train.out_dir;
    apply_vocab_conventions(train.out_dir, test);
    const PreprocessStats t = preprocess(test);
    CHECK(t.num_embeddings == s.num_embeddings);
    const auto test_top = largest_ids(test.out_dir / "day_0_sparse.npy");
    bool largest_reached = false;
    for (int j = 0; j < kNumSparse; ++j) {
      CHECK(test_top[j] < static_cast<int64_t>(t.num_embeddings[j]));
      largest_reached |= test_top[j] + 1 == static_cast<int64_t>(t.num_embeddings[j]);
    }
    CHECK(largest_reached);
  }
}

TEST_CASE("a damaged --vocab-from vocabulary is corrupt data naming the file, never a crash") {
  fs::path dir = scratch("vocab_from_damaged");
  PreprocessOptions train = base({kSamples / "deepctr_200.tsv"}, dir / "train");
  preprocess(train);
  const fs::path vocab = dir / "train" / "vocab";
  const std::string good_json = slurp(vocab / "vocab.json");
  const std::string good_npy = slurp(vocab / "C3_values.npy");
  auto damaged = [&](const std::string& file, const std::string& from, const std::string& to) {
    const std::string good = file == "vocab.json" ? good_json : good_npy;
    std::string bad = good;
    size_t at = bad.find(from);
    REQUIRE(at != std::string::npos);
    bad.replace(at, from.size(), to);
    put(vocab / file, bad);
    PreprocessOptions o = base({kSamples / "deepctr_200.tsv"}, dir / "out");
    o.modulus = {};
    o.vocab_from = dir / "train";
    std::string message;
    try {
      preprocess(o);
    } catch (const Error& e) {
      CHECK(e.code() == Errc::corrupt_data);
      message = e.what();
    }
    put(vocab / file, good);
    return message;
  };
  // A negative or fractional modulus (nlohmann would wrap or truncate it); a schema not ours.
  CHECK(damaged("vocab.json", "5000", "-1").find("vocab.json: bad modulus list") !=
        std::string::npos);
  CHECK(damaged("vocab.json", "5000", "50.5").find("vocab.json") != std::string::npos);
  CHECK(damaged("vocab.json", "dlprep.criteo-vocab/1", "x").find("not a dlprep vocabulary") !=
        std::string::npos);
  // .npy shapes whose byte count overflows 64 bits to the true size, or that do not parse.
  const std::string rows = good_npy.substr(good_npy.find("'shape': (") + 10);
  const std::string n = rows.substr(0, rows.find(','));
  const uint64_t wrapped = (uint64_t{1} << 62) + std::stoull(n);  // x 4 bytes == 4 n (mod 2^64)
  CHECK(damaged("C3_values.npy", "(" + n + ",", "(" + std::to_string(wrapped) + ",")
            .find("C3_values.npy: data size does not match shape") != std::string::npos);
  CHECK(damaged("C3_values.npy", "(" + n + ",", "(99999999999999999999999,")
            .find("C3_values.npy: bad .npy shape") != std::string::npos);
  CHECK(damaged("C3_values.npy", "<u4", "<uX").find("unsupported dtype") != std::string::npos);
  // Restored, it is accepted again.
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv"}, dir / "out");
  o.modulus = {};
  o.vocab_from = dir / "train";
  CHECK(preprocess(o).vocab_reused);
}

TEST_CASE("the last day splits into halves in DLRM or TorchRec order") {
  fs::path out = scratch("split");
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv", kSamples / "edge_cases.tsv"}, out);
  o.split_last = SplitLast::val_test;
  preprocess(o);
  CHECK(fs::exists(out / "day_0_dense.npy"));
  CHECK_FALSE(fs::exists(out / "day_1_dense.npy"));
  // 40 rows: 20 + 20; labels are int32 (N,1) after a 128-byte header.
  CHECK(fs::file_size(out / "val_labels.npy") == 128 + 20 * 4);
  CHECK(fs::file_size(out / "test_labels.npy") == 128 + 20 * 4);
}

TEST_CASE("options are validated and unavailable devices refused with their reason") {
  fs::path out = scratch("options");
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv"}, out);
  o.device = Device::cuda;
  if (!criteo_cuda_unavailable_reason().empty()) {  // on a GPU machine cuda simply runs
    try {
      preprocess(o);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::device_unavailable);
      CHECK(std::string(e.what()) == "--device cuda: " + criteo_cuda_unavailable_reason());
    }
  }
  o.device = Device::fpga;
  CHECK_THROWS_AS(preprocess(o), Error);
  o.device = Device::cpu;
  o.output_format = OutputFormat::dlrm;  // integer dense values need --no-log
  CHECK_THROWS_AS(preprocess(o), Error);
  o.output_format = OutputFormat::npy;
  o.max_memory_bytes = 1 << 20;
  CHECK_THROWS_WITH_AS(preprocess(o), doctest::Contains("--max-memory"), Error);
  CHECK(parse_modulus_list("5000")[25] == 5000);
  CHECK_THROWS_AS(parse_modulus_list("1,2"), Error);
  CHECK_THROWS_AS(parse_modulus_list("x"), Error);
  // Decimal with a plus sign allowed, as every integer option of the CLI reads its number.
  CHECK(parse_modulus_list("+5000")[0] == 5000);
  CHECK(parse_modulus_list("0100")[0] == 100);
  CHECK_THROWS_AS(parse_modulus_list("+"), Error);
  CHECK_THROWS_AS(parse_modulus_list("-5"), Error);
  CHECK_THROWS_AS(parse_modulus_list("++5"), Error);
  CHECK_THROWS_AS(apply_preset("nope", o), Error);
  // The last day: MLPerf-v1's test then val files for DLRM; whole for TorchRec, whose loaders
  // split it themselves and would train on val_* and test_* files.
  apply_preset("dlrm", o);
  CHECK(o.split_last == SplitLast::test_val);
  apply_preset("torchrec", o);
  CHECK(o.split_last == SplitLast::none);
  CHECK(o.id_base == 2);
  CHECK(o.oov_id == 1);
}

TEST_CASE("inputs named after days out of their order are a warning, as a shell glob gives them") {
  using Paths = std::vector<fs::path>;
  CHECK(day_order_problem(Paths{"c/day_0.gz", "c/day_1.gz", "c/day_2.gz", "c/day_10.gz"}).empty());
  CHECK(day_order_problem(Paths{"day_1.tsv.gz", "day_7"}).empty());
  CHECK(day_order_problem(Paths{"day_3"}).empty());
  // A shell glob: day_10 before day_2, and the last day is day_9.
  const std::string w = day_order_problem(Paths{"c/day_0", "c/day_1", "c/day_10", "c/day_2"});
  CHECK(w.find("day_10 comes before day_2") != std::string::npos);
  CHECK_FALSE(day_order_problem(Paths{"day_1.tsv", "day_1.tsv.gz"}).empty());
  // Not every input named after its day: no claim about their order.
  CHECK(day_order_problem(Paths{"day_1", "day_0", "train.txt"}).empty());
  CHECK(day_order_problem(Paths{"day_1", "day_0x"}).empty());
  CHECK(day_order_problem(Paths{"day_1", "day_"}).empty());
  CHECK(day_order_problem(Paths{"day_2", "day_12345678901"}).empty());
  // preprocess() says it through its warning callback, and runs.
  fs::path dir = scratch("day_order");
  fs::copy_file(kSamples / "deepctr_200.tsv", dir / "day_1");
  fs::copy_file(kSamples / "edge_cases.tsv", dir / "day_0");
  PreprocessOptions o = base({dir / "day_1", dir / "day_0"}, dir / "out");
  std::vector<std::string> warnings;
  o.warning = [&](const std::string& m) { warnings.push_back(m); };
  CHECK(preprocess(o).rows == 240);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("day_1 comes before day_0") != std::string::npos);
}

TEST_CASE("stats.json carries the schema, rows, cardinalities and peak RSS") {
  fs::path out = scratch("stats");
  PreprocessOptions o = base({kSamples / "nvtabular_day_0.gz"}, out);
  PreprocessStats s = preprocess(o);
  std::string j = slurp(out / "stats.json");
  CHECK(j.find("\"schema\": \"dlprep.criteo-preprocess/1\"") != std::string::npos);
  CHECK(j.find("\"peak_rss_bytes\"") != std::string::npos);
  CHECK(s.peak_rss_bytes > 0);
  CHECK(s.cardinality[0] > 0);
  CHECK(s.kept == s.cardinality);
}

TEST_CASE("a checkpoint whose arrays are newer than its vocab.json is not used") {
  // A checkpoint interrupted between renaming its arrays and its vocab.json: the arrays hold
  // day 1 too, vocab.json says day 0. Resuming from it would count day 1 twice.
  fs::path dir = scratch("torn_checkpoint");
  std::vector<fs::path> days = {kSamples / "deepctr_200.tsv", kSamples / "deepctr_200.tsv"};
  PreprocessOptions o = base(days, dir / "out");
  o.resume = true;
  o.min_freq = 2;
  const PreprocessStats clean = preprocess(o);
  json v = json::parse(slurp(dir / "out" / "vocab" / "vocab.json"));
  v["days_done"] = 1;
  put(dir / "out" / "vocab" / "vocab.json", v.dump());
  const PreprocessStats s = preprocess(o);
  CHECK(s.days_resumed_in_pass1 == 0);
  CHECK(s.num_embeddings == clean.num_embeddings);
}

TEST_CASE("a run interrupted in pass 1 or its single pass continues after the last checkpoint") {
  fs::path dir = scratch("resume_pass1");
  std::vector<fs::path> days = {kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz",
                                kSamples / "edge_cases.tsv"};
  PreprocessOptions clean = base(days, dir / "clean");
  clean.single_pass = false;
  preprocess(clean);
  for (bool single : {false, true}) {
    INFO("single pass " << single);
    PreprocessOptions o = base(days, dir / (single ? "one" : "two"));
    o.resume = true;
    o.checkpoint_seconds = 0;  // checkpoint after every day
    o.single_pass = single;
    // "Crash" when the pass reaches the third day (the progress callback throws).
    const std::string pass = single ? "single pass" : "pass 1";
    o.progress = [&](const ProgressEvent& e) {
      if (e.what == pass && e.item == days[2].string()) throw Error(Errc::interrupted, "stop");
    };
    CHECK_THROWS_AS(preprocess(o), Error);
    CHECK(fs::exists(o.out_dir / "vocab" / "vocab.json"));
    o.progress = nullptr;
    PreprocessStats s = preprocess(o);
    CHECK(s.days_resumed_in_pass1 == 2);
    CHECK(s.single_pass == single);
    CHECK(s.days[0].skipped == single);  // a single pass's checkpoint covers the outputs too
    CHECK_FALSE(s.days[2].skipped);
    CHECK_FALSE(s.vocab_reused);
    CHECK(s.rows == 1240);
    check_same_files(clean.out_dir, o.out_dir,
                     {"day_0_sparse.npy", "day_1_sparse.npy", "day_2_sparse.npy", "day_2_dense.npy",
                      "vocab/C1_values.npy", "vocab/C26_counts.npy"});
  }
}

TEST_CASE(
    "a rerun with other settings that stops midway leaves no complete day of the earlier run") {
  fs::path dir = scratch("stale_state");
  std::vector<fs::path> days = {kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz",
                                kSamples / "edge_cases.tsv"};
  PreprocessOptions o = base(days, dir);
  o.resume = true;
  o.checkpoint_seconds = 0;
  preprocess(o);
  REQUIRE(fs::exists(dir / "state.json"));
  // Another vocabulary (pass 1 runs again, in a single pass): days 0 and 1 are replaced before
  // the "crash" at day 2, whose files are the earlier run's. Its state.json, which says every day
  // is complete, must not survive to vouch for the mix: it lists no day now.
  o.modulus.fill(50);
  o.progress = [&](const ProgressEvent& e) {
    if (e.what == "single pass" && e.item == days[2].string())
      throw Error(Errc::interrupted, "stop");
  };
  CHECK_THROWS_AS(preprocess(o), Error);
  CHECK(json::parse(slurp(dir / "state.json"))["days_done"].empty());
  o.progress = nullptr;
  const PreprocessStats s = preprocess(o);
  CHECK(s.days_resumed_in_pass1 == 2);
  CHECK(fs::exists(dir / "state.json"));
}

TEST_CASE("a day replaced between the passes stops the run instead of mixing two files") {
  fs::path dir = scratch("replaced_between_passes");
  fs::create_directories(dir / "in");
  const std::string rows = slurp(kSamples / "deepctr_200.tsv");
  put(dir / "in" / "day_0.tsv", rows);
  put(dir / "in" / "day_1.tsv", rows);
  PreprocessOptions o = base({dir / "in" / "day_0.tsv", dir / "in" / "day_1.tsv"}, dir / "out");
  o.min_freq = 2;  // two passes, pass 2 reading the days by path
  o.decode_cache = DecodeCache::off;
  bool replaced = false;
  o.progress = [&](const ProgressEvent& e) {
    if (e.what == "pass 2" && !replaced) {
      // What a generator or rsync does: a new file of the same size renamed over the old.
      std::string other = rows;
      std::reverse(other.begin(), other.end() - 1);  // the same bytes, other rows
      put(dir / "in" / "day_1.tsv.new", other);
      fs::rename(dir / "in" / "day_1.tsv.new", dir / "in" / "day_1.tsv");
      replaced = true;
    }
  };
  try {
    preprocess(o);
    FAIL("a replaced day went through");
  } catch (const Error& e) {
    CHECK(replaced);
    CHECK(std::string(e.what()).find("day_1.tsv: the input changed during the run") !=
          std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir / "out" / "day_1_sparse.npy"));
}

TEST_CASE("a day whose files were replaced since its checkpoint is redone, not trusted") {
  // What a run with other settings leaves when it stops after renaming a day file and before its
  // own checkpoint: the earlier checkpoint, and a file of the other run under the day's name.
  std::vector<fs::path> days = {kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz",
                                kSamples / "edge_cases.tsv"};
  const auto replace = [](const fs::path& f) {
    std::string other = slurp(f);
    other.back() = static_cast<char>(other.back() ^ 1);
    put(f, other);
  };
  for (const bool single : {false, true}) {
    INFO(single);
    const fs::path dir = scratch(single ? "replaced_single" : "replaced_two");
    PreprocessOptions o = base(days, dir);
    o.resume = true;
    o.checkpoint_seconds = 0;
    o.single_pass = single;
    const PreprocessStats first = preprocess(o);
    CHECK(first.single_pass == single);
    const std::string want = slurp(dir / "day_1_sparse.npy");
    replace(dir / "day_1_sparse.npy");
    const PreprocessStats again = preprocess(o);
    CHECK_FALSE(again.days[1].skipped);
    CHECK(slurp(dir / "day_1_sparse.npy") == want);
    // As on a file system of 1 s mtimes: another file renamed over it, of the same size and mtime.
    const fs::path other = dir / "other.npy";
    put(other, slurp(dir / "day_1_sparse.npy"));
    replace(other);
    fs::last_write_time(other, fs::last_write_time(dir / "day_1_sparse.npy"));
    fs::rename(other, dir / "day_1_sparse.npy");
    CHECK_FALSE(preprocess(o).days[1].skipped);
    CHECK(slurp(dir / "day_1_sparse.npy") == want);
    // A copy of OUTDIR (cp -a): new inodes, the same sizes and mtimes, and nothing is redone.
    const fs::path copy = dir.string() + "_copy";
    fs::remove_all(copy);
    fs::copy(dir, copy, fs::copy_options::recursive);
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file())
        fs::last_write_time(copy / fs::relative(e.path(), dir), e.last_write_time());
    PreprocessOptions c = o;
    c.out_dir = copy;
    for (const DayStats& d : preprocess(c).days) CHECK(d.skipped);
    // A single pass stopped at day 2 keeps a partial checkpoint of days 0 and 1 (vocab.json).
    if (single) {
      const fs::path part = scratch("replaced_partial");
      PreprocessOptions p = base(days, part);
      p.resume = true;
      p.checkpoint_seconds = 0;
      p.progress = [&](const ProgressEvent& e) {
        if (e.what == "single pass" && e.item == days[2].string())
          throw Error(Errc::interrupted, "stop");
      };
      CHECK_THROWS_AS(preprocess(p), Error);
      p.progress = nullptr;
      replace(part / "day_0_sparse.npy");
      const PreprocessStats resumed = preprocess(p);
      CHECK_FALSE(resumed.days[0].skipped);  // its vocabulary is reused, not its replaced file
      check_same_files(dir, part, kDay01);
    }
  }
}

TEST_CASE("--emit-binary's FILE continues after the last checkpoint, and is kept when up to date") {
  fs::path dir = scratch("resume_emit");
  std::vector<fs::path> days = {kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz",
                                kSamples / "edge_cases.tsv"};
  PreprocessOptions clean = base(days, dir / "clean");
  clean.emit_binary = dir / "clean.bin";
  preprocess(clean);
  const std::string rows = slurp(dir / "clean.bin");
  const auto temp_files = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += is_temp_file_name(e.path().filename());
    return n;
  };
  for (bool single : {false, true}) {
    INFO("single pass " << single);
    const std::string name = single ? "one" : "two";
    PreprocessOptions o = base(days, dir / name);
    o.emit_binary = dir / (name + ".bin");
    o.resume = true;
    o.checkpoint_seconds = 0;
    o.single_pass = single;
    const std::string pass = single ? "single pass" : "pass 1";
    o.progress = [&](const ProgressEvent& e) {
      if (e.what == pass && e.item == days[2].string()) throw Error(Errc::interrupted, "stop");
    };
    CHECK_THROWS_AS(preprocess(o), Error);
    CHECK_FALSE(fs::exists(*o.emit_binary));  // FILE appears complete or not at all
    CHECK(temp_files() == 1);                 // kept for the rerun, which continues it
    o.progress = nullptr;
    PreprocessStats s = preprocess(o);
    CHECK(s.days_resumed_in_pass1 == 2);
    CHECK(slurp(*o.emit_binary) == rows);
    CHECK(temp_files() == 0);
    // Nothing changed: FILE is not written again, and pass 1 does not run.
    const auto written = fs::last_write_time(*o.emit_binary);
    s = preprocess(o);
    CHECK(s.vocab_reused);
    CHECK(fs::last_write_time(*o.emit_binary) == written);
    // FILE changed since: written again, whole.
    fs::resize_file(*o.emit_binary, 64);
    s = preprocess(o);
    CHECK_FALSE(s.vocab_reused);
    CHECK(slurp(*o.emit_binary) == rows);
  }
  // FILE a link into another directory: its temp file is next to the file the link names, and
  // the rerun finds it there.
  {
    fs::create_directories(dir / "real");
    fs::create_symlink(dir / "real" / "rows.bin", dir / "link.bin");
    PreprocessOptions o = base(days, dir / "linked");
    o.emit_binary = dir / "link.bin";
    o.resume = true;
    o.checkpoint_seconds = 0;
    o.progress = [&](const ProgressEvent& e) {
      if (e.item == days[2].string()) throw Error(Errc::interrupted, "stop");
    };
    CHECK_THROWS_AS(preprocess(o), Error);
    o.progress = nullptr;
    CHECK(preprocess(o).days_resumed_in_pass1 == 2);
    CHECK(slurp(dir / "real" / "rows.bin") == rows);
    CHECK(fs::is_symlink(dir / "link.bin"));
    for (const auto& e : fs::directory_iterator(dir / "real"))
      CHECK_FALSE(is_temp_file_name(e.path().filename()));
  }
  // A kept temp file that is gone: the rerun starts FILE again rather than fail.
  PreprocessOptions o = base(days, dir / "gone");
  o.emit_binary = dir / "gone.bin";
  o.resume = true;
  o.checkpoint_seconds = 0;
  o.progress = [&](const ProgressEvent& e) {
    if (e.item == days[2].string()) throw Error(Errc::interrupted, "stop");
  };
  CHECK_THROWS_AS(preprocess(o), Error);
  for (const auto& e : fs::directory_iterator(dir))
    if (is_temp_file_name(e.path().filename())) fs::remove(e.path());
  o.progress = nullptr;
  const PreprocessStats s = preprocess(o);
  CHECK(s.days_resumed_in_pass1 == 0);
  CHECK(slurp(*o.emit_binary) == rows);
}

TEST_CASE("the split layout holds the npy layout's values in NVIDIA's types, one file a column") {
  fs::path dir = scratch("split_layout");
  const std::vector<fs::path> days = {kSamples / "deepctr_200.tsv"};
  PreprocessOptions npy = base(days, dir / "npy");
  PreprocessOptions split = base(days, dir / "split");
  split.output_format = OutputFormat::split;
  preprocess(npy);
  const PreprocessStats s = preprocess(split);
  CHECK_FALSE(s.single_pass);  // the ID types come from the final table sizes
  const std::string sparse = slurp(npy.out_dir / "day_0_sparse.npy").substr(128);
  const std::string dense = slurp(npy.out_dir / "day_0_dense.npy").substr(128);
  const std::string labels = slurp(npy.out_dir / "day_0_labels.npy").substr(128);
  REQUIRE(sparse.size() == 200 * 26 * 4);
  std::string label_bytes, halves;
  for (size_t r = 0; r < 200; ++r) {
    int32_t label;
    std::memcpy(&label, &labels[4 * r], 4);
    label_bytes += static_cast<char>(label != 0);
  }
  for (size_t i = 0; i < 200 * 13; ++i) {
    float f;
    std::memcpy(&f, &dense[4 * i], 4);
    const uint16_t h = float_to_half_bits(f);
    halves.append(reinterpret_cast<const char*>(&h), 2);
  }
  CHECK(slurp(split.out_dir / "day_0" / "label.bin") == label_bytes);
  CHECK(slurp(split.out_dir / "day_0" / "numerical.bin") == halves);
  const json sizes = json::parse(slurp(split.out_dir / "model_size.json"));
  std::set<int> widths;
  for (int j = 0; j < 26; ++j) {
    INFO("cat_" << j);
    const uint64_t table = s.num_embeddings[static_cast<size_t>(j)];
    CHECK(sizes.at("cat_" + std::to_string(j)).get<uint64_t>() == table);
    const int bytes = table < 127 ? 1 : table < 32767 ? 2 : 4;
    widths.insert(bytes);
    std::string col;
    for (int r = 0; r < 200; ++r) col += sparse.substr((r * 26 + j) * 4, bytes);
    CHECK(slurp(split.out_dir / "day_0" / ("cat_" + std::to_string(j) + ".bin")) == col);
  }
  CHECK(widths == std::set<int>{1, 2});  // 200 rows: small columns, and a few above 126 values
  // A given vocabulary knows the sizes before the first row: a single pass, the same files.
  PreprocessOptions from = base(days, dir / "from");
  from.output_format = OutputFormat::split;
  from.vocab_from = split.out_dir / "vocab";
  CHECK(preprocess(from).single_pass);
  check_same_files(split.out_dir, from.out_dir,
                   {"day_0/label.bin", "day_0/numerical.bin", "day_0/cat_0.bin", "day_0/cat_25.bin",
                    "model_size.json"});
  // Integer dense values have no float16 form in NVIDIA's layout.
  split.apply_log = false;
  CHECK_THROWS_AS(preprocess(split), Error);
}

TEST_CASE("preloaded inputs and discarded outputs change no byte of what is written") {
  fs::path dir = scratch("preload");
  fs::path day = big_day(dir);
  std::vector<fs::path> days = {day, kSamples / "nvtabular_day_0.gz", kSamples / "edge_cases.tsv"};
  PreprocessOptions ref = base(days, dir / "ref");
  PreprocessStats r = preprocess(ref);
  for (size_t chunk : {size_t{0}, size_t{64} << 10}) {
    PreprocessOptions o = base(days, dir / ("pre" + std::to_string(chunk)));
    o.preload_inputs = true;
    o.chunk_bytes = chunk;
    PreprocessStats s = preprocess(o);
    CHECK(s.rows == r.rows);
    CHECK(s.preload_seconds > 0);
    CHECK_FALSE(s.decode_cache);  // the inputs are in memory already
    check_same_files(ref.out_dir, o.out_dir,
                     {"day_0_dense.npy", "day_0_sparse.npy", "day_1_labels.npy", "day_2_sparse.npy",
                      "vocab/C1_values.npy", "vocab/C26_counts.npy"});
    CHECK(s.days[1].input_bytes == r.days[1].input_bytes);
  }
  PreprocessOptions d = base(days, dir / "discard");
  d.discard_outputs = true;
  d.preload_inputs = true;
  PreprocessStats s = preprocess(d);
  CHECK(s.rows == r.rows);
  CHECK(s.cardinality == r.cardinality);
  CHECK_FALSE(fs::exists(d.out_dir / "day_0_dense.npy"));
  CHECK_FALSE(fs::exists(d.out_dir / "state.json"));
  CHECK(slurp(d.out_dir / "vocab" / "C3_values.npy") ==
        slurp(ref.out_dir / "vocab" / "C3_values.npy"));
}

TEST_CASE("stats.json splits the passes into read, compute and write phases") {
  fs::path out = scratch("phases");
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv", kSamples / "nvtabular_day_0.gz"}, out);
  PreprocessStats s = preprocess(o);
  CHECK(s.device == "cpu");
  CHECK(s.write_seconds > 0);
  CHECK(s.compute_seconds > 0);
  CHECK(s.read_seconds >= 0);
  CHECK(s.compute_seconds <= s.pass1_seconds + s.pass2_seconds);
  std::string j = slurp(out / "stats.json");
  for (const char* key :
       {"\"phases\"", "\"compute_seconds\"", "\"write_seconds\"", "\"read_seconds\"",
        "\"preload_seconds\"", "\"compute_rows_per_s\"", "\"device\": \"cpu\""})
    CHECK(j.find(key) != std::string::npos);
  CHECK(j.find("\"cuda\"") == std::string::npos);  // device timings only for cuda
}

TEST_CASE("a rebuilt vocabulary never sits under the vocab.json of the one it replaces") {
  // A rebuild stopped while it replaces the arrays (here: C5's cannot be renamed into place)
  // leaves no vocab.json, so that no run takes the half-replaced arrays for either vocabulary.
  fs::path dir = scratch("vocab_rebuild_stopped");
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv"}, dir / "out");
  o.resume = true;
  preprocess(o);
  REQUIRE(fs::exists(dir / "out" / "vocab" / "vocab.json"));
  fs::remove(dir / "out" / "vocab" / "C5_values.npy");
  fs::create_directories(dir / "out" / "vocab" / "C5_values.npy" / "x");
  o.modulus.fill(100);
  CHECK_THROWS_AS(preprocess(o), Error);
  CHECK_FALSE(fs::exists(dir / "out" / "vocab" / "vocab.json"));
  fs::remove_all(dir / "out" / "vocab" / "C5_values.npy");
  o.modulus.fill(0);  // the first options again: the vocabulary is built anew
  const PreprocessStats again = preprocess(o);
  CHECK_FALSE(again.vocab_reused);
}

TEST_CASE("a rerun with another modulus of the same cardinalities rewrites the days") {
  // C1 takes 1, 6, 3, 8: modulus 5 pairs 1 with 6 and 3 with 8, modulus 2 pairs 1 with 3 and 6
  // with 8; two values either way, so the vocabulary's size cannot tell them apart.
  fs::path dir = scratch("modulus_rerun");
  std::string rows;
  int i = 0;
  for (const char* c1 : {"00000001", "00000006", "00000003", "00000008"}) {
    rows += std::to_string(i % 2);
    for (int k = 0; k < 13; ++k) rows += "\t" + std::to_string(i);
    rows += std::string("\t") + c1;
    for (int k = 0; k < 25; ++k) rows += "\t00000007";
    rows += "\n";
    ++i;
  }
  put(dir / "d0.tsv", rows);
  PreprocessOptions o = base({dir / "d0.tsv"}, dir / "out");
  o.resume = true;
  o.min_freq = 2;  // two passes
  o.modulus.fill(0);
  o.modulus[0] = 5;
  preprocess(o);
  o.modulus[0] = 2;
  const PreprocessStats rerun = preprocess(o);
  CHECK_FALSE(rerun.days[0].skipped);
  PreprocessOptions fresh = o;
  fresh.out_dir = dir / "fresh";
  preprocess(fresh);
  CHECK(slurp(dir / "out" / "day_0_sparse.npy") == slurp(dir / "fresh" / "day_0_sparse.npy"));
  // The state.json of a dlprep that recorded no modulus: its days stay when the vocabulary is
  // reused (its fingerprint holds the modulus), not rewritten once after an upgrade.
  json state = json::parse(slurp(dir / "out" / "state.json"));
  state["pass2"].erase("modulus");
  put(dir / "out" / "state.json", state.dump());
  const PreprocessStats upgraded = preprocess(o);
  CHECK(upgraded.vocab_reused);
  CHECK(upgraded.days[0].skipped);
}

TEST_CASE("state.json lists the up-to-date days after the last day a rerun writes") {
  fs::path dir = scratch("state_trailing_days");
  PreprocessOptions o =
      base({kSamples / "deepctr_200.tsv", kSamples / "deepctr_200.tsv"}, dir / "out");
  o.resume = true;
  o.min_freq = 2;  // two passes: pass 2 checks each day
  preprocess(o);
  // Day 0's dense file replaced by a copy (same bytes, another file): day 0 is written again.
  fs::copy_file(dir / "out" / "day_0_dense.npy", dir / "copy.npy");
  fs::rename(dir / "copy.npy", dir / "out" / "day_0_dense.npy");
  const PreprocessStats s = preprocess(o);
  CHECK_FALSE(s.days[0].skipped);
  CHECK(s.days[1].skipped);
  CHECK(json::parse(slurp(dir / "out" / "state.json"))["days_done"] == json::array({0, 1}));
}

TEST_CASE("stats.json of other arrays is replaced by a rerun that finds every day up to date") {
  // A run stopped after its last state.json and before its stats.json left an earlier run's.
  fs::path dir = scratch("stale_stats");
  PreprocessOptions o = base({kSamples / "deepctr_200.tsv"}, dir / "out");
  o.resume = true;
  o.min_freq = 3;
  preprocess(o);
  const std::string stale = slurp(dir / "out" / "stats.json");
  o.min_freq = 1;
  const PreprocessStats rewritten = preprocess(o);
  put(dir / "out" / "stats.json", stale);
  const PreprocessStats rerun = preprocess(o);
  CHECK(rerun.days[0].skipped);
  const json stats = json::parse(slurp(dir / "out" / "stats.json"));
  CHECK(stats["num_embeddings"] == json(rewritten.num_embeddings));
  // One of these arrays' own is kept as it is: a rerun with nothing to do writes nothing.
  const std::string current = slurp(dir / "out" / "stats.json");
  preprocess(o);
  CHECK(slurp(dir / "out" / "stats.json") == current);
}
