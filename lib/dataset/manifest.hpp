// A dlprep dataset on disk: DST/dataset.json (the manifest: schema, source, mix, counts) and
// DST/samples.jsonl (the sample index: one JSON object per line, read and written as a stream so
// that millions of samples never have to be held in memory).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/image.hpp"

namespace dlprep::dataset {

inline constexpr const char* kDatasetSchema = "dlprep.dataset/1";
inline constexpr const char* kManifestName = "dataset.json";
inline constexpr const char* kIndexName = "samples.jsonl";
inline constexpr const char* kDataDir = "data";
/// How samples are dealt to --shard parts (MixAssigner::Placement::shard), recorded by a part
/// so that parts dealt another way are not merged: 1, each group's rank modulo N (dlprep before
/// 2026-11-27); 2, from a turn drawn per group.
inline constexpr uint32_t kShardRule = 2;

/// One line of samples.jsonl.
struct SampleRecord {
  uint64_t ordinal = 0;  ///< position in the whole source (all shards): merge order
  std::string key;       ///< e.g. "cat/img001": source path below SRC without its extension
  std::string label;     ///< class ("" when the sample has none)
  std::string format;    ///< codec name of the stored file
  std::string location;  ///< file path relative to the dataset directory, e.g. "data/cat/img001.l3"
  /// Tar layout: where the member's data starts in the shard named by location ("offset" in the
  /// index; absent for the file layout, whose records are unchanged).
  std::optional<uint64_t> offset;
  uint64_t bytes = 0;    ///< size of the stored file
  ImageShape shape;      ///< what the stored file decodes to
  uint32_t crc32 = 0;    ///< zlib CRC-32 of the stored file
  std::string source;    ///< the source file it was made from
  bool operator==(const SampleRecord&) const = default;
};

/// One JSON object, no newline, keys in a fixed order (so equal records give equal lines).
std::string format_record(const SampleRecord& record);
/// Parses one line; throws Error(corrupt_data) saying what is missing or malformed.
SampleRecord parse_record(std::string_view line);

/// Reads samples.jsonl one record at a time. A last line without its newline is read like the
/// others (dlprep writes the index whole, by rename, but a hand-edited one may lack it); cut off,
/// it fails to parse, and says so.
class IndexReader {
 public:
  /// Throws Error(io) if the file cannot be opened.
  explicit IndexReader(const std::filesystem::path& path);
  /// The next record, or false at the end. Throws Error(corrupt_data) naming the file and line.
  bool next(SampleRecord& record);
  /// The line number of the record last returned (for messages).
  uint64_t line() const { return line_; }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  uint64_t line_ = 0;
};

/// Error(corrupt_data) for an index whose records are not as many as its dataset.json counts
/// (`records` read; more than `counted` when reading stopped at the first extra one): a damaged
/// index, never read as a smaller or larger dataset.
Error record_count_error(const std::filesystem::path& index, uint64_t records, uint64_t counted);

/// Per-format target of a dataset: how its files were encoded. Every file of the format in
/// data/ was made with this spec (convert-dataset removes them first when the spec changes).
struct TargetState {
  std::string format;  ///< codec name
  std::string spec;    ///< canonical target text, e.g. "png:9"
  double ratio = 1;    ///< share of the samples
};

/// Samples and bytes of one format.
struct FormatCount {
  uint64_t samples = 0;
  uint64_t bytes = 0;
};

/// dataset.json.
struct Manifest {
  std::string schema = kDatasetSchema;
  std::string tool;         ///< "dlprep 0.1.0"
  std::string created;      ///< UTC, ISO 8601
  bool complete = false;    ///< false while a conversion runs (or after it was interrupted)
  /// Incomplete: the index in place (the last completed run's) was made with these options, so
  /// a file that differs from its record was changed since, not converted anew by these options.
  bool index_matches = false;
  std::string source_kind;  ///< "directory", "list" or "dataset"
  std::string source_path;
  /// What the source held when the dataset was made (every part's, with --shard): its samples,
  /// and a digest of their labels and keys in order ("" when not recorded, before 2026-11-29).
  /// Parts that disagree were converted from different states of the source.
  uint64_t source_samples = 0;
  std::string source_digest;
  uint64_t seed = 0;
  /// The samples in --shuffle's order, drawn from the seed ("order": "shuffled" in dataset.json's
  /// parameters), rather than the source's (no "order").
  bool shuffled = false;
  uint32_t shard_index = 0;  ///< this dataset holds shard shard_index of shard_count
  uint32_t shard_count = 1;
  uint32_t shard_rule = kShardRule;  ///< recorded when shard_count > 1 (kShardRule)
  std::vector<TargetState> targets;  ///< the mix (one entry for --to)
  std::string on_error = "fail";
  /// The image transform every file was made with (image::Transform::text(), e.g.
  /// "resize=1920x1080,center-crop"); "" for none (null in dataset.json).
  std::string transform;
  std::string layout = "files";  ///< data as a mirrored file tree under data/, or "tar" shards
  /// Tar layout ("tar" in dataset.json): the most bytes in one shard (--shards), the number of
  /// shard files, and the labels in class-index order (a sample's .cls member holds its index).
  uint64_t max_shard_bytes = 0;
  uint64_t shard_files = 0;
  std::vector<std::string> labels;
  uint64_t samples = 0;
  uint64_t bytes = 0;
  uint64_t failed = 0;  ///< source samples skipped with --on-error skip
  std::map<std::string, FormatCount> formats;
  std::map<std::string, std::map<std::string, uint64_t>> classes;  ///< label -> format -> samples

