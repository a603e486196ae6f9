#include "dataset/tar_shards.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/limits.hpp"
#include "dataset/crc32.hpp"
#include "dataset/tar_format.hpp"

namespace dlprep::dataset {
namespace fs = std::filesystem;

// The smallest shard size taken without a unit. A labelled sample alone takes 3 KiB of tar (two
// headers, two data blocks, the end blocks) and a photo tens of KiB, so a bare number below this
// is a unit left out ("1" for 1 GB?) rather than shards of one sample each; 10kB is taken as given.
constexpr uint64_t kMinBareShardBytes = 64 * 1024;

uint64_t parse_shard_size(std::string_view text) {
  const std::optional<ByteSize> size = parse_byte_size(text);
  if (!size || !(size->bytes >= 1))
    throw Error(Errc::invalid_argument,
                "'" + std::string(text) + "' is not a size (e.g. 1GiB, 500MB, 65536)");
  const double bytes = std::floor(size->bytes);
  if (!size->unit_given && bytes < kMinBareShardBytes)
    throw Error(
        Errc::invalid_argument,
        "'" + std::string(text) + "' bytes is too small a shard (a number without a " +
            "unit must be at least " + std::to_string(kMinBareShardBytes) +
            "): a unit missing? (e.g. 1GiB, 500MB; a small size takes its unit: 10kB, 4096B)");
  // Shards are read by mapping them whole (a rerun, verify, a dataset as source).
  if (bytes > static_cast<double>(limits::kMaxFileBytes))
    throw Error(Errc::invalid_argument,
                "'" + std::string(text) + "': shards may be at most 16 GiB (the largest file " +
                    "dlprep maps)");
  return static_cast<uint64_t>(bytes);
}

uint64_t shard_bytes_on_disk(const std::filesystem::path& dataset) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dataset / kDataDir, ec))
    if (e.path().extension() == ".tar" && e.is_regular_file(ec)) bytes += e.file_size(ec);
  return bytes;
}

std::string shard_location(uint32_t part, uint32_t parts, uint64_t number) {
  char buf[96];
  if (parts <= 1) {
    std::snprintf(buf, sizeof buf, "%s/shard-%06llu.tar", kDataDir,
                  static_cast<unsigned long long>(number));
  } else {
    int width = static_cast<int>(std::to_string(parts - 1).size());
    std::snprintf(buf, sizeof buf, "%s/part-%0*u-of-%u-%06llu.tar", kDataDir, width, part, parts,
                  static_cast<unsigned long long>(number));
  }
  return buf;
}

std::string member_name(std::string_view key, const image::Codec& codec, uint32_t channels) {
  return std::string(key) + "." + codec.extension(channels);
}

bool recover_record(const KeptSample& kept, const std::string& format,
                    const std::optional<SampleRecord>& old,
                    std::optional<int64_t> old_index_mtime_ns, bool old_is_exact, SampleRecord& r) {
  r.format = format;
  r.location = kept.shard->location;
  r.offset = kept.data_offset;
  r.bytes = kept.size;
  if (old && old->location == r.location && old->offset == r.offset && old->bytes == r.bytes &&
      old->format == format && old_index_mtime_ns && kept.shard->mtime_ns <= *old_index_mtime_ns) {
    r.shape = old->shape;
    r.crc32 = old->crc32;
    return true;
  }
  try {
    ByteSpan bytes = kept.bytes();
    const image::Codec* codec = image::sniff_codec(bytes);
    if (!codec || codec->name() != format) return false;
    r.shape = codec->probe(bytes).shape;
    r.crc32 = crc32_of(bytes);
  } catch (const Error&) {
    return false;
  }
  return !(old_is_exact && old && old->format == format &&
           (old->location != r.location || old->offset != r.offset || old->bytes != r.bytes ||
            old->crc32 != r.crc32));
}

struct TarShards::Cursor {
  tar::TarReader reader;
  std::optional<tar::Member> ahead;  // the next member, not yet proposed
  uint64_t released = 0;             // the shard's pages before this are out of RSS
};

namespace {
// The old shard's pages are released from RSS behind the proposals every this many bytes: a
// rerun read all of a 1 GiB shard into its RSS. A kept sample read later faults its pages back.
constexpr uint64_t kReleaseBytes = uint64_t{8} << 20;
}  // namespace

