#include "tabular/input_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "tabular/criteo_schema.hpp"
#include "tabular/parse_tsv.hpp"

namespace dlprep::tabular {
namespace fs = std::filesystem;
namespace {

// A line longer than this is certainly not a Criteo row (they are about 250 bytes): stop growing
// the buffer and report it instead of reading a whole file as one line.
constexpr size_t kMaxLineBytes = size_t{16} << 20;

int open_or_throw(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(Errc::io, path.string() + ": cannot open: " + std::strerror(errno));
  return fd;
}

// Bytes per binary chunk: whole rows, at least one, from a request of at least 4 KiB.
size_t binary_chunk_bytes(size_t chunk_bytes) {
  return std::max<size_t>(std::max<size_t>(chunk_bytes, 4096) / kBinaryRowBytes, 1) *
         kBinaryRowBytes;
}

}  // namespace

FileKind detect_file_kind(const fs::path& path, InputFormat format) {
  int fd = open_or_throw(path);
  uint8_t head[8] = {};
  size_t n = read_up_to(fd, head, sizeof head, path);
  ::close(fd);
  bool gz = n >= 2 && head[0] == 0x1f && head[1] == 0x8b;
  bool bin = n >= 8 && std::memcmp(head, kBinaryMagic, 8) == 0;
  // Other compressors' files would otherwise fail as text at line 1 with a binary byte.
  static const struct {
    const char* name;
    const char* magic;
    size_t bytes;
    const char* tool;
  } kOther[] = {{"zstd", "\x28\xb5\x2f\xfd", 4, "zstd -d"},
                {"xz", "\xfd\x37\x7a\x58\x5a\x00", 6, "xz -d"},
                {"bzip2", "BZh", 3, "bunzip2"},
                {"zip", "PK\x03\x04", 4, "unzip"}};
  for (const auto& c : kOther)
    if (n >= c.bytes && std::memcmp(head, c.magic, c.bytes) == 0)
      throw Error(Errc::unsupported, path.string() + ": " + c.name +
                                         "-compressed; dlprep reads plain or gzip text and its " +
                                         "binary rows: decompress it first (" + c.tool + ")");
  switch (format) {
    case InputFormat::bin:
      if (!bin) throw Error(Errc::corrupt_data, path.string() + ": not a dlprep binary row file");
      return FileKind::bin;
    case InputFormat::tsv:
      return gz ? FileKind::tsv_gzip : FileKind::tsv;
    case InputFormat::auto_detect:
      break;
  }
  if (bin) return FileKind::bin;
  return gz ? FileKind::tsv_gzip : FileKind::tsv;
}

void InputReader::allocate(Buffer& b, size_t capacity) {
  // Not value-initialised: the pages are touched only when read into.
  const size_t bytes = capacity + 1 + kTsvReadPadding;
  HostBuffer data = pool_ && pool_->allocate ? pool_->allocate(bytes) : allocate_pageable(bytes);
  if (b.data && b.have) std::memcpy(data.data(), b.data.data(), b.have);
  std::memset(data.data() + capacity, 0, 1 + kTsvReadPadding);
  b.data = std::move(data);
  b.capacity = capacity;
}

void InputReader::borrow(size_t capacity) {
  chunk_cap_ = capacity;
  borrowed_ = pool_ != nullptr;
  for (int i = 0; i < 2; ++i) {
    if (pool_) std::swap(buf_[i], pool_->b[i]);
    buf_[i].have = buf_[i].end = 0;
    if (buf_[i].capacity < capacity) allocate(buf_[i], capacity);
  }
}

InputReader::InputReader(const fs::path& path, FileKind kind, size_t chunk_bytes, ReadBuffers* pool)
    : path_(path), kind_(kind), pool_(pool) {
  fd_ = open_or_throw(path);
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  size_t cap = std::max<size_t>(chunk_bytes, 4096);
  if (kind_ == FileKind::bin) {
    uint8_t header[kBinaryHeaderBytes];
    size_t n = read_up_to(fd_, header, sizeof header, path);
    file_bytes_ += n;
    uint32_t version = 0, row_bytes = 0, fields = 0;
    if (n == sizeof header) {
      std::memcpy(&version, header + 8, 4);
      std::memcpy(&row_bytes, header + 12, 4);
      std::memcpy(&fields, header + 16, 4);
    }
    if (n != sizeof header || std::memcmp(header, kBinaryMagic, 8) != 0 ||
        version != kBinaryVersion || row_bytes != kBinaryRowBytes || fields != kNumFields) {
      ::close(fd_);
      throw Error(Errc::corrupt_data, path.string() + ": not a dlprep binary row file (version 1)");
    }
    cap = binary_chunk_bytes(chunk_bytes);
    chunk_cap_ = cap;
    try {
      map_binary(kBinaryHeaderBytes);
    } catch (...) {
      ::close(fd_);
      throw;
    }
    if (map_) return;
  } else if (kind_ == FileKind::tsv_gzip) {
    gzip_ = open_gzip_reader(fd_, path.string());
  }
  borrow(cap);
}

InputReader::InputReader(int fd, const std::string& name, size_t chunk_bytes, ReadBuffers* pool)
    : path_(name), kind_(FileKind::bin), fd_(fd), owns_fd_(false), pool_(pool) {
  if (::lseek(fd_, 0, SEEK_SET) != 0)
    throw Error(Errc::io, name + ": seek failed: " + std::strerror(errno));
  size_t cap = binary_chunk_bytes(chunk_bytes);
  chunk_cap_ = cap;
  map_binary(0);
  if (!map_) borrow(cap);
}

void InputReader::map_binary(uint64_t offset) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) <= offset)
    return;
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if ((size - offset) % kBinaryRowBytes != 0) {
    throw Error(Errc::corrupt_data, path_.string() + ": truncated binary row at byte " +
                                        std::to_string(size - (size - offset) % kBinaryRowBytes));
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (p == MAP_FAILED) return;  // fall back to read(2)
  ::madvise(p, size, MADV_SEQUENTIAL);
  use_mapping(std::make_shared<RowFileMapping>(static_cast<const uint8_t*>(p), size, offset, path_),
              offset);
}

