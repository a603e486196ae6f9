// WebP through libwebp's advanced decode and encode APIs.
//
// Decode: RGBA when the file declares alpha, RGB otherwise. Animated files are unsupported.
// Encode: lossless by default (EncodeOptions.level = effort 0-9, default 6, via
// WebPConfigLosslessPreset, with `exact` so RGB under transparent pixels survives) or lossy
// (EncodeOptions.quality 1-100, default 90).
// WebP has no grayscale: 1 channel is stored as RGB and 2 as RGBA (gray copied into R, G and B), so
// those decode to 3 and 4 channels and round_trips(1) and round_trips(2) are false.
// A 4-channel image always decodes to 4 channels, even when fully opaque: libwebp drops the alpha
// flag of opaque pictures, so encode() sets it again (the VP8L header bit, or a VP8X chunk for
// lossy).
#include <webp/decode.h>
#include <webp/encode.h>

#include <cstring>
#include <string>

#include "core/error.hpp"
#include "image/codec.hpp"

namespace dlprep::image {
namespace {

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK:
      return "ok";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "truncated data";
  }
  return "unknown error";
}

[[noreturn]] void throw_status(const char* what, VP8StatusCode status, size_t file_size) {
  const Errc code = status == VP8_STATUS_UNSUPPORTED_FEATURE ? Errc::unsupported
                    : status == VP8_STATUS_OUT_OF_MEMORY     ? Errc::limit_exceeded
                                                             : Errc::corrupt_data;
  throw Error(code, std::string("corrupt webp ") + what + ": " + status_text(status) +
                        " (file of " + std::to_string(file_size) + " bytes)");
}

