#include "core/image.hpp"

#include <string>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace dlprep {

void check_shape(const ImageShape& s) {
  if (s.channels < 1 || s.channels > 4)
    throw Error(Errc::unsupported, std::to_string(s.channels) + " channels (1 to 4 supported)");
  if (s.width == 0 || s.height == 0)
    throw Error(Errc::corrupt_data, "empty image (" + std::to_string(s.width) + "x" +
                                        std::to_string(s.height) + ")");
  if (s.width > limits::kMaxSide || s.height > limits::kMaxSide ||
      uint64_t{s.width} * s.height > limits::kMaxPixels)
    throw Error(Errc::limit_exceeded, "image of " + std::to_string(s.width) + "x" +
                                          std::to_string(s.height) +
                                          " exceeds the limit of 65535 per side and 2^30 pixels");
}

Image::Image(const ImageShape& shape) : shape_(shape) {
  check_shape(shape);
  pixels_.reset(new uint8_t[size_bytes()]);  // default-initialised: no memset
}

Image Image::clone() const {
  Image copy;
  copy.shape_ = shape_;
  if (!empty()) {
    copy.pixels_.reset(new uint8_t[size_bytes()]);
    std::memcpy(copy.pixels_.get(), pixels_.get(), size_bytes());
  }
  return copy;
}

}  // namespace dlprep
