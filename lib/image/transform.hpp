// What convert-dataset does to every image: resize to WxH (stretched, or after a centred crop
// to WxH's aspect ratio), or shrink so that the longer side is at most N; and RGB channels.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/image.hpp"
#include "image/resize.hpp"

namespace dlprep::image {

/// Width and height in pixels.
struct Size {
  uint32_t width = 0, height = 0;
  bool operator==(const Size&) const = default;
};

/// The channels every image gets: its own, or RGB (gray replicated, alpha dropped: what PIL's
/// convert("RGB") and so torchvision's default image loader give a trainer).
enum class Channels { keep, rgb };

/// A transform; the default one does nothing. At most one of resize (width/height) and max_side
/// is set; center_crop needs resize (it crops to the resize's aspect ratio).
struct Transform {
  Size resize;               ///< --resize WxH: every image becomes exactly WxH (0x0: none)
  uint32_t max_side = 0;     ///< --max-side N: shrink (never enlarge) to a longer side of N
  bool center_crop = false;  ///< with resize: crop the largest centred WxH-shaped region first
  Channels channels = Channels::keep;  ///< --channels
  bool empty() const { return resize.width == 0 && max_side == 0 && channels == Channels::keep; }
  /// The channels that an image of `in` channels has after the transform.
  uint32_t output_channels(uint32_t in) const { return channels == Channels::rgb ? 3 : in; }
  /// Canonical text, recorded in dataset.json: "resize=1920x1080,center-crop",
  /// "resize=64x36", "max-side=1024,channels=rgb", or "" for none.
  std::string text() const;
  bool operator==(const Transform&) const = default;
};

/// Parses "WxH" (e.g. "1920x1080"): both positive, within limits.hpp (65535 per side, 2^30
/// pixels). Throws Error(invalid_argument) saying what is wrong.
Size parse_size(std::string_view text);

/// The transform whose text() this is ("" for none), checked by check_transform. Throws
/// Error(invalid_argument) naming the part it does not know.
Transform parse_transform_text(std::string_view text);

/// Throws Error(invalid_argument) unless the transform is consistent: not both resize and
/// max_side, center_crop only with resize, sizes positive and within limits.hpp.
void check_transform(const Transform& transform);

/// What a transform does to an image of a given size: the region read and the output size.
struct TransformPlan {
  Rect crop;              ///< the region of the input that is resampled (all of it unless cropping)
  Size output;            ///< the output size
  bool identity = false;  ///< nothing to do: the output would equal the input
};

/// The plan for an image of `input` size. Centre crop: the largest region with the aspect ratio
/// of resize, centred (offsets and sizes rounded down, at least 1 pixel; for 16:9 the same region
/// as tests/bench/make_photo_sets.py). max_side: the longer side becomes N and the shorter one
/// round(side * N / longer), rounding halves up, at least 1; images already small enough are
/// left as they are. Throws Error(invalid_argument) for an inconsistent transform.
TransformPlan plan_transform(const Transform& transform, Size input);

/// Applies the transform to `image`: the channels first, then the geometry (Lanczos-3, see
/// resize.hpp). Returns false, leaving the image untouched, when the transform is the identity
/// for this image's shape. Throws as resize_lanczos.
bool apply_transform(const Transform& transform, Image& image);

}  // namespace dlprep::image
