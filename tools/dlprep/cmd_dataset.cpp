// dlprep dataset info|verify|merge: look at, check, and join dlprep datasets
// (man/dlprep-dataset.1). The work is lib/dataset's.
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "command.hpp"
#include "core/error.hpp"
#include "dataset/dataset_merge.hpp"
#include "dataset/dataset_verify.hpp"
#include "dataset/manifest.hpp"
#include "dataset/tar_shards.hpp"
#include "output.hpp"
#include "version.hpp"

namespace dlprep::cli {
namespace {

struct DatasetOptions {
  std::string dataset;              // info, verify
  std::vector<std::string> inputs;  // merge
  std::string output;               // merge
};

Json manifest_json(const dataset::Manifest& m) { return Json::parse(dataset::manifest_to_json(m)); }

std::string percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? "-" : format_fixed(100.0 * double(part) / double(whole), 1) + "%";
}

int run_info(const DatasetOptions& o, const Globals& globals) {
  dataset::Manifest m = dataset::read_manifest(o.dataset);
  if (globals.json) {
    Json doc = {{"schema", "dlprep.dataset-info/1"}, {"path", o.dataset}};
    Json manifest = manifest_json(m);
    for (auto& [key, value] : manifest.items())
      if (key != "schema") doc[key] = value;
    doc["dataset_schema"] = m.schema;
    if (m.layout == "tar") doc["shard_bytes"] = dataset::shard_bytes_on_disk(o.dataset);
    print_json(doc);
    return kExitOk;
  }
  std::string mix;
  for (const auto& t : m.targets)
    mix += (mix.empty() ? "" : ", ") + t.spec + " " + format_fixed(100.0 * t.ratio, 1) + "%";
  // Incomplete because a run is writing it now: no rerun to advise.
  const bool writing = !m.complete && DirectoryLock::held_by_writer(o.dataset);
  std::cout << "dataset:  " << o.dataset
            << (m.complete ? ""
                : writing  ? " (incomplete: a conversion or merge is writing into it now)"
                           : " (incomplete: rerun the conversion or merge that made it)")
            << "\nsource:   " << m.source_path << " (" << m.source_kind << ")"
            << "\nmix:      " << mix << ", seed " << m.seed;
  if (m.shard_count > 1) std::cout << ", shard " << m.shard_index << "/" << m.shard_count;
  if (m.shuffled) std::cout << ", order shuffled by the seed";
  // Samples without a label are counted in classes[""], which is no class.
  uint64_t unlabelled = 0;
  if (auto it = m.classes.find(""); it != m.classes.end())
    for (const auto& [format, n] : it->second) unlabelled += n;
  size_t classes = m.classes.size() - m.classes.count("");
  std::cout << "\nsamples:  " << m.samples << " in " << classes
            << (classes == 1 ? " class" : " classes");
  if (unlabelled > 0) std::cout << " (" << unlabelled << " without a label)";
  std::cout << ", " << format_bytes(m.bytes);
  if (m.failed > 0) std::cout << " (" << m.failed << " source samples failed and were skipped)";
  if (m.layout == "tar")
    std::cout << "\nlayout:   tar, " << m.shard_files << (m.shard_files == 1 ? " shard" : " shards")
              << " of at most " << format_bytes(m.max_shard_bytes)
              << " (a larger sample gets a shard of its own; "
              << format_bytes(dataset::shard_bytes_on_disk(o.dataset))
              << " on disk, tar headers included), " << m.labels.size()
              << (m.labels.size() == 1 ? " class" : " classes") << " in .cls";
  else
    std::cout << "\nlayout:   files (data/KEY.EXT)";
  if (!m.transform.empty()) std::cout << "\nimages:   " << m.transform;
  std::cout << "\ncreated:  " << m.created << " by " << m.tool << "\n\n";
  Table table({"format", "samples", "share", "bytes", "bytes/sample"});
  for (const auto& [name, c] : m.formats)
    table.add_row({name, std::to_string(c.samples), percent(c.samples, m.samples),
                   format_bytes(c.bytes), c.samples ? format_bytes(c.bytes / c.samples) : "-"});
  table.print();
  if (globals.verbose > 0) {
    std::cout << '\n';
    Table classes({"class", "samples", "formats"});
    for (const auto& [label, per_format] : m.classes) {
      uint64_t n = 0;
      std::string formats;
      for (const auto& [format, count] : per_format) {
        n += count;
        formats += (formats.empty() ? "" : " ") + format + ":" + std::to_string(count);
      }
      classes.add_row({label.empty() ? "(none)" : label, std::to_string(n), formats});
    }
    classes.print();
  }
  return kExitOk;
}

int run_verify(const DatasetOptions& o, const Globals& globals) {
  dataset::VerifyOptions v;
  v.dataset = o.dataset;
  v.threads = jobs_within_fd_limit(globals, "dataset verify", dataset::kVerifyFilesPerThread);
  Progress progress(globals, "dataset verify", 0, "samples");
  if (progress.enabled())
    v.progress = [&progress](const ProgressEvent& e) { progress.set(e.done, e.total); };
  Json problems = Json::array();
  v.problem = [&](const Error& e) {
    print_error("dataset verify", e.what());
    if (problems.size() < 1000)
      problems.push_back(
          {{"status", e.code() == Errc::mismatch ? "mismatch" : "failed"}, {"error", e.what()}});
  };
  dataset::VerifyResult r = dataset::verify_dataset(v);
  progress.finish();
  int code = kExitOk;
  if (r.mismatched > 0 || r.dataset_problems > 0) code = kExitMismatch;
  if (r.failed > 0) code = worse_exit(code, kExitFailure);
  if (globals.json) {
    print_json({{"schema", "dlprep.dataset-verify/1"},
                {"path", o.dataset},
                {"samples", r.samples},
                {"ok", r.ok},
                {"mismatched", r.mismatched},
                {"failed", r.failed},
                {"complete", r.manifest.complete},
                {"problems", problems}});
  } else if (code == kExitOk) {
    std::cout << o.dataset << ": ok, " << r.samples
              << " samples exist, match their size and crc32, and decode to their recorded shape\n";
  } else {
    print_note(globals,
               "dataset verify: " + std::to_string(r.ok) + " of " + std::to_string(r.samples) +
                   " samples ok, " + std::to_string(r.mismatched) + " differ from the index, " +
                   std::to_string(r.failed) + " do not decode" +
                   (r.dataset_problems > 0 ? "; " + std::to_string(r.dataset_problems) +
                                                 " problem(s) of the dataset as a whole (above)"
                                           : std::string()) +
                   (r.mismatched > 0 ? "; its convert-dataset command run again with --recheck "
                                       "converts those that differ again"
                                     : std::string()));
  }
  return code;
}

int run_merge(const DatasetOptions& o, const Globals& globals) {
  dataset::MergeOptions m;
  for (const auto& in : o.inputs) m.inputs.emplace_back(in);
  m.output = o.output;
  m.tool = version_string();
  Progress progress(globals, "dataset merge", 0, "samples");
  if (progress.enabled())
    m.progress = [&progress](const ProgressEvent& e) { progress.set(e.done, e.total); };
  dataset::MergeResult result = dataset::merge_datasets(m);
  const dataset::Manifest& merged = result.manifest;
  progress.finish();
  if (globals.json) {
    Json doc = {
        {"schema", "dlprep.dataset-merge/1"}, {"output", o.output},    {"inputs", o.inputs},
        {"samples", merged.samples},          {"bytes", merged.bytes}, {"removed", result.removed},
        {"up_to_date", result.up_to_date}};
    print_json(doc);
  } else {
    std::string removed = result.removed > 0
                              ? ", " + std::to_string(result.removed) +
                                    (result.removed == 1 ? " file" : " files") +
                                    " of its previous merge removed (no longer in the parts)"
                              : "";
    print_note(globals, "dataset merge: " + std::to_string(o.inputs.size()) + " shards, " +
                            std::to_string(merged.samples) + " samples into " + o.output + removed +
                            (result.up_to_date ? " (up to date)" : ""));
  }
  return kExitOk;
}

}  // namespace

