#include "dataset/dataset_verify.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/directory_walk.hpp"
#include "core/file_io.hpp"
#include "core/limits.hpp"
#include "core/parallel.hpp"
#include "dataset/crc32.hpp"
#include "dataset/tar_format.hpp"
#include "image/codec.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;
namespace {

// Records a worker takes from the index at a time: few enough to balance the workers, enough that
// they seldom wait for the index's lock.
constexpr size_t kRecordsPerTake = 16;

// What a worker keeps from one sample to the next: the tar shard it reads (samples come in shard
// order, so it is opened about once per worker and shard), and a buffer for the members. Members
// are read with pread: a mapping of the shard put up to the shard's size of file pages in the
// process's RSS (1.3 GB for 1 GiB shards), which Slurm's accounting counts against a job.
class WorkerFiles {
 public:
  WorkerFiles() = default;
  WorkerFiles(const WorkerFiles&) = delete;
  WorkerFiles& operator=(const WorkerFiles&) = delete;
  ~WorkerFiles() { close(); }

  /// The shard at `path`, opened unless it is the one open. Throws Error(io) with errno.
  void open_shard(const fs::path& path) {
    if (is_open(path)) return;
    close();
    // Non-blocking and checked once open: a FIFO swapped in for the shard must not block.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) {
      const int err = errno;
      throw Error(Errc::io, path.string() + ": cannot open: " + std::strerror(err), err);
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      close();
      throw Error(Errc::io, path.string() + ": cannot stat: " + std::strerror(err), err);
    }
    if (!S_ISREG(st.st_mode)) {
      close();
      throw Error(Errc::mismatch, path.string() + ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
    path_ = path;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool is_open(const fs::path& path) const { return fd_ >= 0 && path_ == path; }
  uint64_t shard_size() const { return size_; }
  /// Up to `bytes` of the open shard from `offset`, in `buffer` (whose earlier contents go; one
  /// that grew past 64 MiB for a large member is given back before a small read).
  ByteSpan read(uint64_t offset, uint64_t bytes, Bytes& buffer) {
    if (offset >= size_) return {};
    if (buffer.capacity() > kKeptBufferBytes && bytes <= kKeptBufferBytes) Bytes().swap(buffer);
    buffer.resize(static_cast<size_t>(std::min(bytes, size_ - offset)));
    return ByteSpan(buffer).first(pread_up_to(fd_, buffer.data(), buffer.size(), offset, path_));
  }

  Bytes member;  // the sample's bytes
  Bytes around;  // a header, the .cls member after the sample

 private:
  static constexpr size_t kKeptBufferBytes = size_t{64} << 20;

  fs::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Running out of file descriptors (ulimit -n, or the system's table) is the process's trouble,
// not the file's: it stops the verify instead of counting healthy files as damaged.
bool out_of_descriptors(const Error& e) {
  return e.code() == Errc::io && (e.system_error() == EMFILE || e.system_error() == ENFILE);
}

std::string shape_text(const ImageShape& s) {
  return std::to_string(s.width) + "x" + std::to_string(s.height) + "x" +
         std::to_string(s.channels);
}

Error differs(const std::string& file, const std::string& what) {
  return Error(Errc::mismatch, file + ": " + what);
}

// A tar sample's .cls member: right after its image (at `at`), holding the label's class index.
void check_class(const std::string& name, WorkerFiles& files, uint64_t at, const SampleRecord& r,
                 const Manifest& m) {
  auto it = std::lower_bound(m.labels.begin(), m.labels.end(), r.label);
  if (it == m.labels.end() || *it != r.label)
    throw differs(name, "label '" + r.label + "' is not in the class list of " + kManifestName);
  std::string want = std::to_string(it - m.labels.begin());
  std::string cls = r.key + ".cls";
  // Its headers (a pax header for a long name, then its own: 20 blocks for a 9 KB key of %XX
  // escapes) and its few bytes of data (an index of up to 20 digits).
  const uint64_t window = std::max<uint64_t>(16 * tar::kBlock, tar::member_bytes(cls, 20));
  const ByteSpan next_bytes = files.read(at, window, files.around);
  tar::Member next;
  try {
    tar::TarReader reader(next_bytes);
    if (!reader.next(next)) throw Error(Errc::corrupt_data, "end of archive");
  } catch (const Error&) {
    throw differs(name, "no valid " + cls + " member after it");
  }
  if (next.name != cls) throw differs(name, "no " + cls + " member after it");
  ByteSpan got = next_bytes.subspan(next.data_offset, next.size);
  if (std::string(got.begin(), got.end()) != want)
    throw differs(name, cls + " is not " + want + " (the class index of '" + r.label + "')");
}

// Throws the first difference found, or the decoder's error.
void check_sample(const fs::path& dir, const SampleRecord& r, const Manifest& m,
                  WorkerFiles& files) {
  // A location that leaves data/ is the index's difference, not a sample that fails to decode.
  try {
    check_location(r.location);
  } catch (const Error& e) {
    throw differs((dir / kIndexName).string(), "sample '" + r.key + "': " + e.what());
  }
  if (!r.location.starts_with(std::string(kDataDir) + "/"))
    throw differs((dir / kIndexName).string(), "sample '" + r.key + "': location \"" + r.location +
                                                   "\" is not in " + kDataDir + "/");
  fs::path path = dir / r.location;
  std::string name = path.string();
  std::string member;
  if (r.offset) {
    const image::Codec* codec = image::find_codec(r.format);
    member = r.key + "." + (codec ? codec->extension(r.shape.channels) : r.format);
    name += "(" + member + ")";
  }
  if (!r.offset) {  // the file tree: a sample's file is named after its key
    const image::Codec* codec = image::find_codec(r.format);
    const std::string want = std::string(kDataDir) + "/" + r.key + "." +
                             (codec ? codec->extension(r.shape.channels) : r.format);
    if (r.location != want)
      throw differs(name, "not where key '" + r.key + "' is stored (" + want + ")");
  }
  std::optional<MappedFile> whole;
  ByteSpan bytes;
  if (!r.offset || !files.is_open(path)) {
    std::error_code ec;
    fs::file_status st = fs::symlink_status(path, ec);
    if (fs::is_symlink(st))  // dlprep writes none: a copy of the dataset would lose its bytes
      throw differs(name, "a link, not a file of the dataset");
    if (!fs::exists(st)) throw differs(name, "missing (sample '" + r.key + "')");
    // A FIFO would block the open: anything but a file is a difference.
    if (!fs::is_regular_file(st)) throw differs(name, "not a regular file");
  }
  if (r.offset) {
    files.open_shard(path);
    // The member must be where the index says, under its own header.
    tar::Header h;
    try {
      const uint64_t before = *r.offset >= tar::kBlock ? *r.offset - tar::kBlock : 0;
      h = tar::header_before(files.read(before, tar::kBlock, files.around), *r.offset,
                             files.shard_size());
    } catch (const Error& e) {
      throw differs(name, e.what());
    }
    if (h.name != tar::stored_name(member))
      throw differs(name, "the tar header at offset " + std::to_string(*r.offset) + " is for '" +
                              h.name + "'");
    if (h.size != r.bytes)
      throw differs(
          name, std::to_string(h.size) + " bytes, the index records " + std::to_string(r.bytes));
    if (h.size > limits::kMaxFileBytes) throw differs(name, "larger than 16 GiB");
    if (!r.label.empty()) check_class(name, files, *r.offset + tar::padded(h.size), r, m);
    bytes = files.read(*r.offset, h.size, files.member);  // short if the shard shrank meanwhile
  } else {
    files.close();  // one file open per worker (kVerifyFilesPerThread)
    bytes = whole.emplace(path).bytes();
  }
  if (bytes.size() != r.bytes)
    throw differs(name, std::to_string(bytes.size()) + " bytes, the index records " +
                            std::to_string(r.bytes));
  uint32_t crc = crc32_of(bytes);
  if (crc != r.crc32)
    throw differs(name, "crc32 " + crc32_hex(crc) + ", the index records " + crc32_hex(r.crc32));
  const image::Codec* codec = image::sniff_codec(bytes);
  if (!codec || codec->name() != r.format)
    throw differs(name, std::string("format ") + (codec ? std::string(codec->name()) : "unknown") +
                            ", the index records " + r.format);
  Image image = codec->decode(bytes);
  if (image.shape() != r.shape)
    throw differs(name, "decodes to " + shape_text(image.shape()) + ", the index records " +
                            shape_text(r.shape));
}

// The totals of dataset.json that differ from the index's, one message each: the samples and
// bytes of the whole, of each format, and the samples of each class.
std::vector<std::string> count_differences(const Manifest& index, const Manifest& recorded) {
  std::vector<std::string> out;
  auto counts = [](uint64_t samples, uint64_t bytes) {
    return std::to_string(samples) + " samples of " + std::to_string(bytes) + " bytes";
  };
  if (index.samples != recorded.samples || index.bytes != recorded.bytes)
    out.push_back("the index holds " + counts(index.samples, index.bytes) + ", " + kManifestName +
                  " records " + counts(recorded.samples, recorded.bytes));
  std::set<std::string> formats;
  for (const auto& [f, c] : index.formats) formats.insert(f);
  for (const auto& [f, c] : recorded.formats) formats.insert(f);
  for (const auto& f : formats) {
    auto a = index.formats.count(f) ? index.formats.at(f) : FormatCount{};
    auto b = recorded.formats.count(f) ? recorded.formats.at(f) : FormatCount{};
    if (a.samples != b.samples || a.bytes != b.bytes)
      out.push_back("format " + f + ": the index holds " + counts(a.samples, a.bytes) + ", " +
                    kManifestName + " records " + counts(b.samples, b.bytes));
  }
  auto total = [](const Manifest& m, const std::string& label) {
    uint64_t n = 0;
    if (auto it = m.classes.find(label); it != m.classes.end())
      for (const auto& [format, count] : it->second) n += count;
    return n;
  };
  std::set<std::string> labels;
  for (const auto& [l, per_format] : index.classes) labels.insert(l);
  for (const auto& [l, per_format] : recorded.classes) labels.insert(l);
  for (const auto& l : labels) {
    auto a = index.classes.count(l) ? index.classes.at(l) : std::map<std::string, uint64_t>{};
    auto b = recorded.classes.count(l) ? recorded.classes.at(l) : std::map<std::string, uint64_t>{};
    if (a != b)
      out.push_back("class '" + l + "': the index holds " + std::to_string(total(index, l)) +
                    " samples, " + kManifestName + " records " +
                    std::to_string(total(recorded, l)) +
                    (total(index, l) == total(recorded, l) ? " (in other formats)" : ""));
  }
  return out;
}

// Where a tar shard's last sample ends: the header after its image's data, and whether its
// .cls member comes there.
struct ShardTail {
  uint64_t offset = 0;
  bool cls = false;
};

// A tar shard must be whole to its end-of-archive marker: tar, Python's tarfile and WebDataset
// fail on one cut short, though every sample in it may still check out. And it must end with its
// last sample: a member appended after it (tar -r) is a sample WebDataset reads that the index
// does not name. Samples lie back to back, so no other place can hold one without moving those
// after it. Read from the tail, not from the start, which would read the whole shard from disk
// a second time.
void check_shard_ends(const fs::path& path, ShardTail tail) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;  // its samples are reported missing
  MappedFile file(path);
  if (tail.offset > file.bytes().size()) return;  // that sample is reported past the end
  tar::TarReader reader(file.bytes(), tail.offset);
  tar::Member member;
  try {
    for (bool cls = tail.cls; reader.next(member); cls = false)
      if (!cls)  // the last sample's .cls is checked with the sample
        throw differs(path.string(), "member '" + member.name +
                                         "' after the last sample is not in the index (added "
                                         "by hand or another tool?)");
  } catch (const Error& e) {
    if (e.code() == Errc::mismatch) throw;
    throw differs(path.string(), std::string("not a whole tar archive: ") + e.what());
  }
}

}  // namespace

VerifyResult verify_dataset(const VerifyOptions& o) {
  VerifyResult result;
  result.manifest = read_manifest(o.dataset);
  std::mutex report_mutex;
  auto report = [&](const Error& e) {
    std::lock_guard lock(report_mutex);
    if (o.problem) o.problem(e);
  };
  if (!result.manifest.complete) {
    ++result.dataset_problems;
    const bool writing = DirectoryLock::held_by_writer(o.dataset);  // then no rerun to advise
    report(differs((o.dataset / kManifestName).string(),
                   writing ? "the dataset is incomplete: a conversion or merge is writing into it "
                             "now; verify it once that run has ended"
                           : "the dataset is incomplete (a conversion or merge was interrupted or "
                             "failed); rerun the command that made it"));
    // Interrupted before its first index: nothing more to check.
    std::error_code ec;
    if (!fs::exists(o.dataset / kIndexName, ec)) return result;
  }
  IndexReader reader(o.dataset / kIndexName);
  Manifest counted;
  // Tar layout: the shard files the index names, each with where its last sample's data ends
  // (rounded up to the next header).
  std::map<std::string, ShardTail> shards;
  std::vector<uint64_t> listed;  // hashes of the file locations the index names (8 B a sample)
  std::vector<uint64_t> keys;    // and of the keys, which must be unique
  std::atomic<uint64_t> ok{0}, mismatched{0}, failed{0}, done{0};
  // Each worker takes records from the streamed index under this lock, for as long as the run
  // lasts: its threads and its open shard live across samples.
  std::mutex index_mutex;
  bool stop = false;  // the index ended or failed, or descriptors ran out
  std::optional<Error> fatal;
  const unsigned threads = std::max(1u, o.threads);
  parallel_for(threads, threads, [&](size_t) {
    WorkerFiles files;
    std::vector<SampleRecord> taken;
    for (;;) {
      taken.clear();
      {
        std::lock_guard lock(index_mutex);
        if (stop) return;
        SampleRecord r;
        try {
          while (taken.size() < kRecordsPerTake && reader.next(r)) taken.push_back(std::move(r));
        } catch (...) {
          stop = true;
          throw;
        }
        if (taken.empty()) {
          stop = true;
          return;
        }
        for (const auto& rec : taken) {
          counted.count(rec);
          if (rec.offset) {
            ShardTail& tail = shards[rec.location];
            // A hostile offset near 2^64 must not wrap the sum.
            if (*rec.offset < (uint64_t{1} << 62) && rec.bytes < (uint64_t{1} << 62) &&
                *rec.offset + tar::padded(rec.bytes) > tail.offset)
              tail = {*rec.offset + tar::padded(rec.bytes), !rec.label.empty()};
          }
          listed.push_back(std::hash<std::string>{}(rec.location));
          keys.push_back(std::hash<std::string>{}(rec.key));
        }
      }
      for (const SampleRecord& rec : taken) {
        try {
          check_sample(o.dataset, rec, result.manifest, files);
          ++ok;
        } catch (const Error& e) {
          if (out_of_descriptors(e)) {
            std::lock_guard lock(index_mutex);
            stop = true;
            // Not the file's name: which worker met it first varies from run to run.
            if (!fatal)
              fatal.emplace(Errc::io,
                            "out of file descriptors (" +
                                std::string(std::strerror(e.system_error())) +
                                "): raise the limit (ulimit -n) or use fewer threads (-j)",
                            e.system_error());
            return;
          }
          ++(e.code() == Errc::mismatch ? mismatched : failed);
          // Named already: the sample's file, or the index (a location that leaves data/).
          const std::string what = e.what(), path = (o.dataset / rec.location).string();
          const bool named =
              what.starts_with(path) || what.starts_with((o.dataset / kIndexName).string() + ":");
          report(named ? e : e.with_context(path));
        } catch (const std::bad_alloc&) {
          ++failed;
          report(
              Error(Errc::limit_exceeded, (o.dataset / rec.location).string() + ": out of memory"));
        }
        if (o.progress) o.progress({"dataset verify", ++done, result.manifest.samples, rec.key});
      }
    }
  });
  if (fatal) throw *fatal;
  result.samples = counted.samples;
  result.ok = ok;
  result.mismatched = mismatched;
  result.failed = failed;
  const Manifest& m = result.manifest;
  for (const std::string& d : count_differences(counted, m)) {
    ++result.dataset_problems;
    report(differs((o.dataset / kIndexName).string(), d));
  }
  // Only a complete dataset's shards are finished (an interrupted run's last one is not).
  if (m.complete) {
    std::vector<std::pair<std::string, ShardTail>> shard_list(shards.begin(), shards.end());
    parallel_for(shard_list.size(), o.threads, [&](size_t i) {
      try {
        check_shard_ends(o.dataset / shard_list[i].first, shard_list[i].second);
      } catch (const Error& e) {
        if (out_of_descriptors(e)) throw;
        std::lock_guard lock(report_mutex);
        ++result.dataset_problems;
        if (o.problem) o.problem(e);
      }
    });
  }
  // A key twice: one of the two samples is lost to whoever looks them up by key (a dataset used
  // as a source refuses it).
  std::sort(keys.begin(), keys.end());
  if (const uint64_t repeated =
          static_cast<uint64_t>(keys.end() - std::unique(keys.begin(), keys.end()));
      repeated > 0) {
    ++result.dataset_problems;
    report(differs((o.dataset / kIndexName).string(),
                   std::to_string(repeated) + (repeated == 1 ? " key appears" : " keys appear") +
                       " more than once (every sample's key must be unique)"));
  }
  // A file in data/ that the index does not name: left by a killed run or another tool, or
  // copied in by hand. Loaders that list data/ would take it for a sample.
  std::sort(listed.begin(), listed.end());
  std::error_code ec;
  const fs::path data = o.dataset / kDataDir;
  for (DirectoryWalk walk(data); walk.next(ec);) {
    if (walk.symlink_type() == fs::file_type::directory) continue;
    const std::string location =
        (fs::path(kDataDir) / walk.path().lexically_relative(data)).string();
    if (std::binary_search(listed.begin(), listed.end(), std::hash<std::string>{}(location)))
      continue;
    ++result.dataset_problems;
    report(differs(walk.path_string(),
                   "in data/ but not in the index (an interrupted run's goes when it is rerun; "
                   "one added by hand or another tool is yours to remove)"));
  }
  // A walk cut short (a folder it may not read, no descriptor left) would hide what is past it.
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw Error(Errc::io, data.string() + ": cannot read directory: " + ec.message(), ec.value());
  if (m.layout == "tar" && shards.size() != m.shard_files) {
    ++result.dataset_problems;
    report(differs((o.dataset / kIndexName).string(),
                   "names " + std::to_string(shards.size()) + " shard files, " + kManifestName +
                       " records " + std::to_string(m.shard_files)));
  }
  return result;
}

}  // namespace dlprep::dataset
