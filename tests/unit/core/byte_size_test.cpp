#include "core/byte_size.hpp"

#include <doctest/doctest.h>

#include <string_view>

using dlprep::parse_byte_size;

namespace {
double bytes_of(std::string_view text) {
  const auto size = parse_byte_size(text);
  REQUIRE_MESSAGE(size.has_value(), text);
  return size->bytes;
}
}  // namespace

TEST_CASE("byte sizes: bare letters and iB are powers of 1024, B after a letter powers of 1000") {
  CHECK(bytes_of("65536") == 65536);
  CHECK(bytes_of("100B") == 100);
  CHECK(bytes_of("1K") == 1024);
  CHECK(bytes_of("512M") == 512.0 * (1 << 20));
  CHECK(bytes_of("8G") == 8.0 * (1 << 30));
  CHECK(bytes_of("2T") == 2.0 * 0x1p40);
  CHECK(bytes_of("1KiB") == 1024);
  CHECK(bytes_of("3Mi") == 3.0 * (1 << 20));
  CHECK(bytes_of("1GiB") == 0x1p30);
  CHECK(bytes_of("1kB") == 1000);
  CHECK(bytes_of("500MB") == 500e6);
  CHECK(bytes_of("1.5GB") == 1.5e9);
  CHECK(bytes_of("1TB") == 1e12);
  CHECK(bytes_of("1.5G") == 1.5 * 0x1p30);
  CHECK(bytes_of("2e8") == 2e8);
}

TEST_CASE("byte sizes: letters in any case, the same rule") {
  CHECK(bytes_of("4g") == 4.0 * (1 << 30));
  CHECK(bytes_of("500mb") == 500e6);
  CHECK(bytes_of("1gib") == 0x1p30);
  CHECK(bytes_of("2Kb") == 2000);
  CHECK(bytes_of("7b") == 7);
}

TEST_CASE("byte sizes: whether a unit was given; fractions of a unit, not of a byte") {
  const auto bare = parse_byte_size("2048");
  REQUIRE(bare);
  CHECK_FALSE(bare->unit_given);
  const auto bytes = parse_byte_size("2048B");
  REQUIRE(bytes);
  CHECK(bytes->unit_given);
  CHECK(bytes_of("1.0005kB") == 1000.5);  // not rounded: the caller's to do
  CHECK(bytes_of("1.0") == 1);
  for (std::string_view fraction : {"1.5", "1.5B", "0.5b", "2e-1"})
    CHECK_MESSAGE(!parse_byte_size(fraction).has_value(), fraction);
}

TEST_CASE("byte sizes: anything else is refused") {
  for (std::string_view bad :
       {"",    "G",  "fast", "1x",  "5XB",   "1 GB", "1GBs", "1iB",  "1bi",   "1MiBB", "-1",
        "-1G", "-0", "nan",  "inf", "1e999", "0x10", "+5",   "1,5G", "1.5.5", "1PB",   "1E"})
    CHECK_MESSAGE(!parse_byte_size(bad).has_value(), bad);
}
