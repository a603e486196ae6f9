// The streaming tar writer: what it writes reads back member by member, at the offsets it says.
#include "dataset/tar_writer.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "dataset/tar_format.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_scratch::fresh("tar-writer", name); }

ByteSpan text(const std::string& s) {
  return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace

TEST_CASE("members are written where add() says, and the archive reads back") {
  fs::path dir = scratch("basic");
  std::string long_name = std::string(130, 'd') + "/x.png";
  std::string one(700, '1');
  uint64_t off1 = 0, off2 = 0, off3 = 0;
  {
    TarWriter w(dir / "a.tar");
    off1 = w.add("x.png", text(one));
    off2 = w.add("x.cls", text("7"));
    off3 = w.add(long_name, text("long"));
    CHECK(w.size() == off3 + 512);
    CHECK_FALSE(fs::exists(dir / "a.tar"));  // under a temporary name until finish()
    w.finish();
  }
  Bytes a = read_file(dir / "a.tar");
  CHECK(a.size() % 512 == 0);
  CHECK(off1 == 512);
  CHECK(off2 == 512 + 1024 + 512);
  tar::TarReader reader(a);
  tar::Member m;
  REQUIRE(reader.next(m));
  CHECK(m.name == "x.png");
  CHECK(m.data_offset == off1);
  CHECK(std::string(a.begin() + off1, a.begin() + off1 + 700) == one);
  REQUIRE(reader.next(m));
  CHECK(m.data_offset == off2);
  REQUIRE(reader.next(m));
  CHECK(m.name == long_name);
  CHECK(m.data_offset == off3);
  CHECK_FALSE(reader.next(m));
}

TEST_CASE("copied members keep their offsets; an unfinished archive leaves nothing") {
  fs::path dir = scratch("copy");
  uint64_t end = 0;
  {
    TarWriter w(dir / "old.tar");
    w.add("a.png", text("aaaa"));
    w.add("b.png", text("bbbb"));
    end = w.size();
    w.add("c.png", text("cccc"));
    w.finish();
  }
  Bytes old = read_file(dir / "old.tar");
  {
    TarWriter w(dir / "new.tar");
    w.append_members(ByteSpan(old).first(end));
    CHECK(w.size() == end);
    CHECK(w.add("d.png", text("dddd")) == end + 512);
    CHECK_THROWS_AS(w.append_members(ByteSpan(old).first(100)), Error);
    w.finish();
  }
  std::string names;
  tar::Member m;
  Bytes copy = read_file(dir / "new.tar");
  tar::TarReader r2(copy);
  while (r2.next(m)) names += m.name + " ";
  CHECK(names == "a.png b.png d.png ");
  {
    TarWriter w(dir / "gone.tar");
    w.add("a.png", text("aaaa"));
  }
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find("gone") == std::string::npos);
}
