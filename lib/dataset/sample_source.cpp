#include "dataset/sample_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/utf8.hpp"
#include "dataset/crc32.hpp"
#include "dataset/manifest.hpp"
#include "dataset/tar_format.hpp"
#include "image/codec.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;

const char* source_kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::directory:
      return "directory";
    case SourceKind::list:
      return "list";
    case SourceKind::dataset:
      return "dataset";
  }
  return "directory";
}

std::string key_from_path(const fs::path& relative) {
  fs::path clean;
  for (const auto& part : relative.lexically_normal().relative_path()) {
    if (part == ".." || part == "." || part.empty()) continue;
    clean /= part;
  }
  // "a/...png" keeps its name: its stem ".." would be a path component, not a name.
  fs::path stem = clean;
  if (const fs::path s = clean.stem(); clean.has_extension() && s != "" && s != "." && s != "..")
    stem.replace_extension();
  return escape_invalid_utf8(stem.generic_string());
}

std::string source_name(const SourceEntry& e) {
  return e.member.empty() ? e.path.string() : e.path.string() + "(" + e.member + ")";
}

namespace {

// Reads the member's header block into `buffer` and checks it, then its data: a hostile index
// (a size the header does not say) makes it allocate nothing. Returns the data.
ByteSpan read_member(const SourceEntry& e, Bytes& buffer) {
  auto io_error = [&](const char* what) {
    const int err = errno;  // (kept in the Error: EMFILE is the process's limit, not the shard's)
    return Error(Errc::io, e.path.string() + ": " + what + ": " + std::strerror(err), err);
  };
  const int fd = ::open(e.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error("cannot open");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw io_error("cannot stat");
  if (S_ISDIR(st.st_mode)) throw Error(Errc::io, e.path.string() + ": is a directory");
  // A device or pipe has no size: 0, and then no member (never an endless read).
  const uint64_t size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  const bool inside = e.offset >= tar::kBlock && e.offset <= size;
  buffer.resize(inside ? tar::kBlock : 0);
  const size_t got =
      inside ? pread_up_to(fd, buffer.data(), buffer.size(), e.offset - tar::kBlock, e.path) : 0;
  try {
    tar::Header h = tar::header_before(ByteSpan(buffer).first(got), e.offset, size);
    if (h.size != e.size || h.name != tar::stored_name(e.member))
      throw Error(Errc::corrupt_data, "the tar header at offset " + std::to_string(e.offset) +
                                          " is for '" + h.name + "' (" + std::to_string(h.size) +
                                          " bytes), not this member (" + std::to_string(e.size) +
                                          " bytes)");
    if (e.size > limits::kMaxFileBytes)
      throw Error(Errc::limit_exceeded, "input larger than 16 GiB");
    buffer.resize(tar::kBlock + e.size);
    // A shard that shrank since fstat ends where the read did.
    if (pread_up_to(fd, buffer.data() + tar::kBlock, e.size, e.offset, e.path) < e.size)
      throw Error(Errc::corrupt_data, "member at offset " + std::to_string(e.offset) + " (" +
                                          std::to_string(e.size) +
                                          " bytes) runs past the end of the archive");
  } catch (const Error& err) {
    throw err.with_context(source_name(e));
  }
  return ByteSpan(buffer).subspan(tar::kBlock, e.size);
}

}  // namespace

SourceBytes::SourceBytes(const SourceEntry& e, Bytes& buffer) {
  if (e.member.empty()) {
    read_file_into(e.path, buffer, image::check_image_head);  // a listed /dev/zero fails at once
    bytes_ = buffer;
  } else {
    bytes_ = read_member(e, buffer);
  }
  if (!e.crc32) return;
  if (const uint32_t crc = crc32_of(bytes_); crc != *e.crc32)
    throw Error(Errc::corrupt_data, source_name(e) + ": crc32 " + crc32_hex(crc) +
                                        ", the index records " + crc32_hex(*e.crc32) +
                                        " (damaged since it was converted?)");
}

bool is_image_candidate(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  uint8_t head[64];
  ssize_t n;
  do n = ::read(fd, head, sizeof head);
  while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return n < 0;  // an empty file is not an image; a read error is reported later
  // An image in a format dlprep does not read (TIFF, GIF ...) is a sample too, so that it fails
  // with its name and format instead of being silently left out.
  const ByteSpan bytes(head, static_cast<size_t>(n));
  return image::sniff_codec(bytes) != nullptr || image::unreadable_image_format(bytes) != nullptr;
}

SampleSource::SampleSource(const fs::path& src) : src_(src) {
  std::error_code ec;
  auto st = fs::status(src, ec);
  if (ec || !fs::exists(st))
    throw Error(Errc::io, src.string() + ": cannot open: " +
                              (ec ? ec.message() : std::string("No such file or directory")));
  if (fs::is_directory(st)) {
    kind_ = is_dataset(src) ? SourceKind::dataset : SourceKind::directory;
    if (kind_ == SourceKind::dataset) {
      Manifest m = read_manifest(src);
      if (!m.complete)
        throw Error(Errc::corrupt_data,
                    src.string() + ": an incomplete dataset (its conversion or merge was " +
                        "interrupted or failed): rerun that first");
      dataset_samples_ = m.samples;
    }
    return;
  }
  if (!fs::is_regular_file(st)) {
    // A pipe is a list, opened and read once: for_each runs more than once, and sniffing it
    // would eat the bytes the list needs.
    kind_ = SourceKind::list;
    Bytes bytes = read_file(src);
    list_bytes_.emplace(bytes.begin(), bytes.end());
    return;
  }
  int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(Errc::io, src.string() + ": cannot open: " + std::strerror(errno));
  ::close(fd);
  if (!is_image_candidate(src)) {
    kind_ = SourceKind::list;
    return;
  }
  throw Error(Errc::invalid_argument,
              src.string() + ": is an image file; give a directory, a list file or a dataset");
}

void SampleSource::walk(const fs::path& dir, const std::string& relative,
                        std::vector<std::pair<uint64_t, uint64_t>>& ancestors,
                        const std::function<void(SourceEntry&&)>& fn) const {
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0)
    throw Error(Errc::io, dir.string() + ": cannot open directory: " + std::strerror(errno));
  std::pair<uint64_t, uint64_t> id{dst.st_dev, dst.st_ino};
  if (std::find(ancestors.begin(), ancestors.end(), id) != ancestors.end()) return;  // a loop
  if (!exclude_.empty()) {
    std::error_code ec;
    if (fs::equivalent(dir, exclude_, ec)) return;
  }
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.empty() && name[0] != '.') names.push_back(std::move(name));
  }
  if (ec) throw Error(Errc::io, dir.string() + ": cannot read directory: " + ec.message());
  std::sort(names.begin(), names.end());
  ancestors.push_back(id);
  for (const std::string& name : names) {
    fs::path path = dir / name;
    std::string rel = relative.empty() ? name : relative + "/" + name;
    std::error_code sec;
    auto st = fs::status(path, sec);  // follows symlinks
    // A dangling link is kept as a sample, so that it is reported rather than silently missed.
    bool dangling = !fs::exists(st) && fs::is_symlink(fs::symlink_status(path, sec));
    if (fs::is_directory(st)) {
      // A dlprep dataset inside the tree (e.g. an earlier output) is not part of the source.
      if (!is_dataset(path)) walk(path, rel, ancestors, fn);
    } else if (fs::is_regular_file(st) || dangling) {
      SourceEntry e;
      e.path = path;
      e.key = key_from_path(rel);
      size_t slash = rel.find('/');
      e.label = slash == std::string::npos ? "" : escape_invalid_utf8(rel.substr(0, slash));
      fn(std::move(e));
    }
  }
  ancestors.pop_back();
}

