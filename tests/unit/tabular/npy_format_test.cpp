#include "tabular/npy_format.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "core/file_io.hpp"

using namespace dlprep;
using namespace dlprep::tabular;
namespace fs = std::filesystem;

TEST_CASE("npy headers are version 1.0 and end on a 64-byte boundary") {
  for (uint64_t rows : {uint64_t{0}, uint64_t{1}, uint64_t{4400000000}, ~uint64_t{0}}) {
    for (uint32_t cols : {0u, 1u, 13u, 26u}) {
      std::string h = npy_header("<f4", rows, cols);
      CHECK(h.size() % 64 == 0);
      CHECK(h.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
      size_t len = static_cast<uint8_t>(h[8]) | (static_cast<uint8_t>(h[9]) << 8);
      CHECK(len + 10 == h.size());
      CHECK(h.back() == '\n');
      std::string shape = cols ? "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")"
                               : "(" + std::to_string(rows) + ",)";
      CHECK(h.find(shape) != std::string::npos);
    }
  }
}

TEST_CASE("read_npy reads back what the header describes") {
  fs::path dir = fs::path(DLPREP_TEST_SCRATCH) / "npy_format";
  fs::create_directories(dir);
  std::string h = npy_header("<u4", 3, 0);
  Bytes b(h.begin(), h.end());
  for (uint32_t v : {7u, 8u, 0xffffffffu})
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  write_file_atomic(dir / "a.npy", b);
  NpyArray a = read_npy(dir / "a.npy");
  CHECK(a.descr == "<u4");
  CHECK(a.rows == 3);
  CHECK(a.cols == 0);
  CHECK(a.data.size() == 12);
  b.pop_back();
  write_file_atomic(dir / "b.npy", b);
  CHECK_THROWS_AS(read_npy(dir / "b.npy"), Error);
}

TEST_CASE("npz archives are stored zip files of .npy members that parse back") {
  const std::string a = npy_header("<i4", 3, 0) + std::string("\1\0\0\0\2\0\0\0\3\0\0\0", 12);
  const std::string b = npy_header("<u8", 1, 0) + std::string(8, '\7');
  const std::string z = npz_archive({{"counts", a}, {"other", b}});
  const auto u32 = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, z.data() + at, 4);
    return v;
  };
  const auto u16 = [&](size_t at) {
    uint16_t v = 0;
    std::memcpy(&v, z.data() + at, 2);
    return v;
  };
  // The first member: its local header, name, then the .npy bytes unchanged, with their CRC-32.
  REQUIRE(z.size() > 30 + 10 + a.size());
  CHECK(u32(0) == 0x04034b50);
  CHECK(u16(8) == 0);  // stored
  CHECK(u32(14) == static_cast<uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(a.data()),
                                                 static_cast<uInt>(a.size()))));
  CHECK(u32(18) == a.size());
  CHECK(u32(22) == a.size());
  CHECK(z.substr(30, u16(26)) == "counts.npy");
  const NpyArray back =
      parse_npy(ByteSpan(reinterpret_cast<const uint8_t*>(z.data()) + 40, a.size()), "counts.npy");
  CHECK(back.rows == 3);
  CHECK(back.descr == "<i4");
  // The end record: two entries, the directory right after the second member's data.
  const size_t end = z.size() - 22;
  CHECK(u32(end) == 0x06054b50);
  CHECK(u16(end + 8) == 2);
  CHECK(u16(end + 10) == 2);
  const size_t directory = u32(end + 16);
  CHECK(directory == 30 + 10 + a.size() + 30 + 9 + b.size());
  CHECK(u32(end + 12) == end - directory);
  CHECK(u32(directory) == 0x02014b50);
  // The second member's central entry points at its local header.
  const size_t second = directory + 46 + 10;
  CHECK(u32(second) == 0x02014b50);
  CHECK(u32(second + 42) == 30 + 10 + a.size());
  CHECK(z.substr(second + 46, 9) == "other.npy");
  // The same arrays, the same bytes (no time stamp).
  CHECK(npz_archive({{"counts", a}, {"other", b}}) == z);
}
