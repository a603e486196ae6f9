#include "dataset/manifest.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_scratch::fresh("dataset", name); }

SampleRecord record(uint64_t i) {
  SampleRecord r;
  r.ordinal = i;
  r.key = "cat/img" + std::to_string(i);
  r.label = "cat";
  r.format = i % 2 ? "l3" : "bmp";
  r.location = "data/" + r.key + (i % 2 ? ".l3" : ".bmp");
  r.bytes = 1000 + i;
  r.shape = {uint32_t(10 + i), 20, 3};
  r.crc32 = 0xdeadbeef - uint32_t(i);
  r.source = "src/cat/img" + std::to_string(i) + ".png";
  return r;
}

}  // namespace

TEST_CASE("a sample record survives formatting and parsing, special characters included") {
  SampleRecord r = record(3);
  CHECK(parse_record(format_record(r)) == r);
  r.key = "we\"ird\tname\\ü";
  CHECK(parse_record(format_record(r)) == r);
  CHECK(format_record(record(1)).find('\n') == std::string::npos);
}

TEST_CASE("malformed records are corrupt data") {
  for (
      const char* bad :
      {"", "[]", "{\"i\":1}", "not json",
       R"({"i":0,"key":"a","label":"","format":"l3","location":"data/a.l3","bytes":1,"width":1,"height":1,"channels":1,"crc32":"xyz"})"}) {
    INFO(bad);
    try {
      parse_record(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::corrupt_data);
    }
  }
}

TEST_CASE("numbers must be non-negative integers that fit: never wrapped or truncated") {
  const std::string good =
      R"({"i":0,"key":"a","label":"","format":"l3","location":"data/a.l3","bytes":1,"width":WIDTH,"height":1,"channels":1,"crc32":"0000abcd"})";
  auto with_width = [&](const std::string& width) {
    std::string line = good;
    line.replace(line.find("WIDTH"), 5, width);
    return line;
  };
  CHECK(parse_record(with_width("4294967295")).shape.width == 4294967295u);
  for (const char* width : {"-1", "1.5", "1e30", "4294967296", "true", "\"7\""}) {
    INFO(width);
    try {
      parse_record(with_width(width));
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::corrupt_data);
      CHECK(std::string(e.what()).find("\"width\"") != std::string::npos);
    }
  }
}

TEST_CASE("the index is streamed back record by record; a last line without newline is read") {
  fs::path dir = scratch("index");
  {
    std::ofstream out(dir / kIndexName);
    for (int i = 0; i < 100; ++i) out << format_record(record(i)) << '\n';
    out << format_record(record(100));  // as an editor or '\n'.join() writes it
  }
  IndexReader reader(dir / kIndexName);
  SampleRecord r;
  int n = 0;
  while (reader.next(r)) CHECK(r == record(n++));
  CHECK(n == 101);
}

TEST_CASE("a cut-off last line of the index is corrupt data naming its line") {
  fs::path dir = scratch("index-cut");
  {
    std::ofstream out(dir / kIndexName);
    for (int i = 0; i < 3; ++i) out << format_record(record(i)) << '\n';
    out << format_record(record(3)).substr(0, 30);
  }
  IndexReader reader(dir / kIndexName);
  SampleRecord r;
  for (int i = 0; i < 3; ++i) REQUIRE(reader.next(r));
  try {
    reader.next(r);
    FAIL("a cut-off line was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()).find(kIndexName + std::string(":4: ")) != std::string::npos);
    CHECK(std::string(e.what()).find("cut off") != std::string::npos);
  }
}

TEST_CASE("the manifest round-trips through dataset.json") {
  fs::path dir = scratch("manifest");
  Manifest m;
  m.tool = "dlprep test";
  m.created = utc_now();
  m.complete = true;
  m.source_kind = "directory";
  m.source_path = "src/";
  m.seed = 42;
  m.shard_index = 1;
  m.shard_count = 3;
  m.targets = {{"l3", "l3", 0.6}, {"bmp", "bmp", 0.4}};
  m.on_error = "skip";
  m.failed = 2;
  for (int i = 0; i < 10; ++i) m.count(record(i));
  write_manifest(dir, m);
  CHECK(is_dataset(dir));
  Manifest back = read_manifest(dir);
  CHECK(manifest_to_json(back) == manifest_to_json(m));
  CHECK(back.samples == 10);
  CHECK(back.formats["l3"].samples == 5);
  CHECK(back.classes["cat"]["bmp"] == 5);
  CHECK(back.targets[1].spec == "bmp");
}

TEST_CASE("the transform is kept in the parameters; none is null and reads back as none") {
  Manifest m;
  m.source_kind = "directory";
  m.source_path = "src/";
  m.transform = "resize=1920x1080,center-crop";
  std::string text = manifest_to_json(m);
  CHECK(text.find(R"("transform": "resize=1920x1080,center-crop")") != std::string::npos);
  CHECK(manifest_from_json(text).transform == m.transform);
  m.transform.clear();
  text = manifest_to_json(m);
  CHECK(text.find(R"("transform": null)") != std::string::npos);
  CHECK(manifest_from_json(text).transform.empty());
  // A manifest written before transforms existed has no key at all.
  size_t at = text.find(",\n    \"transform\": null");
  REQUIRE(at != std::string::npos);
  text.erase(at, std::string(",\n    \"transform\": null").size());
  CHECK(manifest_from_json(text).transform.empty());
}

TEST_CASE("another schema or broken JSON is refused with the file named") {
  CHECK_THROWS_AS(manifest_from_json("{"), Error);
  try {
    manifest_from_json(R"({"schema":"dlprep.dataset/9"})");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::unsupported);
  }
  fs::path dir = scratch("broken");
  std::ofstream(dir / kManifestName) << "{\"schema\": 1";
  try {
    read_manifest(dir);
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(kManifestName) != std::string::npos);
  }
}

