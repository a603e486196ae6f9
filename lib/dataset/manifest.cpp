#include "dataset/manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/utf8.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

Error corrupt(const std::string& what) { return Error(Errc::corrupt_data, what); }

// A dataset.json is kilobytes (a megabyte for 20,000 classes): read no further than this, should
// it be a link to /dev/zero or a FIFO.
constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;

/// Every number of the manifest and index is a count: a non-negative integer up to `max`. Checked
/// before get<>(), which would wrap -1 and truncate 1.5 or 1e30.
bool is_count(const Json& n, uint64_t max = std::numeric_limits<uint64_t>::max()) {
  return n.is_number_unsigned() && n.get<uint64_t>() <= max;
}

// An object member of `j` that must be there.
const Json& member(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) throw corrupt(std::string("missing \"") + key + "\"");
  return *it;
}

template <typename T>
T get(const Json& j, const char* key) {
  const Json& value = member(j, key);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!is_count(value, std::numeric_limits<T>::max()))
      throw corrupt(std::string("\"") + key + "\" is not an integer from 0 to " +
                    std::to_string(std::numeric_limits<T>::max()));
  }
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw corrupt(std::string("\"") + key + "\" has the wrong type");
  }
}

// `text` as a JSON object; `unparsable` is the error where it is not JSON at all.
Json parse_object(std::string_view text, const char* unparsable) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw corrupt(unparsable);
  }
  if (!j.is_object()) throw corrupt("not a JSON object");
  return j;
}

template <typename T>
T get_or(const Json& j, const char* key, T fallback) {
  return j.contains(key) ? get<T>(j, key) : fallback;
}

}  // namespace

std::string crc32_hex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

