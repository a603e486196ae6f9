// The convert engine. Two streaming passes over the source:
//   1. enumerate (sniffing walked files in parallel) to register every sample's key hash with
//      the MixAssigner: the stratified assignment needs each class's size and hash order, and
//      it is computed over the whole source even for one shard, so that shards merge into
//      exactly the unsharded dataset; a sample's shard is its rank among the samples of its
//      class and format, from a turn the seed draws for that group, modulo N, so every shard
//      gets every class's share of every format, and the groups' remainders are spread
//      (when two samples share a 64-bit key hash, the entries with that hash are listed once
//      more, to tell a duplicate key from a collision);
//   2. enumerate again in batches: assign, filter the shard, look up the previous index, then
//      convert the batch in parallel and append its records in source order to the new index.
// With --shuffle, "source order" is the order shuffle_rank draws from the seed: the source is
// listed once, sorted, and both passes go through that list.
// Incremental rule (make's, plus options): a sample is up to date when its file exists and is
// no older than its source; files made with other options were removed at the start (see
// run()). Its record is reused from the previous index when the file is unchanged since that
// index was written, else rebuilt by reading the file (with --recheck: always read, and kept
// only when its bytes are its record's).
// Tar layout (--shards): converted samples are held until they are appended in source order to
// the open shard, at most a few per thread; what an earlier run wrote is found and kept by
// TarShards (tar_shards.hpp has its rule).
#include "dataset/convert.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <set>

#include "core/directory_walk.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "core/timing.hpp"
#include "dataset/assign.hpp"
#include "dataset/crc32.hpp"
#include "dataset/orphan_files.hpp"
#include "dataset/sample_source.hpp"
#include "dataset/tar_shards.hpp"
#include "image/codec.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;
namespace {

// The key WebDataset reads a sample's tar members under: their name up to the first dot of the
// file name. Another than the sample's own for a key with a dot there.
std::string webdataset_key(const std::string& key) {
  const size_t slash = key.rfind('/');
  return key.substr(0, key.find('.', slash == std::string::npos ? 0 : slash + 1));
}

// Samples per thread in one batch: enough that the wait for the slowest sample at the end of a
// batch costs little, few enough that a batch's records are a bounded amount of memory.
constexpr size_t kBatchPerThread = 64;
// Samples converted ahead of the oldest one not yet accounted for: enough that one slow sample
// does not idle the other threads, few enough that the tar layout holds little.
constexpr size_t kWindowPerThread = 2;
// How far ahead in the previous index a key is looked for (samples added or removed between
// runs shift the order by a few; a different order just means records are rebuilt from files).
constexpr size_t kLookahead = 256;

struct Work {
  SourceEntry entry;
  uint64_t ordinal = 0;
  size_t target = 0;
  std::optional<SampleRecord> old;
  enum Status { pending, converted, up_to_date, failed } status = pending;
  SampleRecord record;
  Errc code = Errc::internal;
  std::string error;
  // The failure came from writing the output (a full or read-only disk): the destination's, not
  // the sample's, so --on-error skip does not apply and the run stops.
  bool writing = false;
  uint64_t source_bytes = 0, output_bytes = 0;
  uint32_t source_bits = 8;  // bits per sample of the source file (read as 8)
  ConvertStageSeconds seconds;
  // Tar layout: the sample as found in an earlier run's shard, or its member name and bytes.
  std::optional<KeptSample> kept;
  std::string member;
  Bytes data;
  std::optional<FileStamp> stamp;  // tar layout: the source as it was read (or kept)
};

// Tar layout: the sources of the samples in the shard being written, checked once it is complete.
// A source replaced or modified after its sample was converted, while the shard went on filling,
// is older than the shard: every rerun would keep the shard, with the old image.
class ShardSources {
 public:
  // Called for every sample appended, after it is: checks the previous shard when this one is in
  // another. Only the samples converted by this run: a kept one's source, changed, is newer than
  // its shard; and a sample of a dataset source (a tar member, no stamp) is checked by its crc32.
  void add(const fs::path& destination, const Work& w, IncompleteMark& mark) {
    if (w.record.location != location_) check(destination, mark);
    location_ = w.record.location;
    if (!w.kept && w.stamp) sources_.emplace_back(w.entry.path, *w.stamp);
  }
  // Throws, with the shard removed and the dataset marked incomplete (the rerun writes it again),
  // when one of them changed.
  void check(const fs::path& destination, IncompleteMark& mark) {
    for (const auto& [path, stamp] : sources_) {
      if (file_stamp(path) == stamp) continue;
      const fs::path shard = destination / location_;
      mark.set();  // before the shard goes: a dataset.json saying complete must name it
      std::error_code ec;
      fs::remove(shard, ec);
      throw Error(Errc::io, path.string() + ": changed while its shard was being written; " +
                                shard.string() + " is removed: rerun to convert it again");
    }
    sources_.clear();
  }

 private:
  std::string location_;
  std::vector<std::pair<fs::path, FileStamp>> sources_;
};

// The previous index, read in step with the new one.
class OldIndex {
 public:
  // `use`: false when nothing of the earlier run is reused (--force, its options unknown).
  OldIndex(const fs::path& path, bool use) {
    if (use && fs::exists(path)) reader_ = std::make_unique<IndexReader>(path);
  }
  std::optional<SampleRecord> find(const std::string& key) {
    while (reader_ && window_.size() < kLookahead) {
      SampleRecord r;
      bool more = false;
      try {
        more = reader_->next(r);
      } catch (const Error&) {  // damaged from here on: the samples past it are converted again
      }
      if (!more) {
        reader_.reset();
        break;
      }
      window_.push_back(std::move(r));
    }
    for (size_t i = 0; i < window_.size(); ++i) {
      if (window_[i].key != key) continue;
      SampleRecord found = std::move(window_[i]);
      window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return found;
    }
    return std::nullopt;
  }

