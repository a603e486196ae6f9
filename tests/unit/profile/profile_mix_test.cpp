// profile_mix end to end on the real images of sample_data/, with a throttled storage.
#include "profile/profile_mix.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "profile/probe.hpp"
#include "profile/storage.hpp"

using namespace dlprep;
using namespace dlprep::profile;
namespace fs = std::filesystem;

TEST_CASE("bandwidths parse with decimal and binary units") {
  CHECK(parse_bandwidth("500MB/s") == 500e6);
  CHECK(parse_bandwidth("1.5GB/s") == 1.5e9);
  CHECK(parse_bandwidth("1MiB/s") == 1048576.0);
  CHECK(parse_bandwidth("2e8") == 2e8);
  CHECK(parse_bandwidth("100M") == 100.0 * (1 << 20));  // a bare letter: 1024s, as in dd
  CHECK_THROWS_AS(parse_bandwidth("fast"), Error);
  CHECK_THROWS_AS(parse_bandwidth("0MB/s"), Error);
  CHECK_THROWS_AS(parse_bandwidth("5XB/s"), Error);
  // A slow storage is given with its unit; a small bare number is a unit left out.
  CHECK(parse_bandwidth("100kB/s") == 100e3);
  CHECK(parse_bandwidth("500B/s") == 500);
  CHECK_THROWS_WITH_AS(parse_bandwidth("500"), doctest::Contains("unit missing"), Error);
  CHECK_THROWS_WITH_AS(parse_bandwidth("500/s"), doctest::Contains("unit missing"), Error);
  CHECK(parse_bandwidth("1000000") == 1e6);
  // Units in any case, as --shards takes them.
  CHECK(parse_bandwidth("500mb/s") == 500e6);
  CHECK(parse_bandwidth("1gib/s") == 1073741824.0);
  CHECK(parse_bandwidth("2KB/S") == 2e3);
}

TEST_CASE("the sample is evenly spaced and the same every time") {
  fs::path images = fs::path(DLPREP_SAMPLE_DATA) / "images";
  auto a = select_sample(images, 4);
  auto b = select_sample(images, 4);
  CHECK(a.size() == 4);
  CHECK(a == b);
  CHECK(select_sample(images, 1000).size() > 4);
}

TEST_CASE("profile_mix probes, optimises and verifies on sample images") {
  ProfileOptions o;
  o.dataset = fs::path(DLPREP_SAMPLE_DATA) / "images";
  o.formats = {dataset::parse_target("png"), dataset::parse_target("bmp")};
  o.sample = 4;
  o.storage_bytes_per_s = 50e6;
  o.threads = 2;
  o.pass_seconds = 0.2;
  o.work_dir = fs::path(DLPREP_TEST_SCRATCH) / "profile-mix";
  fs::create_directories(o.work_dir);
  ProfileReport r = profile_mix(o);
  REQUIRE(r.formats.size() == 2);
  CHECK(r.formats[0].bytes_per_image < r.formats[1].bytes_per_image);  // png smaller than bmp
  CHECK(r.formats[0].decode_cpu_s_per_image > 0);
  CHECK(r.mix[0] + r.mix[1] == doctest::Approx(1));
  CHECK(r.predicted.images_per_s > 0);
  REQUIRE(r.measured);
  CHECK(r.measured->images >= 4);
  CHECK(r.measured->images_per_s > 0);
  // Throttled: the delivered bandwidth cannot exceed 50 MB/s by more than the burst allows.
  CHECK(r.measured->storage_bytes_per_s <=
        50e6 + throttle_burst_bytes(50e6) / r.measured->seconds + 1);
  CHECK(r.sweep.size() == 11);
  // The work folder is gone.
  CHECK(fs::is_empty(o.work_dir));

  o.search = "liquid";
  o.verify = false;
  ProfileReport l = profile_mix(o);
  CHECK(!l.measured);
  CHECK(std::abs(l.mix[0] * 10 - std::round(l.mix[0] * 10)) < 1e-9);

  o.search = "simplex";
  CHECK_THROWS_AS(profile_mix(o), Error);
}