void InputReader::use_mapping(std::shared_ptr<const RowFileMapping> mapping, uint64_t offset) {
  mapping_ = std::move(mapping);
  map_ = mapping_->data;
  map_pos_ = map_prev_ = offset;
  map_end_ = mapping_->bytes;
}

RowFileMapping::~RowFileMapping() {
  registration.reset();  // first: a fault after the unmapping is no longer this file's
  ::munmap(const_cast<uint8_t*>(data), bytes);
}

InputReader::InputReader(std::shared_ptr<const RowFileMapping> mapping, const std::string& name,
                         size_t chunk_bytes)
    : path_(name), kind_(FileKind::bin), keep_pages_(true) {
  chunk_cap_ = binary_chunk_bytes(chunk_bytes);
  const uint64_t first = mapping->first_row_byte;
  use_mapping(std::move(mapping), first);
}

std::shared_ptr<const RowFileMapping> InputReader::keep_mapping() {
  if (!mapping_) return nullptr;
  keep_pages_ = true;
  return mapping_;
}

InputReader::InputReader(std::span<const uint8_t> data, FileKind kind, size_t chunk_bytes,
                         uint64_t file_bytes)
    : path_("(memory)"), kind_(kind), mem_(data), in_memory_(true), mem_file_bytes_(file_bytes) {
  chunk_cap_ = kind_ == FileKind::bin ? binary_chunk_bytes(chunk_bytes)
                                      : std::max<size_t>(chunk_bytes, 4096);
}

InputReader::~InputReader() {
  if (pending_.valid()) {
    try {
      pending_.get();
    } catch (...) {
      // The error of a read-ahead nobody asked for any more.
    }
  }
  gzip_.reset();
  if (fd_ >= 0 && owns_fd_) ::close(fd_);
  if (borrowed_)
    for (int i = 0; i < 2; ++i) std::swap(buf_[i], pool_->b[i]);
}

uint64_t InputReader::file_bytes() const {
  if (in_memory_) {
    if (mem_.empty()) return mem_file_bytes_;
    return static_cast<uint64_t>(static_cast<double>(mem_pos_) / static_cast<double>(mem_.size()) *
                                 static_cast<double>(mem_file_bytes_));
  }
  if (map_) return map_pos_;
  return gzip_ ? gzip_->compressed_bytes() : file_bytes_.load();
}

size_t InputReader::read_some(uint8_t* out, size_t capacity) {
  if (gzip_) {
    size_t got = 0;
    while (got < capacity) {
      size_t n = gzip_->read(out + got, capacity - got);
      if (n == 0) break;
      got += n;
    }
    return got;
  }
  size_t n = read_up_to(fd_, out, capacity, path_);
  file_bytes_ += n;
  return n;
}