 private:
  std::unique_ptr<IndexReader> reader_;
  std::deque<SampleRecord> window_;
};

class Engine {
 public:
  explicit Engine(const ConvertOptions& options)
      : o_(options), threads_(std::max(1u, options.threads)) {}
  ConvertResult run();
  /// After a failure: a DST this run created goes again while it holds no file. Only while
  /// this run holds its lock: a run that lost the race for it must not remove the winner's.
  void discard_empty_destination() noexcept {
    if (out_dir_ && lock_) out_dir_->discard_if_empty();
    lock_.reset();
  }

 private:
  void prepare_destination();
  // Calls fn with batches of the source's samples (walked files sniffed in parallel), in
  // order; entries `wanted` refuses are dropped before they are sniffed.
  template <typename Fn, typename Wanted = bool (*)(const SourceEntry&)>
  void for_each_batch(
      const SampleSource& source, Fn&& fn,
      Wanted&& wanted = [](const SourceEntry&) { return true; });
  // Calls fn for every entry of the source, in the order the dataset takes them.
  void for_each_entry(const SampleSource& source,
                      const std::function<void(SourceEntry&&)>& fn) const;
  // --shuffle: the source's entries, listed once, in shuffle_rank order (ties by key).
  void list_shuffled(const SampleSource& source);
  // Throws for a sample whose key cannot be a file name or is another sample's too.
  void check_key(const std::string& key) const;
  // Converts a sample (again, when its source changed meanwhile), or finds its file up to date.
  void process(Work& w) const;
  // again: the output in place is the old source's, though newer than the new one.
  void convert_once(Work& w, bool again) const;
  bool keep_member(Work& w) const;
  const image::Codec* target_codec(size_t target) const;
  // Throws when a --resize size is more than a target stores: every sample of it would fail.
  void check_resize_storable() const;
  // Whether some image could be one the target cannot store after the transform.
  bool may_be_unstorable(size_t target) const;
  // Why the target cannot store a source image of this shape after the transform (its channels,
  // its size), or "".
  std::string unstorable(size_t target, const ImageShape& source) const;
  // Before a rerun with other options changes the earlier dataset: throws, with it left as it
  // was, for the first sample of this shard that would fail for its key, or for the channels or
  // size its target cannot store (or, with --on-error skip, when more than --max-errors would).
  void check_before_changes(const SampleSource& source);
  bool reuse(Work& w, const fs::path& out, const std::string& location) const;
  void remove_siblings(const std::string& key, const std::string& keep_ext) const;
  void remove_stale_files(const std::set<std::string>& extensions) const;
  std::optional<fs::path> recorded_source() const;

  const ConvertOptions& o_;
  const unsigned threads_;
  std::optional<OutputDirectory> out_dir_;  // the destination, removed by a failure before a file
  std::optional<DirectoryLock> lock_;       // on the destination
  std::unique_ptr<MixAssigner> assigner_;
  // --shuffle's order: each entry with its shuffle_rank, sorted.
  std::optional<std::vector<std::pair<uint64_t, SourceEntry>>> shuffled_;
  std::optional<Manifest> old_manifest_;
  Manifest manifest_;
  std::set<std::string> known_formats_;  // old and new: their stale files are removed
  std::optional<int64_t> old_index_mtime_;
  // The index in place records every file as the last completed run wrote it (that run is the
  // previous one, or an interrupted rerun with these options followed it), so a file that
  // differs from its record was changed since (damage, an edit) and is converted again.
  bool old_index_exact_ = false;
  std::unique_ptr<TarShards> tar_;  // the tar layout's shards, null for the file tree
  // Set before the first change to the destination; never, in a rerun with nothing to do.
  std::unique_ptr<IncompleteMark> mark_;
  // Walked files whose contents are no image's (an HTML page saved as .jpg), counted by pass 1.
  bool count_not_images_ = false;
  uint64_t not_images_ = 0;
  fs::path first_not_image_;
};

const image::Codec* Engine::target_codec(size_t target) const {
  return image::find_codec(o_.mix[target].target.format);
}

template <typename Fn, typename Wanted>
void Engine::for_each_batch(const SampleSource& source, Fn&& fn, Wanted&& wanted) {
  size_t batch_size = kBatchPerThread * threads_;
  std::vector<SourceEntry> batch;
  auto flush = [&] {
    // Walked files are samples only if their magic bytes say image; sniff them in parallel.
    std::vector<char> keep(batch.size(), 1);
    parallel_for(batch.size(), threads_, [&](size_t i) {
      if (!batch[i].named) keep[i] = is_image_candidate(batch[i].path);
    });
    std::vector<SourceEntry> kept;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (keep[i]) {
        kept.push_back(std::move(batch[i]));
      } else if (count_not_images_ && not_images_++ == 0) {
        first_not_image_ = batch[i].path;
      }
    }
    batch.clear();
    fn(kept);
  };
  for_each_entry(source, [&](SourceEntry&& e) {
    if (!wanted(e)) return;
    batch.push_back(std::move(e));
    if (batch.size() >= batch_size) flush();
  });
  flush();
}

void Engine::for_each_entry(const SampleSource& source,
                            const std::function<void(SourceEntry&&)>& fn) const {
  if (!shuffled_) return source.for_each(fn);
  for (const auto& [rank, e] : *shuffled_) fn(SourceEntry(e));
}

void Engine::list_shuffled(const SampleSource& source) {
  auto& ranked = shuffled_.emplace();
  source.for_each([&](SourceEntry&& e) {
    const uint64_t rank = shuffle_rank(e.key, o_.seed);
    ranked.emplace_back(rank, std::move(e));
    // The walk of a large tree takes a while before the scan's own progress starts.
    if (o_.progress && ranked.size() % 4096 == 0) o_.progress({"listing", ranked.size(), 0, ""});
  });
  // Ties by key; samples of one key (duplicates, which fail) in the order the walk found them.
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.key < b.second.key;
  });
}

