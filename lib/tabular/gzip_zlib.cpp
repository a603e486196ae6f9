// gzip via zlib: the portable fallback when ISA-L is not installed, and the reference it is
// tested against. Multi-member via inflateReset.
#include <zlib.h>

#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "tabular/gzip_reader.hpp"

namespace dlprep::tabular {
namespace {

constexpr size_t kInputBytes = size_t{1} << 20;

class ZlibReader final : public GzipReader {
 public:
  ZlibReader(int fd, std::string name) : fd_(fd), name_(std::move(name)), in_(kInputBytes) {
    if (inflateInit2(&z_, 15 + 16) != Z_OK) throw Error(Errc::internal, "inflateInit2 failed");
  }
  ~ZlibReader() override { inflateEnd(&z_); }

  size_t read(uint8_t* out, size_t capacity) override {
    size_t produced = 0;
    while (produced < capacity && !done_) {
      if (z_.avail_in == 0 && !eof_) refill();
      if (z_.avail_in == 0 && eof_) {
        if (!member_started_ && members_ > 0) {
          done_ = true;
          break;
        }
        throw Error(Errc::corrupt_data, name_ + ": truncated gzip stream");
      }
      size_t room = capacity - produced;
      if (room > (uInt{1} << 30)) room = uInt{1} << 30;
      z_.next_out = out + produced;
      z_.avail_out = static_cast<uInt>(room);
      member_started_ = true;
      int ret = inflate(&z_, Z_NO_FLUSH);
      produced = static_cast<size_t>(z_.next_out - out);
      if (ret == Z_STREAM_END) {
        ++members_;
        member_started_ = false;
        inflateReset(&z_);
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        throw Error(Errc::corrupt_data,
                    name_ + ": corrupt gzip stream (" + (z_.msg ? z_.msg : "zlib error") + ")");
      }
    }
    return produced;
  }

  uint64_t compressed_bytes() const override { return consumed_; }

 private:
  void refill() {
    size_t n = read_some(fd_, in_.data(), in_.size(), name_);
    if (n == 0) eof_ = true;
    consumed_ += n;
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(n);
  }

  int fd_;
  std::string name_;
  std::vector<uint8_t> in_;
  z_stream z_{};
  bool eof_ = false, done_ = false, member_started_ = false;
  uint64_t members_ = 0, consumed_ = 0;
};

}  // namespace

std::unique_ptr<GzipReader> open_zlib_gzip_reader(int fd, const std::string& name) {
  return std::make_unique<ZlibReader>(fd, name);
}

}  // namespace dlprep::tabular