TarShards::TarShards(TarLayout layout, bool reuse) : layout_(std::move(layout)), proposing_(reuse) {
  if (layout_.max_shard_bytes == 0) throw Error(Errc::invalid_argument, "shard size 0");
}

TarShards::~TarShards() = default;

std::string TarShards::cls_text(std::string_view label) const {
  auto it = std::lower_bound(layout_.labels.begin(), layout_.labels.end(), label);
  if (it == layout_.labels.end() || *it != label)
    throw Error(Errc::internal, "label '" + std::string(label) + "' is not in the class list");
  return std::to_string(it - layout_.labels.begin());
}

uint64_t TarShards::sample_bytes(std::string_view name, uint64_t size,
                                 std::string_view cls_name) const {
  uint64_t n = tar::member_bytes(name, size);
  if (!cls_name.empty()) n += tar::member_bytes(cls_name, 20);  // the index: at most 20 digits
  return n;
}

bool TarShards::load_next_old() {
  old_.reset();
  cursor_.reset();
  auto shard = std::make_shared<OldShard>();
  shard->number = next_old_++;
  shard->location = shard_location(layout_.part, layout_.parts, shard->number);
  fs::path path = layout_.destination / shard->location;
  std::optional<int64_t> mtime = mtime_ns(path);
  if (!mtime) return false;
  shard->mtime_ns = *mtime;
  try {
    shard->file = std::make_unique<MappedFile>(path);
    auto cursor = std::make_unique<Cursor>(Cursor{tar::TarReader(shard->file->bytes()), {}});
    tar::Member first;
    if (!cursor->reader.next(first)) return false;
    cursor->ahead = std::move(first);
    cursor_ = std::move(cursor);
  } catch (const Error&) {
    return false;  // damaged or not ours: rewritten
  }
  old_ = std::move(shard);
  return true;
}

std::optional<KeptSample> TarShards::propose(std::string_view key, std::string_view label,
                                             const image::Codec& format) {
  if (!proposing_) return std::nullopt;
  try {
    if ((!old_ || !cursor_->ahead) && !load_next_old()) {
      proposing_ = false;
      return std::nullopt;
    }
    const tar::Member& image = *cursor_->ahead;
    std::string_view name = image.name;
    bool ours = name.size() > key.size() + 1 && name.substr(0, key.size()) == key &&
                name[key.size()] == '.';
    if (ours) {
      std::string_view ext = name.substr(key.size() + 1);
      ours = false;
      for (uint32_t channels = 1; channels <= 4; ++channels)
        ours |= format.extension(channels) == ext;
    }
    // Another key: a new sample (written, and then run() stops proposing) or one that fails
    // under --on-error skip (never written: the next sample may still be the old shard's next).
    if (!ours) return std::nullopt;
    KeptSample kept{old_, image.data_offset, image.size, image.end(), false};
    tar::Member next;
    bool more = cursor_->reader.next(next);
    std::string cls = std::string(key) + ".cls";
    if (!label.empty()) {
      std::string want = cls_text(label);
      ByteSpan got = more ? old_->file->bytes().subspan(next.data_offset, next.size) : ByteSpan();
      if (!more || next.name != cls || got.size() != want.size() ||
          !std::equal(got.begin(), got.end(), want.begin())) {
        proposing_ = false;
        return std::nullopt;
      }
      kept.end = next.end();
      more = cursor_->reader.next(next);
    } else if (more && next.name == cls) {
      proposing_ = false;
      return std::nullopt;
    }
    cursor_->ahead = more ? std::optional<tar::Member>(std::move(next)) : std::nullopt;
    kept.last = !more;
    if (const uint64_t at = cursor_->reader.offset(); at - cursor_->released >= kReleaseBytes) {
      old_->file->release_pages(cursor_->released, at);
      cursor_->released = at;
    }
    return kept;
  } catch (const Error&) {
    proposing_ = false;  // a damaged shard is rewritten from here
    return std::nullopt;
  }
}

