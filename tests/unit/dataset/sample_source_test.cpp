// SourceBytes on tar members: read from shards written here, good ones and hostile ones.
#include "dataset/sample_source.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "dataset/tar_format.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

// A shard of `members` (name, data) and the entries that name them, as a dataset's index would.
struct Shard {
  fs::path path;
  Bytes bytes;
  std::vector<SourceEntry> entries;
};

Shard make_shard(const std::string& name,
                 std::initializer_list<std::pair<std::string, std::string>> members) {
  Shard s;
  s.path = test_scratch::fresh("dataset-sample-source", name) / "shard-000000.tar";
  for (const auto& [member, data] : members) {
    Bytes h = tar::member_headers(member, data.size());
    s.bytes.insert(s.bytes.end(), h.begin(), h.end());
    SourceEntry e;
    e.path = s.path;
    e.key = member.substr(0, member.rfind('.'));
    e.named = true;
    e.member = member;
    e.offset = s.bytes.size();
    e.size = data.size();
    s.entries.push_back(e);
    s.bytes.insert(s.bytes.end(), data.begin(), data.end());
    s.bytes.resize(s.bytes.size() + tar::padded(data.size()) - data.size(), 0);
  }
  s.bytes.resize(s.bytes.size() + tar::kEndBytes, 0);
  write_file_atomic(s.path, s.bytes);
  return s;
}

std::string text(ByteSpan bytes) { return std::string(bytes.begin(), bytes.end()); }

// The error SourceBytes throws for the entry, or Errc::internal with "accepted".
Error error_of(const SourceEntry& e) {
  Bytes buffer;
  try {
    SourceBytes source(e, buffer);
  } catch (const Error& err) {
    return err;
  }
  return Error(Errc::internal, "accepted");
}

}  // namespace

TEST_CASE("a tar member is read from its shard into the buffer that is passed") {
  const std::string long_name = std::string(120, 'n') + ".png";  // carried by a pax record
  Shard s =
      make_shard("good", {{"a.png", "abc"}, {long_name, std::string(2000, 'x')}, {"e.png", ""}});
  Bytes buffer;
  {
    SourceBytes a(s.entries[0], buffer);
    CHECK(text(a.bytes()) == "abc");
    CHECK(a.bytes().data() >= buffer.data());
    CHECK(a.bytes().data() + a.bytes().size() <= buffer.data() + buffer.size());
  }
  {
    SourceBytes n(s.entries[1], buffer);
    CHECK(text(n.bytes()) == std::string(2000, 'x'));
  }
  const uint8_t* reused = buffer.data();
  {
    SourceBytes a(s.entries[0], buffer);  // smaller: the same memory
    CHECK(text(a.bytes()) == "abc");
    CHECK(buffer.data() == reused);
  }
  SourceBytes empty(s.entries[2], buffer);
  CHECK(empty.bytes().empty());
}

TEST_CASE("a tar member whose header is another member's is corrupt data naming the member") {
  Shard s = make_shard("mismatch", {{"a.png", "abc"}, {"b.png", "defg"}});
  SourceEntry e = s.entries[0];
  e.size = 4;
  Error err = error_of(e);
  CHECK(err.code() == Errc::corrupt_data);
  CHECK(std::string(err.what()) == s.path.string() +
                                       "(a.png): the tar header at offset 512 is for 'a.png' "
                                       "(3 bytes), not this member (4 bytes)");
  e = s.entries[0];
  e.member = "c.png";
  CHECK(std::string(error_of(e).what()).find("is for 'a.png'") != std::string::npos);
  // Pointing at the data of another member, or at padding: no header there.
  e = s.entries[1];
  e.offset += tar::kBlock;
  err = error_of(e);
  CHECK(err.code() == Errc::corrupt_data);
  CHECK(std::string(err.what()) == s.path.string() + "(b.png): no member header before offset " +
                                       std::to_string(e.offset) +
                                       ": not a ustar header (no magic)");
  // A size far larger than the shard: refused by the header, before its data is read (or its
  // buffer allocated).
  e = s.entries[0];
  e.size = ~uint64_t{0} >> 2;
  Bytes buffer;
  CHECK_THROWS_AS(SourceBytes(e, buffer), Error);
  CHECK(buffer.size() <= tar::kBlock);
}

TEST_CASE("a tar member past the end of a truncated shard is corrupt data, never a crash") {
  Shard s = make_shard("truncated", {{"a.png", "abc"}, {"b.png", std::string(3000, 'y')}});
  const SourceEntry b = s.entries[1];
  // Cut inside b's data, then inside its header, then just before it.
  const uint64_t cuts[] = {b.offset + 1000, b.offset - 100, b.offset - tar::kBlock};
  const std::string want[] = {
      "(b.png): member at offset 1536 (3000 bytes) runs past the end of the archive",
      "(b.png): offset 1536 is not where a member's data can start in an archive of 1436 bytes",
      "(b.png): offset 1536 is not where a member's data can start in an archive of 1024 bytes",
  };
  for (size_t i = 0; i < std::size(cuts); ++i) {
    INFO(cuts[i]);
    fs::resize_file(s.path, cuts[i]);
    Error err = error_of(b);
    CHECK(err.code() == Errc::corrupt_data);
    CHECK(std::string(err.what()) == s.path.string() + want[i]);
  }
  // The member before the cut is still read.
  Bytes buffer;
  CHECK(text(SourceBytes(s.entries[0], buffer).bytes()) == "abc");
}

TEST_CASE("a tar member offset past the end of its shard or off a block is corrupt data") {
  Shard s = make_shard("offsets", {{"a.png", "abc"}});
  const std::string size = std::to_string(s.bytes.size());
  for (uint64_t offset : {uint64_t{1} << 40, uint64_t{s.bytes.size()} + tar::kBlock, uint64_t{0},
                          uint64_t{100}, uint64_t{513}, ~uint64_t{0}}) {
    INFO(offset);
    SourceEntry e = s.entries[0];
    e.offset = offset;
    Error err = error_of(e);
    CHECK(err.code() == Errc::corrupt_data);
    CHECK(std::string(err.what()) == s.path.string() + "(a.png): offset " + std::to_string(offset) +
                                         " is not where a member's data can start in an archive "
                                         "of " +
                                         size + " bytes");
  }
}

TEST_CASE("a tar member of a missing shard, or of a directory, is an I/O error naming it") {
  Shard s = make_shard("missing", {{"a.png", "abc"}});
  SourceEntry e = s.entries[0];
  fs::remove(s.path);
  Error err = error_of(e);
  CHECK(err.code() == Errc::io);
  CHECK(std::string(err.what()) == s.path.string() + ": cannot open: No such file or directory");
  fs::create_directory(s.path);
  err = error_of(e);
  CHECK(err.code() == Errc::io);
  CHECK(std::string(err.what()) == s.path.string() + ": is a directory");
}
