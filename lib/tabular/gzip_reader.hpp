// Streaming gzip decompression in bounded memory (multi-member streams included). Backends:
// ISA-L's isal_inflate (gzip_isal.cpp, 2-3x zlib) or zlib (gzip_zlib.cpp); CMake picks one file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dlprep::tabular {

/// Decompresses a gzip file read from a file descriptor (which it does not close).
class GzipReader {
 public:
  virtual ~GzipReader() = default;
  /// Writes up to `capacity` decompressed bytes to `out`; returns how many, 0 at the end of the
  /// last member. Throws Error(corrupt_data) naming the file on a corrupt or truncated stream.
  virtual size_t read(uint8_t* out, size_t capacity) = 0;
  /// Compressed bytes consumed so far.
  virtual uint64_t compressed_bytes() const = 0;
};

/// Opens the backend compiled in. `name` is used in error messages.
std::unique_ptr<GzipReader> open_gzip_reader(int fd, const std::string& name);

/// "isal" or "zlib".
const char* gzip_backend_name() noexcept;

}  // namespace dlprep::tabular