std::string format_record(const SampleRecord& r) {
  Json j;
  j["i"] = r.ordinal;
  j["key"] = r.key;
  j["label"] = r.label;
  j["format"] = r.format;
  j["location"] = r.location;
  if (r.offset) j["offset"] = *r.offset;
  j["bytes"] = r.bytes;
  j["width"] = r.shape.width;
  j["height"] = r.shape.height;
  j["channels"] = r.shape.channels;
  j["crc32"] = crc32_hex(r.crc32);
  // A name that is not UTF-8 is written as the key is (%XX per byte), so that two such sources
  // stay apart in the index.
  j["source"] = escape_invalid_utf8(r.source);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

SampleRecord parse_record(std::string_view line) {
  const Json j = parse_object(line, "not a JSON object");
  SampleRecord r;
  r.ordinal = get<uint64_t>(j, "i");
  r.key = get<std::string>(j, "key");
  r.label = get<std::string>(j, "label");
  r.format = get<std::string>(j, "format");
  r.location = get<std::string>(j, "location");
  if (j.contains("offset")) r.offset = get<uint64_t>(j, "offset");
  r.bytes = get<uint64_t>(j, "bytes");
  r.shape.width = get<uint32_t>(j, "width");
  r.shape.height = get<uint32_t>(j, "height");
  r.shape.channels = get<uint32_t>(j, "channels");
  std::string crc = get<std::string>(j, "crc32");
  char* end = nullptr;
  unsigned long value = std::strtoul(crc.c_str(), &end, 16);
  if (crc.size() != 8 || *end != '\0') throw corrupt("\"crc32\" is not 8 hex digits");
  r.crc32 = static_cast<uint32_t>(value);
  r.source = get_or<std::string>(j, "source", "");
  return r;
}

IndexReader::IndexReader(const fs::path& path) : path_(path), in_(path, std::ios::binary) {
  if (!in_) throw Error(Errc::io, path.string() + ": cannot open: " + std::strerror(errno));
}

bool IndexReader::next(SampleRecord& record) {
  std::string line;
  for (;;) {
    if (!std::getline(in_, line)) return false;
    ++line_;
    if (line.empty()) continue;
    try {
      record = parse_record(line);
    } catch (const Error& e) {
      std::string where = path_.string() + ":" + std::to_string(line_);
      if (!in_.eof()) throw e.with_context(where);
      throw Error(e.code(),
                  where + ": " + e.what() + " (the last line, without its newline: cut off?)");
    }
    return true;
  }
}

Error record_count_error(const fs::path& index, uint64_t records, uint64_t counted) {
  return corrupt(
      index.string() + ": " +
      (records > counted ? "more samples than" : std::to_string(records) + " samples, not") +
      " the " + std::to_string(counted) + " that " + kManifestName + " counts (a damaged index)");
}

void Manifest::count(const SampleRecord& r) {
  ++samples;
  bytes += r.bytes;
  auto& f = formats[r.format];
  ++f.samples;
  f.bytes += r.bytes;
  ++classes[r.label][r.format];
}

std::string manifest_to_json(const Manifest& m) {
  Json j;
  j["schema"] = m.schema;
  j["tool"] = m.tool;
  j["created"] = m.created;
  j["complete"] = m.complete;
  if (!m.complete && m.index_matches) j["index_matches_options"] = true;
  j["source"] = {{"kind", m.source_kind}, {"path", m.source_path}};
  if (!m.source_digest.empty()) {
    j["source"]["samples"] = m.source_samples;
    j["source"]["digest"] = m.source_digest;
  }
  j["layout"] = m.layout;
  if (m.layout == "tar")
    j["tar"] = {
        {"max_shard_bytes", m.max_shard_bytes}, {"shards", m.shard_files}, {"labels", m.labels}};
  j["index"] = kIndexName;
  Json targets = Json::array();
  for (const auto& t : m.targets)
    targets.push_back({{"format", t.format}, {"spec", t.spec}, {"ratio", t.ratio}});
  j["mix"] = targets;
  j["parameters"] = {{"seed", m.seed},
                     {"shard_index", m.shard_index},
                     {"shard_count", m.shard_count},
                     {"on_error", m.on_error}};
  if (m.shard_count > 1) j["parameters"]["shard_rule"] = m.shard_rule;
  if (m.shuffled) j["parameters"]["order"] = "shuffled";
  j["parameters"]["transform"] = m.transform.empty() ? Json(nullptr) : Json(m.transform);
  j["samples"] = m.samples;
  j["bytes"] = m.bytes;
  j["failed"] = m.failed;
  Json formats = Json::object();
  for (const auto& [name, c] : m.formats)
    formats[name] = {{"samples", c.samples}, {"bytes", c.bytes}};
  j["formats"] = formats;
  Json classes = Json::object();
  for (const auto& [label, per_format] : m.classes) {
    Json c = Json::object();
    for (const auto& [format, n] : per_format) c[format] = n;
    classes[label] = c;
  }
  j["classes"] = classes;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Manifest manifest_from_json(std::string_view text) {
  const Json j = parse_object(text, "not valid JSON");
  Manifest m;
  m.schema = get<std::string>(j, "schema");
  if (m.schema.rfind("dlprep.dataset/", 0) != 0)
    throw corrupt("schema \"" + m.schema + "\" is not a dlprep dataset");
  if (m.schema != kDatasetSchema)
    throw Error(Errc::unsupported, "schema \"" + m.schema + "\" is newer than this dlprep reads (" +
                                       kDatasetSchema + ")");
  try {
    m.tool = get_or<std::string>(j, "tool", "");
    m.created = get_or<std::string>(j, "created", "");
    m.complete = get<bool>(j, "complete");
    m.index_matches = !m.complete && get_or<bool>(j, "index_matches_options", false);
    const Json& source = member(j, "source");
    m.source_kind = get<std::string>(source, "kind");
    m.source_path = get<std::string>(source, "path");
    m.source_samples = get_or<uint64_t>(source, "samples", 0);
    m.source_digest = get_or<std::string>(source, "digest", "");
    m.layout = get_or<std::string>(j, "layout", "files");
    if (m.layout == "tar") {
      const Json& tar = member(j, "tar");
      m.max_shard_bytes = get<uint64_t>(tar, "max_shard_bytes");
      m.shard_files = get<uint64_t>(tar, "shards");
      m.labels = get<std::vector<std::string>>(tar, "labels");
    } else if (m.layout != "files") {
      throw Error(Errc::unsupported, "layout \"" + m.layout + "\" is unknown to this dlprep");
    }
    for (const Json& t : member(j, "mix"))
      m.targets.push_back(
          {get<std::string>(t, "format"), get<std::string>(t, "spec"), get<double>(t, "ratio")});
    const Json& p = member(j, "parameters");
    m.seed = get<uint64_t>(p, "seed");
    m.shard_index = get<uint32_t>(p, "shard_index");
    m.shard_count = get<uint32_t>(p, "shard_count");
    if (m.shard_count > 1) m.shard_rule = get_or<uint32_t>(p, "shard_rule", 1);
    m.on_error = get_or<std::string>(p, "on_error", "fail");
    const std::string order = get_or<std::string>(p, "order", "source");
    if (order != "source" && order != "shuffled")
      throw Error(Errc::unsupported, "order \"" + order + "\" is unknown to this dlprep");
    m.shuffled = order == "shuffled";
    if (p.contains("transform") && !p["transform"].is_null())
      m.transform = get<std::string>(p, "transform");
    m.samples = get<uint64_t>(j, "samples");
    m.bytes = get<uint64_t>(j, "bytes");
    m.failed = get_or<uint64_t>(j, "failed", 0);
    for (const auto& [name, c] : member(j, "formats").items())
      m.formats[name] = {get<uint64_t>(c, "samples"), get<uint64_t>(c, "bytes")};
    for (const auto& [label, per_format] : member(j, "classes").items())
      for (const auto& [format, n] : per_format.items()) {
        if (!is_count(n))
          throw corrupt("\"classes\": the count of " + label + "/" + format + " is not an integer");
        m.classes[label][format] = n.get<uint64_t>();
      }
  } catch (const nlohmann::json::exception& e) {
    // Without the library's "[json.exception.type_error.302] " prefix.
    std::string what = e.what();
    throw corrupt("malformed: " +
                  what.substr(what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2));
  }
  if (m.shard_count == 0 || m.shard_index >= m.shard_count) throw corrupt("bad shard numbers");
  return m;
}

Manifest read_manifest(const fs::path& dir) {
  fs::path path = dir / kManifestName;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (!fs::exists(dir, ec))
      throw Error(Errc::io, dir.string() + ": cannot open: No such file or directory");
    throw Error(Errc::io, dir.string() + ": not a dlprep dataset (no " + kManifestName + ")");
  }
  Bytes text = read_file(path, kMaxManifestBytes);
  try {
    return manifest_from_json(
        std::string_view(reinterpret_cast<const char*>(text.data()), text.size()));
  } catch (const Error& e) {
    throw e.with_context(path.string());
  }
}

void write_manifest(const fs::path& dir, const Manifest& m) {
  std::string text = manifest_to_json(m);
  AtomicFile file(dir / kManifestName);
  file.write(bytes_of(text));
  file.close();
  // An incomplete manifest is dated 1970-01-01 (before the rename: never seen new), so that a
  // Makefile rule whose target is dataset.json finds it older than its sources and runs again.
  // Best effort: a file system that keeps no such date costs make's rerun, not this run.
  if (!m.complete && !file.temp_path().empty()) {
    const struct timespec epoch[2] = {{0, 0}, {0, 0}};
    (void)::utimensat(AT_FDCWD, file.temp_path().c_str(), epoch, 0);
  }
  file.commit();
}

std::string not_a_dataset_reason(const fs::path& dir) {
  std::error_code ec;
  const bool data_only = fs::is_directory(dir / kDataDir, ec) &&
                         std::distance(fs::directory_iterator(dir, ec), {}) == 1;
  // A dataset.json that is no file (a folder of that name) is named as what it is.
  const bool manifest_there = fs::exists(fs::symlink_status(dir / kManifestName, ec));
  return dir.string() + ": exists and is not a dlprep dataset (" +
         (manifest_there ? std::string(kManifestName) + " is not a file"
                         : "no " + std::string(kManifestName)) +
         "); refusing to write into it" +
         (data_only ? " (if a dlprep run that stopped before writing its index left it, remove it "
                      "and run again)"
                    : "");
}

std::string source_path_text(const std::string& path) {
  std::string s = fs::path(path).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool same_options(Manifest a, Manifest b) {
  for (Manifest* m : {&a, &b}) {
    m->complete = m->index_matches = false;
    m->samples = m->bytes = m->failed = m->shard_files = 0;
    m->source_samples = 0;  // what the source holds, not how it is converted
    m->source_digest.clear();
    m->formats.clear();
    m->classes.clear();
  }
  return manifest_to_json(a) == manifest_to_json(b);
}

IncompleteMark::IncompleteMark(fs::path dataset_dir, Manifest manifest)
    : dir_(std::move(dataset_dir)), manifest_(std::move(manifest)) {
  manifest_.complete = false;
}

void IncompleteMark::set() {
  if (set_.load()) return;
  std::lock_guard lock(mutex_);
  if (set_.load()) return;
  write_manifest(dir_, manifest_);
  set_ = true;
}

bool is_dataset(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kManifestName, ec);
}

bool is_damaged_manifest(const fs::path& dir) {
  Json j;
  try {
    const Bytes text = read_file(dir / kManifestName, kMaxManifestBytes);
    j = Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception&) {
    return true;
  } catch (const Error&) {  // unreadable: not known to be ours
    return false;
  }
  return j.is_object() && j.contains("schema") && j["schema"] == kDatasetSchema;
}

bool is_manifest_lost(const fs::path& dir) {
  std::error_code ec;
  if (is_dataset(dir) || !fs::is_directory(dir / kDataDir, ec)) return false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != kIndexName && name != kDataDir &&
        name.rfind("." + std::string(kIndexName) + ".tmp.", 0) != 0 &&
        name.rfind("." + std::string(kManifestName) + ".tmp.", 0) != 0)
      return false;
  }
  if (ec) return false;
  // samples.jsonl must be a dlprep index: its first record reads as one.
  try {
    IndexReader index(dir / kIndexName);
    SampleRecord first;
    return index.next(first);
  } catch (const Error&) {
    return false;
  }
}

std::optional<int64_t> mtime_ns(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void check_location(std::string_view location) {
  fs::path p{std::string(location)};
  if (location.empty() || p.is_absolute())
    throw corrupt("location \"" + std::string(location) + "\" is not a relative path");
  for (const auto& part : p)
    if (part == ".." || part == "." || part.empty())
      throw corrupt("location \"" + std::string(location) + "\" leaves the dataset directory");
}

}  // namespace dlprep::dataset
