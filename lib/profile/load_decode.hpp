// A real Load -> Decode pass, the measurement that checks profile-mix's predictions: reader
// threads fetch files through the throttled StorageReader into a bounded queue, and decode
// workers take them from it, so loading and decoding overlap as in a training input pipeline and
// the slower of the two sets the pace.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dlprep::profile {

/// One file of a pass and the codec that decodes it, both owned by the caller: a pass repeats a
/// few files up to a million times (tiny images), so an item holds no copy of either.
struct PassItem {
  const std::filesystem::path* path;
  std::string_view format;
};

/// What a pass measured.
struct PassResult {
  uint64_t images = 0;
  uint64_t bytes = 0;
  double seconds = 0;                 ///< wall time of the pass
  double images_per_s = 0;            ///< images / seconds
  double storage_bytes_per_s = 0;     ///< bandwidth actually delivered: bytes / seconds
  uint64_t direct_reads = 0;          ///< files read with O_DIRECT (else evicted with fadvise)
  /// CPU seconds the decoder threads used (their thread clocks: waiting is not counted). Over
  /// `seconds`, the cores the decoders really got; on a shared machine fewer than the workers.
  double decode_cpu_seconds = 0;
};

/// When a pass may end before its last item: once `min_items` were read, no item is started after
/// `seconds` (0: every item is read). The pass is sized from a prediction, which can be far off
/// (an open per file, which the cost model leaves out, dominates on 32x32 images).
struct PassDeadline {
  double seconds = 0;
  size_t min_items = 0;
};

/// Loads and decodes the items in order, each once (up to `deadline`): `readers` loader threads,
/// throttled together to `storage_bytes_per_s` (0: unthrottled), and `decode_workers` decoder
/// threads. Each decoded image's shape is checked to be non-empty. Throws the first Error of any
/// thread (the others stop), Error(unsupported) for an unknown format.
PassResult run_load_decode(const std::vector<PassItem>& items, double storage_bytes_per_s,
                           unsigned decode_workers, unsigned readers,
                           const PassDeadline& deadline = {});

}  // namespace dlprep::profile
