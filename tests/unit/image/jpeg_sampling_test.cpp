// JPEG files of every chroma sampling libjpeg writes, 4:1:0 and other factors TurboJPEG 2 has no
// name for among them: each decodes to what libjpeg's own decoder gives (RGB, islow DCT, fancy
// upsampling, the defaults), and, where TurboJPEG decodes the file too, to TurboJPEG's pixels.
// Files libjpeg cannot decode at all (12-bit, lossless) are unsupported, not corrupt.
#include <doctest/doctest.h>
#include <turbojpeg.h>

// jpeglib.h needs FILE and size_t declared first.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/codec.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

struct Sampling {
  int h[3], v[3];
};

// `image` (3 channels) as a baseline JPEG with these sampling factors, quality 90; `optimize`:
// with Huffman tables made for this image instead of the standard ones.
Bytes write_jpeg(const Image& image, const Sampling& s, bool optimize = false) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = image.width();
  cinfo.image_height = image.height();
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  cinfo.optimize_coding = optimize ? TRUE : FALSE;
  for (int c = 0; c < 3; ++c) {
    cinfo.comp_info[c].h_samp_factor = s.h[c];
    cinfo.comp_info[c].v_samp_factor = s.v[c];
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row =
        const_cast<uint8_t*>(image.data()) + size_t{cinfo.next_scanline} * image.row_bytes();
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes file(buffer, buffer + size);
  std::free(buffer);
  return file;
}

// libjpeg's own decode of `file` to RGB with its defaults.
std::vector<uint8_t> libjpeg_rgb(const Bytes& file) {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, file.data(), static_cast<unsigned long>(file.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  std::vector<uint8_t> rgb(size_t{cinfo.output_width} * cinfo.output_height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = rgb.data() + size_t{cinfo.output_scanline} * cinfo.output_width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return rgb;
}

// TurboJPEG's decode of `file` to RGB; empty where its header reader refuses the file (which
// TurboJPEG 2 does for a sampling it cannot name).
std::vector<uint8_t> turbojpeg_rgb(const Bytes& file, uint32_t w, uint32_t h) {
  tjhandle handle = tjInitDecompress();
  REQUIRE(handle != nullptr);
  std::vector<uint8_t> rgb;
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, file.data(), static_cast<unsigned long>(file.size()), &width,
                          &height, &subsamp, &colorspace) == 0) {
    rgb.resize(size_t{w} * h * 3);
    REQUIRE(tjDecompress2(handle, file.data(), static_cast<unsigned long>(file.size()), rgb.data(),
                          static_cast<int>(w), static_cast<int>(w * 3), static_cast<int>(h),
                          TJPF_RGB, 0) == 0);
  }
  tjDestroy(handle);
  return rgb;
}

TEST_CASE("jpeg decodes every chroma sampling, as libjpeg and TurboJPEG do") {
  const Codec* jpeg = find_codec("jpeg");
  REQUIRE(jpeg != nullptr);
  // Odd sizes, so that the last MCU of each row and column is partial.
  const Image original = test::make_image({131, 97, 3}, test::Pattern::gradient);
  const Sampling samplings[] = {
      {{1, 1, 1}, {1, 1, 1}},  // 4:4:4
      {{2, 1, 1}, {2, 1, 1}},  // 4:2:0
      {{2, 1, 1}, {1, 1, 1}},  // 4:2:2
      {{4, 1, 1}, {1, 1, 1}},  // 4:1:1
      {{4, 1, 1}, {2, 1, 1}},  // 4:1:0: TurboJPEG 2 cannot name it
      {{3, 1, 1}, {1, 1, 1}},  // 3x1
      {{1, 1, 1}, {4, 1, 1}},  // 1x4
      {{4, 2, 2}, {1, 1, 1}},  // 4x1 with 2x1 chroma
      {{2, 1, 2}, {2, 1, 2}},  // chroma sampled unequally
  };
  int refused_by_turbojpeg = 0;
  for (const Sampling& s : samplings) {
    CAPTURE(s.h[0]);
    CAPTURE(s.v[0]);
    CAPTURE(s.h[1]);
    CAPTURE(s.h[2]);
    const Bytes file = write_jpeg(original, s);
    const ByteSpan bytes(file.data(), file.size());
    CHECK(jpeg->probe(bytes).shape == ImageShape{131, 97, 3});
    const Image decoded = jpeg->decode(bytes);
    REQUIRE(decoded.shape() == ImageShape{131, 97, 3});
    const std::vector<uint8_t> got(decoded.data(), decoded.data() + decoded.size_bytes());
    CHECK(got == libjpeg_rgb(file));
    const std::vector<uint8_t> turbo = turbojpeg_rgb(file, 131, 97);
    if (turbo.empty())
      ++refused_by_turbojpeg;
    else
      CHECK(got == turbo);
    // And it is the picture: a smooth gradient survives quality 90 within a few levels.
    int worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(int{got[i]} - int{original.data()[i]}));
    CHECK(worst <= 12);
  }
  CHECK(refused_by_turbojpeg >= 4);  // what this decoder is for
}

