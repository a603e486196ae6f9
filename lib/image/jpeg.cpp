// JPEG through libjpeg-turbo 2.1: decode with the libjpeg API, encode with the TurboJPEG 2 API
// (no tj3* functions).
//
// Decode: grayscale files to 1 channel, every other colour JPEG to RGB, whatever its chroma
// sampling (TurboJPEG 2 refuses factors outside its table, such as 4:1:0, which libjpeg, Pillow and
// djpeg decode; the pixels are TurboJPEG's where it decodes: same library, same defaults, islow DCT
// and fancy upsampling). CMYK and YCCK files (a few in ImageNet, from Photoshop) are decoded to
// CMYK and converted to RGB as Pillow does (what PIL-based loaders give trainers): their samples
// are taken as Adobe's inverted CMYK and R = K' - K' * (255 - C') / 255 with Pillow's rounding, C',
// K' the stored samples. libjpeg warnings (e.g. "premature end of data segment", which libjpeg
// would paper over with gray pixels) stop the decode and are reported as corrupt data: a truncated
// file is an error, never a silently grey-padded image. Files libjpeg cannot read at all (12-bit,
// lossless, hierarchical) are unsupported, not corrupt. Encode: 1 channel as a grayscale JPEG, 3
// channels as YCbCr 4:2:0; quality 1-100 (default 90). Lossy, so lossless() is false and
// round_trips(c) only promises the same shape and channel count.
#include <turbojpeg.h>

// jpeglib.h needs FILE and size_t declared first.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <cctype>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/codec.hpp"

namespace dlprep::image {
namespace {

// Progressive files with more scans than this are refused: each scan reruns the whole decode, a
// known CPU-exhaustion input (TurboJPEG's TJFLAG_LIMITSCANS uses the same bound).
constexpr int kMaxScans = 500;

// A libjpeg decompressor with an error manager that jumps back instead of exiting. One per file:
// a reused one keeps the previous file's quantisation and Huffman tables, so a file that lacks
// its own (an MJPEG frame, which libjpeg-turbo gives the standard Huffman tables) would decode
// with another file's, and differently depending on what its thread read before.
struct Decompressor {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  jpeg_progress_mgr progress{};
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
  bool unsupported = false;  // the file is valid but of a kind libjpeg does not decode

  bool created = false;