TEST_CASE("locations outside the dataset are refused") {
  CHECK_NOTHROW(check_location("data/cat/a.l3"));
  for (const char* bad : {"", "/etc/passwd", "data/../../x", "./data/a"}) {
    INFO(bad);
    CHECK_THROWS_AS(check_location(bad), Error);
  }
}

TEST_CASE("crc32 values print as 8 lower-case hex digits") {
  CHECK(crc32_hex(0xCBF43926u) == "cbf43926");
  CHECK(crc32_hex(0x1u) == "00000001");
}

TEST_CASE("tar records carry their offset; file records stay as they were") {
  SampleRecord files = record(2);
  CHECK(format_record(files).find("\"offset\"") == std::string::npos);
  SampleRecord tar = record(5);
  tar.location = "data/shard-000001.tar";
  tar.offset = 1536;
  std::string line = format_record(tar);
  CHECK(line.find("\"location\":\"data/shard-000001.tar\",\"offset\":1536,") != std::string::npos);
  CHECK(parse_record(line) == tar);
  std::string bad = line;
  bad.replace(bad.find("1536"), 4, "\"15\"");  // an offset that is not a number
  CHECK_THROWS_AS(parse_record(bad), Error);
}

TEST_CASE("the tar layout's shard size, shard count and labels round-trip") {
  Manifest m;
  m.source_kind = "directory";
  m.source_path = "src";
  m.targets = {{"png", "png", 1.0}};
  m.layout = "tar";
  m.max_shard_bytes = uint64_t{1} << 30;
  m.shard_files = 12;
  m.labels = {"cat", "dog"};
  std::string text = manifest_to_json(m);
  Manifest back = manifest_from_json(text);
  CHECK(back.layout == "tar");
  CHECK(back.max_shard_bytes == m.max_shard_bytes);
  CHECK(back.shard_files == 12);
  CHECK(back.labels == m.labels);
  Manifest files = m;
  files.layout = "files";
  CHECK(manifest_to_json(files).find("\"tar\"") == std::string::npos);
  std::string unknown = text;
  unknown.replace(unknown.find("\"layout\": \"tar\""), 15, "\"layout\": \"zip\"");
  CHECK_THROWS_AS(manifest_from_json(unknown), Error);
}

TEST_CASE("the --shuffle order round-trips; the source order is not written; another is refused") {
  Manifest m;
  m.source_kind = "directory";
  m.source_path = "src";
  m.targets = {{"png", "png", 1.0}};
  CHECK(manifest_to_json(m).find("\"order\"") == std::string::npos);
  CHECK_FALSE(manifest_from_json(manifest_to_json(m)).shuffled);
  m.shuffled = true;
  std::string text = manifest_to_json(m);
  CHECK(manifest_from_json(text).shuffled);
  text.replace(text.find("\"shuffled\""), 10, "\"sorted\"");
  try {
    manifest_from_json(text);
    FAIL("an unknown order was read");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::unsupported);
  }
}
