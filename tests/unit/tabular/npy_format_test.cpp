#include "tabular/npy_format.hpp"

#include <doctest/doctest.h>

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
