#include "dataset/dataset_merge.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/orphan_files.hpp"
#include "dataset/sample_source.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;
namespace {

Error bad(const std::string& what) { return Error(Errc::invalid_argument, what); }

std::string mix_text(const Manifest& m) {
  std::string s;
  for (const auto& t : m.targets) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.9g", t.ratio);
    s += (s.empty() ? "" : ",") + t.spec + ":" + ratio;
  }
  return s;
}

// What makes `a` and `b` shards of different conversions, as "what: a vs b"; "" when they are
// shards of one.
std::string difference(const Manifest& a, const Manifest& b) {
  auto differ = [](const std::string& what, const std::string& x, const std::string& y) {
    return x == y ? std::string() : what + ": " + x + " vs " + y;
  };
  auto quoted = [](const std::string& s) {
    return s.empty() ? std::string("none") : "'" + s + "'";
  };
  // Parts whose source samples were compared may name it otherwise (./src and /data/src), or
  // name a copy that is not here (another machine's); two sources that are both here must be
  // one, since the digest covers the keys and labels alone (not a dataset at another size).
  const bool compared = !a.source_digest.empty() && !b.source_digest.empty();
  std::error_code ec;
  const bool one_source =
      source_path_text(a.source_path) == source_path_text(b.source_path) ||
      (compared && (!fs::exists(a.source_path, ec) || !fs::exists(b.source_path, ec) ||
                    fs::equivalent(a.source_path, b.source_path, ec)));
  for (const std::string& d : {
           one_source
               ? differ("source", a.source_kind, b.source_kind)
               : differ("source", a.source_kind + " " + quoted(source_path_text(a.source_path)),
                        b.source_kind + " " + quoted(source_path_text(b.source_path))),
           differ("shard count", std::to_string(a.shard_count), std::to_string(b.shard_count)),
           a.shard_rule == b.shard_rule
               ? std::string()
               : "shard rule: " + std::to_string(a.shard_rule) + " vs " +
                     std::to_string(b.shard_rule) +
                     " (parts from dlprep versions that deal samples to parts differently: "
                     "convert the older parts again)",
           differ("seed", std::to_string(a.seed), std::to_string(b.seed)),
           differ("order", a.shuffled ? "shuffled" : "source", b.shuffled ? "shuffled" : "source"),
           differ("mix", mix_text(a), mix_text(b)),
           differ("transform", quoted(a.transform), quoted(b.transform)),
           differ("layout", a.layout, b.layout),
           differ("--shards size", std::to_string(a.max_shard_bytes),
                  std::to_string(b.max_shard_bytes)),
           differ("labels", std::to_string(a.labels.size()) + " classes",
                  std::to_string(b.labels.size()) + " classes"),
       })
    if (!d.empty()) return d;
  // Of one source, but in another state (files added or removed between the parts' runs), or
  // two lists that share a name (/dev/fd/63): its samples would be dealt to the parts anew.
  if (compared && (a.source_samples != b.source_samples || a.source_digest != b.source_digest))
    return "source samples: " + std::to_string(a.source_samples) + " (digest " + a.source_digest +
           ") vs " + std::to_string(b.source_samples) + " (digest " + b.source_digest +
           "): the parts saw different sources, or the source changed between their runs; "
           "convert the older parts again";
  if (a.labels != b.labels)
    return "labels: the same number of classes, in another order or named otherwise";
  return "";
}

