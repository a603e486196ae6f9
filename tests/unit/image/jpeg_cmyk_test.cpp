// CMYK and YCCK JPEG (Photoshop's, a few in ImageNet): decoded to RGB as Pillow does. The input
// is written here with TurboJPEG (which stores CMYK pixels as YCCK), read back as CMYK with
// TurboJPEG, and each RGB sample checked against Pillow's formula applied to those CMYK samples.
#include <doctest/doctest.h>
#include <turbojpeg.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "image/codec.hpp"

namespace dlprep::image {
namespace {

// Pillow's cmyk2rgb of the inverted (Adobe) samples it reads from a CMYK JPEG.
uint8_t pillow_rgb(uint8_t stored_ink, uint8_t stored_k) {
  const int nk = stored_k, ink = 255 - stored_ink;
  const int t = ink * nk + 128;
  return static_cast<uint8_t>(nk - (((t >> 8) + t) >> 8));
}

// A 64x16 CMYK image of four flat 16x16 blocks; TurboJPEG writes CMYK pixels as YCCK.
Bytes write_cmyk_jpeg(const uint8_t (&blocks)[4][4], std::vector<uint8_t>& pixels) {
  const int w = 64, h = 16;
  pixels.resize(size_t{w} * h * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c)
        pixels[(static_cast<size_t>(y) * w + static_cast<size_t>(x)) * 4 + c] = blocks[x / 16][c];
  tjhandle handle = tjInitCompress();
  REQUIRE(handle != nullptr);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, pixels.data(), w, w * 4, h, TJPF_CMYK, &buffer, &size,
                             TJSAMP_444, 100, 0);
  tjDestroy(handle);
  REQUIRE(rc == 0);
  Bytes file(buffer, buffer + size);
  tjFree(buffer);
  return file;
}

TEST_CASE("cmyk and ycck jpeg decode to Pillow's rgb") {
  const Codec* jpeg = find_codec("jpeg");
  REQUIRE(jpeg != nullptr);
  const uint8_t blocks[4][4] = {
      {0, 0, 0, 0}, {255, 255, 255, 255}, {40, 120, 200, 230}, {250, 10, 128, 90}};
  std::vector<uint8_t> written;
  const Bytes file = write_cmyk_jpeg(blocks, written);
  std::vector<uint8_t> cmyk(written.size());
  tjhandle handle = tjInitDecompress();
  REQUIRE(handle != nullptr);
  const int rc = tjDecompress2(handle, file.data(), static_cast<unsigned long>(file.size()),
                               cmyk.data(), 64, 64 * 4, 16, TJPF_CMYK, 0);
  tjDestroy(handle);
  REQUIRE(rc == 0);
  const ByteSpan bytes(file.data(), file.size());
  CHECK(jpeg->probe(bytes).shape == ImageShape{64, 16, 3});
  const Image rgb = jpeg->decode(bytes);
  REQUIRE(rgb.shape() == ImageShape{64, 16, 3});
  int mismatches = 0;
  for (size_t i = 0; i < size_t{64} * 16; ++i)
    for (int c = 0; c < 3; ++c)
      mismatches += rgb.data()[i * 3 + c] != pillow_rgb(cmyk[i * 4 + c], cmyk[i * 4 + 3]);
  CHECK(mismatches == 0);
  // Stored K 0 is full ink in Adobe's inverted samples: black, whatever the other inks.
  CHECK((rgb.data()[0] == 0 && rgb.data()[1] == 0 && rgb.data()[2] == 0));
  // Stored 255 everywhere is no ink: white.
  CHECK((rgb.data()[16 * 3] == 255 && rgb.data()[16 * 3 + 1] == 255 &&
         rgb.data()[16 * 3 + 2] == 255));
}

}  // namespace
}  // namespace dlprep::image
