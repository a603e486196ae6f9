// The profile-mix report: JSON round trip, schema check, the table and the SVG.
#include "profile/report.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.hpp"

using namespace dlprep;
using namespace dlprep::profile;

namespace {

using Json = nlohmann::ordered_json;

ProfileReport sample_report() {
  ProfileReport r;
  r.dataset = "train/";
  r.sample_images = 16;
  r.formats = {{"png", "png", 1.8e6, 0.03}, {"bmp", "bmp", 6.2e6, 0.001}};
  r.resources = {200e6, 2, 0};
  r.storage_source = "given";
  r.reader = "o_direct";
  r.search = "lp";
  MixChoice m = optimize_lp(r.formats, r.resources);
  r.mix = m.ratios;
  r.predicted = m.predicted;
  r.measured = MeasuredThroughput{41.5, 2.1, 87, 1.9e8};
  r.sweep_a = 0;
  r.sweep_b = 1;
  r.sweep = sweep(r.formats, r.resources, 0, 1, 11);
  r.sweep[4].measured_images_per_s = 40;
  r.probe_seconds = 3.5;
  r.verify_seconds = 2.2;
  r.total_seconds = 5.8;
  return r;
}

}  // namespace

TEST_CASE("a report survives a JSON round trip") {
  ProfileReport r = sample_report();
  std::string text = report_to_json(r);
  CHECK(text.find("\"schema\": \"dlprep.profile-mix/1\"") != std::string::npos);
  ProfileReport back = report_from_json(text);
  CHECK(back.dataset == r.dataset);
  CHECK(back.sample_images == 16);
  REQUIRE(back.formats.size() == 2);
  CHECK(back.formats[1].bytes_per_image == r.formats[1].bytes_per_image);
  CHECK(back.formats[0].decode_cpu_s_per_image == r.formats[0].decode_cpu_s_per_image);
  CHECK(back.resources.storage_bytes_per_s == 200e6);
  CHECK(back.resources.compute_images_per_s == 0);
  CHECK(back.mix[0] == doctest::Approx(r.mix[0]));
  CHECK(back.mix[1] == doctest::Approx(r.mix[1]));
  CHECK(back.predicted.images_per_s == doctest::Approx(r.predicted.images_per_s));
  CHECK(std::isinf(back.predicted.compute_images_per_s));
  REQUIRE(back.measured);
  CHECK(back.measured->images == 87);
  REQUIRE(back.sweep.size() == 11);
  CHECK(back.sweep[4].measured_images_per_s == 40);
  CHECK(back.sweep[5].measured_images_per_s < 0);
  CHECK(back.mix_text() == r.mix_text());
  CHECK(!back.first_measured);
  CHECK(report_to_json(back) == text);

  // A re-solved report keeps the first mix and its pass.
  r.decode_workers_source = "measured";
  r.resources.decode_workers = 0.8;
  r.first_mix = {0.5, 0.5};
  r.first_measured = MeasuredThroughput{20, 2, 40, 1e8, 0.8};
  text = report_to_json(r);
  back = report_from_json(text);
  CHECK(back.decode_workers_source == "measured");
  CHECK(back.first_mix == r.first_mix);
  REQUIRE(back.first_measured);
  CHECK(back.first_measured->decode_cores == 0.8);
  CHECK(!back.resolved_measured);
  CHECK(report_to_json(back) == text);

  // And the re-solved mix, measured: here slower than the first, which stays chosen.
  r.resolved_mix = {0.25, 0.75};
  r.resolved_measured = MeasuredThroughput{18, 2, 36, 1e8, 0.8};
  text = report_to_json(r);
  back = report_from_json(text);
  CHECK(back.resolved_mix == r.resolved_mix);
  REQUIRE(back.resolved_measured);
  CHECK(back.resolved_measured->images_per_s == 18);
  CHECK(report_to_json(back) == text);
  const std::string table = report_table(back);
  CHECK(table.find("first mix: png:0.5,bmp:0.5, 20.0 img/s measured") != std::string::npos);
  CHECK(table.find("re-solved mix: png:0.25,bmp:0.75, 18.0 img/s measured: slower, so the first "
                   "mix is kept") != std::string::npos);

  // A report written before resolved_mix existed reads as one without it.
  Json old = Json::parse(text);
  old.erase("resolved_mix");
  CHECK(!report_from_json(old.dump()).resolved_measured);
}

