// Shard sizes, names, and how TarShards fills shards and keeps an earlier run's.
#include "dataset/tar_shards.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "dataset/tar_format.hpp"
#include "image/codec.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_scratch::fresh("tar-shards", name); }

// Sample i: 1000 + i bytes of a ppm-looking payload, class "a" or "b" (or none for i % 5 == 4).
struct Sample {
  std::string key, label;
  Bytes data;
};

std::vector<Sample> samples(int n) {
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.label = i % 5 == 4 ? "" : (i % 2 ? "b" : "a");
    s.data.assign(1000 + i, uint8_t(i));
    out.push_back(std::move(s));
  }
  return out;
}

TarLayout layout(const fs::path& dst, uint64_t max) {
  return TarLayout{dst, max, 0, 1, {"a", "b"}};
}

const image::Codec& bmp() { return *image::find_codec("bmp"); }

// Writes all samples fresh; returns their records.
std::vector<SampleRecord> write_all(const fs::path& dst, uint64_t max, const std::vector<Sample>& s,
                                    uint64_t& shards) {
  TarShards t(layout(dst, max), false);
  std::vector<SampleRecord> records;
  for (const auto& x : s) {
    SampleRecord r;
    r.key = x.key;
    r.label = x.label;
    t.add(r, member_name(x.key, bmp(), 3), x.data);
    records.push_back(r);
  }
  shards = t.finish();
  return records;
}

}  // namespace

TEST_CASE("shard sizes take decimal and binary units and reject nonsense") {
  CHECK(parse_shard_size("65536") == 65536);
  CHECK(parse_shard_size("1GiB") == uint64_t{1} << 30);
  CHECK(parse_shard_size("1gib") == uint64_t{1} << 30);
  CHECK(parse_shard_size("500MB") == 500000000);
  CHECK(parse_shard_size("500M") == uint64_t{500} << 20);  // a bare letter: 1024s, as split -b
  CHECK(parse_shard_size("1.5G") == uint64_t{3} << 29);
  CHECK(parse_shard_size("1.5GB") == 1500000000);
  CHECK_THROWS_AS(parse_shard_size("1.5"), Error);  // bytes: a unit left out, not 1 byte
  // Too few bytes for any shard, a unit left out too; with a unit it is taken as meant.
  CHECK_THROWS_WITH_AS(parse_shard_size("1.0"), doctest::Contains("unit missing"), Error);
  // 2048 bytes hold one unlabelled tiny sample, and a labelled one takes 3072: shards of one
  // sample each, over their limit. A bare number under 64 KiB is taken for a unit left out.
  CHECK_THROWS_WITH_AS(parse_shard_size("2048"), doctest::Contains("unit missing"), Error);
  CHECK_THROWS_AS(parse_shard_size("65535"), Error);
  // The message names the way to keep such a size: its unit, bytes included.
  CHECK_THROWS_WITH_AS(parse_shard_size("4096"), doctest::Contains("4096B"), Error);
  CHECK(parse_shard_size("4096B") == 4096);
  CHECK(parse_shard_size("1kB") == 1000);
  CHECK(parse_shard_size("2KiB") == 2048);
  CHECK(parse_shard_size("3kB") == 3000);
  CHECK(parse_shard_size("16GiB") == uint64_t{1} << 34);
  CHECK_THROWS_AS(parse_shard_size("1TiB"), Error);  // more than a shard reader maps
  CHECK(parse_shard_size("100B") == 100);
  CHECK(parse_shard_size("1e9") == 1000000000);  // as Python writes WebDataset's maxsize
  for (const char* bad :
       {"", "0", "0.1", "-5", "GiB", "1XB", "1 GiB", "nan", "inf", "1.5B", "9999999TiB", "12abc"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_shard_size(bad), Error);
  }
}

TEST_CASE("shards are named in order; parts of a --shard K/N run never collide") {
  CHECK(shard_location(0, 1, 0) == "data/shard-000000.tar");
  CHECK(shard_location(0, 1, 1234567) == "data/shard-1234567.tar");
  CHECK(shard_location(3, 8, 12) == "data/part-3-of-8-000012.tar");
  CHECK(shard_location(3, 16, 0) == "data/part-03-of-16-000000.tar");
  CHECK(shard_location(15, 16, 0) == "data/part-15-of-16-000000.tar");
}

