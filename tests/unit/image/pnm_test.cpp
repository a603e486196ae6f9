// PGM/PPM corners: header comments and whitespace, maxval scaling, and what is rejected.
#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "image/codec.hpp"
#include "test_images.hpp"

namespace dlprep::image {
namespace {

const Codec& pnm() { return *find_codec("ppm"); }
Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
ByteSpan span(const Bytes& b) { return {b.data(), b.size()}; }

TEST_CASE("pgm header comments and any whitespace between tokens are accepted") {
  const Bytes file = bytes("P5\n# made by hand\n3 # width\n\t2\r\n#maxval next\n255\n" +
                           std::string("\x01\x02\x03\x04\x05\xff", 6));
  CHECK(pnm().sniff(span(file)));
  const Image image = pnm().decode(span(file));
  REQUIRE(image.shape() == ImageShape{3, 2, 1});
  CHECK((image.data()[0] == 1 && image.data()[5] == 255));
  CHECK(pnm().probe(span(file)).shape == image.shape());
}

TEST_CASE("ppm writes P5 for gray and P6 for RGB with maxval 255") {
  const Bytes gray =
      pnm().encode(test::make_image({4, 3, 1}, test::Pattern::flat), EncodeOptions{});
  CHECK(std::string(gray.begin(), gray.begin() + 11) == "P5\n4 3\n255\n");
  const Bytes rgb = pnm().encode(test::make_image({4, 3, 3}, test::Pattern::flat), EncodeOptions{});
  CHECK(std::string(rgb.begin(), rgb.begin() + 11) == "P6\n4 3\n255\n");
  CHECK_THROWS_AS(pnm().encode(test::make_image({4, 3, 4}, test::Pattern::flat), EncodeOptions{}),
                  Error);
}

TEST_CASE("maxval other than 255 is scaled to 0..255 with rounding, 16-bit samples included") {
  const Image small = pnm().decode(span(bytes("P5 4 1 15 " + std::string("\x00\x01\x08\x0f", 4))));
  CHECK((small.data()[0] == 0 && small.data()[1] == 17 && small.data()[2] == 136 &&
         small.data()[3] == 255));
  const Image wide =
      pnm().decode(span(bytes("P5 3 1 65535\n" + std::string("\x00\x00\x80\x80\xff\xff", 6))));
  CHECK((wide.data()[0] == 0 && wide.data()[1] == 128 && wide.data()[2] == 255));
  const Image thousand =
      pnm().decode(span(bytes("P6 1 1 1000\n" + std::string("\x01\xf4\x00\x02\x03\xe8", 6))));
  CHECK((thousand.data()[0] == 128 && thousand.data()[1] == 1 && thousand.data()[2] == 255));
  // The file's depth: above 8 bits only where maxval is above 255 (15 scales up, losing nothing).
  CHECK(pnm().probe(span(bytes("P5 4 1 15 " + std::string("\x00\x01\x08\x0f", 4)))).bits == 8);
  CHECK(pnm().probe(span(bytes("P5 1 1 255\n\x01"))).bits == 8);
  CHECK(pnm().probe(span(bytes("P5 1 1 256\n" + std::string("\x00\x01", 2)))).bits == 9);
  CHECK(
      pnm().probe(span(bytes("P6 1 1 1000\n" + std::string("\x01\xf4\x00\x02\x03\xe8", 6)))).bits ==
      10);
  CHECK(pnm()
            .probe(span(bytes("P5 3 1 65535\n" + std::string("\x00\x00\x80\x80\xff\xff", 6))))
            .bits == 16);
}

TEST_CASE("pnm rejects samples above maxval, bad maxvals, ascii formats and broken headers") {
  CHECK_THROWS_AS(pnm().decode(span(bytes("P5 1 1 15\n\x10"))), Error);
  CHECK_THROWS_AS(pnm().decode(span(bytes("P5 1 1 0\n\x00"))), Error);
  CHECK_THROWS_AS(pnm().decode(span(bytes("P5 1 1 65536\n\x00\x00"))), Error);
  CHECK_THROWS_AS(pnm().decode(span(bytes("P5 1 1 255x"))), Error);
  CHECK_THROWS_AS(pnm().decode(span(bytes("P5 1 -1 255\n\x00"))), Error);
  CHECK_THROWS_AS(pnm().decode(span(bytes("P5 99999999999 1 255\n\x00"))), Error);
  try {
    (void)pnm().decode(span(bytes("P3\n1 1\n255\n0 0 0\n")));
    FAIL("accepted ascii ppm");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::unsupported);
  }
  try {
    (void)pnm().decode(span(bytes("P6\n2 2\n255\n" + std::string(5, 'x'))));
    FAIL("accepted truncated data");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "truncated pnm pixel data: need 12 bytes at offset 11, have 5");
  }
}

}  // namespace
}  // namespace dlprep::image
