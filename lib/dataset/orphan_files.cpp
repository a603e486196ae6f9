#include "dataset/orphan_files.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "core/directory_walk.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/manifest.hpp"
#include "image/codec.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;

namespace {

// data/ as a real folder of the dataset; empty when it is a link (or absent), whose targets are
// not the dataset's to remove.
fs::path data_folder(const fs::path& dataset_dir) {
  std::error_code ec;
  const fs::path data = dataset_dir / kDataDir;
  if (fs::symlink_status(data, ec).type() != fs::file_type::directory) return {};
  return fs::weakly_canonical(data, ec);
}

}  // namespace

void ListedLocations::add(std::string_view location) {
  const uint64_t h = std::hash<std::string_view>{}(location);
  if (!hashes_.empty() && hashes_.back() == h) return;
  hashes_.push_back(h);
  sorted_ = false;
}

bool ListedLocations::contains(std::string_view location) const {
  if (!sorted_) {
    std::sort(hashes_.begin(), hashes_.end());
    hashes_.erase(std::unique(hashes_.begin(), hashes_.end()), hashes_.end());
    sorted_ = true;
  }
  return std::binary_search(hashes_.begin(), hashes_.end(),
                            std::hash<std::string_view>{}(location));
}

std::vector<fs::path> orphan_files(const fs::path& dataset_dir, const ListedLocations& listed) {
  std::error_code ec;
  const fs::path old_index = dataset_dir / kIndexName;
  const fs::path data = data_folder(dataset_dir);
  if (data.empty() || !fs::exists(old_index, ec)) return {};
  const std::string prefix = std::string(kDataDir) + "/";
  std::set<std::string> locations;  // a tar shard is named by each of its samples
  try {
    IndexReader reader(old_index);
    SampleRecord r;
    while (reader.next(r)) {
      if (listed.contains(r.location) || locations.count(r.location)) continue;
      check_location(r.location);
      if (r.location.rfind(prefix, 0) != 0) continue;
      // Its folder must still be data/ or below once links are resolved.
      fs::path folder = fs::weakly_canonical((dataset_dir / r.location).parent_path(), ec);
      fs::path below = folder.lexically_relative(data);
      if (ec || below.empty() || *below.begin() == "..") continue;
      locations.insert(r.location);
    }
  } catch (const Error&) {
    return {};
  }
  std::vector<fs::path> files;
  for (const auto& location : locations) files.push_back(dataset_dir / location);
  return files;
}

namespace {

// "part-K-of-N-NNNNNN.tar", as TarShards names a --shard K/N part's shards.
bool is_part_shard_name(const std::string& name) {
  size_t at = 0;
  auto literal = [&](std::string_view s) {
    if (name.compare(at, s.size(), s) != 0) return false;
    at += s.size();
    return true;
  };
  auto digits = [&](size_t exactly) {
    size_t start = at;
    while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at]))) ++at;
    return exactly == 0 ? at > start : at - start == exactly;
  };
  return literal("part-") && digits(0) && literal("-of-") && digits(0) && literal("-") &&
         digits(6) && literal(".tar") && at == name.size();
}

}  // namespace

std::vector<fs::path> unlisted_part_shards(const fs::path& dataset_dir,
                                           const ListedLocations& listed) {
  std::vector<fs::path> files;
  if (data_folder(dataset_dir).empty()) return files;
  std::error_code ec;
  for (fs::directory_iterator it(dataset_dir / kDataDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string location = std::string(kDataDir) + "/" + name;
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() == fs::file_type::regular && is_part_shard_name(name) &&
        !listed.contains(location))
      files.push_back(it->path());
  }
  if (ec)
    throw Error(Errc::io,
                (dataset_dir / kDataDir).string() + ": cannot read directory: " + ec.message(),
                ec.value());
  return files;
}

std::vector<fs::path> interrupted_leftovers(const fs::path& dataset_dir,
                                            const ListedLocations& listed) {
  std::set<std::string> extensions;  // of every file a codec writes
  for (const image::Codec* codec : image::all_codecs())
    for (uint32_t channels = 1; channels <= 4; ++channels)
      extensions.insert(codec->extension(channels));
  std::vector<fs::path> files;
  const fs::path data = data_folder(dataset_dir);
  if (data.empty()) return files;
  std::error_code ec;
  for (DirectoryWalk walk(dataset_dir / kDataDir); walk.next(ec);) {
    if (walk.symlink_type() != fs::file_type::regular) continue;
    const fs::path& path = walk.path();
    const std::string name(walk.name());
    if (is_temp_file_name(name)) {
      files.push_back(path);
      continue;
    }
    std::string ext = path.extension().string();
    if (ext.empty() || name[0] == '.') continue;
    ext.erase(0, 1);
    const std::string location =
        (fs::path(kDataDir) / path.lexically_relative(dataset_dir / kDataDir)).generic_string();
    if (extensions.count(ext) && !listed.contains(location)) files.push_back(path);
  }
  if (ec)  // what is past the error would be left behind
    throw Error(Errc::io, data.string() + ": cannot read directory: " + ec.message(), ec.value());
  return files;
}

uint64_t remove_files(const fs::path& dataset_dir, const std::vector<fs::path>& files) {
  const fs::path data = dataset_dir / kDataDir;
  uint64_t removed = 0;
  for (const fs::path& file : files) {
    std::error_code ec;
    if (!fs::remove(file, ec)) continue;
    ++removed;
    // Up the folders below data/ while they are empty (rmdir refuses one that is not, and a
    // link, which is not the dataset's own folder).
    for (fs::path dir = file.parent_path();
         dir != data && dir.string().size() > data.string().size(); dir = dir.parent_path())
      if (::rmdir(dir.c_str()) != 0) break;
  }
  return removed;
}

}  // namespace dlprep::dataset
