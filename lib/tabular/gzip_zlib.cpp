// gzip via zlib: the portable fallback when ISA-L is not installed, and the reference it is
// tested against. Multi-member via inflateReset; zeros after the last member are padding, as in
// gzip(1).
#include <zlib.h>

#include "core/error.hpp"
#include "tabular/gzip_input.hpp"
#include "tabular/gzip_reader.hpp"

namespace dlprep::tabular {
namespace {

class ZlibReader final : public GzipReader {
 public:
  ZlibReader(int fd, std::string name) : input_(fd, std::move(name)) {
    if (inflateInit2(&z_, 15 + 16) != Z_OK) throw Error(Errc::internal, "inflateInit2 failed");
  }
  ~ZlibReader() override { inflateEnd(&z_); }

  size_t read(uint8_t* out, size_t capacity) override {
    size_t produced = 0;
    while (produced < capacity && !done_) {
      if (z_.avail_in == 0 && !input_.eof()) input_.refill(z_.next_in, z_.avail_in);
      if (z_.avail_in == 0 && input_.eof()) {
        if (!member_started_ && members_ > 0) {
          done_ = true;
          break;
        }
        throw input_.truncated();
      }
      if (members_ > 0 && !member_started_ && z_.next_in[0] != 0x1f) {
        // Not another member: zeros (padding) end the stream as in gzip(1), the rest is an error.
        const uint64_t at = input_.offset(z_.avail_in);
        if (input_.rest_is_zeros(z_.next_in, z_.avail_in)) {
          done_ = true;
          break;
        }
        throw input_.data_after_last_member(at);
      }
      size_t room = capacity - produced;
      if (room > (uInt{1} << 30)) room = uInt{1} << 30;
      z_.next_out = out + produced;
      z_.avail_out = static_cast<uInt>(room);
      if (!member_started_) member_offset_ = input_.offset(z_.avail_in);
      member_started_ = true;
      int ret = inflate(&z_, Z_NO_FLUSH);
      produced = static_cast<size_t>(z_.next_out - out);
      if (ret == Z_STREAM_END) {
        ++members_;
        member_started_ = false;
        inflateReset(&z_);
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        // In ISA-L's words where the two name the same fault (gzip_isal.cpp).
        const std::string msg = z_.msg ? z_.msg : "zlib error";
        const std::string problem =
            msg == "incorrect data check"       ? "CRC-32 mismatch: the data are damaged"
            : msg == "unknown header flags set" ? "reserved header flags set"
                                                : msg;
        throw input_.corrupt(problem, member_offset_);
      }
    }
    return produced;
  }

  uint64_t compressed_bytes() const override { return input_.consumed(); }

 private:
  GzipInput input_;
  z_stream z_{};
  bool done_ = false, member_started_ = false;
  uint64_t members_ = 0;
  uint64_t member_offset_ = 0;  ///< file offset of the current member's first byte
};

}  // namespace

std::unique_ptr<GzipReader> open_zlib_gzip_reader(int fd, const std::string& name) {
  return std::make_unique<ZlibReader>(fd, name);
}

}  // namespace dlprep::tabular
