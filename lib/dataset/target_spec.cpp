#include "dataset/target_spec.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/error.hpp"
#include "l3/format.hpp"

namespace dlprep::dataset {
namespace {

Error bad(std::string_view what) { return Error(Errc::invalid_argument, std::string(what)); }

bool parse_int(std::string_view text, int& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? text.npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

TargetSpec parse_target(std::string_view text) {
  size_t colon = text.find(':');
  std::string name(text.substr(0, colon));
  std::string_view opt = colon == text.npos ? std::string_view() : text.substr(colon + 1);
  if (colon != text.npos && opt.empty())
    throw bad("'" + std::string(text) + "': empty options after ':'");
  if (name == "jpg") name = "jpeg";
  // l3 bench's names for WebP's two modes, accepted here too (one grammar for a user).
  const std::string given(text);
  std::string normalised;
  if (name == "webp-lossless") {
    if (!opt.empty())
      throw bad("'" + given +
                "': the effort of WebP lossless is l3 bench's option; write "
                "webp-lossless (or webp:lossless)");
    normalised = "lossless";
  } else if (name == "webp-lossy") {
    if (opt == "lossless") throw bad("'" + given + "': webp-lossy takes a quality 1 to 100");
    normalised = opt.empty() ? "90" : std::string(opt);  // l3 bench's default quality
  }
  if (!normalised.empty()) {
    name = "webp";
    opt = normalised;
  }
  static const std::set<std::string> kKnown = {"l3", "png", "jpeg", "webp", "bmp", "ppm"};
  if (!kKnown.count(name))
    throw bad(
        "'" + std::string(text) + "': unknown format (expected l3, png, jpeg, webp, bmp or ppm" +
        // pgm would read as "make it gray", which ppm does not do either.
        (name == "pgm" || name == "pnm" ? "; ppm writes gray images as PGM, and others as PPM)"
                                        : ")"));
  if (!image::find_codec(name))
    throw Error(Errc::unsupported, "this dlprep was built without " + name + " support");

  TargetSpec spec;
  spec.format = name;
  spec.has_options = !opt.empty();
  spec.text = name;
  if (opt.empty()) return spec;
  int value = 0;
  std::string where = "'" + std::string(text) + "': ";
  if (name == "png") {
    if (!parse_int(opt, value) || value < 0 || value > 9)
      throw bad(where + "png level must be 0 to 9");
    spec.options.level = value;
  } else if (name == "jpeg") {
    if (!parse_int(opt, value) || value < 1 || value > 100)
      throw bad(where + "jpeg quality must be 1 to 100");
    spec.options.quality = value;
  } else if (name == "webp") {
    if (opt == "lossless") {
      spec.options.lossless = true;
    } else if (parse_int(opt, value) && value >= 1 && value <= 100) {
      spec.options.lossless = false;
      spec.options.quality = value;
    } else {
      throw bad(where + "webp takes 'lossless' or a quality 1 to 100");
    }
  } else if (name == "l3") {
    bool power_of_two = parse_int(opt, value) && value > 0 && (value & (value - 1)) == 0;
    if (!power_of_two || value < (1 << l3::kMinPatchLog2) || value > int(l3::kMaxPatch))
      throw bad(where + "l3 patch must be a power of two from " +
                std::to_string(1u << l3::kMinPatchLog2) + " to " + std::to_string(l3::kMaxPatch));
    spec.options.patch = value;
  } else {
    throw bad(where + name + " takes no options");
  }
  spec.text = name + ":" + std::string(opt);
  return spec;
}

std::vector<MixEntry> parse_mix(std::string_view text) {
  if (text.empty()) throw bad("empty mix (expected e.g. l3:0.6,bmp:0.4)");
  std::vector<MixEntry> mix;
  std::set<std::string> seen;
  double sum = 0;
  for (std::string_view item : split(text, ',')) {
    size_t colon = item.rfind(':');
    if (colon == item.npos)
      throw bad("mix item '" + std::string(item) + "' needs a ratio (FMT[:OPTIONS]:RATIO)");
    std::string ratio_text(item.substr(colon + 1));
    double ratio = 0;
    auto [end, ec] =
        std::from_chars(ratio_text.data(), ratio_text.data() + ratio_text.size(), ratio);
    if (ec != std::errc() || end != ratio_text.data() + ratio_text.size() ||
        !std::isfinite(ratio) || ratio < 0)
      throw bad("mix item '" + std::string(item) + "': ratio must be a non-negative number");
    MixEntry entry{parse_target(item.substr(0, colon)), ratio};
    if (!seen.insert(entry.target.format).second)
      throw bad("mix names " + entry.target.format + " twice");
    sum += ratio;
    mix.push_back(std::move(entry));
  }
  if (!(sum > 0)) throw bad("mix ratios sum to zero");
  if (!std::isfinite(sum)) throw bad("mix ratios are too large to add up (give shares, e.g. 3:1)");
  for (auto& e : mix) e.ratio /= sum;
  return mix;
}

std::string mix_text(const std::vector<MixEntry>& mix) {
  std::string out;
  for (const auto& e : mix) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", e.ratio);
    out += (out.empty() ? "" : ",") + e.target.text + ":" + buf;
  }
  return out;
}

std::string cannot_store(const image::Codec& codec, uint32_t channels) {
  return std::string(codec.name()) + " cannot store " + std::to_string(channels) +
         "-channel images (choose another format, or RGB with --channels rgb)";
}

std::string unstorable_reason(const image::Codec& codec, uint32_t channels, uint32_t width,
                              uint32_t height) {
  if (!codec.round_trips(channels)) return cannot_store(codec, channels);
  return image::oversize_reason(codec, width, height);
}

bool is_lossless(const TargetSpec& target) {
  const image::Codec* codec = image::find_codec(target.format);
  return codec && codec->lossless() && target.options.lossless;
}

}  // namespace dlprep::dataset
