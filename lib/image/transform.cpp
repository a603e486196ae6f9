// Transforms: parsing WxH, the centred crop box and the output size (the pixels are
// resize.cpp's), and the conversion to RGB.
#include "image/transform.hpp"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace dlprep::image {
namespace {

Error bad(const std::string& what) { return Error(Errc::invalid_argument, what); }

std::string size_text(Size s) { return std::to_string(s.width) + "x" + std::to_string(s.height); }

// A requested output size: positive and within the limits every decoder applies, so that a
// typo such as 100000x100000 is refused here rather than attempted as a 40 GB allocation.
void check_size(Size s, const std::string& text) {
  if (s.width == 0 || s.height == 0)
    throw bad("'" + text + "': width and height must be at least 1");
  if (s.width > limits::kMaxSide || s.height > limits::kMaxSide)
    throw bad("'" + text + "': larger than the limit of " + std::to_string(limits::kMaxSide) +
              " pixels per side");
  if (uint64_t{s.width} * s.height > limits::kMaxPixels)
    throw bad("'" + text + "': " + std::to_string(uint64_t{s.width} * s.height) +
              " pixels, more than the limit of 2^30 (" + std::to_string(limits::kMaxPixels) + ")");
}

// round(a * b / c) with halves rounded up, at least 1; a * b fits in 64 bits (32-bit inputs).
uint32_t scaled(uint32_t a, uint32_t b, uint32_t c) {
  uint64_t v = (2 * uint64_t{a} * b + c) / (2 * uint64_t{c});
  return static_cast<uint32_t>(std::max<uint64_t>(v, 1));
}

// Gray replicated, alpha dropped, as PIL's convert("RGB"); false for an RGB image.
bool to_rgb(Image& image) {
  const uint32_t c = image.channels();
  if (c == 3) return false;
  Image rgb(image.width(), image.height(), 3);
  const size_t pixels = size_t{image.width()} * image.height();
  const uint8_t* in = image.data();
  uint8_t* out = rgb.data();
  for (size_t i = 0; i < pixels; ++i, in += c, out += 3) {
    const bool gray = c < 3;
    out[0] = in[0];
    out[1] = in[gray ? 0 : 1];
    out[2] = in[gray ? 0 : 2];
  }
  image = std::move(rgb);
  return true;
}

}  // namespace

std::string Transform::text() const {
  std::string s;
  if (resize.width != 0) s = "resize=" + size_text(resize) + (center_crop ? ",center-crop" : "");
  if (max_side != 0)
    s += (s.empty() ? "" : ",") + std::string("max-side=") + std::to_string(max_side);
  if (channels == Channels::rgb) s += (s.empty() ? "" : ",") + std::string("channels=rgb");
  return s;
}

Transform parse_transform_text(std::string_view text) {
  Transform t;
  auto after = [](std::string_view part, std::string_view name, std::string_view& value) {
    if (part.substr(0, name.size()) != name) return false;
    value = part.substr(name.size());
    return true;
  };
  // Parts between commas; "" is no transform, and an empty part (",", "a,") or one given twice
  // (resize=64x48,resize=32x32, as two --resize) is an error.
  std::vector<std::string_view> seen;
  for (size_t at = 0, comma = 0; !text.empty() && comma != std::string_view::npos; at = comma + 1) {
    comma = text.find(',', at);
    const std::string_view part = text.substr(at, comma - at);
    const std::string_view name = part.substr(0, part.find('='));
    if (std::find(seen.begin(), seen.end(), name) != seen.end())
      throw bad("transform '" + std::string(name) + "' given twice");
    seen.push_back(name);
    std::string_view value;
    if (part == "center-crop") {
      t.center_crop = true;
    } else if (part == "channels=rgb") {
      t.channels = Channels::rgb;
    } else if (after(part, "resize=", value)) {
      t.resize = parse_size(value);
    } else if (after(part, "max-side=", value)) {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), t.max_side);
      if (ec != std::errc() || end != value.data() + value.size() || t.max_side == 0)
        throw bad("transform '" + std::string(part) + "': the side is not a positive number");
    } else {
      throw bad("transform '" + std::string(part) +
                "' is none of resize=WxH, center-crop, max-side=N, channels=rgb");
    }
  }
  check_transform(t);
  return t;
}

