// The bitstream as man/dlprep-l3.5 specifies it: header fields, the patch table, the code
// arrays (read here independently of the decoder), and a golden file that pins the format.
#include "l3/format.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

using testing::Content;
using testing::get_u32;
using testing::make_image;
using testing::width_ladder;

// How often each width code and predictor occurs in a file, read straight from the layout.
struct CodeCounts {
  std::array<uint64_t, 16> codes{};
  std::array<uint64_t, kPredictors> predictors{};
};

CodeCounts count_codes(const Bytes& file) {
  CodeCounts counts;
  const uint32_t channels = file[kOffChannels], patch = 1u << file[kOffPatchLog2];
  const uint32_t width = get_u32(&file[kOffWidth]), height = get_u32(&file[kOffHeight]);
  const uint32_t px = (width + patch - 1) / patch, py = (height + patch - 1) / patch;
  const size_t patches = size_t{px} * py;
  const uint8_t* data = file.data() + kHeaderBytes + kTableEntryBytes * channels * patches;
  for (uint32_t c = 0; c < channels; ++c) {
    uint32_t start = 0;
    for (size_t i = 0; i < patches; ++i) {
      const uint32_t end = get_u32(&file[kHeaderBytes + kTableEntryBytes * (c * patches + i)]);
      const uint32_t w = std::min(patch, width - static_cast<uint32_t>(i % px) * patch);
      const uint32_t h = std::min(patch, height - static_cast<uint32_t>(i / px) * patch);
      const uint8_t* p = data + start;
      for (uint32_t y = 1; y < h; ++y) {
        const uint32_t bit = 3 * (y - 1);  // little-endian bit string, 3 bits per row
        ++counts.predictors[((p[1 + bit / 8] | (p[2 + bit / 8] << 8)) >> (bit % 8)) & 7];
      }
      const uint8_t* codes = p + 1 + predictor_bytes(h);
      for (uint32_t g = 0; g < groups_per_row(w) * h; ++g)
        ++counts.codes[(codes[g / 2] >> (4 * (g % 2))) & 15];
      start = end;
    }
    data += start;
  }
  return counts;
}

TEST_CASE("inspect reports the header fields and per-channel sizes") {
  const Image image = make_image(300, 130, 3, Content::mixed, 4);
  const Bytes file = encode(image, {32, 1});
  const FileInfo info = inspect(file);
  CHECK(info.version == kVersion);
  CHECK(info.shape == image.shape());
  CHECK(info.patch == 32);
  CHECK(info.subtract_green);
  CHECK(info.file_bytes == file.size());
  REQUIRE(info.channel_bytes.size() == 3);
  const size_t patches = size_t{(300 + 31) / 32} * ((130 + 31) / 32);
  CHECK(kHeaderBytes + kTableEntryBytes * 3 * patches + info.channel_bytes[0] +
            info.channel_bytes[1] + info.channel_bytes[2] ==
        file.size());
  CHECK(std::memcmp(file.data(), kMagic, sizeof(kMagic)) == 0);
  CHECK(file[kOffVersion] == kVersion);
  CHECK(file[kOffPatchLog2] == 5);
  CHECK(get_u32(&file[kOffWidth]) == 300);

  for (uint32_t c : {1u, 2u})
    CHECK_FALSE(inspect(encode(make_image(9, 9, c, Content::noise))).subtract_green);
  CHECK(inspect(encode(make_image(9, 9, 4, Content::noise))).subtract_green);
}

TEST_CASE("every width code 0 to 15 and every predictor occurs and round-trips") {
  CodeCounts total;
  for (uint32_t c : {1u, 3u}) {
    for (const Image& image : {width_ladder(c), make_image(256, 96, c, Content::mixed, 5)}) {
      const Bytes file = encode(image, {64, 1});
      REQUIRE(decode(file).same_pixels(image));
      const CodeCounts counts = count_codes(file);
      for (size_t i = 0; i < 16; ++i) total.codes[i] += counts.codes[i];
      for (size_t i = 0; i < kPredictors; ++i) total.predictors[i] += counts.predictors[i];
    }
  }
  for (size_t i = 0; i < 16; ++i) {
    CAPTURE(i);
    CHECK(total.codes[i] > 0);
  }
  for (size_t i = 0; i < kPredictors; ++i) {
    CAPTURE(i);
    CHECK(total.predictors[i] > 0);
  }
}