void Engine::prepare_destination() {
  const fs::path& dst = o_.destination;
  std::error_code ec;
  if (fs::exists(dst, ec)) {
    if (!fs::is_directory(dst, ec))
      throw Error(Errc::invalid_argument, dst.string() + ": exists and is not a directory");
    if (fs::equivalent(dst, o_.source, ec))
      throw Error(Errc::invalid_argument, "SRC and DST are the same directory");
  }
  out_dir_.emplace(dst);
  lock_.emplace(dst);  // before reading what another run may be writing
  // What a killed run (SIGKILL) left under temporary names at the top and in data/ (the index,
  // the manifest, tar shards): the lock says no live run owns it.
  remove_dead_temp_files(dst);
  remove_dead_temp_files(dst / kDataDir);
  if (is_dataset(dst)) {
    try {
      old_manifest_ = read_manifest(dst);
    } catch (const Error& e) {
      if (!is_damaged_manifest(dst)) throw;
      if (!o_.force)
        throw Error(e.code(), std::string(e.what()) +
                                  " (damaged: a write cut short, or an edit?); --force converts "
                                  "the dataset anew, replacing its data/");
      // As after an interrupted run whose options are unknown: data/ goes whole (no layout is
      // this one), and every sample is converted again.
      old_manifest_.emplace();
      old_manifest_->layout.clear();
    }
  } else if (is_manifest_lost(dst)) {
    if (!o_.force)
      throw Error(Errc::corrupt_data,
                  dst.string() + ": holds a dataset's samples.jsonl and data/ but no " +
                      kManifestName +
                      " (deleted by make after a failed run? see .PRECIOUS in "
                      "dlprep-convert-dataset(1)); --force converts the dataset anew, replacing "
                      "its data/");
    old_manifest_.emplace();  // as after a damaged one: its options are unknown
    old_manifest_->layout.clear();
  } else if (!fs::is_empty(dst, ec)) {
    throw Error(Errc::invalid_argument, not_a_dataset_reason(dst));
  }
}

