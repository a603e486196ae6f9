// Binary Netpbm: P5 (PGM, gray) and P6 (PPM, RGB), parsed by hand.
//
// Header: magic, width, height, maxval as decimal numbers separated by whitespace, with '#'
// comments (to the end of the line) allowed between any two tokens; exactly one whitespace byte
// after maxval, then the samples. Bytes after the first image are ignored.
// maxval rule (documented in dlprep(1), DESCRIPTION): 255 is read as is; any other maxval from 1 to
// 65535 is scaled to 0-255 with rounding, round(v * 255 / maxval) (maxval > 255 means 2-byte
// big-endian samples, as the format says); a sample above maxval is corrupt data. Write: P5 for 1
// channel, P6 for 3, always maxval 255. 2 and 4 channels are unsupported (PAM/P7 would hold them;
// no trainer tool asked for it).
#include <bit>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "image/codec.hpp"

namespace dlprep::image {
namespace {

bool is_space(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

struct Header {
  ImageShape shape;
  uint32_t maxval = 255;
  size_t data_offset = 0;
};

class HeaderParser {
 public:
  explicit HeaderParser(ByteSpan file) : d_(file.data()), size_(file.size()) {}

  // Skips whitespace and comments, then reads one unsigned decimal number.
  uint32_t number(const char* what) {
    for (;;) {
      if (pos_ >= size_) end_of_header(what);
      if (is_space(d_[pos_])) {
        ++pos_;
      } else if (d_[pos_] == '#') {
        while (pos_ < size_ && d_[pos_] != '\n' && d_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
    const size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < size_ && d_[pos_] >= '0' && d_[pos_] <= '9') {
      value = value * 10 + (d_[pos_] - '0');
      if (value > UINT32_MAX)
        throw Error(Errc::corrupt_data, std::string("pnm ") + what + " at offset " +
                                            std::to_string(start) + " is too large");
      ++pos_;
    }
    if (pos_ == start) {
      if (pos_ >= size_) end_of_header(what);
      throw Error(Errc::corrupt_data, std::string("pnm header: expected the ") + what +
                                          " at offset " + std::to_string(start) + ", found byte " +
                                          std::to_string(d_[start]));
    }
    return static_cast<uint32_t>(value);
  }

  size_t pos() const { return pos_; }
  void skip(size_t n) { pos_ += n; }
  bool at_space() const { return pos_ < size_ && is_space(d_[pos_]); }

 private:
  [[noreturn]] void end_of_header(const char* what) const {
    throw Error(Errc::corrupt_data, std::string("truncated pnm header: the ") + what +
                                        " is missing at offset " + std::to_string(pos_));
  }
  const uint8_t* d_;
  size_t size_;
  size_t pos_ = 0;
};

bool has_magic(ByteSpan head) {
  return head.size() >= 3 && head[0] == 'P' && (head[1] == '5' || head[1] == '6') &&
         is_space(head[2]);
}

Header parse(ByteSpan file) {
  if (file.size() < 3)
    throw Error(Errc::corrupt_data, "truncated pnm: need 3 header bytes at offset 0, have " +
                                        std::to_string(file.size()));
  if (!has_magic(file)) {
    if (file[0] == 'P' && file[1] >= '1' && file[1] <= '7')
      throw Error(Errc::unsupported, std::string("netpbm format P") + char(file[1]) +
                                         " is not supported (binary P5 and P6 are)");
    throw Error(Errc::corrupt_data, "not a pnm file (no P5/P6 magic at offset 0)");
  }
  Header h;
  h.shape.channels = file[1] == '5' ? 1 : 3;
  HeaderParser p(file);
  p.skip(2);
  h.shape.width = p.number("width");
  h.shape.height = p.number("height");
  h.maxval = p.number("maxval");
  if (h.maxval < 1 || h.maxval > 65535)
    throw Error(Errc::corrupt_data,
                "pnm maxval " + std::to_string(h.maxval) + " is not in 1..65535");
  if (!p.at_space())
    throw Error(Errc::corrupt_data,
                "pnm header: expected one whitespace byte after maxval at offset " +
                    std::to_string(p.pos()));
  h.data_offset = p.pos() + 1;
  check_shape(h.shape);
  const uint64_t need = h.shape.pixel_bytes() * (h.maxval > 255 ? 2 : 1);
  if (need > file.size() - h.data_offset)
    throw Error(Errc::corrupt_data, "truncated pnm pixel data: need " + std::to_string(need) +
                                        " bytes at offset " + std::to_string(h.data_offset) +
                                        ", have " + std::to_string(file.size() - h.data_offset));
  return h;
}

class PnmCodec final : public Codec {
 public:
  std::string_view name() const override { return "ppm"; }
  std::string extension(uint32_t channels) const override { return channels == 1 ? "pgm" : "ppm"; }
  bool sniff(ByteSpan head) const override { return has_magic(head); }
  bool lossless() const override { return true; }
  bool round_trips(uint32_t channels) const override { return channels == 1 || channels == 3; }

  ImageInfo probe(ByteSpan file) const override {
    const Header h = parse(file);
    return {"ppm", h.shape, h.maxval > 255 ? static_cast<uint32_t>(std::bit_width(h.maxval)) : 8u};
  }

  Image decode(ByteSpan file) const override {
    const Header h = parse(file);
    Image image(h.shape);
    const uint8_t* src = file.data() + h.data_offset;
    uint8_t* dst = image.data();
    const size_t n = image.size_bytes();
    if (h.maxval == 255) {
      std::memcpy(dst, src, n);
      return image;
    }
    const uint32_t m = h.maxval;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t v = m > 255 ? (uint32_t{src[2 * i]} << 8) | src[2 * i + 1] : src[i];
      if (v > m)
        throw Error(Errc::corrupt_data, "pnm sample " + std::to_string(v) + " at offset " +
                                            std::to_string(h.data_offset + (m > 255 ? 2 * i : i)) +
                                            " exceeds maxval " + std::to_string(m));
      dst[i] = static_cast<uint8_t>((v * 255 + m / 2) / m);
    }
    return image;
  }

  Bytes encode(const Image& image, const EncodeOptions&) const override {
    check_shape(image.shape());
    const uint32_t c = image.channels();
    if (c != 1 && c != 3)
      throw Error(Errc::unsupported,
                  "pnm stores 1 (pgm) or 3 (ppm) channels, not " + std::to_string(c));
    const std::string header = std::string(c == 1 ? "P5\n" : "P6\n") +
                               std::to_string(image.width()) + " " +
                               std::to_string(image.height()) + "\n255\n";
    Bytes out(header.size() + image.size_bytes());
    std::memcpy(out.data(), header.data(), header.size());
    std::memcpy(out.data() + header.size(), image.data(), image.size_bytes());
    return out;
  }
};

}  // namespace

const Codec& pnm_codec() {
  static const PnmCodec codec;
  return codec;
}

}  // namespace dlprep::image
