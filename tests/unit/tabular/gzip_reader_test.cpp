// The streaming gzip backends (gzip_reader.hpp) on one input each, through a memfd as
// criteo-preprocess reads a day file: every backend built must give the original bytes, or the
// same kind of error naming the file. zlib is always built, so a build with ISA-L checks it
// against zlib here (fuzz_gzip_read does the same on hostile bytes).
#include "tabular/gzip_reader.hpp"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/simd_state.hpp"

using namespace dlprep;
using namespace dlprep::tabular;

namespace {

/// One gzip member of `text`, written with zlib at `level`.
std::string gzip_member(const std::string& text, int level = 6) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// Text that compresses but not trivially: numbered Criteo-like lines.
std::string some_text(int lines) {
  std::string s;
  for (int i = 0; i < lines; ++i)
    s += std::to_string(i % 2) + "\t" + std::to_string(i * 7919 % 1000) + "\t\t68fd1e64\t" +
         std::to_string(i) + "\n";
  return s;
}

std::string sample_day() {
  Bytes b = read_file(std::string(DLPREP_SAMPLE_DATA) + "/criteo/nvtabular_day_0.gz");
  return std::string(b.begin(), b.end());
}

struct Outcome {
  std::string bytes;
  bool threw = false;
  std::string message;
  uint64_t compressed = 0;
};

/// Everything `backend` makes of `gz`, read in sizes 1, 1 + 4099 / 3, ... (odd sizes that cross
/// member boundaries).
Outcome read_all(const GzipBackend& backend, const std::string& gz) {
  int fd = memfd_create("gzip_reader_test", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, gz.data(), gz.size()) == static_cast<ssize_t>(gz.size()));
  REQUIRE(::lseek(fd, 0, SEEK_SET) == 0);
  Outcome o;
  try {
    auto reader = backend.open(fd, "day_0.gz");
    std::vector<uint8_t> buf(4099);
    size_t chunk = 1;
    while (size_t n = reader->read(buf.data(), chunk)) {
      REQUIRE(n <= chunk);
      o.bytes.append(buf.begin(), buf.begin() + n);
      chunk = chunk % buf.size() + 1366;
      if (chunk > buf.size()) chunk -= buf.size();
    }
    o.compressed = reader->compressed_bytes();
  } catch (const Error& e) {
    o.threw = true;
    o.message = e.what();
    CHECK(e.code() == Errc::corrupt_data);
  }
  ::close(fd);
  return o;
}

}  // namespace

TEST_CASE("gzip backends: zlib is always built and comes last") {
  auto backends = gzip_backends();
  REQUIRE(!backends.empty());
  CHECK(std::string(backends.back().name) == "zlib");
  CHECK(std::string(gzip_backend_name()) == backends.front().name);
}

TEST_CASE("gzip backends give back the original bytes, one member or several") {
  const std::string a = some_text(20000), b = some_text(3), empty;
  struct Case {
    const char* name;
    std::string gz, text;
  };
  const std::vector<Case> cases = {
      {"one member", gzip_member(a), a},
      {"stored (level 0)", gzip_member(b, 0), b},
      {"three members", gzip_member(a) + gzip_member(b, 1) + gzip_member(a, 9), a + b + a},
      {"an empty member between two", gzip_member(b) + gzip_member(empty) + gzip_member(b), b + b},
      {"the sample day file", sample_day(), ""},
      {"zeros after the last member (padding, as gzip(1) reads it)",
       gzip_member(a) + gzip_member(b) + std::string(5000, '\0'), a + b},
  };
  for (const auto& c : cases) {
    for (const auto& backend : gzip_backends()) {
      CAPTURE(c.name);
      CAPTURE(backend.name);
      Outcome o = read_all(backend, c.gz);
      REQUIRE_MESSAGE(!o.threw, o.message);
      if (!c.text.empty()) CHECK(o.bytes == c.text);
      CHECK(o.compressed == c.gz.size());
      CHECK(o.bytes == read_all(gzip_backends().back(), c.gz).bytes);
    }
  }
}

TEST_CASE(
    "gzip backends return with the AVX upper state clean (SSE code after them runs at speed)") {
  // ISA-L 2.30's isal_inflate returns with it dirty; the reader clears it (core/simd_state.hpp).
  const std::string gz = sample_day();
  for (const auto& backend : gzip_backends()) {
    CAPTURE(backend.name);
    Outcome o = read_all(backend, gz);
    REQUIRE_MESSAGE(!o.threw, o.message);
    const std::optional<bool> dirty = upper_simd_state_in_use();
    if (!dirty) {
      MESSAGE("this CPU cannot report its upper vector state (XGETBV 1): not checked");
      continue;
    }
    CHECK_FALSE(*dirty);
  }
}

TEST_CASE("gzip backends reject damaged streams with an error naming the file") {
  const std::string a = some_text(5000);
  const std::string gz = gzip_member(a) + gzip_member(a);
  std::vector<std::pair<std::string, std::string>> damaged = {
      {"empty file", ""},
      {"not gzip", a.substr(0, 100)},
      {"cut in the header", gz.substr(0, 5)},
      {"cut in the data", gz.substr(0, gz.size() / 4)},
      {"cut in the trailer", gz.substr(0, gz.size() / 2 - 3)},
      {"cut in the second member", gz.substr(0, gz.size() / 2 + 20)},
      {"garbage after a member", gz.substr(0, gz.size() / 2) + "garbage after the member"},
  };
  std::string crc = gz;
  crc[gz.size() / 2 - 6] ^= 0x01;  // the first member's CRC-32
  damaged.emplace_back("wrong CRC-32", crc);
  std::string size = gz;
  size[gz.size() / 2 - 2] ^= 0x01;  // the first member's ISIZE
  damaged.emplace_back("wrong length", size);
  std::string reserved = gz;
  reserved[gz.size() / 2 + 3] |= 0x80;  // a reserved FLG bit in the second member (RFC 1952)
  damaged.emplace_back("reserved header flag", reserved);
  for (const auto& [name, bytes] : damaged) {
    for (const auto& backend : gzip_backends()) {
      CAPTURE(name);
      CAPTURE(backend.name);
      Outcome o = read_all(backend, bytes);
      CHECK(o.threw);
      CHECK(o.message.find("day_0.gz: ") == 0);
      if (name == "garbage after a member")
        CHECK(o.message == "day_0.gz: data after the last gzip member, at byte " +
                               std::to_string(gz.size() / 2));
      if (name == "wrong CRC-32")
        CHECK(o.message.find("in the member at byte 0") != std::string::npos);
    }
  }
}
