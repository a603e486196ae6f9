// The in-memory image: 8-bit, 1 to 4 channels, interleaved HWC (what trainers expect).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace dlprep {

/// Width, height and channel count of an image, without its pixels.
struct ImageShape {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 0;  ///< 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
  uint64_t pixel_bytes() const { return uint64_t{width} * height * channels; }
  bool operator==(const ImageShape&) const = default;
};

/// Throws Error(limit_exceeded or invalid_argument) unless the shape is within limits.hpp and
/// 1 <= channels <= 4. Every decoder calls it before allocating.
void check_shape(const ImageShape& shape);

/// An 8-bit HWC image that owns its pixels. The buffer is left uninitialised on creation because
/// decoders overwrite every byte (zeroing 6 MB per FHD image costs ~10% of an L3 decode).
class Image {
 public:
  Image() = default;
  /// Allocates an image of this shape (checked with check_shape); pixels are uninitialised.
  explicit Image(const ImageShape& shape);
  Image(uint32_t width, uint32_t height, uint32_t channels)
      : Image(ImageShape{width, height, channels}) {}
  Image(Image&&) noexcept = default;
  Image& operator=(Image&&) noexcept = default;
  /// Deep copy (explicit, because images are big).
  Image clone() const;

  const ImageShape& shape() const { return shape_; }
  uint32_t width() const { return shape_.width; }
  uint32_t height() const { return shape_.height; }
  uint32_t channels() const { return shape_.channels; }
  size_t row_bytes() const { return size_t{shape_.width} * shape_.channels; }
  size_t size_bytes() const { return static_cast<size_t>(shape_.pixel_bytes()); }
  bool empty() const { return size_bytes() == 0; }

  uint8_t* data() { return pixels_.get(); }
  const uint8_t* data() const { return pixels_.get(); }
  uint8_t* row(uint32_t y) { return pixels_.get() + y * row_bytes(); }
  const uint8_t* row(uint32_t y) const { return pixels_.get() + y * row_bytes(); }

  /// True when both images have the same shape and identical pixels.
  bool same_pixels(const Image& other) const {
    return shape_ == other.shape_ && (empty() || std::memcmp(data(), other.data(), size_bytes()) == 0);
  }

 private:
  ImageShape shape_;
  std::unique_ptr<uint8_t[]> pixels_;
};

}  // namespace dlprep
