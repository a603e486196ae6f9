// JPEG through the TurboJPEG 2 API (libjpeg-turbo 2.1; no tj3* functions).
//
// Decode: grayscale files to 1 channel, every other colour JPEG to RGB. CMYK and YCCK files (a few
// in ImageNet, from Photoshop) are decoded to CMYK and converted to RGB as Pillow does (what
// PIL-based loaders give trainers): their samples are taken as Adobe's inverted CMYK and
// R = K' - K' * (255 - C') / 255 with Pillow's rounding, C', K' the stored samples. libjpeg
// warnings (e.g. "premature end of data segment", which libjpeg would paper over with gray pixels)
// stop the decode and are reported as corrupt data: a truncated file is an error, never a silently
// grey-padded image. Encode: 1 channel as a grayscale JPEG, 3 channels as YCbCr 4:2:0; quality
// 1-100 (default 90). Lossy, so lossless() is false and round_trips(c) only promises the same shape
// and channel count.
#include <turbojpeg.h>

#include <cctype>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/codec.hpp"

namespace dlprep::image {
namespace {

struct HandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using Handle = std::unique_ptr<void, HandleDeleter>;

// One decompressor and one compressor per thread: creating a handle costs several allocations,
// which shows on small images. A handle is thrown away after any failure, because TurboJPEG 2
// leaves libjpeg mid-stream when tjDecompressHeader3 fails and the next file then reads stale
// tables ("bogus dqt index").
Handle& thread_handle(bool compress) {
  thread_local Handle decompress_handle, compress_handle;
  Handle& handle = compress ? compress_handle : decompress_handle;
  if (!handle) handle.reset(compress ? tjInitCompress() : tjInitDecompress());
  if (!handle) throw Error(Errc::internal, "jpeg: cannot create a turbojpeg handle");
  return handle;
}

// Turns the handle's last error into an Error and discards the handle (see above).
[[noreturn]] void fail(Handle& handle, Errc code, const std::string& what) {
  std::string msg = tjGetErrorStr2(handle.get());
  for (char& c : msg) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (msg.rfind("corrupt jpeg data: ", 0) == 0) msg.erase(0, 19);  // libjpeg's own prefix
  handle.reset();
  throw Error(code, what + msg);
}

struct JpegHeader {
  ImageShape shape;
  bool cmyk = false;  // CMYK or YCCK: decoded as CMYK, then converted to RGB
};

// Pillow's CMYK (un-inverted from Adobe's stored samples) to RGB: nk - nk * ink / 255, with
// its MULDIV255 rounding, nk = 255 - K = the stored K sample, ink = 255 - the stored sample.
void cmyk_to_rgb(const uint8_t* cmyk, size_t pixels, uint8_t* rgb) {
  for (size_t i = 0; i < pixels; ++i, cmyk += 4, rgb += 3) {
    const int nk = cmyk[3];
    for (int c = 0; c < 3; ++c) {
      const int t = (255 - cmyk[c]) * nk + 128;
      rgb[c] = static_cast<uint8_t>(nk - (((t >> 8) + t) >> 8));
    }
  }
}

JpegHeader read_header(Handle& handle, ByteSpan file) {
  if (file.size() < 3 || file[0] != 0xFF || file[1] != 0xD8 || file[2] != 0xFF)
    throw Error(Errc::corrupt_data, "not a jpeg file (no SOI marker at offset 0)");
  // TurboJPEG 2 takes the size as unsigned long; our files are bounded by kMaxFileBytes.
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), file.data(), static_cast<unsigned long>(file.size()),
                          &width, &height, &subsamp, &colorspace) != 0)
    fail(handle, Errc::corrupt_data, "corrupt jpeg header: ");
  if (width <= 0 || height <= 0) {  // a tables-only stream, or one cut before its frame header
    handle.reset();
    throw Error(Errc::corrupt_data, "corrupt jpeg header: no frame header (file of " +
                                        std::to_string(file.size()) + " bytes)");
  }
  JpegHeader h;
  h.shape = {static_cast<uint32_t>(width), static_cast<uint32_t>(height),
             colorspace == TJCS_GRAY ? 1u : 3u};
  h.cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  check_shape(h.shape);
  return h;
}

struct TjFree {
  void operator()(unsigned char* p) const { tjFree(p); }
};

class JpegCodec final : public Codec {
 public:
  std::string_view name() const override { return "jpeg"; }
  std::string extension(uint32_t) const override { return "jpg"; }
  bool sniff(ByteSpan head) const override {
    return head.size() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF;
  }
  bool lossless() const override { return false; }
  bool round_trips(uint32_t channels) const override { return channels == 1 || channels == 3; }

  ImageInfo probe(ByteSpan file) const override {
    return {"jpeg", read_header(thread_handle(false), file).shape};
  }

  Image decode(ByteSpan file) const override {
    Handle& handle = thread_handle(false);
    const JpegHeader h = read_header(handle, file);
    Image image(h.shape);
    const int pixel_format = h.cmyk ? TJPF_CMYK : h.shape.channels == 1 ? TJPF_GRAY : TJPF_RGB;
    const size_t pixels = size_t{h.shape.width} * h.shape.height;
    std::vector<uint8_t> cmyk(h.cmyk ? pixels * 4 : 0);
    uint8_t* out = h.cmyk ? cmyk.data() : image.data();
    const size_t pitch = h.cmyk ? size_t{h.shape.width} * 4 : image.row_bytes();
    // STOPONWARNING: truncated or damaged entropy data is an error (see the file comment).
    // LIMITSCANS: refuses progressive files with absurd scan counts (a known CPU-exhaustion input).
    const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
    if (tjDecompress2(handle.get(), file.data(), static_cast<unsigned long>(file.size()), out,
                      static_cast<int>(h.shape.width), static_cast<int>(pitch),
                      static_cast<int>(h.shape.height), pixel_format, flags) != 0)
      fail(handle, Errc::corrupt_data, "corrupt jpeg data: ");
    if (h.cmyk) cmyk_to_rgb(cmyk.data(), pixels, image.data());
    return image;
  }

  Bytes encode(const Image& image, const EncodeOptions& options) const override {
    check_shape(image.shape());
    const uint32_t c = image.channels();
    if (c != 1 && c != 3)
      throw Error(Errc::unsupported, "jpeg stores 1 or 3 channels, not " + std::to_string(c));
    const int quality = options.quality < 0 ? 90 : options.quality;
    if (quality < 1 || quality > 100)
      throw Error(Errc::invalid_argument,
                  "jpeg quality " + std::to_string(options.quality) + " is not in 1..100");
    Handle& handle = thread_handle(true);
    unsigned char* buffer = nullptr;
    unsigned long size = 0;
    const int rc = tjCompress2(handle.get(), image.data(), static_cast<int>(image.width()),
                               static_cast<int>(image.row_bytes()),
                               static_cast<int>(image.height()), c == 1 ? TJPF_GRAY : TJPF_RGB,
                               &buffer, &size, c == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, 0);
    std::unique_ptr<unsigned char, TjFree> owned(buffer);
    if (rc != 0) fail(handle, Errc::internal, "jpeg encode failed: ");
    return Bytes(buffer, buffer + size);
  }
};

}  // namespace

const Codec& jpeg_codec() {
  static const JpegCodec codec;
  return codec;
}

}  // namespace dlprep::image
