// The data files an earlier index of a dataset named and its new index does not: convert-dataset
// and dataset merge remove them once the new index is in place, so that data/ holds the dataset
// and nothing else (a loader that lists data/, or globs its tar shards, sees this run's files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace dlprep::dataset {

/// The locations (a file, or a tar shard) a new index names, as hashes: 8 bytes a sample, for
/// indices of millions. Not for two threads at once (a lookup may sort).
class ListedLocations {
 public:
  void add(std::string_view location);
  /// Not from two threads at once: the first lookup sorts.
  bool contains(std::string_view location) const;

 private:
  // Sorted at the first lookup after an add (the lookups come once the index is written), then
  // searched by halves: 8 bytes a location where a hash set's node took 40 (a merge of 200k
  // samples: 11.3 MB of anonymous memory, 6.2 MB now). A tar shard's samples add it once.
  mutable std::vector<uint64_t> hashes_;
  mutable bool sorted_ = true;
};

/// The files that DIR/samples.jsonl (the index about to be replaced) names and `listed` does not,
/// each once. Only plain locations under DIR/data/ are returned, whatever the old index says
/// (links resolved; none when data/ itself is a link); an old index that cannot be read gives
/// none.
std::vector<std::filesystem::path> orphan_files(const std::filesystem::path& dataset_dir,
                                                const ListedLocations& listed);

/// The merged tar shards (data/part-K-of-N-NNNNNN.tar, names only dlprep gives) that `listed`
/// does not name: also those of a merge that was interrupted before its index, which no index
/// names.
std::vector<std::filesystem::path> unlisted_part_shards(const std::filesystem::path& dataset_dir,
                                                        const ListedLocations& listed);

/// What an interrupted run (its dataset.json says incomplete: every writer marks it so before its
/// first change) may have left below DIR/data that `listed` does not name: its temporary files
/// (".NAME.tmp.XXXXXX", in any folder), and data files with an extension a codec writes (of
/// samples it converted whose source is gone since). The caller holds the dataset's lock. Links
/// are not followed.
std::vector<std::filesystem::path> interrupted_leftovers(const std::filesystem::path& dataset_dir,
                                                         const ListedLocations& listed);

/// Removes the files (already gone: not counted), and the folders below DIR/data that this
/// leaves empty (an empty class folder is a class to ImageFolder); returns the files removed.
uint64_t remove_files(const std::filesystem::path& dataset_dir,
                      const std::vector<std::filesystem::path>& files);

}  // namespace dlprep::dataset
