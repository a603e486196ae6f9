// The compressed side of a gzip backend (gzip_isal.cpp, gzip_zlib.cpp): a window over the file
// that the decoder's next_in/avail_in point into, and the errors both backends word alike. Each
// decoder keeps its own member loop: ISA-L and zlib signal a member's end and consume its header
// differently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace dlprep::tabular {

/// A gzip file's compressed bytes, read a window at a time from a file descriptor (not closed
/// here); `name` is the file in every error.
class GzipInput {
 public:
  GzipInput(int fd, std::string name) : fd_(fd), name_(std::move(name)), in_(kInputBytes) {}

  /// Reads the next part of the file into the window and points the decoder at it; at the end of
  /// the file the window is empty and eof() holds.
  void refill(uint8_t*& next_in, uint32_t& avail_in) {
    size_t n = read_some(fd_, in_.data(), in_.size(), name_);
    if (n == 0) eof_ = true;
    consumed_ += n;
    next_in = in_.data();
    avail_in = static_cast<uint32_t>(n);
  }

  /// Whether the input from next_in to the end of the file is all zeros (reading it): padding
  /// after the last member, as gzip(1) has it.
  bool rest_is_zeros(uint8_t*& next_in, uint32_t& avail_in) {
    for (;;) {
      for (uint32_t i = 0; i < avail_in; ++i)
        if (next_in[i] != 0) return false;
      avail_in = 0;
      if (eof_) return true;
      refill(next_in, avail_in);
    }
  }

  /// Whether a refill found the end of the file.
  bool eof() const { return eof_; }
  /// Compressed bytes read so far.
  uint64_t consumed() const { return consumed_; }
  /// The file offset of next_in[0] when `avail_in` bytes of the window are left.
  uint64_t offset(uint32_t avail_in) const { return consumed_ - avail_in; }

  /// The errors, to throw: the file ends inside a member; something else than a member or zeros
  /// follows the last one, at byte `at`; a member, starting at byte `member_offset`, is damaged.
  Error truncated() const { return Error(Errc::corrupt_data, name_ + ": truncated gzip stream"); }
  Error data_after_last_member(uint64_t at) const {
    return Error(Errc::corrupt_data,
                 name_ + ": data after the last gzip member, at byte " + std::to_string(at));
  }
  /// `problem`: ISA-L's words where the two backends name the same fault.
  Error corrupt(std::string_view problem, uint64_t member_offset) const {
    return Error(Errc::corrupt_data, name_ + ": corrupt gzip stream (" + std::string(problem) +
                                         ", in the member at byte " +
                                         std::to_string(member_offset) + ")");
  }

 private:
  // The compressed read size: large enough for few syscalls.
  static constexpr size_t kInputBytes = size_t{1} << 20;

  int fd_;
  std::string name_;
  std::vector<uint8_t> in_;
  bool eof_ = false;
  uint64_t consumed_ = 0;
};

}  // namespace dlprep::tabular