Action add_dataset_command(CLI::App& app) {
  auto o = std::make_shared<DatasetOptions>();
  CLI::App* ds = app.add_subcommand("dataset", "summarise, verify and merge dlprep datasets");
  ds->require_subcommand(1);
  ds->footer(
      "A dlprep dataset is what convert-dataset writes: dataset.json, samples.jsonl and data/\n"
      "(a file tree, or tar shards with --shards).\n"
      "Run 'dlprep dataset SUBCOMMAND --help' for each subcommand.\n"
      "\n"
      "Examples:\n"
      "  dlprep dataset info train-mix/\n"
      "  dlprep -j8 dataset verify train-mix/\n"
      "  dlprep dataset merge part0/ part1/ part2/ part3/ -o train-l3/\n");

  CLI::App* info = ds->add_subcommand("info", "summary of a dataset: source, mix, counts");
  info->add_option("DST", o->dataset, "dataset directory")->required()->type_name("DIR");
  info->footer(
      "Prints the source, the mix, the layout (files, or tar and its number of shards), the\n"
      "resize/crop transform (if any), the samples and bytes per format (and per class with -v)\n"
      "from dataset.json; --json prints every field of the manifest, under the schema\n"
      "dlprep.dataset-info/1 (the manifest's own as dataset_schema) with path, and for tar\n"
      "shard_bytes (their bytes on disk).\n"
      "\n"
      "Examples:\n"
      "  dlprep dataset info train-mix/\n"
      "  dlprep --json dataset info train-mix/ > manifest.json\n");

  CLI::App* verify = ds->add_subcommand(
      "verify", "check every sample: exists, size, crc32, format, decodes to its shape");
  verify->add_option("DST", o->dataset, "dataset directory")->required()->type_name("DIR");
  verify->footer(
      "Reads every file of the index (in parallel with -j) and decodes it; in a tar dataset\n"
      "every member, found under its own header at the recorded offset, followed by its .cls.\n"
      "A sample that is missing or whose size, crc32, format or shape differs from the index is\n"
      "named on stderr and the exit status is 3; a file that matches its checksum but does not\n"
      "decode gives 1.\n"
      "An incomplete dataset (an interrupted conversion) is also a difference.\n"
      "convert-dataset --recheck mends the samples that differ, converting only those.\n"
      "A -j that the open-file limit (ulimit -n) leaves no room for is lowered, with a warning;\n"
      "running out of file descriptors anyway is an error (exit 1), not a damaged sample.\n"
      "\n"
      "Examples:\n"
      "  dlprep -j8 dataset verify train-mix/\n"
      "  dlprep --json dataset verify train-mix/ > verify.json\n");

  CLI::App* merge = ds->add_subcommand("merge", "join the shards of a --shard K/N conversion");
  merge->add_option("DST", o->inputs, "the shard datasets")->required()->type_name("DIR");
  merge->add_option("-o,--output", o->output, "the merged dataset directory")
      ->required()
      ->type_name("OUT");
  merge->footer(
      "Every shard 0..N-1 of one conversion (same SRC, mix and seed) must be given, each\n"
      "complete. Their indices are merged in source order, so OUT equals what one unsharded run\n"
      "would have written; data files (or tar shards) are hard-linked into OUT (copied across\n"
      "file systems). A merge into an earlier merge's OUT removes the data files its new index\n"
      "does not name, also when its dataset.json was damaged or deleted. Until a merge\n"
      "completes, OUT/dataset.json says \"complete\": false and is dated 1970 (for make). Parts\n"
      "that do not belong together are refused with what differs.\n"
      "\n"
      "Examples:\n"
      "  # a Slurm array of 8 tasks, then one merge\n"
      "  dlprep convert-dataset train/ parts/$SLURM_ARRAY_TASK_ID --to l3 \\\n"
      "      --shard $SLURM_ARRAY_TASK_ID/8\n"
      "  dlprep dataset merge parts/* -o train-l3/\n");

  return [o, info, verify, merge](const Globals& globals) {
    if (info->parsed()) return run_info(*o, globals);
    if (verify->parsed()) return run_verify(*o, globals);
    if (merge->parsed()) return run_merge(*o, globals);
    throw Error(Errc::internal, "no dataset subcommand was selected");
  };
}

}  // namespace dlprep::cli
