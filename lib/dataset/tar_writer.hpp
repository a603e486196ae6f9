// Writes a ustar archive to disk as a stream: members are appended one at a time (never the
// whole archive in memory) to a temporary file that is renamed into place by finish().
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "core/file_io.hpp"

namespace dlprep::dataset {

/// A tar archive being written (see tar_format.hpp for the header layout). Destroyed without
/// finish(), or on SIGINT, it leaves nothing behind (AtomicFile).
class TarWriter {
 public:
  /// Throws Error(io) if the temporary file cannot be created.
  explicit TarWriter(const std::filesystem::path& target);
  /// Appends a regular file member; returns the offset of its data in the archive.
  /// Throws Error(io) naming the archive (e.g. disk full).
  uint64_t add(std::string_view name, ByteSpan data);
  /// Appends bytes that are already whole members (headers, data, padding), e.g. the first
  /// members of an earlier archive copied unchanged. Its size must be a multiple of 512.
  void append_members(ByteSpan members);
  /// Bytes written so far, without the end-of-archive marker.
  uint64_t size() const { return size_; }
  /// Writes the end-of-archive marker and renames the archive into place. Throws Error(io).
  void finish();

 private:
  AtomicFile file_;
  uint64_t size_ = 0;
};

}  // namespace dlprep::dataset