// The file without its DHT segments, as an MJPEG frame is stored (the standard tables implied).
Bytes without_huffman_tables(const Bytes& file) {
  Bytes out(file.begin(), file.begin() + 2);
  size_t at = 2;
  while (at + 4 <= file.size() && file[at] == 0xFF && file[at + 1] != 0xDA) {
    const size_t length = size_t{file[at + 2]} << 8 | file[at + 3];
    if (file[at + 1] != 0xC4)
      out.insert(out.end(), file.begin() + at, file.begin() + at + 2 + length);
    at += 2 + length;
  }
  out.insert(out.end(), file.begin() + at, file.end());  // the scan and what follows
  return out;
}

TEST_CASE("a jpeg without Huffman tables decodes the same whatever its thread read before") {
  const Codec* jpeg = find_codec("jpeg");
  REQUIRE(jpeg != nullptr);
  const Image image = test::make_image({64, 48, 3}, test::Pattern::random);
  const Bytes standard = write_jpeg(image, {{2, 1, 1}, {2, 1, 1}});
  const Bytes mjpeg = without_huffman_tables(standard);
  REQUIRE(mjpeg.size() < standard.size());
  const Image expected = jpeg->decode(ByteSpan(standard.data(), standard.size()));
  // A file with tables of its own first, then the frame: the frame takes the standard tables.
  const Bytes optimized = write_jpeg(test::make_image({64, 48, 3}, test::Pattern::gradient),
                                     {{2, 1, 1}, {2, 1, 1}}, true);
  (void)jpeg->decode(ByteSpan(optimized.data(), optimized.size()));
  CHECK(jpeg->decode(ByteSpan(mjpeg.data(), mjpeg.size())).same_pixels(expected));
}

TEST_CASE("12-bit and lossless jpeg are unsupported, not corrupt") {
  const Codec* jpeg = find_codec("jpeg");
  REQUIRE(jpeg != nullptr);
  const Bytes file =
      write_jpeg(test::make_image({16, 16, 3}, test::Pattern::gradient), {{1, 1, 1}, {1, 1, 1}});
  size_t sof = 0;
  for (size_t i = 2; i + 4 < file.size() && !sof; ++i)
    if (file[i] == 0xFF && file[i + 1] == 0xC0) sof = i;
  REQUIRE(sof != 0);
  Bytes twelve_bit = file;
  twelve_bit[sof + 4] = 12;  // the frame's sample precision
  Bytes lossless = file;
  lossless[sof + 1] = 0xC3;  // SOF3
  for (const auto& [bytes, text] :
       {std::pair{twelve_bit, "precision 12"}, std::pair{lossless, "sof type 0xc3"}}) {
    for (int probe = 0; probe < 2; ++probe) {
      try {
        const ByteSpan span(bytes.data(), bytes.size());
        if (probe)
          (void)jpeg->probe(span);
        else
          (void)jpeg->decode(span);
        FAIL("read a file libjpeg cannot decode");
      } catch (const Error& e) {
        CHECK(e.code() == Errc::unsupported);
        CHECK(std::string(e.what()).find(text) != std::string::npos);
      }
    }
  }
  // The decoder is fine after those failures.
  const Image again = jpeg->decode(ByteSpan(file.data(), file.size()));
  CHECK(again.shape() == ImageShape{16, 16, 3});
}

}  // namespace
}  // namespace dlprep::image