TEST_CASE("the predictors follow the spec's tie and border rules") {
  // Paeth over (TL, T, TR): p = TL + TR - T; nearest wins; ties prefer T, then TL.
  CHECK(paeth(10, 10, 10) == 10);
  CHECK(paeth(0, 100, 200) == 100);  // p = 100: T exact
  CHECK(paeth(50, 40, 60) == 60);    // p = 70: |T-p| = 30, |TL-p| = 20, |TR-p| = 10
  CHECK(paeth(20, 10, 10) == 20);    // p = 20: TL exact
  CHECK(paeth(10, 10, 30) == 30);    // p = 30: TR exact
  CHECK(paeth(0, 5, 10) == 5);       // p = 5: T exact, although TL and TR are equidistant
  CHECK(paeth(4, 6, 8) == 6);        // p = 6: T
  CHECK(paeth(0, 1, 1) == 0);        // p = 0: TL exact (|TR - T| = 0 < |TL - T|)
  CHECK(paeth(3, 5, 3) == 3);        // p = 1: d_t = 4 loses to the TL/TR tie
  CHECK(predict(kPredSmooth, 0, 255, 255) == 192);  // avg(avg(0, 255) = 128, 255) = 192
  CHECK(predict(kPredSmooth, 1, 2, 2) == 2);        // avg(2, 2) = 2 (rounding up of 1.5)
  CHECK(predict(kPredMedian, 9, 3, 5) == 5);
  CHECK(predict(kPredMedian, 200, 200, 0) == 200);
  CHECK(predict(kPredTop, 1, 2, 3) == 2);
  CHECK(predict(kPredLeftHalf, 1, 2, 3) == 2);   // (1 + 2 + 1) >> 1
  CHECK(predict(kPredRightHalf, 1, 2, 3) == 3);  // (2 + 3 + 1) >> 1
  CHECK(predict(kPredTopLeft, 1, 2, 3) == 1);
  CHECK(predict(kPredTopRight, 1, 2, 3) == 3);
}

std::filesystem::path golden_dir() { return DLPREP_L3_TEST_DATA; }

Bytes read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing " << path.string());
  return Bytes((std::istreambuf_iterator<char>(in)), {});
}

// A binary PPM (P6) or PGM (P5) of 8-bit pixels; the golden image has 3 channels.
Bytes to_ppm(const Image& image) {
  const std::string head =
      "P6\n" + std::to_string(image.width()) + " " + std::to_string(image.height()) + "\n255\n";
  Bytes out(head.begin(), head.end());
  out.insert(out.end(), image.data(), image.data() + image.size_bytes());
  return out;
}

Image from_ppm(const Bytes& ppm, uint32_t width, uint32_t height) {
  Image image(width, height, 3);
  const std::string head =
      "P6\n" + std::to_string(width) + " " + std::to_string(height) + "\n255\n";
  REQUIRE(ppm.size() == head.size() + image.size_bytes());
  REQUIRE(std::memcmp(ppm.data(), head.data(), head.size()) == 0);
  std::memcpy(image.data(), ppm.data() + head.size(), image.size_bytes());
  return image;
}

TEST_CASE("the golden file decodes to its pixels and re-encodes byte for byte") {
  // A bitstream change must update man/dlprep-l3.5, kVersion and these files together:
  // regenerate with DLPREP_L3_WRITE_GOLDEN=1 and commit them with the change.
  const uint32_t width = 37, height = 21;
  const std::filesystem::path l3_path = golden_dir() / "golden_37x21_rgb_p16.l3";
  const std::filesystem::path ppm_path = golden_dir() / "golden_37x21_rgb.ppm";
  if (std::getenv("DLPREP_L3_WRITE_GOLDEN") != nullptr) {
    const Image image = make_image(width, height, 3, Content::mixed, 2024);
    const Bytes file = encode(image, {16, 1});
    const Bytes ppm = to_ppm(image);
    std::ofstream(l3_path, std::ios::binary)
        .write(reinterpret_cast<const char*>(file.data()), file.size());
    std::ofstream(ppm_path, std::ios::binary)
        .write(reinterpret_cast<const char*>(ppm.data()), ppm.size());
  }
  const Bytes golden = read_all(l3_path);
  const Image pixels = from_ppm(read_all(ppm_path), width, height);
  REQUIRE(decode(golden).same_pixels(pixels));
  REQUIRE(encode(pixels, {16, 1}) == golden);
}

}  // namespace
}  // namespace dlprep::l3
