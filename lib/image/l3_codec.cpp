// The L3 format behind the Codec interface (the format itself lives in lib/l3/).
#include <cstring>

#include "image/codec.hpp"
#include "l3/format.hpp"
#include "l3/l3.hpp"

namespace dlprep::image {
namespace {

class L3Codec final : public Codec {
 public:
  std::string_view name() const override { return "l3"; }
  std::string extension(uint32_t) const override { return "l3"; }
  bool sniff(ByteSpan head) const override {
    return head.size() >= sizeof(l3::kMagic) &&
           std::memcmp(head.data(), l3::kMagic, sizeof(l3::kMagic)) == 0;
  }
  bool lossless() const override { return true; }
  bool round_trips(uint32_t channels) const override { return channels >= 1 && channels <= 4; }
  ImageInfo probe(ByteSpan file) const override { return {"l3", l3::inspect(file).shape}; }
  std::optional<uint64_t> declared_size(ByteSpan head) const override {
    return l3::declared_file_size(head);
  }
  Image decode(ByteSpan file) const override { return l3::decode(file); }
  Bytes encode(const Image& image, const EncodeOptions& options) const override {
    return l3::encode(image, {static_cast<uint32_t>(options.patch), options.threads});
  }
};

}  // namespace

const Codec& l3_codec() {
  static const L3Codec codec;
  return codec;
}

}  // namespace dlprep::image
