// ustar headers and the archive reader, on archives built in memory, including hostile ones.
#include "dataset/tar_format.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"

using namespace dlprep;
using namespace dlprep::dataset;

namespace {

void append(Bytes& out, std::string_view name, std::string_view data) {
  Bytes h = tar::member_headers(name, data.size());
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  out.resize(out.size() + tar::padded(data.size()) - data.size(), 0);
}

Bytes archive(std::initializer_list<std::pair<std::string, std::string>> members) {
  Bytes out;
  for (const auto& [name, data] : members) append(out, name, data);
  out.resize(out.size() + tar::kEndBytes, 0);
  return out;
}

std::string field(const Bytes& b, size_t offset, size_t len) {
  return std::string(reinterpret_cast<const char*>(b.data()) + offset, len);
}

Errc error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return Errc::internal;
}

std::vector<tar::Member> members_of(ByteSpan bytes) {
  tar::TarReader reader(bytes);
  std::vector<tar::Member> out;
  tar::Member m;
  while (reader.next(m)) out.push_back(m);
  return out;
}

}  // namespace

TEST_CASE("a ustar header has the standard fields and a valid checksum") {
  Bytes h = tar::member_headers("cat/img001.png", 1234);
  REQUIRE(h.size() == 512);
  CHECK(field(h, 0, 15) == std::string("cat/img001.png\0", 15));
  CHECK(field(h, 100, 8) == std::string("0000644\0", 8));
  CHECK(field(h, 124, 12) == std::string("00000002322\0", 12));  // 1234 in octal
  CHECK(h[156] == '0');
  CHECK(field(h, 257, 8) == std::string("ustar") + '\0' + "00");
  // The checksum: the byte sum with the field read as spaces, "%06o\0 ".
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  char want[8];
  std::snprintf(want, sizeof want, "%06o", sum);
  CHECK(field(h, 148, 8) == std::string(want, 6) + std::string("\0 ", 2));
  tar::Header parsed = tar::parse_header(h);
  CHECK(parsed.name == "cat/img001.png");
  CHECK(parsed.size == 1234);
  CHECK(parsed.type == '0');
}

TEST_CASE("data is padded to 512 bytes and the archive ends with two zero blocks") {
  Bytes a = archive({{"a.txt", "hello"}, {"b.txt", std::string(512, 'x')}, {"c.txt", ""}});
  CHECK(a.size() == 512 + 512 + 512 + 512 + 512 + 1024);
  CHECK(a.size() % 512 == 0);
  auto m = members_of(a);
  REQUIRE(m.size() == 3);
  CHECK(m[0].name == "a.txt");
  CHECK(m[0].data_offset == 512);
  CHECK(m[0].size == 5);
  CHECK(m[0].end() == 1024);
  CHECK(m[1].header_offset == 1024);
  CHECK(m[1].data_offset == 1536);
  CHECK(m[2].size == 0);
  CHECK(field(a, 512, 5) == "hello");
  CHECK(tar::member_bytes("a.txt", 5) == 1024);
  CHECK(tar::member_bytes("c.txt", 0) == 512);
}

TEST_CASE("a name longer than 100 bytes goes into a pax record and reads back whole") {
  std::string name = std::string(150, 'k') + "/" + std::string(120, 'n') + ".png";
  Bytes h = tar::member_headers(name, 10);
  CHECK(h.size() == 3 * 512);  // pax header, its records, the member's own header
  CHECK(h[156] == 'x');
  CHECK(tar::member_bytes(name, 10) == h.size() + 512);
  CHECK(tar::stored_name(name) == name.substr(0, 100));
  CHECK(tar::stored_name("short") == "short");
  Bytes a = archive({{name, "0123456789"}, {"next.cls", "3"}});
  auto m = members_of(a);
  REQUIRE(m.size() == 2);
  CHECK(m[0].name == name);
  CHECK(m[0].header_offset == 0);
  CHECK(m[0].data_offset == 3 * 512);
  CHECK(m[1].name == "next.cls");
  // The member's own header, right before its data, holds the truncated name.
  tar::Header own = tar::header_before(a, m[0].data_offset);
  CHECK(own.name == tar::stored_name(name));
  CHECK(own.size == 10);
  // A pax record whose length needs one more digit once counted (boundary of the length rule).
  for (size_t n = 85; n < 120; ++n) {
    std::string long_name(n + 20, 'z');
    auto back = members_of(archive({{long_name, "x"}}));
    REQUIRE(back.size() == 1);
    CHECK(back[0].name == long_name);
  }
}

