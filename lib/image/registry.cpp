// The only list of codecs, and the only file that knows which optional codecs were built.
#include <array>

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

Image decode_any(ByteSpan file) {
  if (file.empty()) throw Error(Errc::corrupt_data, "empty file");
  const Codec* c = sniff_codec(file);
  if (!c) throw Error(Errc::unsupported, "unknown image format (no known magic bytes)");
  return c->decode(file);
}

}  // namespace dlprep::image
