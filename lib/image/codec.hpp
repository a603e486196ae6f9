// One interface for every image codec; registry.cpp holds the only list of them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_io.hpp"
#include "core/image.hpp"
#include "core/limits.hpp"

namespace dlprep::image {

/// Options for encoding; a codec uses those that apply to it and ignores the rest.
struct EncodeOptions {
  int level = -1;        ///< png: zlib level 0-9 (-1: 6); webp lossless: effort 0-9 (-1: 6)
  int quality = -1;      ///< jpeg 1-100 (-1: 90); webp lossy 1-100 (-1: 90)
  bool lossless = true;  ///< webp: lossless (true) or lossy
  int patch = 0;         ///< l3: patch side, 0 = auto
  unsigned threads = 1;  ///< l3: threads over patches
};

/// What a file declares about itself, read from its header without decoding the pixels.
struct ImageInfo {
  std::string format;  ///< codec name, e.g. "png"
  ImageShape shape;
  /// Bits per sample in the file. dlprep works in 8: decode() scales wider samples (16-bit PNG,
  /// PNM with maxval above 255) to 8 bits with rounding, which loses their low bits.
  uint32_t bits = 8;
};

/// An image codec: sniffs, probes, decodes and encodes one file format. Decoders treat their
/// input as hostile: they check sizes against limits.hpp before allocating, never read past the
/// buffer, and throw Error(corrupt_data | unsupported | limit_exceeded) with what and where.
class Codec {
 public:
  virtual ~Codec() = default;
  /// Short lower-case name used on the command line: "png", "jpeg", "webp", "bmp", "ppm", "l3".
  virtual std::string_view name() const = 0;
  /// File extension written by this codec, without the dot ("png", "jpg", "ppm"…). For ppm it
  /// depends on the channels (pgm for gray).
  virtual std::string extension(uint32_t channels) const = 0;
  /// True when these leading bytes are this format's magic.
  virtual bool sniff(ByteSpan head) const = 0;
  /// True when decode(encode(img)) == img for every image of supported channel counts.
  virtual bool lossless() const = 0;
  /// True when encode() accepts images with this many channels and decode() returns the same count.
  virtual bool round_trips(uint32_t channels) const = 0;
  /// The widest or tallest image encode() accepts.
  virtual uint32_t max_side() const { return limits::kMaxSide; }
  /// Reads the header only.
  virtual ImageInfo probe(ByteSpan file) const = 0;
  /// The file's size as these first bytes declare it, where the format records one (L3).
  virtual std::optional<uint64_t> declared_size(ByteSpan) const { return std::nullopt; }
  /// Decodes a whole file to 8-bit HWC.
  virtual Image decode(ByteSpan file) const = 0;
  /// Encodes an image; throws Error(unsupported) for channel counts it cannot store.
  virtual Bytes encode(const Image& image, const EncodeOptions& options) const = 0;
};

/// Why `codec` cannot encode an image of this size ("webp stores at most 16383 pixels per side,
/// not 20000x20"), or "" when it can.
std::string oversize_reason(const Codec& codec, uint32_t width, uint32_t height);

/// Every codec built into this binary, in a fixed order.
const std::vector<const Codec*>& all_codecs();
/// The codec with this name ("jpg" and "pgm" are accepted aliases); nullptr if none.
const Codec* find_codec(std::string_view name);
/// The codec whose magic matches the first bytes of the file; nullptr if none. Never uses the name.
const Codec* sniff_codec(ByteSpan file);
/// The name of an image format that no codec here reads ("TIFF", "GIF", "HEIC/HEIF", "AVIF",
/// "JPEG XL", "JPEG 2000") when the first bytes are its magic; nullptr otherwise.
const char* unreadable_image_format(ByteSpan file);
/// The codec of sniff_codec; throws Error(unsupported) when none matches: "unknown image format
/// (no known magic bytes)", or the format it is when dlprep knows it but reads it not (TIFF, GIF,
/// HEIC, AVIF, JPEG XL, JPEG 2000), with the formats it reads.
const Codec& sniff_codec_or_throw(ByteSpan file);
/// A HeadCheck (core/file_io.hpp) for image inputs: sniff_codec_or_throw on a stream's first
/// bytes, so that a pipe of something else fails before it is read to its end; returns the
/// codec's declared_size.
std::optional<uint64_t> check_image_head(ByteSpan head);
/// Sniffs and decodes; throws as sniff_codec_or_throw, or Error(corrupt_data) for an empty file.
Image decode_any(ByteSpan file);

}  // namespace dlprep::image