ConvertResult Engine::run() {
  if (o_.mix.empty()) throw Error(Errc::invalid_argument, "no target format");
  image::check_transform(o_.transform);
  check_resize_storable();
  if (o_.shard_count == 0 || o_.shard_index >= o_.shard_count)
    throw Error(Errc::invalid_argument, "bad shard " + std::to_string(o_.shard_index) + "/" +
                                            std::to_string(o_.shard_count));
  SampleSource given(o_.source);  // checked before the destination is touched
  prepare_destination();
  const std::optional<fs::path> recorded = recorded_source();
  SampleSource source = recorded ? SampleSource(*recorded) : std::move(given);
  source.exclude(o_.destination);
  if (o_.shuffle) list_shuffled(source);

  // Pass 1: every sample of the source (all shards) for the assignment.
  std::vector<double> ratios;
  for (const auto& e : o_.mix) ratios.push_back(e.ratio);
  assigner_ = std::make_unique<MixAssigner>(ratios, o_.seed);
  const bool tar = o_.max_shard_bytes > 0;
  std::set<std::string> labels;  // tar: the class index of a label is its rank
  count_not_images_ = true;
  uint64_t scanned = 0, unlabeled = 0;
  uint64_t digest = 0;  // of the labels and keys in order: parts of one source state agree on it
  std::string first_unlabeled;
  for_each_batch(source, [&](std::vector<SourceEntry>& batch) {
    for (const auto& e : batch) {
      digest = key_hash(e.key, key_hash(e.label, digest));
      assigner_->add(e.label, e.key);
      if (tar && !e.label.empty()) labels.insert(e.label);
      if (e.label.empty() && unlabeled++ == 0) first_unlabeled = e.key;
    }
    scanned += batch.size();
    if (o_.progress) o_.progress({"scanning", scanned, 0, ""});
  });
  count_not_images_ = false;
  if (scanned == 0)  // a wrong path, surely: a dataset of nothing would only fail a trainer later
    throw Error(Errc::invalid_argument, source.path().string() + ": no image files found");
  // A stray image beside the class folders: a class of its own named "" (no .cls member), which
  // torchvision's ImageFolder would not list and WebDataset's to_tuple(..., "cls") fails on.
  if (unlabeled > 0 && unlabeled < scanned && o_.warning)
    o_.warning(std::to_string(unlabeled) + (unlabeled == 1 ? " sample has" : " samples have") +
               " no class beside " + std::to_string(scanned - unlabeled) +
               " that have one (the first: " + first_unlabeled +
               (source.kind() == SourceKind::list ? "): a list line without its TAB and label?"
                : source.kind() == SourceKind::dataset
                    ? "): unlabelled in the source dataset"
                    : "): an image at the top of SRC, beside its "
                      "class folders?"));
  // Shards without a single .cls member: a surprise for WebDataset's to_tuple(..., "cls") at
  // training time (a flat file tree, for unsupervised work, is common and gets no warning).
  if (tar && unlabeled == scanned && o_.warning)
    o_.warning("no sample has a class (SRC has no class folders): the shards hold no .cls members");
  assigner_->finish();
  if (assigner_->has_shared_hashes()) {  // rare: tell duplicate keys from colliding hashes
    for_each_batch(
        source,
        [&](std::vector<SourceEntry>& batch) {
          for (const auto& e : batch) assigner_->add_key(e.label, e.key);
        },
        [&](const SourceEntry& e) { return assigner_->shares_hash(e.key); });
    assigner_->finish_keys();
  }
  uint64_t total = assigner_->shard_size(o_.shard_index, o_.shard_count);

  // The manifest says "incomplete" until the end. Files of a format whose spec is new or changed
  // were made with other options (or belong to no recorded run): they are removed *before* the
  // manifest names the new spec, so that every file of a format the manifest lists was made
  // with the spec it records, even after an interruption.
  manifest_.tool = o_.tool;
  // When the dataset was made: a rerun keeps it, so that one with nothing to do changes no byte.
  manifest_.created =
      old_manifest_ && !old_manifest_->created.empty() ? old_manifest_->created : utc_now();
  manifest_.source_kind = source_kind_name(source.kind());
  manifest_.source_path = recorded ? recorded->string() : source_path_text(o_.source.string());
  manifest_.source_samples = scanned;
  char digest_hex[17];
  std::snprintf(digest_hex, sizeof digest_hex, "%016" PRIx64, digest);
  manifest_.source_digest = digest_hex;
  manifest_.seed = o_.seed;
  manifest_.shuffled = o_.shuffle;
  manifest_.shard_index = o_.shard_index;
  manifest_.shard_count = o_.shard_count;
  manifest_.on_error = o_.skip_errors ? "skip" : "fail";
  manifest_.transform = o_.transform.text();  // another transform: every file is stale
  std::set<std::string> stale_extensions;
  for (const auto& e : o_.mix) {
    TargetState t{e.target.format, e.target.text, e.ratio};
    bool same = false;
    if (old_manifest_)
      for (const auto& old : old_manifest_->targets)
        same |= old.format == t.format && old.spec == t.spec &&
                old_manifest_->transform == manifest_.transform;
    if (!same) {
      const image::Codec* codec = image::find_codec(t.format);
      for (uint32_t channels : {1u, 3u}) stale_extensions.insert("." + codec->extension(channels));
    }
    manifest_.targets.push_back(t);
    known_formats_.insert(t.format);
  }
  // The other layout's data, or shards made with other options (formats, size, classes, part),
  // go before the manifest names this layout.
  manifest_.layout = tar ? "tar" : "files";
  if (tar) {
    manifest_.max_shard_bytes = o_.max_shard_bytes;
    manifest_.labels.assign(labels.begin(), labels.end());
  }
  // A rerun of a finished conversion with the same options changes nothing until it writes.
  const bool rerun = old_manifest_ && old_manifest_->complete && !o_.force &&
                     same_options(*old_manifest_, manifest_);
  bool shards_current = false;
  if (old_manifest_) {
    const Manifest& old = *old_manifest_;
    // (Not when an interrupted run of these options resumes: it removes nothing of another.)
    if (o_.force || !same_options(old, manifest_)) check_before_changes(source);
    // Stale files go while the manifest still records the options they were made with, but no
    // longer says complete: an interruption in between leaves no "complete" dataset with files
    // missing, and the rerun finds them stale again.
    if (!rerun && old.complete) {
      Manifest old_incomplete = old;
      old_incomplete.complete = false;
      old_incomplete.index_matches = true;  // its own index, still in place
      write_manifest(o_.destination, old_incomplete);
    }
    shards_current = tar && old.layout == "tar" && stale_extensions.empty() &&
                     old.max_shard_bytes == manifest_.max_shard_bytes &&
                     old.labels == manifest_.labels && old.shuffled == manifest_.shuffled &&
                     old.shard_index == o_.shard_index && old.shard_count == o_.shard_count;
    if (old.layout != manifest_.layout || (tar && !shards_current)) {
      std::error_code ec;
      fs::remove_all(o_.destination / kDataDir, ec);
      if (ec)
        throw Error(Errc::io, (o_.destination / kDataDir).string() +
                                  ": cannot remove stale data: " + ec.message());
    }
    for (const auto& old_target : old.targets) known_formats_.insert(old_target.format);
    remove_stale_files(stale_extensions);
  }
  if (tar)
    tar_ = std::make_unique<TarShards>(TarLayout{o_.destination, o_.max_shard_bytes, o_.shard_index,
                                                 o_.shard_count, manifest_.labels},
                                       shards_current && !o_.force);
  // The index in place stays the last completed run's until this one's replaces it: whether it
  // was made with these options goes into the mark, for a rerun after an interruption.
  Manifest marked = manifest_;
  marked.index_matches = old_manifest_ &&
                         (old_manifest_->complete || old_manifest_->index_matches) &&
                         same_options(*old_manifest_, manifest_);
  mark_ = std::make_unique<IncompleteMark>(o_.destination, marked);
  if (!rerun) mark_->set();

  // Pass 2.
  fs::path index_path = o_.destination / kIndexName;
  old_index_mtime_ = mtime_ns(index_path);
  old_index_exact_ = old_manifest_ && (old_manifest_->complete || old_manifest_->index_matches);
  OldIndex old_index(index_path, !o_.force && old_manifest_ && !old_manifest_->layout.empty());
  AtomicFile index(index_path, AtomicFile::Mode::defer);  // a rerun may find it current
  ConvertResult result;
  uint64_t ordinal = 0;
  ListedLocations listed;               // the new index's file locations
  uint64_t wide = 0;                    // converted samples with more than 8 bits per sample
  std::string first_wide;
  ShardSources shard_sources;  // tar layout
  uint64_t dotted = 0;  // tar layout: keys whose file name has a dot
  std::string first_dotted;
  uint64_t done = 0;
  std::string lines;               // the batch's index records
  bool keeping = tar_ != nullptr;  // tar layout: still keeping what an earlier run wrote
  // One sample, in source order: counted, appended to the open shard (tar layout), its record
  // added to the index; its failure thrown unless it is skipped.
  auto account = [&](Work& w) {
    switch (w.status) {
      case Work::pending:
        return;  // stopped by an earlier failure, which is thrown first
      case Work::failed:
        if (!o_.skip_errors || w.writing) throw Error(w.code, w.error);
        if (++result.failed > o_.max_errors)
          throw Error(w.code, "more than " + std::to_string(o_.max_errors) +
                                  " samples failed (--max-errors); the last: " + w.error);
        if (o_.warning) o_.warning(w.error + " (skipped)");
        break;
      case Work::converted:
        if (w.source_bits > 8 && wide++ == 0) first_wide = source_name(w.entry);
        ++result.converted;
        result.source_bytes += w.source_bytes;
        result.output_bytes += w.output_bytes;
        result.stage_seconds += w.seconds;
        break;
      case Work::up_to_date:
        ++result.up_to_date;
        break;
    }
    if (o_.progress) o_.progress({"convert-dataset", ++done, total, w.entry.key});
    if (w.status == Work::failed) return;
    if (tar_ && webdataset_key(w.entry.key) != w.entry.key && dotted++ == 0)
      first_dotted = w.entry.key;
    if (tar_) {
      if (w.kept) {
        tar_->keep(*w.kept, w.record);
      } else {
        Stopwatch write;
        mark_->set();
        keeping = false;  // samples are written anew from here
        tar_->stop_proposing();
        tar_->add(w.record, w.member, w.data);
        result.stage_seconds.write += write.seconds();
        w.data = Bytes();
      }
      shard_sources.add(o_.destination, w, *mark_);
    }
    lines += format_record(w.record);
    lines += '\n';
    if (!tar_) listed.add(w.record.location);
    manifest_.count(w.record);
  };
  if (o_.progress) o_.progress({"convert-dataset", 0, total, ""});  // the conversion starts now
  for_each_batch(source, [&](std::vector<SourceEntry>& batch) {
    std::vector<Work> works;
    for (auto& e : batch) {
      uint64_t i = ordinal++;
      MixAssigner::Placement place = assigner_->place(e.label, e.key);
      if (place.shard(o_.shard_count) != o_.shard_index) continue;
      Work w;
      w.ordinal = i;
      w.target = place.entry;
      w.old = old_index.find(e.key);
      if (tar_) w.kept = tar_->propose(e.key, e.label, *target_codec(w.target));
      w.entry = std::move(e);
      works.push_back(std::move(w));
    }
    // With --on-error fail, samples after the first failure (in source order) are not started;
    // those before it still are, so the error reported is always the first one.
    std::atomic<size_t> first_failure{SIZE_MAX};
    auto attempt = [&](size_t i, const auto& step) {
      Work& w = works[i];
      if (i > first_failure.load(std::memory_order_relaxed)) return;
      try {
        step(w);
      } catch (const Error& e) {
        w.status = Work::failed;
        // Bad data is a failure of that sample, never a usage error.
        w.code = e.code() == Errc::invalid_argument ? Errc::corrupt_data : e.code();
        std::string what = e.what();
        std::string path = source_name(w.entry);
        w.error = what.rfind(path, 0) == 0 ? what : path + ": " + what;
      } catch (const std::bad_alloc&) {
        w.status = Work::failed;
        w.code = Errc::limit_exceeded;
        w.error = source_name(w.entry) + ": out of memory";
      }
      if (w.status == Work::failed && (!o_.skip_errors || w.writing)) {
        size_t seen = first_failure.load();
        while (i < seen && !first_failure.compare_exchange_weak(seen, i)) {
        }
      }
    };
    auto convert = [this](Work& w) { process(w); };
    lines.clear();
    size_t from = 0;  // the samples before it were kept from an earlier run's shards
    if (keeping) {
      // Tar layout: the proposed samples that are still current are kept (cheap: no
      // conversion), up to the first sample that is written; a sample that fails (--on-error
      // skip) is written nowhere and breaks no chain, so those that were not proposed are
      // converted first when proposed samples follow them. From the first written sample, every
      // sample is written anew.
      parallel_for(works.size(), threads_, [&](size_t i) {
        if (works[i].kept)
          attempt(i, [this](Work& w) {
            check_key(w.entry.key);
            keep_member(w);
          });
      });
      size_t chain = 0;  // the samples before it could be kept, as far as proposals tell
      size_t last_kept = 0;
      for (; chain < works.size(); ++chain) {
        const Work& w = works[chain];
        if (w.kept && w.status != Work::up_to_date) break;
        if (w.kept) last_kept = chain + 1;
      }
      std::vector<size_t> unproposed;
      for (size_t i = 0; i + 1 < last_kept; ++i)
        if (!works[i].kept) unproposed.push_back(i);
      // None is started past the first that is written (it ends the chain): they hold their
      // encoded bytes until they are appended.
      std::atomic<size_t> written{SIZE_MAX};
      parallel_for(unproposed.size(), threads_, [&](size_t k) {
        const size_t i = unproposed[k];
        if (i > written.load()) return;
        attempt(i, convert);
        size_t seen = written.load();
        while (works[i].status == Work::converted && i < seen &&
               !written.compare_exchange_weak(seen, i)) {
        }
      });
      for (; from < works.size(); ++from) {
        Work& w = works[from];
        if (w.kept ? w.status != Work::up_to_date : w.status != Work::failed) break;
        account(w);
      }
      bool dropped = false;  // proposals that will not be kept: the chain ends here
      for (size_t i = from; i < works.size(); ++i) {
        if (!works[i].kept) continue;
        dropped = true;
        works[i].kept.reset();
        if (works[i].status != Work::up_to_date) continue;
        works[i].status = Work::pending;
        works[i].record = SampleRecord();
      }
      if (dropped) {
        keeping = false;
        tar_->stop_proposing();
      }
    }
    // Converted in parallel, accounted in source order as they finish: the tar layout holds the
    // encoded samples of at most the window (and those being converted), whatever their size.
    parallel_for_ordered(
        works.size() - from, threads_, kWindowPerThread * threads_,
        [&](size_t k) {
          if (works[from + k].status == Work::pending) attempt(from + k, convert);
        },
        [&](size_t k) { account(works[from + k]); });
    index.write(bytes_of(lines));
  });
  result.not_images = not_images_;
  if (not_images_ > 0 && o_.warning)
    o_.warning(
        std::to_string(not_images_) + (not_images_ == 1 ? " file in SRC is" : " files in SRC are") +
        " not an image by its contents and left out (the first: " + first_not_image_.string() +
        ")");
  if (wide > 0 && o_.warning)
    o_.warning(std::to_string(wide) + (wide == 1 ? " sample has" : " samples have") +
               " more than 8 bits per sample (the first: " + first_wide +
               "), read as 8 bits: their files are not lossless of them");
  if (dotted > 0 && o_.warning)
    o_.warning(std::to_string(dotted) +
               (dotted == 1 ? " sample has a dot in its" : " samples have a dot in their") +
               " file name (the first: " + first_dotted +
               "): WebDataset takes a member's key up to the first dot of its name, so it reads "
               "them under other keys (" +
               webdataset_key(first_dotted) +
               ") and extensions; rename them, or read the shards by samples.jsonl");
  const bool same_index = rerun && !mark_->is_set() && index.same_as_target();
  if (!same_index) mark_->set();
  if (tar_) {
    manifest_.shard_files = tar_->finish();
    shard_sources.check(o_.destination, *mark_);
  }
  // Read from the old index, before the new one replaces it (tar shards: TarShards' own); after an
  // interrupted run, also what it wrote that no index names.
  std::vector<fs::path> orphans =
      tar_ ? std::vector<fs::path>() : orphan_files(o_.destination, listed);
  if (old_manifest_ && !old_manifest_->complete) {
    for (fs::path& f : interrupted_leftovers(o_.destination, listed))
      orphans.push_back(std::move(f));
    std::sort(orphans.begin(), orphans.end());  // each once, in n log n for any number of them
    orphans.erase(std::unique(orphans.begin(), orphans.end()), orphans.end());
  }
  if (!orphans.empty()) mark_->set();
  if (!same_index) index.commit();
  result.removed = remove_files(o_.destination, orphans);
  manifest_.failed = result.failed;
  manifest_.complete = true;
  if (!mark_->is_set() && old_manifest_->source_digest.empty()) {
    manifest_.source_samples = 0;  // an older dlprep's dataset: not rewritten only to add it
    manifest_.source_digest.clear();
  }
  if (mark_->is_set() || manifest_to_json(manifest_) != manifest_to_json(*old_manifest_))
    write_manifest(o_.destination, manifest_);
  result.manifest = manifest_;
  return result;
}

