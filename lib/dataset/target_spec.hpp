// What convert-dataset writes: a target format with its encoder options (`--to png:9`), and a
// mix of such targets with ratios (`--mix l3:0.6,bmp:0.4`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "image/codec.hpp"

namespace dlprep::dataset {

/// One output format and how to encode it.
struct TargetSpec {
  std::string format;            ///< codec name: l3, png, jpeg, webp, bmp, ppm
  image::EncodeOptions options;  ///< encoder options parsed from the text
  /// Options were given explicitly. Without them a source already in this format is copied
  /// byte for byte (no generation loss for jpeg, no wasted work), otherwise it is re-encoded.
  bool has_options = false;
  std::string text;  ///< canonical spelling, e.g. "png:9", "webp:lossless", "jpeg:90", "l3"
};

/// One entry of a mix: a target and its share of the samples (normalised to sum to 1).
struct MixEntry {
  TargetSpec target;
  double ratio = 1.0;
};

/// Parses FMT[:OPTIONS]: l3[:PATCH], png[:LEVEL 0-9], jpeg[:QUALITY 1-100],
/// webp[:lossless|QUALITY 1-100], bmp, ppm ("jpg" is an alias). Throws
/// Error(invalid_argument) for bad text and Error(unsupported) for a codec not built in.
TargetSpec parse_target(std::string_view text);

/// True when decoding the target's files gives the encoded pixels back (not jpeg, webp:QUALITY).
bool is_lossless(const TargetSpec& target);

/// "jpeg cannot store 4-channel images (choose another format, or RGB with --channels rgb)".
std::string cannot_store(const image::Codec& codec, uint32_t channels);
/// Why `codec` cannot store an image of this many channels and this size (cannot_store, else
/// image::oversize_reason), or "" when it can.
std::string unstorable_reason(const image::Codec& codec, uint32_t channels, uint32_t width,
                              uint32_t height);

/// Parses FMT[:OPTIONS]:RATIO[,…] (the last field of each item is its ratio, any non-negative
/// weight; "png:7,bmp:3" is 70%/30%). Ratios are normalised to sum to 1. Each format may appear
/// once. Throws Error(invalid_argument) or Error(unsupported).
std::vector<MixEntry> parse_mix(std::string_view text);

/// "l3:0.6,bmp:0.4": the canonical text of a mix (ratios with up to 6 significant digits).
std::string mix_text(const std::vector<MixEntry>& mix);

}  // namespace dlprep::dataset
