// The only list of codecs, and the only file that knows which optional codecs were built.
#include <array>
#include <cctype>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "image/codec.hpp"

namespace dlprep::image {

const Codec& png_codec();
const Codec& jpeg_codec();
const Codec& webp_codec();
const Codec& bmp_codec();
const Codec& pnm_codec();
const Codec& l3_codec();

const std::vector<const Codec*>& all_codecs() {
  static const std::vector<const Codec*> codecs = {
      &l3_codec(),
#if DLPREP_HAVE_PNG
      &png_codec(),
#endif
#if DLPREP_HAVE_JPEG
      &jpeg_codec(),
#endif
#if DLPREP_HAVE_WEBP
      &webp_codec(),
#endif
      &bmp_codec(),
      &pnm_codec(),
  };
  return codecs;
}

const Codec* find_codec(std::string_view name) {
  if (name == "jpg") name = "jpeg";
  if (name == "pgm" || name == "pnm") name = "ppm";
  for (const Codec* c : all_codecs())
    if (c->name() == name) return c;
  return nullptr;
}

const Codec* sniff_codec(ByteSpan file) {
  for (const Codec* c : all_codecs())
    if (c->sniff(file)) return c;
  return nullptr;
}

const char* unreadable_image_format(ByteSpan file) {
  // Formats users have in image folders that no codec here reads, so that a folder's TIFFs fail by
  // name instead of being left out. Short signatures only where nothing else starts that way: a
  // bare JPEG XL codestream (what cjxl writes by default) and a JPEG 2000 one (.j2k, .j2c).
  static const struct {
    const char* name;
    size_t at;
    std::string_view magic;
  } kOthers[] = {{"TIFF", 0, std::string_view("II*\0", 4)},
                 {"TIFF", 0, std::string_view("MM\0*", 4)},
                 {"BigTIFF", 0, std::string_view("II+\0", 4)},
                 {"BigTIFF", 0, std::string_view("MM\0+", 4)},
                 {"GIF", 0, "GIF8"},
                 {"HEIC/HEIF", 4, "ftypheic"},
                 {"HEIC/HEIF", 4, "ftypheix"},
                 {"HEIC/HEIF", 4, "ftypmif1"},
                 {"AVIF", 4, "ftypavif"},
                 {"JPEG XL", 0, std::string_view("\0\0\0\x0cJXL ", 8)},
                 {"JPEG XL", 0, "\xFF\x0A"},
                 {"JPEG 2000", 0, std::string_view("\0\0\0\x0cjP  ", 8)},
                 {"JPEG 2000", 0, "\xFF\x4F\xFF\x51"}};
  for (const auto& o : kOthers)
    if (file.size() >= o.at + o.magic.size() &&
        std::memcmp(file.data() + o.at, o.magic.data(), o.magic.size()) == 0)
      return o.name;
  // The Netpbm kinds beside binary PGM/PPM (P5/P6, which pnm.cpp reads): the magic and a space.
  if (file.size() >= 3 && file[0] == 'P' && std::isspace(file[2])) {
    switch (file[1]) {
      case '1':
        return "plain (ASCII) PBM";
      case '2':
        return "plain (ASCII) PGM";
      case '3':
        return "plain (ASCII) PPM";
      case '4':
        return "PBM (bitmap)";
      case '7':
        return "PAM";
    }
  }
  return nullptr;
}

const Codec& sniff_codec_or_throw(ByteSpan file) {
  if (const Codec* c = sniff_codec(file)) return *c;
  if (const char* other = unreadable_image_format(file)) {
    std::string known;
    for (const Codec* c : all_codecs())
      known += (known.empty() ? "" : ", ") + std::string(c->name());
    throw Error(Errc::unsupported,
                std::string("a ") + other + " image: not a format dlprep reads (" + known + ")");
  }
  throw Error(Errc::unsupported, "unknown image format (no known magic bytes)");
}

std::optional<uint64_t> check_image_head(ByteSpan head) {
  return sniff_codec_or_throw(head).declared_size(head);
}

Image decode_any(ByteSpan file) {
  if (file.empty()) throw Error(Errc::corrupt_data, "empty file");
  return sniff_codec_or_throw(file).decode(file);
}

std::string oversize_reason(const Codec& codec, uint32_t width, uint32_t height) {
  if (width <= codec.max_side() && height <= codec.max_side()) return {};
  return std::string(codec.name()) + " stores at most " + std::to_string(codec.max_side()) +
         " pixels per side, not " + std::to_string(width) + "x" + std::to_string(height);
}

}  // namespace dlprep::image