void Engine::check_resize_storable() const {
  const image::Size size = o_.transform.resize;
  if (size.width == 0) return;
  for (size_t t = 0; t < o_.mix.size(); ++t)
    if (std::string why = image::oversize_reason(*target_codec(t), size.width, size.height);
        !why.empty())
      throw Error(Errc::invalid_argument, "--resize " + std::to_string(size.width) + "x" +
                                              std::to_string(size.height) + ": " + why);
}

bool Engine::may_be_unstorable(size_t target) const {
  const image::Codec& codec = *target_codec(target);
  for (uint32_t c = 1; c <= 4; ++c)
    if (!codec.round_trips(o_.transform.output_channels(c))) return true;
  // --resize gives one size, checked before the run; --max-side N, sides of at most N.
  const image::Transform& t = o_.transform;
  const uint32_t side = t.resize.width > 0 ? 0 : t.max_side > 0 ? t.max_side : limits::kMaxSide;
  return side > codec.max_side();
}

std::string Engine::unstorable(size_t target, const ImageShape& source) const {
  const image::Codec& codec = *target_codec(target);
  const image::Size out = image::plan_transform(o_.transform, {source.width, source.height}).output;
  return unstorable_reason(codec, o_.transform.output_channels(source.channels), out.width,
                           out.height);
}