  /// Adds a record to the counts.
  void count(const SampleRecord& record);
};

/// The manifest as JSON text (two-space indent, trailing newline).
std::string manifest_to_json(const Manifest& manifest);
/// Parses dataset.json text; throws Error(corrupt_data), or Error(unsupported) for another schema.
Manifest manifest_from_json(std::string_view text);
/// Reads DIR/dataset.json; errors name the file.
Manifest read_manifest(const std::filesystem::path& dataset_dir);
/// Writes DIR/dataset.json atomically.
void write_manifest(const std::filesystem::path& dataset_dir, const Manifest& manifest);
/// True when DIR/dataset.json exists.
bool is_dataset(const std::filesystem::path& dir);
/// Whether DIR/dataset.json, which read_manifest rejects, is a damaged one of this dlprep's
/// (not JSON at all, e.g. empty after a crash while it was written, or of this schema with bad
/// fields) rather than another tool's file or a newer dlprep's.
bool is_damaged_manifest(const std::filesystem::path& dir);
/// Whether DIR holds what a conversion or merge writes but its dataset.json: data/ and a
/// samples.jsonl whose first record reads as a dlprep index's (and their temp files), nothing
/// else. Its dataset.json was deleted: by make's .DELETE_ON_ERROR (or on Ctrl-C) after a failed
/// run had changed it, or by hand.
bool is_manifest_lost(const std::filesystem::path& dir);
/// Why a command will not write into DIR, a folder that is not empty and no dataset: with a way
/// out where it holds data/ alone (a first run stopped before its index, whose dataset.json was
/// deleted), which nothing tells from a folder of the user's own.
std::string not_a_dataset_reason(const std::filesystem::path& dir);
/// A source path as a manifest records it, spelled the same whatever the trailing slash or "./"
/// ("train/" and "train" are one source: a rerun spelt the other way changes nothing).
std::string source_path_text(const std::string& path);
/// True when two manifests record the same options (all but what a run counts, and whether it
/// finished): a rerun with them may find nothing to do.
bool same_options(Manifest a, Manifest b);

/// The manifest of a run that updates a dataset, written "incomplete" before the run's first
/// change to it (a data file written or removed, a new index), so that an interrupted run is never
/// taken for a finished one. A rerun that finds nothing to do never sets it, and leaves every file
/// of the dataset as it was: a Makefile, rsync or a checksum cache sees nothing new. Thread-safe.
class IncompleteMark {
 public:
  IncompleteMark(std::filesystem::path dataset_dir, Manifest manifest);
  /// Writes the manifest (as incomplete) the first time; throws Error(io).
  void set();
  bool is_set() const { return set_.load(); }

 private:
  std::filesystem::path dir_;
  Manifest manifest_;
  std::mutex mutex_;
  std::atomic<bool> set_{false};
};

/// "1a2b3c4d".
std::string crc32_hex(uint32_t crc);
/// Modification time in ns since the Unix epoch, or nullopt if the path does not exist.
std::optional<int64_t> mtime_ns(const std::filesystem::path& path);
/// The current UTC time as "2026-11-23T08:10:00Z".
std::string utc_now();
/// Throws Error(corrupt_data) unless `location` is a relative path without "." or ".."
/// components (an index must never point outside its dataset).
void check_location(std::string_view location);

}  // namespace dlprep::dataset
