// The POSIX ustar archive format (POSIX.1-2001 pax, IEEE Std 1003.1 "pax" utility, section
// "ustar Interchange Format" and "pax Interchange Format"), as far as dataset shards need it:
// regular files only, names longer than the ustar name field carried by a pax "path" record,
// sizes of 8 GiB and more in GNU base-256. Reading is for archives in memory (mapped shards), or
// a member's header block read alone, and treats them as hostile: every field and offset is checked
// before use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/file_io.hpp"

namespace dlprep::dataset::tar {

/// Archives are 512-byte blocks: headers, data padded to a block, two zero blocks at the end.
inline constexpr uint64_t kBlock = 512;
/// The end-of-archive marker: two zero blocks.
inline constexpr uint64_t kEndBytes = 2 * kBlock;

/// Data bytes rounded up to whole blocks.
inline uint64_t padded(uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

/// The header blocks of a regular file member (mode 0644, uid/gid 0, mtime 0 so that equal
/// inputs give equal archives): a pax extended header first when `name` does not fit the ustar
/// name field. Its length is a multiple of 512.
Bytes member_headers(std::string_view name, uint64_t size);
/// Headers plus data plus padding: what a member adds to an archive.
uint64_t member_bytes(std::string_view name, uint64_t size);
/// What the ustar name field of the member's own header holds: the name, or its first 100 bytes
/// when a pax record carries the whole name.
std::string stored_name(std::string_view name);

/// One parsed header block.
struct Header {
  std::string name;  ///< prefix + "/" + name fields (pax records are applied by TarReader)
  uint64_t size = 0;
  char type = '0';  ///< '0' file, 'x' pax, 'g' global pax, '5' directory, 'L' GNU long name, …
};

/// True if the block (512 bytes) is all zeros.
bool is_zero_block(ByteSpan block);
/// Parses a 512-byte header block: magic ("ustar"), checksum, octal or base-256 numbers.
/// Throws Error(corrupt_data) saying what is wrong.
Header parse_header(ByteSpan block);

/// A regular file member of an archive.
struct Member {
  std::string name;
  uint64_t header_offset = 0;  ///< its first header block (the pax header when there is one)
  uint64_t data_offset = 0;    ///< its data; a multiple of 512
  uint64_t size = 0;
  /// Where the next member starts: data_offset + padded(size).
  uint64_t end() const { return data_offset + padded(size); }
};

/// Walks the members of an archive in memory, one at a time. Applies pax "path"/"size" records
/// and GNU long names, skips global pax headers and directories; any other member type, a
/// header or data past the end of the buffer, or a missing end-of-archive marker is
/// Error(corrupt_data) naming the offset.
class TarReader {
 public:
  /// Reads from `start`, which must be where a member's first header is.
  explicit TarReader(ByteSpan archive, uint64_t start = 0) : archive_(archive), offset_(start) {}
  /// The next regular file, or false at the end-of-archive marker.
  bool next(Member& member);
  /// Where the next header is read.
  uint64_t offset() const { return offset_; }

 private:
  ByteSpan archive_;
  uint64_t offset_ = 0;
  bool ended_ = false;
};

/// The member whose data starts at `data_offset`, found from its own ustar header (the block
/// before): checks that it is a valid regular file header and that its data lies inside the
/// archive. Throws Error(corrupt_data) saying what is wrong.
Header header_before(ByteSpan archive, uint64_t data_offset);
/// The same check for an archive read in pieces (a shard read with pread): `block` is what the
/// archive holds at data_offset - kBlock (up to kBlock bytes; anything when data_offset cannot be
/// a member's), `archive_size` its size.
Header header_before(ByteSpan block, uint64_t data_offset, uint64_t archive_size);

}  // namespace dlprep::dataset::tar
