#include "dataset/crc32.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <random>
#include <vector>

using namespace dlprep;
using namespace dlprep::dataset;

TEST_CASE("crc32 gives the check value of the gzip/zlib CRC-32") {
  const char* text = "123456789";
  CHECK(crc32_of(ByteSpan(reinterpret_cast<const uint8_t*>(text), 9)) == 0xCBF43926u);
  CHECK(crc32_of(ByteSpan()) == 0u);
}

TEST_CASE("crc32 equals zlib's at every length and alignment around the SIMD block sizes") {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(70000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t offset : {0, 1, 3, 15}) {
    for (size_t length : {1, 7, 15, 16, 17, 63, 64, 65, 255, 256, 1023, 4096, 4097, 65536}) {
      CAPTURE(offset);
      CAPTURE(length);
      const uint8_t* p = data.data() + offset;
      CHECK(crc32_of(ByteSpan(p, length)) == ::crc32(0, p, static_cast<uInt>(length)));
    }
  }
}
