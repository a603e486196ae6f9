// Size limits every decoder checks before it allocates. Each has its reason.
#pragma once

#include <cstdint>

namespace dlprep::limits {

/// Widest or tallest image accepted: 16-bit dimension fields in BMP-era tools and GPU grid limits
/// make larger sides rare and suspicious; 65535 covers gigapixel panoramas stitched in tiles.
inline constexpr uint32_t kMaxSide = 65535;
/// Most pixels in one image (1 Gpx = 4 GiB as RGBA): bounds what a hostile header can allocate.
inline constexpr uint64_t kMaxPixels = uint64_t{1} << 30;
/// Largest input file read into memory in one piece.
inline constexpr uint64_t kMaxFileBytes = uint64_t{1} << 34;

}  // namespace dlprep::limits