TEST_CASE("sizes of 8 GiB and more are written in base-256") {
  uint64_t big = (uint64_t{1} << 33) + 5;
  Bytes h = tar::member_headers("huge.bin", big);
  CHECK(h[124] == 0x80);
  CHECK(tar::parse_header(h).size == big);
  CHECK(tar::parse_header(tar::member_headers("edge.bin", (uint64_t{1} << 33) - 1)).size ==
        (uint64_t{1} << 33) - 1);
}

TEST_CASE("damaged headers and archives are corrupt data, never read out of bounds") {
  Bytes good = archive({{"a.png", "abc"}, {"a.cls", "1"}});
  SUBCASE("checksum") {
    Bytes a = good;
    a[10] ^= 1;
    CHECK(error_of([&] { members_of(a); }) == Errc::corrupt_data);
  }
  SUBCASE("no magic") {
    Bytes a = good;
    a[257] = 'x';
    CHECK(error_of([&] { tar::parse_header(ByteSpan(a).first(512)); }) == Errc::corrupt_data);
  }
  SUBCASE("truncated: no end-of-archive marker, or cut inside a member") {
    for (size_t cut : {size_t(0), size_t(100), size_t(512), size_t(700), good.size() - 1024}) {
      INFO(cut);
      Bytes a(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
      CHECK(error_of([&] { members_of(a); }) == Errc::corrupt_data);
    }
  }
  SUBCASE("a size past the end") {
    Bytes h = tar::member_headers("a.png", 1u << 20);
    Bytes a = h;
    a.resize(a.size() + 2048, 0);
    CHECK(error_of([&] { members_of(a); }) == Errc::corrupt_data);
  }
  SUBCASE("a zero block inside the archive") {
    Bytes a(512, 0);
    Bytes rest = archive({{"a.png", "abc"}});
    a.insert(a.end(), rest.begin(), rest.end());
    CHECK(error_of([&] { members_of(a); }) == Errc::corrupt_data);
  }
  SUBCASE("a zero block followed by less than a block (found by fuzz_tar_reader)") {
    Bytes a = archive({{"a.png", "abc"}});
    a.erase(a.end() - (512 - 100), a.end());  // the second zero block cut to 100 bytes
    CHECK(members_of(a).size() == 1);         // a short zero tail ends the archive, as tar allows
    a[a.size() - 1] = 7;                      // a short tail that is not zero
    CHECK(error_of([&] { members_of(a); }) == Errc::corrupt_data);
  }
  SUBCASE("an unsupported member type") {
    Bytes a = good;
    a[156] = '2';  // a symbolic link; fix the checksum so that only the type is wrong
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : a[i];
    std::snprintf(reinterpret_cast<char*>(a.data()) + 148, 8, "%06o", sum);
    CHECK(error_of([&] { members_of(a); }) == Errc::corrupt_data);
  }
  SUBCASE("a malformed pax record") {
    Bytes a = archive({{std::string(200, 'p'), "abc"}});
    a[512] = 'x';  // the length digits of the record
    CHECK(error_of([&] { members_of(a); }) == Errc::corrupt_data);
  }
  SUBCASE("non-octal numbers") {
    Bytes a = good;
    a[124] = '9';
    CHECK(error_of([&] { tar::parse_header(ByteSpan(a).first(512)); }) == Errc::corrupt_data);
  }
}

TEST_CASE("header_before finds a member from its data offset and rejects any other offset") {
  Bytes a = archive({{"a.png", "abc"}, {"a.cls", "1"}});
  tar::Header h = tar::header_before(a, 512);
  CHECK(h.name == "a.png");
  CHECK(h.size == 3);
  CHECK(tar::header_before(a, 1536).name == "a.cls");
  for (uint64_t bad : {uint64_t(0), uint64_t(100), uint64_t(1024), uint64_t(a.size()),
                       uint64_t(a.size()) + 512, uint64_t(1) << 62}) {
    INFO(bad);
    CHECK(error_of([&] { tar::header_before(a, bad); }) == Errc::corrupt_data);
  }
  // A header whose size runs past the end of the buffer.
  Bytes cut(a.begin(), a.begin() + 514);
  Bytes h2 = tar::member_headers("big.png", 4096);
  std::copy(h2.begin(), h2.end(), cut.begin());
  CHECK(error_of([&] { tar::header_before(cut, 512); }) == Errc::corrupt_data);
  // The header block read alone (pread), with the archive's size.
  CHECK(tar::header_before(ByteSpan(a).subspan(1024, 512), 1536, a.size()).name == "a.cls");
  CHECK(error_of([&] { tar::header_before(ByteSpan(a).subspan(1024, 511), 1536, a.size()); }) ==
        Errc::corrupt_data);
  CHECK(error_of([&] { tar::header_before(ByteSpan(a).subspan(0, 512), 512, 514); }) ==
        Errc::corrupt_data);
}