void SampleSource::for_each(const std::function<void(SourceEntry&&)>& fn) const {
  if (kind_ == SourceKind::directory) {
    std::vector<std::pair<uint64_t, uint64_t>> ancestors;
    walk(src_, "", ancestors, fn);
    return;
  }
  if (kind_ == SourceKind::dataset) {
    IndexReader reader(src_ / kIndexName);
    // Per shard: its size, and where the last member read from it ends (members are recorded in
    // shard order, so a hostile index that goes back or overlaps is caught here).
    std::unordered_map<std::string, std::pair<std::optional<uint64_t>, uint64_t>> shards;
    SampleRecord r;
    uint64_t records = 0;
    while (reader.next(r)) {
      if (++records > dataset_samples_) break;
      SourceEntry e;
      std::string where = (src_ / kIndexName).string() + ":" + std::to_string(reader.line());
      try {
        check_location(r.location);
      } catch (const Error& err) {
        throw err.with_context(where);
      }
      if (r.offset) {
        auto [it, added] = shards.try_emplace(r.location);
        auto& [size, last_end] = it->second;
        if (added) {
          std::error_code ec;
          uint64_t n = fs::file_size(src_ / r.location, ec);
          if (!ec) size = n;  // a missing shard fails its samples when they are read
        }
        uint64_t offset = *r.offset;
        constexpr uint64_t kMaxOffset = uint64_t{1} << 62;  // keeps the sums below from overflowing
        auto bad = [&](const std::string& what) {
          return Error(Errc::corrupt_data, where + ": sample '" + r.key + "': " + what);
        };
        if (offset < tar::kBlock || offset % tar::kBlock != 0 || offset > kMaxOffset ||
            r.bytes > kMaxOffset)
          throw bad("offset " + std::to_string(offset) + " cannot start a tar member's data");
        if (offset < last_end + tar::kBlock)
          throw bad("offset " + std::to_string(offset) + " overlaps the previous member of " +
                    r.location);
        if (size && (offset > *size || r.bytes > *size - offset))
          throw bad("offset " + std::to_string(offset) + " + " + std::to_string(r.bytes) +
                    " bytes is past the end of " + r.location + " (" + std::to_string(*size) +
                    " bytes)");
        last_end = offset + r.bytes;
        const image::Codec* codec = image::find_codec(r.format);
        e.member = r.key + "." + (codec ? codec->extension(r.shape.channels) : r.format);
        e.offset = offset;
        e.size = r.bytes;
      }
      e.path = src_ / r.location;
      e.shape = r.shape;
      e.crc32 = r.crc32;
      e.key = std::move(r.key);
      e.label = std::move(r.label);
      e.named = true;
      fn(std::move(e));
    }
    if (records != dataset_samples_)
      throw record_count_error(src_ / kIndexName, records, dataset_samples_);
    return;
  }
  std::ifstream file;
  std::istringstream held;
  if (list_bytes_) {
    held.str(*list_bytes_);
  } else {
    file.open(src_, std::ios::binary);
    if (!file) throw Error(Errc::io, src_.string() + ": cannot open: " + std::strerror(errno));
  }
  std::istream& in = list_bytes_ ? static_cast<std::istream&>(held) : file;
  // Relative paths: from the list's folder; those of a pipe or of a descriptor's name
  // (/dev/stdin, /dev/fd/N, even for a redirected file) from the working directory.
  const std::string name = src_.string();
  const bool descriptor = name.starts_with("/dev/") || name.starts_with("/proc/");
  fs::path base = list_bytes_ || descriptor ? fs::path() : src_.parent_path();
  std::string line;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    // Binary bytes (an image or an archive given as SRC) are no path: say so, without echoing them.
    if (std::any_of(line.begin(), line.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 && c != '\t'; }))
      throw Error(Errc::corrupt_data,
                  src_.string() + ":" + std::to_string(number) +
                      ": control characters in a path: not a list file (give a " +
                      "directory, a list file of paths or a dataset)");
    SourceEntry e;
    size_t tab = line.find('\t');
    // A third field (a split, a manifest's extra column) would end up in the label, as a class
    // of its own.
    if (tab != std::string::npos && line.find('\t', tab + 1) != std::string::npos)
      throw Error(Errc::corrupt_data, src_.string() + ":" + std::to_string(number) +
                                          ": more than two tab-separated fields: the format is " +
                                          "PATH[<TAB>LABEL] (a label holds no tab)");
    std::string path = line.substr(0, tab);
    if (tab != std::string::npos) e.label = escape_invalid_utf8(line.substr(tab + 1));
    if (path.empty())
      throw Error(Errc::corrupt_data,
                  src_.string() + ":" + std::to_string(number) + ": empty path");
    fs::path p(path);
    e.path = p.is_absolute() ? p : base / p;
    e.key = key_from_path(p);
    if (e.key.empty())
      throw Error(Errc::corrupt_data,
                  src_.string() + ":" + std::to_string(number) + ": '" + path + "' names no file");
    e.named = true;
    fn(std::move(e));
  }
  if (in.bad()) throw Error(Errc::io, src_.string() + ": read failed");
}

}  // namespace dlprep::dataset