// Places `from` at `to`: the same inode already there is kept, and so is an earlier copy (the
// same size and modification time, which a copy takes from its source, as rsync's quick check
// has it); otherwise a hard link (or, across file systems, a copy)
// is made under a temporary name and renamed over `to`, so `to` is always a complete file.
void place(const fs::path& from, const fs::path& to, IncompleteMark& mark) {
  struct stat a {
  }, b{};
  if (::stat(from.c_str(), &a) != 0) {
    const int err = errno;
    throw Error(Errc::io, from.string() + ": cannot open: " + std::strerror(err), err);
  }
  if (!S_ISREG(a.st_mode)) throw Error(Errc::io, from.string() + ": not a regular file");
  // The quick check also on one file system: a file that may not be hard-linked there
  // (protected_hardlinks: another user's) is copied too.
  if (::stat(to.c_str(), &b) == 0 &&
      ((a.st_dev == b.st_dev && a.st_ino == b.st_ino) ||
       (a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
        a.st_mtim.tv_nsec == b.st_mtim.tv_nsec)))
    return;
  mark.set();
  make_directories(to.parent_path());
  // An AtomicFile temp name: found after a SIGKILL.
  fs::path temp = to.parent_path() / temp_file_name(to.filename().string(), "linked");
  ::unlink(temp.c_str());
  // The file a linked sample names, not the link (relative, it would dangle in OUT).
  if (::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) {
    if (::rename(temp.c_str(), to.c_str()) != 0) {
      int err = errno;
      ::unlink(temp.c_str());
      throw Error(Errc::io, to.string() + ": rename failed: " + std::strerror(err));
    }
    return;
  }
  // Across file systems: copied a MiB at a time (mapped whole, a shard's pages were all in RSS).
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
  if (in < 0) {
    const int err = errno;
    throw Error(Errc::io, from.string() + ": cannot open: " + std::strerror(err), err);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in};
  struct stat opened {
  }, after{};
  if (::fstat(in, &opened) != 0) {
    const int err = errno;
    throw Error(Errc::io, from.string() + ": cannot stat: " + std::strerror(err), err);
  }
  if (!S_ISREG(opened.st_mode)) throw Error(Errc::io, from.string() + ": not a regular file");
  AtomicFile out(to);
  // Sized to the file, at most a MiB: a sample of a few KB needs no zero-filled MiB of its own.
  const auto capacity =
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(opened.st_size) + 1, 1 << 20));
  const std::unique_ptr<uint8_t[]> buffer(new uint8_t[capacity]);
  uint64_t copied = 0;
  // Past the size it had, a file still growing has changed: no need to read on to its end.
  while (copied <= static_cast<uint64_t>(opened.st_size)) {
    const size_t n = read_some(in, buffer.get(), capacity, from);
    if (n == 0) break;
    out.write(ByteSpan(buffer.get(), n));
    copied += n;
  }
  // A source written meanwhile (shrunk, grown, rewritten) gives no complete copy of anything.
  if (::fstat(in, &after) != 0 || copied != static_cast<uint64_t>(opened.st_size) ||
      after.st_size != opened.st_size || after.st_mtim.tv_sec != opened.st_mtim.tv_sec ||
      after.st_mtim.tv_nsec != opened.st_mtim.tv_nsec)
    throw Error(Errc::io, from.string() + ": changed while being copied; merge again");
  out.commit();
  const timespec times[2] = {opened.st_atim, opened.st_mtim};
  ::utimensat(AT_FDCWD, to.c_str(), times, 0);  // failing, the next merge only copies it again
}

struct Input {
  fs::path dir;
  uint64_t samples = 0;  // as its dataset.json counts them
  std::unique_ptr<IndexReader> reader;
  SampleRecord current;
  bool has = false;
  uint64_t read = 0;
  void advance() {
    has = reader->next(current);
    read += has ? 1 : 0;
    if (read > samples || (!has && read < samples))
      throw record_count_error(dir / kIndexName, read, samples);
  }
};

