// Reading one day file in bounded chunks: text (plain or gzip) as whole lines, binary as whole
// rows. The next chunk is read (and decompressed) on a helper thread while the caller works on the
// current one, so I/O and gzip overlap with decoding.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/mapped_files.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/gzip_reader.hpp"
#include "tabular/host_buffer.hpp"

namespace dlprep::tabular {

/// The format of one file after detection.
enum class FileKind { tsv, tsv_gzip, bin };

/// Looks at the first bytes of `path` (gzip magic, binary magic) unless `format` forces one.
/// Throws Error(io) when the file cannot be opened.
FileKind detect_file_kind(const std::filesystem::path& path, InputFormat format);

/// One chunk: either text lines (ending with '\n') or binary rows (40 words each).
struct InputChunk {
  std::span<const char> text;
  std::span<const uint32_t> rows;
  /// A gzip input: the reader is inflating the next chunk on its own thread while this one is
  /// processed (a backend's host workers leave that thread a core).
  bool inflating_ahead = false;
  /// The chunk lies in memory that stays as it is until the run ends (preloaded input): a
  /// backend may go on reading it after its call returns.
  bool stable = false;
  bool empty() const { return text.empty() && rows.empty(); }
};

/// The two chunk buffers of an InputReader, kept by the caller between readers so that each new
/// day and pass does not allocate (and page-fault in) fresh buffers. `allocate` (optional) lends
/// the memory: a GPU backend's pinned memory, so that chunks go to the device by DMA.
struct ReadBuffers {
  HostAllocator allocate;
  struct Buffer {
    HostBuffer data;
    size_t capacity = 0;  // bytes of chunk room (the allocation adds 1 + padding)
    size_t have = 0;      // bytes filled
    size_t end = 0;       // bytes of the chunk handed out (whole lines / rows)
  };
  Buffer b[2];
};

/// A binary row file mapped whole (rows from `first_row_byte` on). Run keeps the mapping of a
/// day from pass 1 to pass 2 when the inputs are small enough (--decode-cache): its pages then
/// stay mapped, and pass 2 takes none of the page faults of mapping the file again.
struct RowFileMapping {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  uint64_t first_row_byte = 0;
  std::optional<MappedFileRegistration> registration;  // names the file if it shrinks under it
  RowFileMapping(const uint8_t* d, size_t n, uint64_t first, const std::filesystem::path& path)
      : data(d), bytes(n), first_row_byte(first) {
    registration.emplace(d, n, path);
  }
  ~RowFileMapping();
  RowFileMapping(const RowFileMapping&) = delete;
  RowFileMapping& operator=(const RowFileMapping&) = delete;
};

/// Streams a file in chunks of about `chunk_bytes`. Text chunks end at a line end; a final line
/// without '\n' gets one appended; kTsvReadPadding readable bytes follow every text chunk.
/// Memory: two chunk buffers (plus the gzip state).
class InputReader {
 public:
  /// `pool` (optional) lends the buffers for the reader's lifetime.
  InputReader(const std::filesystem::path& path, FileKind kind, size_t chunk_bytes,
              ReadBuffers* pool = nullptr);
  /// Binary rows from a mapping that an earlier reader of the file handed out (keep_mapping).
  InputReader(std::shared_ptr<const RowFileMapping> mapping, const std::string& name,
              size_t chunk_bytes);
  /// Reads headerless binary rows from an open file from its start (the decode cache); does not
  /// close `fd`. `name` appears in error messages.
  InputReader(int fd, const std::string& name, size_t chunk_bytes, ReadBuffers* pool = nullptr);
  /// Hands out chunks of a whole input already in memory (preloaded), without copying: `kind`
  /// tsv: text that ends with '\n' and has kTsvReadPadding readable bytes after it; bin:
  /// headerless rows. file_bytes() reports progress scaled to `file_bytes` (the file's size).
  InputReader(std::span<const uint8_t> data, FileKind kind, size_t chunk_bytes,
              uint64_t file_bytes);
  ~InputReader();
  InputReader(const InputReader&) = delete;
  InputReader& operator=(const InputReader&) = delete;
  /// The next chunk; empty at the end. Valid until the next call. Throws Error(io|corrupt_data).
  InputChunk next();
  /// Bytes read from the file so far (compressed bytes for gzip), including read-ahead.
  uint64_t file_bytes() const;
  /// A mapped binary file: keeps every page mapped from now on (none is dropped behind the
  /// chunks) and returns the mapping, for a later reader of the same file. nullptr when the
  /// input is not mapped (text, or a pipe). Call before the first next().
  std::shared_ptr<const RowFileMapping> keep_mapping();

 private:
  using Buffer = ReadBuffers::Buffer;
  void borrow(size_t capacity);
  void allocate(Buffer& b, size_t capacity);
  void fill(Buffer& b, const uint8_t* carry, size_t carry_bytes);
  size_t read_some(uint8_t* out, size_t capacity);

  std::filesystem::path path_;
  FileKind kind_;
  int fd_ = -1;
  bool owns_fd_ = true;
  std::unique_ptr<GzipReader> gzip_;
  Buffer buf_[2];
  ReadBuffers* pool_ = nullptr;
  bool borrowed_ = false;
  size_t chunk_cap_ = 0;  // bytes read per chunk (a multiple of 160 for binary rows)
  int cur_ = -1;
  bool eof_ = false;  // touched only by the thread that fills
  std::future<void> pending_;
  // Binary rows from a regular file are mapped instead of read: no copy; the pages of a chunk
  // are dropped from the mapping once the caller moves on, so RSS stays at one chunk (unless
  // the mapping is kept for a later reader).
  void map_binary(uint64_t offset);
  void use_mapping(std::shared_ptr<const RowFileMapping> mapping, uint64_t offset);
  std::shared_ptr<const RowFileMapping> mapping_;
  const uint8_t* map_ = nullptr;  // mapping_->data
  bool keep_pages_ = false;
  uint64_t map_pos_ = 0, map_end_ = 0, map_prev_ = 0;
  std::atomic<uint64_t> file_bytes_{0};
  // Preloaded input: chunks are spans of mem_.
  std::span<const uint8_t> mem_;
  bool in_memory_ = false;
  uint64_t mem_pos_ = 0, mem_file_bytes_ = 0;
};

}  // namespace dlprep::tabular
