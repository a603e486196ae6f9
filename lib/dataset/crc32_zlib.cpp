// crc32_of through zlib, for builds without ISA-L.
#include <zlib.h>

#include <algorithm>

#include "dataset/crc32.hpp"

namespace dlprep::dataset {

uint32_t crc32_of(ByteSpan bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {  // zlib takes uInt lengths
    uInt n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = ::crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace dlprep::dataset