// Calls fn(part, record) for the parts' records (part: an index into o.inputs) in the order of
// their ordinals (a streaming N-way merge), each with a valid location; throws on a repeated or
// out-of-order ordinal.
void for_each_record(const MergeOptions& o, const std::vector<Manifest>& manifests,
                     const std::function<void(size_t, const SampleRecord&)>& fn) {
  std::vector<Input> inputs(o.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].dir = o.inputs[i];
    inputs[i].samples = manifests[i].samples;
    inputs[i].reader = std::make_unique<IndexReader>(o.inputs[i] / kIndexName);
    inputs[i].advance();
  }
  uint64_t last = 0;
  for (bool first = true;; first = false) {
    Input* next = nullptr;
    for (auto& in : inputs)
      if (in.has && (!next || in.current.ordinal < next->current.ordinal)) next = &in;
    if (!next) return;
    const SampleRecord& r = next->current;
    if (!first && r.ordinal <= last)
      throw Error(Errc::corrupt_data, (next->dir / kIndexName).string() + ": sample " +
                                          std::to_string(r.ordinal) + " ('" + r.key +
                                          "') is out of order or in two shards");
    last = r.ordinal;
    check_location(r.location);
    // Its file is linked into OUT at that name: anywhere but data/ (samples.jsonl) would replace
    // the merged dataset's own files.
    if (!r.location.starts_with(std::string(kDataDir) + "/"))
      throw Error(Errc::corrupt_data, (next->dir / kIndexName).string() + ": sample " +
                                          std::to_string(r.ordinal) + " ('" + r.key +
                                          "'): location \"" + r.location + "\" is not in " +
                                          kDataDir + "/");
    fn(static_cast<size_t>(next - inputs.data()), r);
    next->advance();
  }
}

// Every file the parts' indices name is there and regular, checked before OUT is changed: a
// part with a missing file fails the merge with an earlier OUT left complete.
void check_part_files(const MergeOptions& o, const std::vector<Manifest>& manifests, bool tar) {
  std::unordered_map<std::string, size_t> checked_shards;  // location -> its part
  for_each_record(o, manifests, [&](size_t part, const SampleRecord& r) {
    if (tar) {
      const auto [it, first] = checked_shards.emplace(r.location, part);
      // Two parts' shards of one name: OUT holds one file at that name, not both.
      if (!first && it->second != part)
        throw Error(Errc::corrupt_data, o.inputs[it->second].string() + " and " +
                                            o.inputs[part].string() + " both hold " + r.location +
                                            ": parts of one conversion name their shards apart");
      if (!first) return;
    }
    const fs::path file = o.inputs[part] / r.location;
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
      const int err = errno;
      throw Error(Errc::io, file.string() + ": cannot open: " + std::strerror(err), err);
    }
    if (!S_ISREG(st.st_mode)) throw Error(Errc::io, file.string() + ": not a regular file");
  });
}

// A record's source file as the spelling of its source's root (./src, src//, /data/src: as
// typed, which dataset.json records normalised as `root`) and the path below it.
struct SourceName {
  std::string typed_root, below;
};
std::optional<SourceName> split_source(const std::string& source, const std::string& root) {
  const std::string normal = fs::path(source).lexically_normal().string();
  const std::string prefix = root == "/" ? root : root + "/";
  if (normal.compare(0, prefix.size(), prefix) != 0 || normal.size() == prefix.size())
    return std::nullopt;
  const std::string below = normal.substr(prefix.size());
  if (source.size() <= below.size() ||
      source.compare(source.size() - below.size(), below.size(), below) != 0 ||
      source[source.size() - below.size() - 1] != '/')
    return std::nullopt;
  return SourceName{source.substr(0, source.size() - below.size() - 1), below};
}

// How the first part spells its source's root in its records (its first record tells), for
// parts converted from the source named otherwise (./src, /data/src, a copy elsewhere): their
// records are renamed so, as one run would have named them. A list's entries are its own names.
std::optional<std::string> first_part_root(const MergeOptions& o, const Manifest& first) {
  if (first.source_kind == source_kind_name(SourceKind::list)) return std::nullopt;
  IndexReader reader(o.inputs[0] / kIndexName);
  SampleRecord r;
  const std::string root = source_path_text(first.source_path);
  if (!reader.next(r)) return root;
  const std::optional<SourceName> name = split_source(r.source, root);
  return name ? name->typed_root : root;
}

