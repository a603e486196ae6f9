// The samples of a convert-dataset source, enumerated as a stream in a deterministic order:
// an ImageFolder directory tree, a list file, or an existing dlprep dataset.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "core/file_io.hpp"
#include "core/image.hpp"

namespace dlprep::dataset {

enum class SourceKind { directory, list, dataset };

/// "directory", "list", "dataset".
const char* source_kind_name(SourceKind kind);

/// One source sample.
struct SourceEntry {
  std::filesystem::path path;  ///< the file to read
  std::string key;             ///< unique name: relative path without the extension
  std::string label;           ///< class, "" if none
  /// Named explicitly (list file, dataset index): always a sample, an error if not an image.
  /// Found while walking a directory: a sample only if its magic bytes are an image's.
  bool named = false;
  /// A tar member (a sample of a tar-layout dataset): `path` is its shard, the sample's bytes are
  /// the `size` bytes at `offset`, and `member` is its name (for messages). Empty: a whole file.
  std::string member;
  uint64_t offset = 0;
  uint64_t size = 0;
  /// A dlprep dataset's sample: what its index records, its shape and the crc32 of its bytes
  /// (SourceBytes checks it, so that damage is not carried into another dataset).
  ImageShape shape;
  std::optional<uint32_t> crc32;
  bool operator==(const SourceEntry&) const = default;
};

/// How messages name a source sample: its path, or "SHARD(MEMBER)" for a tar member.
std::string source_name(const SourceEntry& entry);

/// The bytes of a source sample, read into `buffer`: the file whole, or a tar member's header
/// block and data, after checking that the header is a valid one for this member. Pass the same
/// buffer for every sample a thread reads, so that its memory is reused; it must outlive this
/// object. Throws Error(io) if the file cannot be read, Error(corrupt_data) naming the member if
/// the shard does not hold it where recorded.
class SourceBytes {
 public:
  SourceBytes(const SourceEntry& entry, Bytes& buffer);
  ByteSpan bytes() const { return bytes_; }

 private:
  // Files and shards are read, not mapped: each unmapping would interrupt the other converting
  // threads (a TLB shootdown), and a reused buffer takes no page faults (~11 us each on the build
  // VM).
  ByteSpan bytes_;
};

/// The key of a path: generic form, no root, no "." or ".." parts, without the last extension,
/// escape_invalid_utf8'd (core/utf8.hpp): the JSON index holds it, and the data file is named the
/// same, so a key never loses its file.
std::string key_from_path(const std::filesystem::path& relative);

/// A source: SRC is a directory (a dlprep dataset when it holds dataset.json, else a tree whose
/// first-level folders are class labels, walked in sorted order, hidden names and dlprep datasets
/// inside the tree skipped, directory symlinks followed without loops), or a list file (one
/// `PATH[<TAB>LABEL]` per line, relative paths from the list's folder, blank and `#` lines
/// ignored; also a pipe or a descriptor's name such as /dev/stdin, whose relative paths are from
/// the working directory). A dataset's index is
/// checked as it is read: locations inside the dataset, and tar members inside their shard, in
/// order, never overlapping (Error(corrupt_data) naming the index line), and as many records as
/// its dataset.json counts; an incomplete dataset (its conversion interrupted) is refused. Memory:
/// the walk holds one sorted listing per directory level, never the whole tree.
class SampleSource {
 public:
  /// Detects the kind; throws Error(io) if SRC cannot be read, Error(invalid_argument) if it is
  /// an image file rather than a list, Error(corrupt_data) for an incomplete dataset.
  explicit SampleSource(const std::filesystem::path& src);
  SourceKind kind() const { return kind_; }
  const std::filesystem::path& path() const { return src_; }
  /// Leaves this directory (and everything below it) out of a walk: the destination, when it
  /// lies inside the source tree.
  void exclude(const std::filesystem::path& dir) { exclude_ = dir; }
  /// Calls fn for every entry, in the same order every time. Throws Error(io | corrupt_data).
  void for_each(const std::function<void(SourceEntry&&)>& fn) const;

 private:
  void walk(const std::filesystem::path& dir, const std::string& relative,
            std::vector<std::pair<uint64_t, uint64_t>>& ancestors,
            const std::function<void(SourceEntry&&)>& fn) const;
  std::filesystem::path src_;
  std::filesystem::path exclude_;
  SourceKind kind_ = SourceKind::directory;
  uint64_t dataset_samples_ = 0;  // a dataset's, as its dataset.json counts them
  // A list that can be read only once (a pipe): read whole by the constructor.
  std::optional<std::string> list_bytes_;
};

/// True if the first bytes of the file are an image's magic (of a format dlprep reads, or of one
/// it names as unreadable: TIFF, GIF ...), or if the file cannot be read (so that the failure is
/// reported as a sample error rather than the file silently ignored).
bool is_image_candidate(const std::filesystem::path& path);

}  // namespace dlprep::dataset
