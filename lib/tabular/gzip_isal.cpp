// gzip via ISA-L's streaming isal_inflate (libisal 2.30). Multi-member: after each member's
// trailer the state is reset and decoding continues with the next member's header; zeros after
// the last member are padding, as in gzip(1).
#include <isa-l/igzip_lib.h>

#include "core/simd_state.hpp"
#include "tabular/gzip_input.hpp"
#include "tabular/gzip_reader.hpp"

namespace dlprep::tabular {
namespace {

const char* inflate_problem(int ret) {
  switch (ret) {
    case ISAL_INCORRECT_CHECKSUM:
      return "CRC-32 mismatch: the data are damaged";
    case ISAL_INVALID_BLOCK:
    case ISAL_INVALID_SYMBOL:
    case ISAL_INVALID_LOOKBACK:
      return "invalid deflate data";
    case ISAL_INVALID_WRAPPER:
      return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD:
      return "not deflate-compressed";
    default:
      return "decoder error";
  }
}

class IsalReader final : public GzipReader {
 public:
  IsalReader(int fd, std::string name) : input_(fd, std::move(name)) {
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
  }

  size_t read(uint8_t* out, size_t capacity) override {
    size_t produced = 0;
    while (produced < capacity && !done_) {
      if (state_.avail_in == 0 && !input_.eof()) input_.refill(state_.next_in, state_.avail_in);
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        // A member ended: another one follows unless the input is exhausted.
        if (state_.avail_in == 0 && input_.eof()) {
          done_ = true;
          break;
        }
        isal_inflate_reset(&state_);
        state_.crc_flag = ISAL_GZIP;
        member_started_ = false;
        member_offset_ = input_.offset(state_.avail_in);
        flags_checked_ = false;
        continue;
      }
      if (state_.avail_in == 0 && input_.eof()) {
        if (!member_started_ && members_ > 0) {
          done_ = true;
          break;
        }
        throw input_.truncated();
      }
      if (!flags_checked_) check_member_start();
      if (done_) break;  // zeros after the last member
      size_t room = capacity - produced;
      if (room > (uint32_t{1} << 30)) room = uint32_t{1} << 30;
      state_.next_out = out + produced;
      state_.avail_out = static_cast<uint32_t>(room);
      uint32_t before_in = state_.avail_in;
      int ret = isal_inflate(&state_);
      clear_upper_simd_state();  // isal_inflate returns with the AVX state dirty
      if (ret < 0) throw input_.corrupt(inflate_problem(ret), member_offset_);
      if (before_in != state_.avail_in) member_started_ = true;
      produced = static_cast<size_t>(state_.next_out - out);
      if (state_.block_state == ISAL_BLOCK_FINISH) ++members_;
    }
    return produced;
  }

  uint64_t compressed_bytes() const override { return input_.consumed(); }

 private:
  // A member's first bytes, checked as soon as they are in the input window, before isal_inflate
  // consumes them. After the first member, something else than a gzip header is trailing data:
  // zeros (tape or block padding) end the stream as gzip(1) has it, anything else is an error.
  // RFC 1952: a member whose header sets a reserved flag bit must be rejected; isal_inflate
  // ignores them (zlib does not), so the FLG byte, the 4th of the member, is checked here.
  void check_member_start() {
    const uint64_t window = input_.offset(state_.avail_in);  // file offset of next_in[0]
    if (members_ > 0 && member_offset_ == window && state_.avail_in > 0 &&
        state_.next_in[0] != 0x1f) {
      if (input_.rest_is_zeros(state_.next_in, state_.avail_in)) {
        done_ = true;
        return;
      }
      throw input_.data_after_last_member(member_offset_);
    }
    const uint64_t flg = member_offset_ + 3;
    if (flg < window || flg >= input_.consumed()) return;  // not read yet (or never: a short file)
    flags_checked_ = true;
    if ((state_.next_in[flg - window] & 0xE0) != 0)
      throw input_.corrupt("reserved header flags set", member_offset_);
  }

  GzipInput input_;
  inflate_state state_{};
  bool done_ = false, member_started_ = false, flags_checked_ = false;
  uint64_t members_ = 0;
  uint64_t member_offset_ = 0;  ///< file offset of the current member's first byte
};

}  // namespace

std::unique_ptr<GzipReader> open_isal_gzip_reader(int fd, const std::string& name) {
  return std::make_unique<IsalReader>(fd, name);
}

}  // namespace dlprep::tabular