TEST_CASE("a report of another schema or malformed text is refused") {
  CHECK_THROWS_AS(report_from_json("{"), Error);
  try {
    report_from_json("{\"schema\": \"dlprep.profile-mix/9\"}");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::unsupported);
  }
  try {
    report_from_json("{\"schema\": \"dlprep.profile-mix/1\"}");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
  }
}

TEST_CASE("the mix text is what convert-dataset --mix takes") {
  ProfileReport r = sample_report();
  r.mix = {0.7, 0.3};
  CHECK(r.mix_text() == "png:0.7,bmp:0.3");
  r.mix = {0, 1};
  CHECK(r.mix_text() == "bmp:1");
}

TEST_CASE("--mix-from reads the chosen mix, and names the file in every error") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(DLPREP_TEST_SCRATCH) / "report-mix";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  ProfileReport r = sample_report();
  r.mix = {0.625, 0.375};
  CHECK(read_report_mix(write("ok.json", report_to_json(r))) == "png:0.625,bmp:0.375");
  CHECK(read_report_mix(write("min.json", R"({"schema": "dlprep.profile-mix/1",
      "mix": [{"spec": "jpeg:90", "ratio": 1}]})")) == "jpeg:90:1");
  // The profiled dataset's transform, which --mix-from applies; none in a report without one.
  std::string channels, transform = "x";
  read_report_mix(dir / "min.json", &channels, &transform);
  CHECK(channels == "keep");
  CHECK(transform.empty());
  r.transform = "max-side=128,channels=rgb";
  read_report_mix(write("resized.json", report_to_json(r)), &channels, &transform);
  CHECK(transform == "max-side=128,channels=rgb");
  CHECK(report_from_json(report_to_json(r)).transform == r.transform);
  auto code_of = [](const fs::path& path) {
    try {
      read_report_mix(path);
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find(path.string()) == 0);
      return e.code();
    }
    return Errc::internal;
  };
  CHECK(code_of(dir / "missing.json") == Errc::io);
  CHECK(code_of(dir) == Errc::io);
  CHECK(code_of(write("text.json", "not json")) == Errc::corrupt_data);
  CHECK(code_of(write("array.json", "[1, 2]")) == Errc::corrupt_data);
  CHECK(code_of(write("other.json", R"({"schema": "dlprep.dataset/1"})")) == Errc::corrupt_data);
  CHECK(code_of(write("newer.json", R"({"schema": "dlprep.profile-mix/2", "mix": []})")) ==
        Errc::unsupported);
  CHECK(code_of(write("nomix.json", R"({"schema": "dlprep.profile-mix/1"})")) ==
        Errc::corrupt_data);
  CHECK(code_of(write("empty.json", R"({"schema": "dlprep.profile-mix/1", "mix": []})")) ==
        Errc::corrupt_data);
  CHECK(code_of(write("bad.json", R"({"schema": "dlprep.profile-mix/1", "mix": [{"spec": 3}]})")) ==
        Errc::corrupt_data);
  CHECK_THROWS_WITH_AS(
      read_report_mix(write("transform5.json", R"({"schema": "dlprep.profile-mix/1",
      "mix": [{"spec": "png", "ratio": 1}], "transform": 5})"),
                      &channels, &transform),
      doctest::Contains("\"transform\" is not a string"), Error);
  r.transform = "max-side=-1";
  const fs::path bad_transform = write("transform.json", report_to_json(r));
  try {
    read_report_mix(bad_transform, &channels, &transform);
    FAIL("a bad transform was taken");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()).find(bad_transform.string() + ": \"transform\": ") == 0);
  }
}

TEST_CASE("the table and the plot name the formats and the chosen mix") {
  ProfileReport r = sample_report();
  std::string table = report_table(r);
  CHECK(table.find("png") != std::string::npos);
  CHECK(table.find("measured:") != std::string::npos);
  std::string svg = plot_svg(r);
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("share of png") != std::string::npos);
  CHECK(svg.find("chosen") != std::string::npos);
}