SampleRecord as_first_part_names_it(SampleRecord r, const Manifest& part,
                                    const std::optional<std::string>& first_root) {
  if (!first_root || part.source_kind == source_kind_name(SourceKind::list)) return r;
  if (const auto name = split_source(r.source, source_path_text(part.source_path)))
    r.source = *first_root + "/" + name->below;
  return r;
}

}  // namespace

MergeResult merge_datasets(const MergeOptions& o) {
  if (o.inputs.empty()) throw bad("no datasets to merge");
  std::vector<Manifest> manifests;
  for (const auto& dir : o.inputs) {
    std::error_code ec;
    if (fs::exists(o.output, ec) && fs::equivalent(dir, o.output, ec))
      throw bad(dir.string() + ": the output cannot be one of the inputs");
    // Its files would be strays of that part's (verify fails it, and what is made from it).
    if (is_within(o.output, dir / kDataDir))
      throw bad(o.output.string() + ": inside " + (dir / kDataDir).string() +
                ", the data of an input");
    if (!fs::exists(dir, ec))
      throw Error(Errc::io, dir.string() + ": cannot open: No such file or directory");
    if (!is_dataset(dir)) throw bad(dir.string() + ": not a dlprep dataset (no dataset.json)");
    manifests.push_back(read_manifest(dir));
    const Manifest& m = manifests.back();
    if (!m.complete)
      throw Error(
          Errc::corrupt_data,  // exit 1: a failed batch task, not a usage error
          dir.string() + ": incomplete (its conversion was interrupted or failed); rerun it");
  }
  const Manifest& first = manifests.front();
  // By the shards given, not sized by a count a damaged dataset.json may put at 2^32 - 1.
  std::unordered_map<uint32_t, size_t> seen;  // shard index -> input
  for (size_t i = 0; i < manifests.size(); ++i) {
    const Manifest& m = manifests[i];
    if (std::string d = difference(first, m); !d.empty())
      throw bad(o.inputs[i].string() + ": not a shard of the same conversion as " +
                o.inputs[0].string() + " (" + d + ")");
    if (const auto [at, added] = seen.emplace(m.shard_index, i); !added)
      throw bad(o.inputs[i].string() + ": shard " + std::to_string(m.shard_index) + "/" +
                std::to_string(m.shard_count) + " is also " + o.inputs[at->second].string());
  }
  if (seen.size() < first.shard_count) {
    constexpr uint64_t kListed = 10;
    const uint64_t absent = first.shard_count - seen.size();
    std::string missing;
    for (uint32_t k = 0, listed = 0; k < first.shard_count && listed < kListed; ++k)
      if (!seen.count(k)) missing += (listed++ == 0 ? "" : ", ") + std::to_string(k);
    if (absent > kListed) missing += " and " + std::to_string(absent - kListed) + " more";
    throw bad("shard(s) " + missing + " of " + std::to_string(first.shard_count) +
              " missing: every shard must be given");
  }

  std::error_code ec;
  // What an OUT whose dataset.json is gone or damaged holds is unknown: merged over, with every
  // data file that the new index does not name removed, as after an interrupted merge.
  bool unknown_contents = is_manifest_lost(o.output);
  if (fs::exists(o.output, ec) && !is_dataset(o.output) && !fs::is_empty(o.output, ec) &&
      !unknown_contents)
    throw bad(not_a_dataset_reason(o.output));
  OutputDirectory out_dir(o.output);
  // A merge that fails before it writes a file leaves no OUT it made (after the lock's release).
  struct DiscardOnFailure {
    OutputDirectory& dir;
    const int exceptions = std::uncaught_exceptions();
    ~DiscardOnFailure() {
      if (std::uncaught_exceptions() > exceptions) dir.discard_if_empty();
    }
  } discard_on_failure{out_dir};
  DirectoryLock lock(o.output);
  remove_dead_temp_files(o.output);  // a killed merge's index or manifest (the lock: no live one)

  std::optional<Manifest> old;  // an earlier merge's, to leave alone if nothing changes
  try {
    if (is_dataset(o.output)) old = read_manifest(o.output);
  } catch (const Error&) {
    // A damaged one of ours is merged over; another tool's file (or a newer dlprep's) is not
    // this command's to replace.
    if (!is_damaged_manifest(o.output)) throw;
    unknown_contents = true;
  }
  Manifest merged = first;
  merged.tool = o.tool;
  merged.created = old && !old->created.empty() ? old->created : utc_now();
  merged.complete = false;
  merged.shard_index = 0;
  merged.shard_count = 1;
  merged.samples = merged.bytes = merged.failed = 0;
  merged.formats.clear();
  merged.classes.clear();
  merged.shard_files = 0;
  for (const auto& m : manifests) {
    if (m.source_digest.empty()) {  // a part of an older dlprep: the source was not compared
      merged.source_samples = 0;
      merged.source_digest.clear();
    }
    merged.failed += m.failed;
    merged.shard_files += m.shard_files;  // tar layout: the parts' shards, side by side
  }
  uint64_t total = 0;
  for (const auto& m : manifests) total += m.samples;
  const bool tar = merged.layout == "tar";
  check_part_files(o, manifests, tar);
  const bool rerun = old && old->complete && same_options(*old, merged);
  IncompleteMark mark(o.output, merged);
  if (!rerun) mark.set();

  AtomicFile index(o.output / kIndexName, AtomicFile::Mode::defer);  // may be current
  ListedLocations listed;
  std::unordered_set<std::string> placed_shards;
  std::string lines;
  uint64_t done = 0;
  const std::optional<std::string> first_root = first_part_root(o, first);
  for_each_record(o, manifests, [&](size_t part, const SampleRecord& r) {
    // A tar shard holds many samples: placed once, with its first.
    if (!tar || placed_shards.insert(r.location).second)
      place(o.inputs[part] / r.location, o.output / r.location, mark);
    listed.add(r.location);
    lines += format_record(as_first_part_names_it(r, manifests[part], first_root));
    lines += '\n';
    merged.count(r);
    if (lines.size() > (1u << 20)) {
      index.write(bytes_of(lines));
      lines.clear();
    }
    if (o.progress) o.progress({"dataset merge", ++done, total, r.key});
  });
  index.write(bytes_of(lines));
  const std::vector<fs::path> orphans = orphan_files(o.output, listed);  // from the old index
  // Tar parts: also the shards of an earlier merge that stopped before its index named them.
  std::vector<fs::path> stale = orphans;
  if (tar)
    for (const fs::path& shard : unlisted_part_shards(o.output, listed))
      if (std::find(stale.begin(), stale.end(), shard) == stale.end()) stale.push_back(shard);
  // After an interrupted merge: its temporary files, and what it placed that no index names.
  if ((old && !old->complete) || unknown_contents) {
    for (fs::path& f : interrupted_leftovers(o.output, listed)) stale.push_back(std::move(f));
    std::sort(stale.begin(), stale.end());  // each once, in n log n for any number of them
    stale.erase(std::unique(stale.begin(), stale.end()), stale.end());
  }
  const bool same_index = rerun && !mark.is_set() && index.same_as_target();
  if (!same_index || !stale.empty()) mark.set();
  if (!same_index) index.commit();
  MergeResult result;
  result.removed = remove_files(o.output, stale);
  merged.complete = true;
  if (!mark.is_set() && old->source_digest.empty()) {
    merged.source_samples = 0;  // an older dlprep's merge: not rewritten only to add it
    merged.source_digest.clear();
  }
  result.up_to_date = !mark.is_set() && manifest_to_json(merged) == manifest_to_json(*old);
  if (!result.up_to_date) write_manifest(o.output, merged);
  result.manifest = std::move(merged);
  return result;
}

}  // namespace dlprep::dataset