// Fills b: the carried-over start of an unfinished line, then as much of the file as fits; sets
// b.end to the end of the last whole line (or row).
void InputReader::fill(Buffer& b, const uint8_t* carry, size_t carry_bytes) {
  b.have = b.end = 0;
  if (carry_bytes > b.capacity) allocate(b, carry_bytes * 2);
  if (carry_bytes) std::memcpy(b.data.data(), carry, carry_bytes);
  b.have = carry_bytes;
  if (kind_ == FileKind::bin) {
    if (eof_) return;
    size_t n = read_some(b.data.data(), chunk_cap_);
    if (n < chunk_cap_) eof_ = true;
    if (n % kBinaryRowBytes != 0) {
      throw Error(Errc::corrupt_data, path_.string() + ": truncated binary row at byte " +
                                          std::to_string(file_bytes_ - n % kBinaryRowBytes));
    }
    b.have = b.end = n;
    return;
  }
  for (;;) {
    if (!eof_) {
      size_t n = read_some(b.data.data() + b.have, b.capacity - b.have);
      if (n < b.capacity - b.have) eof_ = true;
      b.have += n;
    }
    if (b.have == 0) return;
    if (eof_) {
      if (b.data.data()[b.have - 1] != '\n')
        b.data.data()[b.have++] = '\n';  // the +1 of the allocation
      b.end = b.have;
      break;
    }
    const void* last = ::memrchr(b.data.data(), '\n', b.have);
    if (last != nullptr) {
      b.end = static_cast<size_t>(static_cast<const uint8_t*>(last) - b.data.data()) + 1;
      break;
    }
    // No line end in a full buffer: one very long line. Grow, within reason.
    if (b.capacity >= kMaxLineBytes) {
      throw Error(Errc::corrupt_data,
                  path_.string() + ": a line longer than " + std::to_string(b.capacity >> 20) +
                      " MiB: a corrupt file? (a Criteo row has about 250 bytes; a larger "
                      "--chunk-mb reads it)");
    }
    allocate(b, b.capacity * 2);
  }
  // The decoder reads up to kTsvReadPadding bytes past the chunk: make them defined.
  std::memset(b.data.data() + b.end + (b.have - b.end), 0,
              std::min<size_t>(kTsvReadPadding, b.capacity + 1 + kTsvReadPadding - b.have));
}

InputChunk InputReader::next() {
  if (in_memory_) {
    InputChunk chunk;
    chunk.stable = true;  // the caller's memory, for the whole run
    size_t left = mem_.size() - static_cast<size_t>(mem_pos_);
    if (left == 0) return InputChunk{};
    const uint8_t* at = mem_.data() + mem_pos_;
    if (kind_ == FileKind::bin) {
      size_t n = std::min(chunk_cap_, left);
      chunk.rows = {reinterpret_cast<const uint32_t*>(at), n / 4};
      mem_pos_ += n;
    } else {
      size_t n = whole_lines_prefix(reinterpret_cast<const char*>(at), left, chunk_cap_);
      chunk.text = {reinterpret_cast<const char*>(at), n};
      mem_pos_ += n;
    }
    return chunk;
  }
  if (map_) {
    // Drop the pages of the chunk the caller has finished (whole pages only).
    uint64_t drop_from = (map_prev_ + 4095) / 4096 * 4096, drop_to = map_pos_ / 4096 * 4096;
    if (drop_to > drop_from && !keep_pages_)
      ::madvise(const_cast<uint8_t*>(map_) + drop_from, drop_to - drop_from, MADV_DONTNEED);
    map_prev_ = map_pos_;
    InputChunk chunk;
    size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_cap_, map_end_ - map_pos_));
    if (n == 0) return chunk;
    chunk.rows = {reinterpret_cast<const uint32_t*>(map_ + map_pos_), n / 4};
    map_pos_ += n;
    if (map_pos_ < map_end_) {
      size_t ahead = static_cast<size_t>(std::min<uint64_t>(chunk_cap_, map_end_ - map_pos_));
      uint64_t start = map_pos_ / 4096 * 4096;
      ::madvise(const_cast<uint8_t*>(map_) + start, ahead + (map_pos_ - start), MADV_WILLNEED);
    }
    return chunk;
  }
  if (cur_ < 0) {
    fill(buf_[0], nullptr, 0);
    cur_ = 0;
  } else {
    if (!pending_.valid()) return InputChunk{};  // the end was reached before
    cur_ = 1 - cur_;
    pending_.get();  // rethrows a read error
  }
  Buffer& b = buf_[cur_];
  // Start reading the following chunk into the other buffer (the caller is done with it).
  if (b.end > 0) {
    Buffer& other = buf_[1 - cur_];
    const uint8_t* carry = b.data.data() + b.end;
    size_t carry_bytes = b.have - b.end;
    pending_ = std::async(std::launch::async,
                          [this, &other, carry, carry_bytes] { fill(other, carry, carry_bytes); });
  }
  InputChunk chunk;
  if (b.end == 0) return chunk;
  chunk.inflating_ahead = gzip_ && pending_.valid();
  if (kind_ == FileKind::bin)
    chunk.rows = {reinterpret_cast<const uint32_t*>(b.data.data()), b.end / 4};
  else
    chunk.text = {reinterpret_cast<const char*>(b.data.data()), b.end};
  return chunk;
}

}  // namespace dlprep::tabular