void put_le(uint8_t* p, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

bool is_webp(ByteSpan head) {
  return head.size() >= 12 && std::memcmp(head.data(), "RIFF", 4) == 0 &&
         std::memcmp(head.data() + 8, "WEBP", 4) == 0;
}

WebPBitstreamFeatures read_features(ByteSpan file) {
  if (!is_webp(file)) {
    if (file.size() < 12)
      throw Error(Errc::corrupt_data, "truncated webp: need 12 header bytes at offset 0, have " +
                                          std::to_string(file.size()));
    throw Error(Errc::corrupt_data, "not a webp file (no RIFF/WEBP header at offset 0)");
  }
  WebPBitstreamFeatures f;
  const VP8StatusCode status = WebPGetFeatures(file.data(), file.size(), &f);
  if (status != VP8_STATUS_OK) throw_status("header", status, file.size());
  if (f.has_animation) throw Error(Errc::unsupported, "animated webp is not supported");
  check_shape(
      {static_cast<uint32_t>(f.width), static_cast<uint32_t>(f.height), f.has_alpha ? 4u : 3u});
  return f;
}

// Marks an encoded file as having alpha (see the file comment). Only the two layouts libwebp's
// encoder writes for an opaque picture are handled: RIFF+VP8L and RIFF+VP8.
void force_alpha_flag(Bytes& out, uint32_t width, uint32_t height) {
  if (out.size() >= 25 && std::memcmp(out.data() + 12, "VP8L", 4) == 0) {
    out[24] |= 0x10;  // bit 28 of the 32 bits after the 0x2f signature: alpha_is_used
    return;
  }
  if (out.size() >= 20 && std::memcmp(out.data() + 12, "VP8 ", 4) == 0) {
    uint8_t chunk[18] = {'V', 'P', '8', 'X'};
    put_le(chunk + 4, 10, 4);
    chunk[8] = 0x10;  // alpha flag; reserved bytes stay 0
    put_le(chunk + 12, width - 1, 3);
    put_le(chunk + 15, height - 1, 3);
    out.insert(out.begin() + 12, chunk, chunk + sizeof chunk);
    put_le(out.data() + 4, static_cast<uint32_t>(out.size() - 8), 4);
    return;
  }
  throw Error(Errc::internal, "webp encoder wrote an unexpected layout");
}

int writer_fn(const uint8_t* data, size_t size, const WebPPicture* picture) {
  auto* out = static_cast<Bytes*>(picture->custom_ptr);
  try {
    out->insert(out->end(), data, data + size);
  } catch (...) {
    return 0;  // libwebp reports VP8_ENC_ERROR_BAD_WRITE; no exception crosses C frames
  }
  return 1;
}

struct Picture {
  WebPPicture pic;
  Picture() {
    if (!WebPPictureInit(&pic)) throw Error(Errc::internal, "webp: library version mismatch");
  }
  ~Picture() { WebPPictureFree(&pic); }
  Picture(const Picture&) = delete;
  Picture& operator=(const Picture&) = delete;
};

class WebpCodec final : public Codec {
 public:
  std::string_view name() const override { return "webp"; }
  std::string extension(uint32_t) const override { return "webp"; }
  bool sniff(ByteSpan head) const override { return is_webp(head); }
  bool lossless() const override { return true; }  // with the default EncodeOptions
  bool round_trips(uint32_t channels) const override { return channels == 3 || channels == 4; }
  uint32_t max_side() const override { return WEBP_MAX_DIMENSION; }

  ImageInfo probe(ByteSpan file) const override {
    const WebPBitstreamFeatures f = read_features(file);
    return {
        "webp",
        {static_cast<uint32_t>(f.width), static_cast<uint32_t>(f.height), f.has_alpha ? 4u : 3u}};
  }

  Image decode(ByteSpan file) const override {
    const WebPBitstreamFeatures f = read_features(file);
    Image image(static_cast<uint32_t>(f.width), static_cast<uint32_t>(f.height),
                f.has_alpha ? 4u : 3u);
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config))
      throw Error(Errc::internal, "webp: library version mismatch");
    config.output.colorspace = f.has_alpha ? MODE_RGBA : MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = image.data();
    config.output.u.RGBA.stride = static_cast<int>(image.row_bytes());
    config.output.u.RGBA.size = image.size_bytes();
    const VP8StatusCode status = WebPDecode(file.data(), file.size(), &config);
    WebPFreeDecBuffer(&config.output);
    if (status != VP8_STATUS_OK) throw_status("data", status, file.size());
    return image;
  }

  Bytes encode(const Image& image, const EncodeOptions& options) const override {
    check_shape(image.shape());
    const uint32_t c = image.channels();
    if (std::string why = oversize_reason(*this, image.width(), image.height()); !why.empty())
      throw Error(Errc::limit_exceeded, why);
    WebPConfig config;
    if (!WebPConfigInit(&config)) throw Error(Errc::internal, "webp: library version mismatch");
    if (options.lossless) {
      const int level = options.level < 0 ? 6 : options.level;
      if (level > 9)
        throw Error(Errc::invalid_argument,
                    "webp effort " + std::to_string(options.level) + " is not in 0..9");
      WebPConfigLosslessPreset(&config, level);
      config.exact = 1;
    } else {
      const int quality = options.quality < 0 ? 90 : options.quality;
      if (quality < 1 || quality > 100)
        throw Error(Errc::invalid_argument,
                    "webp quality " + std::to_string(options.quality) + " is not in 1..100");
      config.quality = static_cast<float>(quality);
    }

    Picture picture;
    WebPPicture& pic = picture.pic;
    pic.use_argb = options.lossless ? 1 : 0;
    pic.width = static_cast<int>(image.width());
    pic.height = static_cast<int>(image.height());
    const bool alpha = c == 2 || c == 4;
    int ok = 0;
    if (c >= 3) {
      const int stride = static_cast<int>(image.row_bytes());
      ok = alpha ? WebPPictureImportRGBA(&pic, image.data(), stride)
                 : WebPPictureImportRGB(&pic, image.data(), stride);
    } else {
      // Gray (+alpha): expand to RGB(A), see the file comment.
      const uint32_t out_c = alpha ? 4 : 3;
      Bytes expanded(size_t{image.width()} * image.height() * out_c);
      const uint8_t* src = image.data();
      uint8_t* dst = expanded.data();
      const size_t pixels = size_t{image.width()} * image.height();
      for (size_t i = 0; i < pixels; ++i, src += c, dst += out_c) {
        dst[0] = dst[1] = dst[2] = src[0];
        if (alpha) dst[3] = src[1];
      }
      const int stride = static_cast<int>(image.width() * out_c);
      ok = alpha ? WebPPictureImportRGBA(&pic, expanded.data(), stride)
                 : WebPPictureImportRGB(&pic, expanded.data(), stride);
    }
    if (!ok) throw Error(Errc::internal, "webp: cannot import the picture (out of memory)");

    Bytes out;
    pic.writer = writer_fn;
    pic.custom_ptr = &out;
    if (!WebPEncode(&config, &pic))
      throw Error(Errc::internal, "webp encode failed (libwebp error " +
                                      std::to_string(static_cast<int>(pic.error_code)) + ")");
    if (alpha) {
      WebPBitstreamFeatures f;
      if (WebPGetFeatures(out.data(), out.size(), &f) != VP8_STATUS_OK)
        throw Error(Errc::internal, "webp encoder wrote an unreadable file");
      if (!f.has_alpha) force_alpha_flag(out, image.width(), image.height());
    }
    return out;
  }
};

}  // namespace

const Codec& webp_codec() {
  static const WebpCodec codec;
  return codec;
}

}  // namespace dlprep::image
