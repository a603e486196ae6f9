// The tar layout of a dlprep dataset (convert-dataset --shards SIZE): samples in source order in
// ustar shards DST/data/shard-NNNNNN.tar, each sample the WebDataset group of members
// KEY.EXT (the image) and KEY.cls (its class index as decimal text, when it has a label).
// This file names the shards, fills them, and finds what an earlier run already wrote.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_io.hpp"
#include "dataset/manifest.hpp"
#include "dataset/tar_writer.hpp"
#include "image/codec.hpp"

namespace dlprep::dataset {

/// Parses --shards SIZE: bytes, or a number with a unit (core/byte_size.hpp: kB, MB, GB, TB powers
/// of 1000; K, M, G, T and KiB .. TiB powers of 1024), e.g. "1GiB", "500MB", "1.5G", "65536".
/// Throws Error(invalid_argument) for 0, a negative or malformed size, a fraction of a byte, a
/// number of bytes without a unit under 65536 ("1" is 1 GiB with its unit left out; a small size
/// takes a unit: 10kB), or one above 16 GiB (limits::kMaxFileBytes: shards are mapped whole when
/// read).
uint64_t parse_shard_size(std::string_view text);

/// The location of shard `number` relative to the dataset: "data/shard-000012.tar", or with
/// --shard K/N (N > 1) "data/part-K-of-N-000012.tar", K zero-padded to N's width, so that the
/// parts of one conversion never collide and merge can link them side by side.
std::string shard_location(uint32_t part, uint32_t parts, uint64_t number);

/// The bytes of the tar shards in a dataset's data/ folder, headers, padding and .cls members
/// included: what the layout takes on disk, where the index counts the images' bytes alone.
uint64_t shard_bytes_on_disk(const std::filesystem::path& dataset);

/// The tar member name of a sample's image: KEY.EXT.
std::string member_name(std::string_view key, const image::Codec& codec, uint32_t channels);

/// A shard of an earlier run, mapped for reading.
struct OldShard {
  uint64_t number = 0;
  std::string location;
  std::unique_ptr<MappedFile> file;
  int64_t mtime_ns = 0;
};

/// A sample that an earlier run already put where this run would put it.
struct KeptSample {
  std::shared_ptr<const OldShard> shard;
  uint64_t data_offset = 0;  ///< the image member's data
  uint64_t size = 0;
  uint64_t end = 0;   ///< where the sample's last member (its .cls) ends in the shard
  bool last = false;  ///< the last sample of its shard
  ByteSpan bytes() const { return shard->file->bytes().subspan(data_offset, size); }
};

/// Fills the record of a kept sample (location, offset, bytes, shape, crc32) and checks it:
/// from `old` (the previous index's record of the key) when it names the same member and the
/// shard is unchanged since that index was written (old_index_mtime_ns), else from the member's
/// bytes (sniff, probe, crc32). The key, label, ordinal and source must already be set.
/// False if the member is not a decodable image in `format`, or, when `old_is_exact` (the run
/// that wrote that index completed), if its bytes are not what `old` records of them.
bool recover_record(const KeptSample& kept, const std::string& format,
                    const std::optional<SampleRecord>& old,
                    std::optional<int64_t> old_index_mtime_ns, bool old_is_exact,
                    SampleRecord& record);

/// What the tar layout needs to know of a conversion.
struct TarLayout {
  std::filesystem::path destination;
  uint64_t max_shard_bytes = 0;
  uint32_t part = 0, parts = 1;     ///< --shard K/N
  std::vector<std::string> labels;  ///< sorted: a label's class index is its position
};

/// Writes the shards of one run in source order, keeping what an earlier run already wrote.
/// Rule: shards are filled in source order and a new one is started when the next sample would
/// take the shard past max_shard_bytes (a sample larger than that gets a shard of its own), so a
/// rerun partitions the same way. A sample of the next old shard is kept when it is the next
/// member there (same key, format and class); the engine then checks that its source is no
/// newer than the shard. From the first sample that is not kept, everything is written anew;
/// the kept samples of a shard that must change are copied into the new shard byte for byte.
/// Two sides, both called from one thread in source order: propose() before samples are
/// converted (it may run a batch ahead), keep()/add() as their records are written.
class TarShards {
 public:
  /// reuse = false (--force, or the shards were made with other options): nothing is kept.
  TarShards(TarLayout layout, bool reuse);
  ~TarShards();
  TarShards(const TarShards&) = delete;
  TarShards& operator=(const TarShards&) = delete;

  /// The sample as the next member of the old shards, or nullopt: when that member is another
  /// sample's (this one is new, or will fail under --on-error skip), the next call may still
  /// match it, and the caller stops proposing once a sample is written instead; after another
  /// label, the end or a damaged shard, nothing more is proposed. Never throws for a damaged
  /// old shard (it is just not kept).
  std::optional<KeptSample> propose(std::string_view key, std::string_view label,
                                    const image::Codec& format);
  /// A proposed sample turned out stale: propose nothing more.
  void stop_proposing() { proposing_ = false; }

  /// Keeps a proposed sample (every earlier proposal was kept or added). Sets record.location
  /// and offset.
  void keep(const KeptSample& kept, SampleRecord& record);
  /// Appends a sample's members (`name` = member_name()) and sets record.location and offset.
  /// Throws Error(io).
  void add(SampleRecord& record, std::string_view name, ByteSpan bytes);
  /// Closes the last shard and removes every other *.tar in data/ (shards of an earlier run
  /// past the last one, other parts' or layouts' leftovers) and stray temporary files. Returns
  /// the number of shards.
  uint64_t finish();

 private:
  std::string cls_text(std::string_view label) const;
  uint64_t sample_bytes(std::string_view name, uint64_t size, std::string_view cls_name) const;
  bool load_next_old();
  void reopen_kept();
  void open_new(uint64_t number);

  TarLayout layout_;
  // Proposal side: the old shard being read and a reader positioned after the last proposal.
  bool proposing_;
  uint64_t next_old_ = 0;
  std::shared_ptr<OldShard> old_;
  struct Cursor;
  std::unique_ptr<Cursor> cursor_;
  // Write side: shard number_ is either kept (samples of old shard number_ up to kept_end_) or
  // being written (writer_).
  uint64_t number_ = 0;
  bool started_ = false;
  std::shared_ptr<const OldShard> kept_;
  uint64_t kept_end_ = 0;
  bool kept_complete_ = false;
  std::unique_ptr<TarWriter> writer_;
  uint64_t writer_samples_ = 0;
};

}  // namespace dlprep::dataset
