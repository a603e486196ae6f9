// Separable Lanczos-3 resampling of 8-bit HWC images (1 to 4 channels, each resampled on its
// own; alpha is not premultiplied).
#pragma once

#include <cstdint>

#include "core/image.hpp"

namespace dlprep::image {

/// A rectangle of an image in pixels: the region a resize reads.
struct Rect {
  uint32_t x = 0, y = 0, width = 0, height = 0;
  bool operator==(const Rect&) const = default;
};

/// Resamples the region `box` of `src` to `width` x `height` with a Lanczos-3 filter, stretched
/// by the reduction factor when downscaling (so it also low-passes) and cut at the box's edges
/// (as if the box had been cropped out first). Results are rounded and clamped to 0..255. Works
/// both ways (down and up), for any aspect ratio, 1x1 included. Matches Pillow's
/// `Image.resize(size, Image.LANCZOS)` of the cropped region bit for bit when both sides shrink
/// or both grow, and within a level or two otherwise (see resize.cpp). Throws
/// Error(invalid_argument) for an empty box or one outside `src`, Error(limit_exceeded) for an
/// output beyond limits.hpp.
Image resize_lanczos(const Image& src, const Rect& box, uint32_t width, uint32_t height);

/// The whole image resampled to `width` x `height` (see above).
Image resize_lanczos(const Image& src, uint32_t width, uint32_t height);

}  // namespace dlprep::image
