#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/image.hpp"

using namespace dlprep;

TEST_CASE("an image allocates width x height x channels bytes") {
  Image img(7, 5, 3);
  CHECK(img.size_bytes() == 105);
  CHECK(img.row_bytes() == 21);
  CHECK(img.row(2) == img.data() + 42);
}

TEST_CASE("shapes outside the limits are rejected before allocation") {
  CHECK_THROWS_AS(Image(0, 5, 3), Error);
  CHECK_THROWS_AS(Image(5, 5, 0), Error);
  CHECK_THROWS_AS(Image(5, 5, 5), Error);
  CHECK_THROWS_AS(Image(65536, 1, 1), Error);
  try {
    Image(60000, 60000, 4);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::limit_exceeded);
  }
}

TEST_CASE("clone copies pixels and same_pixels compares them") {
  Image a(3, 2, 1);
  for (size_t i = 0; i < a.size_bytes(); ++i) a.data()[i] = static_cast<uint8_t>(i);
  Image b = a.clone();
  CHECK(a.same_pixels(b));
  b.data()[5] ^= 1;
  CHECK_FALSE(a.same_pixels(b));
}

TEST_CASE("with_context prefixes the message and keeps the code") {
  Error e(Errc::corrupt_data, "bad chunk");
  Error f = e.with_context("img.png");
  CHECK(std::string(f.what()) == "img.png: bad chunk");
  CHECK(f.code() == Errc::corrupt_data);
}
