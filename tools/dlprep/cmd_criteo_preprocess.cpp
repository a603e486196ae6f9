// dlprep criteo-preprocess INPUT… -o OUTDIR: Criteo/DLRM click-log preprocessing (lib/tabular).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "option_checks.hpp"
#include "output.hpp"
#include "tabular/criteo_preprocess.hpp"

namespace dlprep::cli {
namespace {

constexpr const char* kCriteoCommand = "criteo-preprocess";
using namespace dlprep::tabular;

struct CriteoCliOptions {
  std::vector<std::string> inputs;
  std::string out_dir;
  unsigned days = 0;
  std::string preset;
  std::string input_format = "auto";
  std::string output_format;  // empty: npy unless the preset says otherwise
  std::string modulus;
  uint64_t min_freq = 1;
  int64_t id_base = 0;
  int64_t oov_id = -1;
  double log_offset = kDefaultLogOffset;
  bool no_log = false;
  std::string vocab_from;
  std::string split_last;
  std::string on_bad_row = "error";
  std::string emit_binary;
  std::string max_memory;
  bool no_resume = false;
  bool no_vocab = false;
  std::string device = "cpu";
  std::string decode_cache = "auto";
  size_t chunk_mb = 0;  // 0: the backend's default
  // Which options were given, so that they override the preset.
  std::map<std::string, CLI::Option*> given;
};

// --max-memory SIZE: core/byte_size.hpp's rule, where 8G is 8 GiB as in Slurm's --mem and
// Docker's --memory.
uint64_t parse_memory_size(const std::string& text) {
  if (text.empty()) return 0;
  auto bad = [&](const std::string& why) {
    return Error(Errc::invalid_argument, "--max-memory: '" + text + "' " + why);
  };
  const std::optional<ByteSize> size = parse_byte_size(text);
  if (!size) throw bad("is not a size (e.g. 512M, 8G)");
  const double bytes = std::floor(size->bytes);
  if (!(bytes < 0x1p64)) throw bad("is too large");
  if (bytes < 1) throw bad("is no memory at all (leave the option out for no limit)");
  return static_cast<uint64_t>(bytes);
}

PreprocessOptions to_options(const CriteoCliOptions& c, const Globals& globals) {
  PreprocessOptions o;
  auto given = [&](const char* name) { return c.given.at(name)->count() > 0; };
  // The vocabulary's run's conventions first, so that a preset and explicit options win.
  if (!c.vocab_from.empty()) apply_vocab_conventions(c.vocab_from, o);
  if (!c.preset.empty()) apply_preset(c.preset, o);
  if (c.days > 0) {
    // --days N: INPUT is the directory of the Criteo 1TB release, day_0 .. day_{N-1} (.gz or not).
    if (c.inputs.size() != 1)
      throw Error(Errc::invalid_argument, "--days needs exactly one INPUT, a directory");
    if (!std::filesystem::exists(c.inputs[0]))
      throw Error(Errc::io, c.inputs[0] + ": cannot open: No such file or directory");
    if (!std::filesystem::is_directory(c.inputs[0]))
      throw Error(Errc::invalid_argument, "--days needs exactly one INPUT, a directory");
    bool both_warned = false;
    for (unsigned d = 0; d < c.days; ++d) {
      std::filesystem::path base =
          std::filesystem::path(c.inputs[0]) / ("day_" + std::to_string(d));
      std::filesystem::path gz = base;
      gz += ".gz";
      if (std::filesystem::exists(base) && std::filesystem::exists(gz) && !both_warned) {
        both_warned = true;  // once: a decompressed release has them all
        print_warning(globals, kCriteoCommand,
                      "--days: " + base.string() + " and " + gz.filename().string() +
                          " both exist: the uncompressed file is read (for every such day)");
      }
      if (std::filesystem::exists(base))
        o.inputs.push_back(base);
      else if (std::filesystem::exists(gz))
        o.inputs.push_back(gz);
      else
        throw Error(Errc::io, "--days: " + base.string() + "[.gz]: cannot open: No such file");
    }
  } else {
    for (const auto& in : c.inputs) {
      if (std::filesystem::is_directory(in))
        throw Error(Errc::invalid_argument, in + " is a directory (use --days N for day_0..)");
      o.inputs.emplace_back(in);
    }
  }
  o.out_dir = c.out_dir;
  o.input_format = c.input_format == "tsv"   ? InputFormat::tsv
                   : c.input_format == "bin" ? InputFormat::bin
                                             : InputFormat::auto_detect;
  if (!c.output_format.empty()) {
    o.output_format = c.output_format == "dlrm"    ? OutputFormat::dlrm
                      : c.output_format == "split" ? OutputFormat::split
                      : c.output_format == "none"  ? OutputFormat::none
                                                   : OutputFormat::npy;
  }
  if (given("--modulus")) o.modulus = parse_modulus_list(c.modulus);
  if (given("--min-freq")) o.min_freq = c.min_freq;
  if (given("--id-base")) o.id_base = c.id_base;
  if (given("--oov-id")) o.oov_id = c.oov_id;
  if (given("--log-offset")) {
    if (c.no_log)
      throw Error(Errc::invalid_argument, "--log-offset and --no-log contradict each other");
    o.log_offset = c.log_offset;
    o.apply_log = true;
  }
  if (c.no_log) o.apply_log = false;
  if (given("--log-offset") && o.output_format == OutputFormat::dlrm)
    throw Error(Errc::invalid_argument,
                "--log-offset: --output-format dlrm (also of --preset dlrm) stores the integer "
                "dense values, and the DLRM loader takes log(x+1); use --output-format npy to "
                "store logged values");
  if (!c.vocab_from.empty()) o.vocab_from = c.vocab_from;
  if (!c.split_last.empty() && o.output_format == OutputFormat::none)
    throw Error(Errc::invalid_argument,
                "--split-last splits the last day's output files, and --output-format none "
                "writes none");
  if (!c.split_last.empty()) {
    o.split_last = c.split_last == "test-val"   ? SplitLast::test_val
                   : c.split_last == "val-test" ? SplitLast::val_test
                                                : SplitLast::none;
  }
  o.on_bad_row = c.on_bad_row == "skip" ? BadRowPolicy::skip : BadRowPolicy::error;
  if (!c.emit_binary.empty()) o.emit_binary = c.emit_binary;
  o.max_memory_bytes = parse_memory_size(c.max_memory);
  o.resume = !c.no_resume;
  o.write_vocab = !c.no_vocab;
  // DLPREP_FORCE_DEVICE overrides --device (STYLE.md: tests prove which backend ran).
  std::string device = c.device;
  if (const char* forced = std::getenv("DLPREP_FORCE_DEVICE"); forced && *forced) device = forced;
  if (device == "cuda")
    o.device = Device::cuda;
  else if (device == "fpga")
    o.device = Device::fpga;
  else if (device == "auto")
    o.device = Device::auto_select;
  else if (device == "cpu")
    o.device = Device::cpu;
  else
    throw Error(Errc::invalid_argument, "DLPREP_FORCE_DEVICE: unknown device '" + device + "'");
  o.decode_cache = c.decode_cache == "on"    ? DecodeCache::on
                   : c.decode_cache == "off" ? DecodeCache::off
                                             : DecodeCache::auto_select;
  o.threads = globals.jobs;
  o.chunk_bytes = c.chunk_mb << 20;
  return o;
}

int run_criteo(const CriteoCliOptions& c, const Globals& globals) {
  PreprocessOptions o = to_options(c, globals);
  Progress progress(globals, kCriteoCommand, 0, "bytes");
  // Each pass reads the input: the total is its size times the passes.
  o.progress = [&progress](const ProgressEvent& e) { progress.set(e.done, e.total, e.what); };
  o.warning = [&globals](const std::string& w) { print_warning(globals, kCriteoCommand, w); };
  // --emit-binary /dev/stdout: the rows are the standard output, and the summary would land in
  // them (over the header, where stdout is a file opened without O_APPEND): it goes to stderr.
  // Standard error cannot be FILE: warnings and progress, written there mid-run, would land in
  // the rows (2>&1, a terminal, --emit-binary /dev/stderr 2>FILE).
  struct stat emit_st {};
  const bool emit_exists = o.emit_binary && ::stat(o.emit_binary->c_str(), &emit_st) == 0;
  const auto is_emit_file = [&](int fd) {
    struct stat fd_st {};
    return emit_exists && ::fstat(fd, &fd_st) == 0 && emit_st.st_dev == fd_st.st_dev &&
           emit_st.st_ino == fd_st.st_ino;
  };
  // /dev/null takes anything: 2>/dev/null with --emit-binary /dev/null (timing the decode).
  const bool discards = emit_exists && S_ISCHR(emit_st.st_mode) && emit_st.st_rdev == makedev(1, 3);
  if (!discards && is_emit_file(STDERR_FILENO))
    throw Error(Errc::invalid_argument,
                "--emit-binary " + o.emit_binary->string() +
                    ": that is also the standard error, where warnings and progress go; "
                    "redirect standard error elsewhere (2>FILE)");
  const bool emit_to_stdout = is_emit_file(STDOUT_FILENO);
  PreprocessStats stats = preprocess(o);
  progress.finish();
  if (emit_to_stdout) {
    std::fflush(stdout);
    // A closed standard error (2>&-: main() holds its place with a read-only /dev/null) takes
    // no summary, and that is no failure of the run.
    const bool stderr_closed = (::fcntl(STDERR_FILENO, F_GETFL) & O_ACCMODE) == O_RDONLY;
    const int to = stderr_closed ? ::open("/dev/null", O_WRONLY | O_CLOEXEC) : STDERR_FILENO;
    if (to < 0 || ::dup2(to, STDOUT_FILENO) < 0)
      throw Error(Errc::io, std::string("cannot print the summary to standard error: ") +
                                std::strerror(errno));
    if (stderr_closed) ::close(to);
  }
  if (stats.bad_rows > 0)
    print_warning(globals, kCriteoCommand,
                  std::to_string(stats.bad_rows) + " malformed rows skipped");
  nlohmann::json j = nlohmann::json::parse(stats.to_json());
  if (globals.json) {
    print_json(j);
    return kExitOk;
  }
  Table table({"input", "rows", "bad rows", "input bytes", "status"});
  for (const auto& d : stats.days)
    table.add_row({d.input, std::to_string(d.rows), std::to_string(d.bad_rows),
                   std::to_string(d.input_bytes), d.skipped ? "up to date" : "written"});
  table.print();
  if (!stats.removed_outputs.empty())
    print_note(globals, std::string(kCriteoCommand) + ": removed " +
                            std::to_string(stats.removed_outputs.size()) +
                            " files of an earlier run's days that this run does not have (" +
                            stats.removed_outputs.front() +
                            (stats.removed_outputs.size() > 1 ? ", ..." : "") + ")");
  const std::string passes =
      stats.single_pass ? "a single pass"
                        : "pass 1 " + format_fixed(stats.pass1_seconds, 3) + " s" +
                              (stats.vocab_reused ? " (vocabulary reused)" : "") +
                              (o.output_format == OutputFormat::none
                                   ? ", no pass 2 (--output-format none)"
                                   : ", pass 2 " + format_fixed(stats.pass2_seconds, 3) + " s");
  const uint64_t written = stats.rows_written();
  if (std::all_of(stats.days.begin(), stats.days.end(), [](const auto& d) { return d.skipped; })) {
    std::printf("%llu rows, every day up to date (checked in %s s), peak RSS %s\n",
                static_cast<unsigned long long>(stats.rows),
                format_fixed(stats.total_seconds, 3).c_str(),
                format_bytes(stats.peak_rss_bytes).c_str());
  } else {
    // The rate is over the rows of the days written: up-to-date days were not read again.
    const std::string rows =
        std::to_string(stats.rows) +
        (written < stats.rows ? " rows (" + std::to_string(written) + " written)" : " rows");
    std::printf(
        "%s in %s s (%s rows/s, %s; %s), peak RSS %s\n", rows.c_str(),
        format_fixed(stats.total_seconds, 3).c_str(),
        format_fixed(stats.total_seconds > 0 ? written / stats.total_seconds : 0, 0).c_str(),
        stats.device == "cpu" ? (std::to_string(stats.threads) + " threads").c_str() : "cuda",
        passes.c_str(), format_bytes(stats.peak_rss_bytes).c_str());
  }
  // What the trainer's embedding tables need (TorchRec's flag of the same name).
  std::string sizes;
  for (uint64_t n : stats.num_embeddings) sizes += (sizes.empty() ? "" : ",") + std::to_string(n);
  std::printf("num_embeddings_per_feature: %s\n", sizes.c_str());
  return kExitOk;
}

}  // namespace

Action add_criteo_preprocess_command(CLI::App& app) {
  auto c = std::make_shared<CriteoCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      kCriteoCommand, "preprocess Criteo click logs for DLRM/TorchRec (bounded memory, resumable)");
  cmd->add_option("INPUT", c->inputs,
                  "day files in day order: TSV, gzip TSV or dlprep binary rows (with --days: "
                  "the directory holding day_0, day_1, ...)")
      ->required()
      ->type_name("FILE|DIR");
  cmd->add_option("--days", c->days, "read DIR/day_0 .. DIR/day_{N-1} (.gz or not) in order")
      ->type_name("N")
      ->transform(kDecimal)
      ->check(number_in(1, 1000000, true));
  cmd->add_option("-o,--output", c->out_dir, "output directory")->required()->type_name("DIR");
  auto add = [&](CLI::Option* opt) {
    c->given[opt->get_name()] = opt;
    return opt;
  };
  cmd->add_option("--preset", c->preset, "conventions of an existing tool (explicit flags win)")
      ->type_name("dlrm|torchrec|piper")
      ->check(CLI::IsMember({"dlrm", "torchrec", "piper"}).description(""));
  cmd->add_option("--input-format", c->input_format,
                  "input format (auto: gzip and binary by magic)")
      ->type_name("auto|tsv|bin")
      ->check(CLI::IsMember({"auto", "tsv", "bin"}).description(""))
      ->capture_default_str();
  cmd->add_option("--output-format", c->output_format,
                  "npy (TorchRec/MLPerf-v2), dlrm (int32 x 40 rows), split (NVIDIA's per-column "
                  "files: bool, float16, int8/16/32 IDs), none (vocabulary only) [default: npy]")
      ->type_name("npy|dlrm|split|none")
      ->check(CLI::IsMember({"npy", "dlrm", "split", "none"}).description(""));
  add(cmd->add_option("--modulus", c->modulus,
                      "modulus M of the hex values (DLRM max_ind_range): one value, or 26 "
                      "comma-separated; 0 = none [default: 0]")
          ->type_name("M[,M...]"));
  add(cmd->add_option("--min-freq", c->min_freq,
                      "values seen fewer than F times map to the OOV ID (0, 1: keep all)")
          ->capture_default_str()
          ->type_name("F")
          ->transform(kDecimal)
          ->check(kNotNegative));
  add(cmd->add_option("--id-base", c->id_base, "ID of each column's first value")
          ->capture_default_str()
          ->type_name("N")
          ->transform(kDecimal));
  add(cmd->add_option("--oov-id", c->oov_id,
                      "ID of rare/unseen values [default: id-base - 1 if id-base >= 1, else one "
                      "past the column's last ID]")
          ->type_name("N")
          ->transform(kDecimal));
  add(cmd->add_option("--log-offset", c->log_offset, "dense values become log(max(x,0) + X)")
          ->capture_default_str()
          ->type_name("X"));
  cmd->add_flag("--no-log", c->no_log,
                "store max(x,0) without the log (the loader takes it; not with split)");
  cmd->add_option("--vocab-from", c->vocab_from,
                  "apply the vocabulary of an earlier run (its OUTDIR or OUTDIR/vocab), with "
                  "that run's IDs, log and layout unless given again")
      ->type_name("DIR");
  cmd->add_option("--split-last", c->split_last,
                  "split the last input into halves: test-val (DLRM/MLPerf-v1) or val-test "
                  "(TorchRec's order; its loaders split day_23 themselves); default none "
                  "(dlrm preset: test-val)")
      ->type_name("none|test-val|val-test")
      ->check(CLI::IsMember({"none", "test-val", "val-test"}).description(""));
  cmd->add_option("--on-bad-row", c->on_bad_row, "a malformed row stops the run, or is skipped")
      ->type_name("error|skip")
      ->check(CLI::IsMember({"error", "skip"}).description(""))
      ->capture_default_str();
  cmd->add_option(
         "--emit-binary", c->emit_binary,
         "also write all decoded rows in dlprep's binary row format (for --input-format bin)")
      ->type_name("FILE");
  cmd->add_option(
         "--max-memory", c->max_memory,
         "refuse to use more memory than this (e.g. 512M, 8G: powers of 1024; MB, GB: of 1000)")
      ->type_name("SIZE");
  cmd->add_flag("--no-resume,-f,--force", c->no_resume,
                "rebuild everything even if a matching vocabulary and day outputs exist (-f, "
                "--force: the same, as convert-dataset spells it)");
  cmd->add_flag("--no-vocab", c->no_vocab, "do not write OUTDIR/vocab (disables resume of pass 1)");
  cmd->add_option("--device", c->device,
                  "where the passes run: cpu, cuda (the GPU; byte-identical outputs), fpga (not "
                  "built yet), auto (cuda when usable, else cpu); DLPREP_FORCE_DEVICE overrides")
      ->type_name("cpu|cuda|fpga|auto")
      ->check(CLI::IsMember({"cpu", "cuda", "fpga", "auto"}).description(""))
      ->capture_default_str();
  cmd->add_option("--decode-cache", c->decode_cache,
                  "with two passes: keep pass 1's decoded rows (160 B/row) in an unnamed temp "
                  "file in OUTDIR for pass 2 instead of decoding the text twice; binary input: "
                  "keep the files mapped between the passes (auto: when there is room)")
      ->type_name("auto|on|off")
      ->check(CLI::IsMember({"auto", "on", "off"}).description(""))
      ->capture_default_str();
  cmd->add_option("--chunk-mb", c->chunk_mb,
                  "input MiB decoded per step (bounds memory); 0: 16 on the cpu, 64 on cuda")
      ->type_name("N")
      ->transform(kDecimal)
      ->check(number_in(0, 4096, true))
      ->capture_default_str();
  cmd->footer(
      "Per column, the values get contiguous IDs in order of first appearance (vocabularies\n"
      "with counts). One pass over the input where every ID is final at first sight (the\n"
      "presets' conventions, --vocab-from); with --min-freq or the split layout (whose ID\n"
      "types need the final table sizes), two: pass 1 builds the vocabularies, pass 2 maps\n"
      "the values and writes the arrays.\n"
      "Writes OUTDIR/day_N_* per input, OUTDIR/vocab/ and OUTDIR/stats.json, and prints the\n"
      "embedding table sizes (num_embeddings_per_feature). Memory is bounded by the\n"
      "vocabularies, not the row count. A rerun reuses a matching vocabulary and skips\n"
      "finished days. --device cuda runs the passes on the GPU; without CUDA in this build or\n"
      "without a device it exits 77 with the reason. See man dlprep-criteo-preprocess.\n"
      "\n"
      "Examples:\n"
      "  dlprep criteo-preprocess --preset piper train.txt -o out/\n"
      "  dlprep criteo-preprocess --preset torchrec day_{0..23}.gz -o mlperf/\n"
      "  dlprep criteo-preprocess --vocab-from out/ heldout.txt -o heldout_out/\n");
  // The "given" map must also know --log-offset etc. (add() recorded them).
  return [c](const Globals& globals) { return run_criteo(*c, globals); };
}

}  // namespace dlprep::cli