  /// Throws Error(internal) when libjpeg cannot set itself up (out of memory).
  Decompressor() {
    cinfo.err = jpeg_std_error(&err);
    err.error_exit = on_error;
    err.emit_message = on_message;
    progress.progress_monitor = on_progress;
    cinfo.client_data = this;
    if (!create_steps(*this))
      throw Error(Errc::internal, std::string("jpeg: cannot create a decompressor: ") + message);
    cinfo.progress = &progress;
  }
  ~Decompressor() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  static Decompressor& of(j_common_ptr c) { return *static_cast<Decompressor*>(c->client_data); }
  static bool create_steps(Decompressor& d);
  [[noreturn]] static void on_error(j_common_ptr c) {
    Decompressor& d = of(c);
    (*c->err->format_message)(c, d.message);
    const int code = c->err->msg_code;
    d.unsupported = code == JERR_BAD_PRECISION || code == JERR_SOF_UNSUPPORTED ||
                    code == JERR_NOT_COMPILED || code == JERR_ARITH_NOTIMPL;
    std::longjmp(d.jump, 1);
  }
  // A warning (level -1) stops the decode as an error; trace messages (level >= 0) are dropped.
  static void on_message(j_common_ptr c, int level) {
    if (level < 0) on_error(c);
  }
  static void on_progress(j_common_ptr c) {
    const auto* cinfo = reinterpret_cast<j_decompress_ptr>(c);
    if (c->is_decompressor && cinfo->input_scan_number > kMaxScans) {
      Decompressor& d = of(c);
      std::snprintf(d.message, sizeof d.message, "progressive jpeg with more than %d scans",
                    kMaxScans);
      d.unsupported = false;
      std::longjmp(d.jump, 1);
    }
  }
};

// The libjpeg calls, each in a function whose locals are all trivial: an error longjmps back to
// its setjmp, past nothing that needs destroying. They return false after an error.
bool Decompressor::create_steps(Decompressor& d) {
  if (setjmp(d.jump)) return false;
  jpeg_create_decompress(&d.cinfo);  // client_data survives: it sets only the fields it owns
  d.created = true;
  return true;
}

bool read_header_steps(Decompressor& d, ByteSpan file, int& result) {
  if (setjmp(d.jump)) return false;
  // libjpeg takes the size as unsigned long; our files are bounded by kMaxFileBytes.
  jpeg_mem_src(&d.cinfo, file.data(), static_cast<unsigned long>(file.size()));
  result = jpeg_read_header(&d.cinfo, FALSE);
  return true;
}

bool decompress_steps(Decompressor& d, uint8_t* out, size_t pitch) {
  if (setjmp(d.jump)) return false;
  jpeg_start_decompress(&d.cinfo);
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    JSAMPROW row = out + size_t{d.cinfo.output_scanline} * pitch;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

// Turns the decompressor's last error into an Error.
[[noreturn]] void fail(Decompressor& d, const std::string& what) {
  std::string msg = d.message;
  for (char& c : msg) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (msg.rfind("corrupt jpeg data: ", 0) == 0) msg.erase(0, 19);  // libjpeg's own prefix
  if (d.unsupported)
    throw Error(Errc::unsupported, msg + " (dlprep reads 8-bit sequential and progressive jpeg)");
  throw Error(Errc::corrupt_data, what + msg);
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

// Reads the header into d.cinfo, set to decode to the returned shape's layout.
JpegHeader read_header(Decompressor& d, ByteSpan file) {
  if (file.size() < 3 || file[0] != 0xFF || file[1] != 0xD8 || file[2] != 0xFF)
    throw Error(Errc::corrupt_data, "not a jpeg file (no SOI marker at offset 0)");
  int result = 0;
  if (!read_header_steps(d, file, result)) fail(d, "corrupt jpeg header: ");
  if (result != JPEG_HEADER_OK)  // a tables-only stream, or one cut before its frame header
    throw Error(Errc::corrupt_data, "corrupt jpeg header: no frame header (file of " +
                                        std::to_string(file.size()) + " bytes)");
  JpegHeader h;
  const J_COLOR_SPACE space = d.cinfo.jpeg_color_space;
  h.cmyk = space == JCS_CMYK || space == JCS_YCCK;
  h.shape = {d.cinfo.image_width, d.cinfo.image_height, space == JCS_GRAYSCALE ? 1u : 3u};
  d.cinfo.out_color_space = h.cmyk ? JCS_CMYK : space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  check_shape(h.shape);
  return h;
}

struct TjDestroy {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDestroy>;

// One TurboJPEG compressor per thread (creating one costs several allocations), dropped after a
// failure.
TjHandle& thread_compressor() {
  thread_local TjHandle handle;
  if (!handle) handle.reset(tjInitCompress());
  if (!handle) throw Error(Errc::internal, "jpeg: cannot create a turbojpeg handle");
  return handle;
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
  uint32_t max_side() const override { return JPEG_MAX_DIMENSION; }

  ImageInfo probe(ByteSpan file) const override {
    Decompressor d;
    return {"jpeg", read_header(d, file).shape};
  }

  Image decode(ByteSpan file) const override {
    Decompressor d;
    const JpegHeader h = read_header(d, file);
    Image image(h.shape);
    const size_t pixels = size_t{h.shape.width} * h.shape.height;
    std::vector<uint8_t> cmyk(h.cmyk ? pixels * 4 : 0);
    uint8_t* out = h.cmyk ? cmyk.data() : image.data();
    const size_t pitch = h.cmyk ? size_t{h.shape.width} * 4 : image.row_bytes();
    if (!decompress_steps(d, out, pitch)) fail(d, "corrupt jpeg data: ");
    if (h.cmyk) cmyk_to_rgb(cmyk.data(), pixels, image.data());
    return image;
  }

  Bytes encode(const Image& image, const EncodeOptions& options) const override {
    check_shape(image.shape());
    const uint32_t c = image.channels();
    if (c != 1 && c != 3)
      throw Error(Errc::unsupported, "jpeg stores 1 or 3 channels, not " + std::to_string(c));
    if (std::string why = oversize_reason(*this, image.width(), image.height()); !why.empty())
      throw Error(Errc::limit_exceeded, why);
    const int quality = options.quality < 0 ? 90 : options.quality;
    if (quality < 1 || quality > 100)
      throw Error(Errc::invalid_argument,
                  "jpeg quality " + std::to_string(options.quality) + " is not in 1..100");
    TjHandle& handle = thread_compressor();
    unsigned char* buffer = nullptr;
    unsigned long size = 0;
    const int rc = tjCompress2(handle.get(), image.data(), static_cast<int>(image.width()),
                               static_cast<int>(image.row_bytes()),
                               static_cast<int>(image.height()), c == 1 ? TJPF_GRAY : TJPF_RGB,
                               &buffer, &size, c == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, 0);
    std::unique_ptr<unsigned char, TjFree> owned(buffer);
    if (rc != 0) {
      const std::string msg = tjGetErrorStr2(handle.get());
      handle.reset();
      throw Error(Errc::internal, "jpeg encode failed: " + msg);
    }
    return Bytes(buffer, buffer + size);
  }
};

}  // namespace

const Codec& jpeg_codec() {
  static const JpegCodec codec;
  return codec;
}

}  // namespace dlprep::image