namespace {

// What the check before changes reads of a sample: that its file is there and no folder, and,
// named by a list or an index, that its first bytes are an image's; with `probe`, also its
// header's shape: from the first 64 KiB of a file (read whole when the format's probe wants more,
// as BMP's and PNM's, which check the pixel data's size), from a tar member whole. A FIFO or a
// socket, which only the conversion may read, is taken on trust: nullopt.
std::optional<ImageShape> check_source(const SourceEntry& e, bool probe) {
  struct stat st {};
  if (::stat(e.path.c_str(), &st) != 0)
    throw Error(Errc::io, "cannot open: " + std::string(std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw Error(Errc::io, "is a directory");
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return std::nullopt;
  thread_local Bytes buffer;
  if (e.member.empty()) {
    if (!probe && !e.named) return std::nullopt;  // a walked file's first bytes were sniffed
    const size_t want = probe ? size_t{64} << 10 : 64;
    const int fd = ::open(e.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(Errc::io, "cannot open: " + std::string(std::strerror(errno)));
    buffer.resize(want);
    size_t got = 0;
    try {
      got = read_up_to(fd, buffer.data(), want, e.path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    const ByteSpan head(buffer.data(), got);
    if (head.empty()) throw Error(Errc::corrupt_data, "empty file");
    const image::Codec& codec = image::sniff_codec_or_throw(head);
    if (!probe) return std::nullopt;
    if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) <= got)
      return codec.probe(head).shape;  // all of it
    try {
      return codec.probe(head).shape;
    } catch (const Error&) {  // more than the head to check: read whole below
    }
  } else if (!probe) {
    return std::nullopt;
  }
  SourceBytes bytes(e, buffer);
  if (bytes.bytes().empty()) throw Error(Errc::corrupt_data, "empty file");
  return image::sniff_codec_or_throw(bytes.bytes()).probe(bytes.bytes()).shape;
}

}  // namespace

void Engine::check_before_changes(const SampleSource& source) {
  std::vector<char> restricted;
  for (size_t t = 0; t < o_.mix.size(); ++t) restricted.push_back(may_be_unstorable(t));
  const std::string unchanged = "; " + o_.destination.string() + " is left as it was";
  const bool tar = o_.max_shard_bytes > 0;
  constexpr size_t kMaxNameBytes = 255;  // NAME_MAX of Linux's file systems
  uint64_t checked = 0, failures = 0;
  for_each_batch(source, [&](std::vector<SourceEntry>& batch) {
    struct Problem {
      Errc code = Errc::internal;
      std::string what;
    };
    std::vector<Problem> problems(batch.size());
    parallel_for(batch.size(), threads_, [&](size_t i) {
      const SourceEntry& e = batch[i];
      const MixAssigner::Placement place = assigner_->place(e.label, e.key);
      if (place.shard(o_.shard_count) != o_.shard_index) return;
      try {
        check_key(e.key);
        if (!tar) {  // a name longer than the file system takes fails only at its rename
          const std::string name =
              fs::path(e.key).filename().string() + "." + target_codec(place.entry)->extension(3);
          if (name.size() > kMaxNameBytes)
            throw Error(Errc::io, "the file name " + name + " is longer than " +
                                      std::to_string(kMaxNameBytes) + " bytes");
        }
        const bool probe = restricted[place.entry] != 0;
        if (const std::optional<ImageShape> shape = check_source(e, probe); shape && probe)
          problems[i] = {Errc::unsupported, unstorable(place.entry, *shape)};
      } catch (const Error& error) {  // bad data is the sample's failure, not a usage error
        problems[i] = {error.code() == Errc::invalid_argument ? Errc::corrupt_data : error.code(),
                       error.what()};
      } catch (const std::bad_alloc&) {
        problems[i] = {Errc::limit_exceeded, "out of memory"};
      }
    });
    for (size_t i = 0; i < batch.size(); ++i) {
      Problem& p = problems[i];
      if (p.what.empty()) continue;
      const std::string path = source_name(batch[i]);
      if (p.what.rfind(path, 0) != 0) p.what = path + ": " + p.what;
      if (!o_.skip_errors) throw Error(p.code, p.what + unchanged);
      if (++failures > o_.max_errors)
        throw Error(p.code, "more than " + std::to_string(o_.max_errors) +
                                " samples would fail (--max-errors); the last: " + p.what +
                                unchanged);
    }
    checked += batch.size();
    if (o_.progress) o_.progress({"checking", checked, 0, ""});
  });
}

// The record of an up-to-date file: from the previous index if the file has not changed since
// that index was written, else by reading the file. False if the file is not what it should be.
bool Engine::reuse(Work& w, const fs::path& out, const std::string& location) const {
  const TargetSpec& t = o_.mix[w.target].target;
  SampleRecord& r = w.record;
  r.ordinal = w.ordinal;
  r.key = w.entry.key;
  r.label = w.entry.label;
  r.format = t.format;
  r.location = location;
  r.source = source_name(w.entry);
  std::error_code ec;
  uint64_t size = fs::file_size(out, ec);
  if (ec) return false;
  auto out_mtime = mtime_ns(out);
  const bool recorded =
      old_index_exact_ && w.old && w.old->location == location && w.old->format == t.format;
  if (o_.recheck && !recorded) return false;
  if (!o_.recheck && w.old && w.old->location == location && w.old->format == t.format &&
      w.old->bytes == size && old_index_mtime_ && out_mtime && *out_mtime <= *old_index_mtime_) {
    r.bytes = w.old->bytes;
    r.shape = w.old->shape;
    r.crc32 = w.old->crc32;
    return true;
  }
  try {
    MappedFile file(out);
    const image::Codec* codec = image::sniff_codec(file.bytes());
    if (!codec || codec->name() != t.format) return false;
    r.shape = codec->probe(file.bytes()).shape;
    r.bytes = file.bytes().size();
    r.crc32 = crc32_of(file.bytes());
  } catch (const Error&) {
    return false;
  }
  // Touched (a copy without -p) is fine; other bytes are not this sample's conversion.
  return !(recorded && (w.old->bytes != r.bytes || w.old->crc32 != r.crc32));
}

// Tar layout: a sample proposed from an earlier run's shard is kept when its source is no newer
// than the shard and its record can be recovered (with --recheck: the member's bytes are its
// record's); else it is converted.
bool Engine::keep_member(Work& w) const {
  SampleRecord& r = w.record;
  r.ordinal = w.ordinal;
  r.key = w.entry.key;
  r.label = w.entry.label;
  r.source = source_name(w.entry);
  auto src_mtime = mtime_ns(w.entry.path);
  const std::string& format = o_.mix[w.target].target.format;
  const bool recorded = old_index_exact_ && w.old && w.old->format == format;
  if (!src_mtime || *src_mtime > w.kept->shard->mtime_ns || (o_.recheck && !recorded) ||
      !recover_record(*w.kept, format, w.old, o_.recheck ? std::nullopt : old_index_mtime_,
                      old_index_exact_, r)) {
    r = SampleRecord();
    return false;
  }
  w.status = Work::up_to_date;
  return true;
}

void Engine::remove_siblings(const std::string& key, const std::string& keep_ext) const {
  for (const auto& format : known_formats_) {
    const image::Codec* codec = image::find_codec(format);
    if (!codec) continue;
    for (uint32_t channels : {1u, 3u}) {
      std::string ext = codec->extension(channels);
      if (ext == keep_ext) continue;
      std::error_code ec;
      fs::remove(o_.destination / kDataDir / (key + "." + ext), ec);
    }
  }
}

// A rerun that names the dataset's source another way (./src, an absolute path, a link) reads it
// by the name dataset.json records, so that the manifest and the index's source paths change no
// byte.
std::optional<fs::path> Engine::recorded_source() const {
  if (!old_manifest_ || old_manifest_->source_path.empty()) return std::nullopt;
  const fs::path recorded = old_manifest_->source_path;
  std::error_code ec;
  if (!fs::equivalent(recorded, o_.source, ec)) return std::nullopt;
  // A list file's relative entries are read from its folder: one list linked into two folders
  // names two sets of images.
  auto folder = [](const fs::path& p) { return p.has_parent_path() ? p.parent_path() : "."; };
  if (!fs::is_directory(o_.source, ec) && !fs::equivalent(folder(recorded), folder(o_.source), ec))
    return std::nullopt;
  return recorded;
}

// Walks data/ (streaming) and removes the files with these extensions, and temporary files that
// a killed run (SIGKILL, power loss) could not remove.
void Engine::remove_stale_files(const std::set<std::string>& extensions) const {
  fs::path data = o_.destination / kDataDir;
  std::error_code ec;
  if (!fs::exists(data, ec)) return;
  for (DirectoryWalk walk(data); walk.next(ec);) {
    if (walk.type() != fs::file_type::regular) continue;
    const std::string_view name = walk.name();
    bool temp = name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos;
    if (temp || extensions.count(walk.path().extension().string())) {
      std::error_code rec;
      fs::remove(walk.path(), rec);
      if (rec)
        throw Error(Errc::io, walk.path_string() + ": cannot remove stale file: " + rec.message());
    }
  }
  if (ec)
    throw Error(Errc::io, data.string() + ": cannot read directory: " + ec.message(), ec.value());
}

void Engine::check_key(const std::string& key) const {
  check_location(key);
  if (assigner_->is_duplicate(key))
    throw Error(Errc::corrupt_data,
                "sample key '" + key +
                    "' is not unique (another source file has the same path without its "
                    "extension, or the same once bytes that are not UTF-8 are written as %XX)");
}

void Engine::process(Work& w) const {
  // A sample of a dataset source (a tar member): its bytes are checked by their crc32, and its
  // file, a shard, is every other member's too.
  if (!w.entry.member.empty()) return convert_once(w, false);
  // A source replaced or modified while it was converted: the output is the old file's but newer
  // than the new one, so every rerun would keep it. It goes, and the sample is converted again,
  // from the new file.
  w.stamp = convert_unchanged(
      w.entry.path,
      [&](bool again) {
        w.status = Work::pending;
        convert_once(w, again);
        return w.status == Work::converted;
      },
      [&] {
        std::error_code ec;  // tar layout: nothing written yet
        if (!tar_) fs::remove(o_.destination / w.record.location, ec);
      });
}

void Engine::convert_once(Work& w, bool again) const {
  const TargetSpec& t = o_.mix[w.target].target;
  const image::Codec* target = image::find_codec(t.format);
  const std::string& key = w.entry.key;
  check_key(key);
  ConvertStageSeconds& seconds = w.seconds;
  Stopwatch stage;
  auto lap = [&stage](double& into) {
    into += stage.seconds();
    stage.restart();
  };
  thread_local Bytes source_buffer;
  SourceBytes source(w.entry, source_buffer);
  ByteSpan in = source.bytes();
  if (in.empty()) throw Error(Errc::corrupt_data, "empty file");
  const image::Codec* codec = &image::sniff_codec_or_throw(in);
  const image::ImageInfo probed = codec->probe(in);
  const ImageShape& declared = probed.shape;
  w.source_bits = probed.bits;

  if (!o_.force && !tar_ && !again) {
    std::string location = std::string(kDataDir) + "/" + key + "." +
                           target->extension(o_.transform.output_channels(declared.channels));
    fs::path out = o_.destination / location;
    auto out_mtime = mtime_ns(out);
    auto src_mtime = mtime_ns(w.entry.path);
    if (out_mtime && src_mtime && *out_mtime >= *src_mtime && reuse(w, out, location)) {
      w.status = Work::up_to_date;
      return;
    }
  }
  lap(seconds.read);

  Image image = codec->decode(in);
  lap(seconds.decode);
  const bool transformed = image::apply_transform(o_.transform, image);
  lap(seconds.transform);
  if (!target->round_trips(image.channels()))
    throw Error(Errc::unsupported, cannot_store(*target, image.channels()));
  Bytes encoded;
  // A source already in the target format, no options given, pixels unchanged: copied.
  ByteSpan bytes = in;
  if (codec != target || t.has_options || transformed) {
    encoded = target->encode(image, t.options);
    bytes = encoded;
  }
  lap(seconds.encode);
  std::string ext = target->extension(image.channels());
  std::string location = std::string(kDataDir) + "/" + key + "." + ext;
  SampleRecord& r = w.record;
  r.ordinal = w.ordinal;
  r.key = key;
  r.label = w.entry.label;
  r.format = t.format;
  r.location = location;
  r.bytes = bytes.size();
  r.shape = target->probe(bytes).shape;
  r.crc32 = crc32_of(bytes);
  r.source = source_name(w.entry);
  lap(seconds.record);
  if (tar_) {
    r.location.clear();  // set when run() appends it to a shard, in source order
    w.member = member_name(key, *target, image.channels());
    if (encoded.empty()) encoded.assign(bytes.begin(), bytes.end());
    w.data = std::move(encoded);
  } else {
    w.writing = true;  // from here a failure stops the run, --on-error skip or not
    mark_->set();
    AtomicFile file(o_.destination / location);
    file.write(bytes);
    file.commit();
    lap(seconds.write);
    remove_siblings(key, ext);
    w.writing = false;
  }
  w.source_bytes = in.size();
  w.output_bytes = bytes.size();
  w.status = Work::converted;
}

}  // namespace

ConvertStageSeconds& ConvertStageSeconds::operator+=(const ConvertStageSeconds& o) {
  read += o.read;
  decode += o.decode;
  transform += o.transform;
  encode += o.encode;
  record += o.record;
  write += o.write;
  return *this;
}

ConvertResult convert_dataset(const ConvertOptions& options) {
  Engine engine(options);
  try {
    return engine.run();
  } catch (...) {
    engine.discard_empty_destination();
    throw;
  }
}

}  // namespace dlprep::dataset