Size parse_size(std::string_view text) {
  const std::string quoted(text);
  size_t x = text.find_first_of("xX");
  uint64_t w = 0, h = 0;
  auto number = [](std::string_view part, uint64_t& v) {
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec == std::errc::result_out_of_range) v = UINT64_MAX;  // too large, not malformed
    return !part.empty() && (ec == std::errc() || ec == std::errc::result_out_of_range) &&
           end == part.data() + part.size();
  };
  if (x == std::string_view::npos || !number(text.substr(0, x), w) ||
      !number(text.substr(x + 1), h))
    throw bad("'" + quoted + "' is not WIDTHxHEIGHT in pixels (e.g. 1920x1080)");
  // Clamped so that 4294967296x1 is refused as too large, not wrapped to 0x1.
  const uint64_t kOver = uint64_t{limits::kMaxSide} + 1;
  Size s{static_cast<uint32_t>(std::min(w, kOver)), static_cast<uint32_t>(std::min(h, kOver))};
  check_size(s, quoted);
  return s;
}

void check_transform(const Transform& t) {
  if (t.resize.width != 0 || t.resize.height != 0) check_size(t.resize, size_text(t.resize));
  if (t.resize.width != 0 && t.max_side != 0) throw bad("resize and max-side exclude each other");
  if (t.max_side > limits::kMaxSide)
    throw bad("max side " + std::to_string(t.max_side) + " is larger than the limit of " +
              std::to_string(limits::kMaxSide));
  if (t.center_crop && t.resize.width == 0)
    throw bad("center-crop needs resize WxH (the crop takes its aspect ratio)");
}

TransformPlan plan_transform(const Transform& t, Size in) {
  check_transform(t);
  if (in.width == 0 || in.height == 0)
    throw bad("transform of an empty image (" + size_text(in) + ")");
  TransformPlan p;
  p.crop = Rect{0, 0, in.width, in.height};
  p.output = in;
  if (t.resize.width != 0) {
    const Size r = t.resize;
    if (t.center_crop) {
      // Wider than W:H keeps the height, else the width; the other side is rounded down.
      if (uint64_t{in.width} * r.height > uint64_t{in.height} * r.width) {
        uint32_t w = static_cast<uint32_t>(uint64_t{in.height} * r.width / r.height);
        p.crop.width = std::max(w, 1u);
        p.crop.x = (in.width - p.crop.width) / 2;
      } else {
        uint32_t h = static_cast<uint32_t>(uint64_t{in.width} * r.height / r.width);
        p.crop.height = std::max(h, 1u);
        p.crop.y = (in.height - p.crop.height) / 2;
      }
    }
    p.output = r;
  } else if (t.max_side != 0 && std::max(in.width, in.height) > t.max_side) {
    if (in.width >= in.height)
      p.output = {t.max_side, scaled(in.height, t.max_side, in.width)};
    else
      p.output = {scaled(in.width, t.max_side, in.height), t.max_side};
  }
  p.identity = p.crop == Rect{0, 0, in.width, in.height} && p.output == in;
  return p;
}

bool apply_transform(const Transform& t, Image& image) {
  if (t.empty()) return false;
  // Channels first: dropping alpha before a resize spares resampling it.
  const bool converted = t.channels == Channels::rgb && to_rgb(image);
  TransformPlan p = plan_transform(t, {image.width(), image.height()});
  if (p.identity) return converted;
  image = resize_lanczos(image, p.crop, p.output.width, p.output.height);
  return true;
}

}  // namespace dlprep::image
