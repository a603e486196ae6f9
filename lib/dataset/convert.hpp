// The convert-dataset engine: source samples -> a dlprep dataset in one or several formats,
// in parallel, incrementally (a rerun converts only what is missing or stale), resumably, and
// optionally one shard of N.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/progress.hpp"
#include "dataset/manifest.hpp"
#include "dataset/target_spec.hpp"
#include "image/transform.hpp"

namespace dlprep::dataset {

/// The files a convert thread holds open at once (the source it is reading and, in the files
/// layout, the output it is writing): for clamp_workers_to_fd_limit.
inline constexpr unsigned kConvertFilesPerThread = 2;

/// What to convert and how.
struct ConvertOptions {
  std::filesystem::path source;       ///< directory tree, list file, or dlprep dataset
  std::filesystem::path destination;  ///< the dataset directory to create or update
  std::vector<MixEntry> mix;          ///< one entry with ratio 1 for --to
  uint64_t seed = 0;                  ///< seeds the mix assignment (and the --shuffle order)
  /// --shuffle: the samples in an order drawn from the seed (shuffle_rank) instead of the
  /// source's, so that each tar shard holds a mix of classes; the source's list is then held in
  /// memory (walked once).
  bool shuffle = false;
  uint32_t shard_index = 0;           ///< convert shard shard_index of shard_count
  uint32_t shard_count = 1;
  /// --shards SIZE: the tar layout, shards of at most this many bytes; 0: a file tree (data/).
  uint64_t max_shard_bytes = 0;
  /// --on-error skip: a sample that cannot be read, decoded or encoded is reported and left out.
  /// A failure to write its output (a full or read-only disk) still stops the run.
  bool skip_errors = false;
  /// With skip_errors: stop with an error once more samples than this failed.
  uint64_t max_errors = std::numeric_limits<uint64_t>::max();
  bool force = false;         ///< reconvert even the samples that are up to date
  /// Read every file found in place and keep it only when its bytes are the previous index's
  /// record (size and crc32), instead of trusting modification times: mends damage that kept
  /// them (bit rot, cp -p), converting again only the damaged samples.
  bool recheck = false;
  /// Applied to every image after decoding (--resize, --max-side, --center-crop); recorded in
  /// dataset.json, and a different one makes every file stale. Empty: images kept as they are.
  image::Transform transform;
  unsigned threads = 1;       ///< samples converted in parallel
  std::string tool;           ///< recorded in dataset.json, e.g. "dlprep 0.1.0"
  /// With shuffle, first while the source is listed: what "listing", done = the entries listed
  /// so far (files not yet sniffed), total 0. While the source is walked: what "scanning", done =
  /// the samples found so far, total 0. Then
  /// once with what "convert-dataset" and done 0 as the conversion starts (from the calling
  /// thread, before any worker's), and after each sample (item = the key).
  ProgressCallback progress;
  WarningCallback warning;    ///< a skipped sample ("PATH: reason"), files left out, wide samples
};

/// Where the time of the converted samples went: seconds on the monotonic clock, summed over the
/// worker threads (with N threads busy they add up to about N times the wall time). Samples found
/// up to date are not counted.
struct ConvertStageSeconds {
  double read = 0;       ///< mapping the source file, sniffing and probing its format
  double decode = 0;     ///< decoding the source
  double transform = 0;  ///< resizing and cropping (--resize, --max-side, --center-crop)
  double encode = 0;     ///< encoding the target (0 for a source copied as it is)
  double record = 0;     ///< the index record: probing the output, its CRC-32
  double write = 0;      ///< creating, writing, closing and renaming the output (or tar member)
  ConvertStageSeconds& operator+=(const ConvertStageSeconds& o);
};

/// What a conversion did.
struct ConvertResult {
  Manifest manifest;          ///< as written to dataset.json
  uint64_t converted = 0;     ///< samples encoded (or copied) in this run
  uint64_t up_to_date = 0;    ///< samples whose file was already current
  uint64_t failed = 0;        ///< samples skipped because of an error (--on-error skip)
  uint64_t removed = 0;       ///< files of an earlier run's samples no longer in the source
  uint64_t not_images = 0;    ///< walked files left out: their contents are no image's
  uint64_t source_bytes = 0;  ///< bytes read from the sources of converted samples
  uint64_t output_bytes = 0;  ///< bytes written for converted samples
  ConvertStageSeconds stage_seconds;
};

/// Converts. Throws Error: invalid_argument (bad options), io (always when an output cannot be
/// written), corrupt_data/unsupported naming the sample's file (with skip_errors off), or after
/// max_errors failures. The index and the
/// manifest are only replaced at the end, atomically; the data files (or tar shards) one by one,
/// atomically.
/// Memory: 8 bytes per source sample (the key hashes of the mix and duplicate detection) plus one
/// batch of samples in flight (their records; the tar layout also holds the encoded samples of
/// at most 3 per thread); the source walk and both indexes are streamed. With shuffle, also the
/// source's list (each sample's path, key and label: about 450 bytes a sample with 30-byte paths).
ConvertResult convert_dataset(const ConvertOptions& options);

}  // namespace dlprep::dataset
