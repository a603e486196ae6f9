// InputReader's chunks of a preloaded input: whole rows in order, and marked stable (a GPU backend
// then leaves their copy to the device in flight); a file's chunks are not.
#include "tabular/input_reader.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tabular/criteo_schema.hpp"

using namespace dlprep::tabular;

TEST_CASE("a preloaded input's chunks are its rows, in order, and stable") {
  std::vector<uint32_t> rows(10 * kNumFields);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(i);
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(rows.data()),
                                       rows.size() * 4);
  InputReader reader(bytes, FileKind::bin, 3 * kBinaryRowBytes, bytes.size());
  size_t seen = 0;
  for (InputChunk c = reader.next(); !c.empty(); c = reader.next()) {
    CHECK(c.stable);
    REQUIRE(c.rows.size() % kNumFields == 0);
    CHECK(c.rows.data() == rows.data() + seen);  // no copy
    seen += c.rows.size();
  }
  CHECK(seen == rows.size());
}

TEST_CASE("a file's chunks are not stable") {
  char path[] = "/tmp/dlprep_input_reader_XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = "1\t2\n0\t3\n";
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  {
    InputReader reader(path, FileKind::tsv, 1 << 16);
    const InputChunk c = reader.next();
    CHECK(!c.empty());
    CHECK_FALSE(c.stable);
  }
  ::unlink(path);
}