void TarShards::keep(const KeptSample& kept, SampleRecord& record) {
  bool first = !started_ && kept.shard->number == 0;
  bool same = kept_ && kept.shard == kept_;
  bool next = kept_ && kept_complete_ && kept.shard->number == number_ + 1;
  if (!first && !same && !next)
    throw Error(Errc::internal, "tar shards: sample '" + record.key + "' kept out of order");
  started_ = true;
  number_ = kept.shard->number;
  kept_ = kept.shard;
  kept_end_ = kept.end;
  kept_complete_ = kept.last;
  record.location = kept.shard->location;
  record.offset = kept.data_offset;
}

void TarShards::open_new(uint64_t number) {
  number_ = number;
  started_ = true;
  writer_ = std::make_unique<TarWriter>(layout_.destination /
                                        shard_location(layout_.part, layout_.parts, number));
  writer_samples_ = 0;
}

// The kept samples of shard number_ are copied into a new shard of the same name, which then
// takes more samples (or ends earlier than the old one did).
void TarShards::reopen_kept() {
  std::shared_ptr<const OldShard> old = std::move(kept_);
  kept_.reset();
  open_new(old->number);
  // A chunk at a time, each released once copied: the kept part of a 1 GiB shard is not all in
  // RSS at once. (kReleaseBytes is whole blocks, as append_members needs.)
  const ByteSpan kept = old->file->bytes().subspan(0, kept_end_);
  for (uint64_t at = 0; at < kept.size(); at += kReleaseBytes) {
    const uint64_t n = std::min<uint64_t>(kReleaseBytes, kept.size() - at);
    writer_->append_members(kept.subspan(at, n));
    old->file->release_pages(at, at + n);
  }
  writer_samples_ = 1;
}

void TarShards::add(SampleRecord& record, std::string_view name, ByteSpan bytes) {
  std::string cls = record.label.empty() ? std::string() : record.key + ".cls";
  uint64_t need = sample_bytes(name, bytes.size(), cls);
  uint64_t max = layout_.max_shard_bytes;
  if (kept_) {
    // Where a fresh run would put this sample: into the kept shard if it fits (or if the old
    // shard went on with samples that are stale now), else into the next one.
    if (!kept_complete_ || kept_end_ + need + tar::kEndBytes <= max) {
      reopen_kept();
    } else {
      uint64_t number = kept_->number + 1;
      kept_.reset();
      open_new(number);
    }
  } else if (!writer_) {
    open_new(started_ ? number_ + 1 : 0);
  }
  if (writer_samples_ > 0 && writer_->size() + need + tar::kEndBytes > max) {
    writer_->finish();
    open_new(number_ + 1);
  }
  record.location = shard_location(layout_.part, layout_.parts, number_);
  record.offset = writer_->add(name, bytes);
  if (!cls.empty()) {
    std::string index = cls_text(record.label);
    writer_->add(cls, bytes_of(index));
  }
  ++writer_samples_;
}

uint64_t TarShards::finish() {
  if (kept_ && !kept_complete_) reopen_kept();
  if (writer_) {
    writer_->finish();
    writer_.reset();
  }
  kept_.reset();
  old_.reset();
  cursor_.reset();
  uint64_t count = started_ ? number_ + 1 : 0;
  fs::path data = layout_.destination / kDataDir;
  std::error_code ec;
  if (!fs::exists(data, ec)) return count;
  for (fs::directory_iterator it(data, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    bool temp = name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos;
    bool shard = name.size() > 4 && name.ends_with(".tar");
    if (shard) {
      // Ours if the digits before ".tar" name one of this run's shards.
      size_t dash = name.rfind('-');
      uint64_t number = 0;
      const char* digits = name.data() + (dash == std::string::npos ? 0 : dash + 1);
      const char* stop = name.data() + name.size() - 4;
      auto [p, perr] = std::from_chars(digits, stop, number);
      shard = !(perr == std::errc() && p == stop && number < count &&
                fs::path(shard_location(layout_.part, layout_.parts, number)).filename() == name);
    }
    if (!temp && !shard) continue;
    std::error_code rec;
    fs::remove(it->path(), rec);
    if (rec)
      throw Error(Errc::io, it->path().string() + ": cannot remove stale file: " + rec.message());
  }
  if (ec) throw Error(Errc::io, data.string() + ": cannot read directory: " + ec.message());
  return count;
}

}  // namespace dlprep::dataset