TEST_CASE("samples fill shards in order up to the size; a large sample gets its own shard") {
  fs::path dst = scratch("fill");
  auto s = samples(10);
  // Each sample: 512 + 1024 (image padded) + 1024 (.cls), most of them.
  uint64_t shards = 0;
  auto records = write_all(dst, 3 * 2560 + 1024, s, shards);
  CHECK(shards >= 4);
  uint64_t last_shard = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    INFO(i);
    Bytes shard = read_file(dst / records[i].location);
    CHECK(shard.size() <= 3 * 2560 + 1024);
    tar::Header h = tar::header_before(shard, *records[i].offset);
    CHECK(h.name == records[i].key + ".bmp");
    CHECK(h.size == s[i].data.size());
    uint64_t n = std::stoull(records[i].location.substr(11, 6));
    CHECK(n >= last_shard);
    last_shard = n;
  }
  // A maximum smaller than any sample: one sample per shard, never an empty shard.
  fs::path tiny = scratch("tiny");
  write_all(tiny, 1, s, shards);
  CHECK(shards == 10);
}

TEST_CASE("a rerun keeps every shard; a stale sample rewrites from its shard on") {
  fs::path dst = scratch("keep");
  auto s = samples(10);
  uint64_t max = 3 * 2560 + 1024, shards = 0;
  auto first = write_all(dst, max, s, shards);
  std::vector<int64_t> mtimes;
  for (uint64_t k = 0; k < shards; ++k) mtimes.push_back(*mtime_ns(dst / shard_location(0, 1, k)));

  {  // everything proposed and kept: no shard rewritten
    TarShards t(layout(dst, max), true);
    for (size_t i = 0; i < s.size(); ++i) {
      auto kept = t.propose(s[i].key, s[i].label, bmp());
      REQUIRE(kept);
      CHECK(std::equal(kept->bytes().begin(), kept->bytes().end(), s[i].data.begin()));
      SampleRecord r;
      r.key = s[i].key;
      t.keep(*kept, r);
      CHECK(r.location == first[i].location);
      CHECK(r.offset == first[i].offset);
    }
    CHECK(t.finish() == shards);
    for (uint64_t k = 0; k < shards; ++k)
      CHECK(*mtime_ns(dst / shard_location(0, 1, k)) == mtimes[k]);
  }
  {  // sample 4 changed class (so it is not proposed): shard 0 and 1 kept, rewritten from 4 on
    auto changed = s;
    changed[4].label = "a";
    TarShards t(layout(dst, max), true);
    size_t i = 0;
    std::vector<SampleRecord> records;
    for (; i < changed.size(); ++i) {
      auto kept = t.propose(changed[i].key, changed[i].label, bmp());
      SampleRecord r;
      r.key = changed[i].key;
      r.label = changed[i].label;
      if (kept) {
        t.keep(*kept, r);
      } else {
        t.add(r, member_name(r.key, bmp(), 3), changed[i].data);
      }
      records.push_back(r);
      if (!kept) CHECK(i >= 4);
    }
    CHECK(t.finish() == shards);
    for (size_t j = 0; j < records.size(); ++j) {
      Bytes shard = read_file(dst / records[j].location);
      CHECK(tar::header_before(shard, *records[j].offset).name == changed[j].key + ".bmp");
    }
    // The shard that held sample 4 and all after it were rewritten, those before were not.
    uint64_t stale = std::stoull(first[4].location.substr(11, 6));
    for (uint64_t k = 0; k < stale; ++k)
      CHECK(*mtime_ns(dst / shard_location(0, 1, k)) == mtimes[k]);
  }
  {  // fewer samples: the last shard is cut short and shards past it are removed
    TarShards t(layout(dst, max), true);
    for (size_t i = 0; i < 3; ++i) {
      auto kept = t.propose(s[i].key, s[i].label, bmp());
      SampleRecord r;
      r.key = s[i].key;
      r.label = s[i].label;
      if (kept)
        t.keep(*kept, r);
      else
        t.add(r, member_name(r.key, bmp(), 3), s[i].data);
    }
    uint64_t n = t.finish();
    CHECK(n == 1);
    CHECK(fs::exists(dst / shard_location(0, 1, 0)));
    CHECK_FALSE(fs::exists(dst / shard_location(0, 1, 1)));
    Bytes shard = read_file(dst / shard_location(0, 1, 0));
    tar::TarReader reader(shard);
    tar::Member m;
    int members = 0;
    while (reader.next(m)) ++members;
    CHECK(members == 6);  // three images and their .cls
  }
}

TEST_CASE("a damaged old shard is not kept") {
  fs::path dst = scratch("damaged");
  auto s = samples(3);
  uint64_t shards = 0;
  write_all(dst, 1 << 20, s, shards);
  REQUIRE(shards == 1);
  fs::resize_file(dst / shard_location(0, 1, 0), 1000);
  TarShards t(layout(dst, 1 << 20), true);
  CHECK_FALSE(t.propose(s[0].key, s[0].label, bmp()));
  CHECK_FALSE(t.propose(s[1].key, s[1].label, bmp()));  // nothing more is proposed
}
