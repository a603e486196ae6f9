#include "dataset/orphan_files.hpp"

#include <functional>
#include <set>
#include <string>

#include "core/error.hpp"
#include "dataset/manifest.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;

void ListedLocations::add(std::string_view location) {
  hashes_.insert(std::hash<std::string_view>{}(location));
}

bool ListedLocations::contains(std::string_view location) const {
  return hashes_.count(std::hash<std::string_view>{}(location)) > 0;
}

std::vector<fs::path> orphan_files(const fs::path& dataset_dir, const ListedLocations& listed) {
  std::error_code ec;
  const fs::path old_index = dataset_dir / kIndexName;
  if (!fs::exists(old_index, ec)) return {};
  const std::string prefix = std::string(kDataDir) + "/";
  const fs::path data = fs::weakly_canonical(dataset_dir / kDataDir, ec);
  if (ec) return {};
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

uint64_t remove_files(const std::vector<fs::path>& files) {
  uint64_t removed = 0;
  for (const fs::path& file : files) {
    std::error_code ec;
    removed += fs::remove(file, ec) ? 1 : 0;
  }
  return removed;
}

}  // namespace dlprep::dataset
