// Streaming gzip decompression in bounded memory (multi-member streams included). Backends:
// ISA-L's isal_inflate (gzip_isal.cpp, 2-3x zlib), built when libisal is installed, and zlib
// (gzip_zlib.cpp), always built: the portable fallback, and the reference that the tests and
// fuzz_gzip_read check ISA-L against. gzip_reader.cpp is the only file that knows which were built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
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

/// A backend built into this dlprep. `open`'s `name` is used in error messages.
struct GzipBackend {
  const char* name;  ///< "isal" or "zlib"
  std::unique_ptr<GzipReader> (*open)(int fd, const std::string& name);
};

/// The backends built in, fastest first; zlib is always among them.
std::span<const GzipBackend> gzip_backends() noexcept;

/// Opens the fastest backend (the first of gzip_backends()).
std::unique_ptr<GzipReader> open_gzip_reader(int fd, const std::string& name);

/// The fastest backend's name: "isal" or "zlib".
const char* gzip_backend_name() noexcept;

/// Each backend's opener, defined in its own file (the ISA-L one only when it was built).
std::unique_ptr<GzipReader> open_isal_gzip_reader(int fd, const std::string& name);
std::unique_ptr<GzipReader> open_zlib_gzip_reader(int fd, const std::string& name);

}  // namespace dlprep::tabular
