// The convert engine, verify and merge on the real images of sample_data/.
#include "dataset/convert.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/dataset_merge.hpp"
#include "dataset/dataset_verify.hpp"
#include "dataset/manifest.hpp"
#include "dataset/sample_source.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path dir = fs::path(DLPREP_TEST_SCRATCH) / "dataset-convert" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// sample_data/images as an ImageFolder tree: three classes by file name, plus a non-image file.
fs::path make_tree(const fs::path& root) {
  fs::path src = root / "src";
  fs::path images = fs::path(DLPREP_SAMPLE_DATA) / "images";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(images)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const char* classes[] = {"alpha", "beta", "gamma"};
  for (size_t i = 0; i < files.size(); ++i) {
    fs::path dir = src / classes[i % 3];
    fs::create_directories(dir);
    fs::copy_file(files[i], dir / files[i].filename());
  }
  std::ofstream(src / "alpha" / "README.txt") << "not an image\n";
  return src;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ConvertOptions options(const fs::path& src, const fs::path& dst, const std::string& mix) {
  ConvertOptions o;
  o.source = src;
  o.destination = dst;
  o.mix = mix.find(',') == std::string::npos ? std::vector<MixEntry>{{parse_target(mix), 1.0}}
                                             : parse_mix(mix);
  o.threads = 2;
  o.tool = "dlprep test";
  return o;
}

VerifyResult verify(const fs::path& dst, unsigned threads = 2) {
  VerifyOptions v;
  v.dataset = dst;
  v.threads = threads;
  return verify_dataset(v);
}

}  // namespace

TEST_CASE("keys are relative paths without the extension, never leaving the tree") {
  CHECK(key_from_path("cat/img001.png") == "cat/img001");
  CHECK(key_from_path("img.tar.gz") == "img.tar");
  CHECK(key_from_path("/abs/x.jpg") == "abs/x");
  CHECK(key_from_path("../up/x.jpg") == "up/x");
  CHECK(key_from_path("noext") == "noext");
}

TEST_CASE("a folder tree converts to l3 and verifies; a rerun converts nothing") {
  fs::path root = scratch("l3");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  ConvertResult r = convert_dataset(options(src, dst, "l3"));
  CHECK(r.manifest.samples == 14);
  CHECK(r.converted == 14);
  CHECK(r.manifest.classes.size() == 3);
  CHECK(r.manifest.formats["l3"].samples == 14);
  CHECK(r.manifest.complete);
  CHECK(fs::exists(dst / "data" / "alpha"));
  VerifyResult v = verify(dst);
  CHECK(v.ok == 14);
  CHECK(v.mismatched == 0);
  CHECK(v.dataset_problems == 0);

  std::string index = slurp(dst / kIndexName);
  ConvertResult again = convert_dataset(options(src, dst, "l3"));
  CHECK(again.converted == 0);
  CHECK(again.up_to_date == 14);
  CHECK(slurp(dst / kIndexName) == index);
}

TEST_CASE("the index does not depend on the number of threads") {
  fs::path root = scratch("threads");
  fs::path src = make_tree(root);
  auto o1 = options(src, root / "one", "l3:0.5,bmp:0.5");
  o1.threads = 1;
  auto o4 = options(src, root / "four", "l3:0.5,bmp:0.5");
  o4.threads = 4;
  convert_dataset(o1);
  convert_dataset(o4);
  CHECK(slurp(root / "one" / kIndexName) == slurp(root / "four" / kIndexName));
}

TEST_CASE("a mix assigns each class its share and a changed mix reconverts only what moved") {
  fs::path root = scratch("mix");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  ConvertResult r = convert_dataset(options(src, dst, "l3:0.5,bmp:0.5"));
  CHECK(r.manifest.samples == 14);
  for (const auto& [label, per_format] : r.manifest.classes) {
    uint64_t n = 0;
    for (const auto& [f, c] : per_format) n += c;
    for (const auto& [f, c] : per_format) CHECK(std::abs(double(c) - n / 2.0) <= 1.0);
  }
  CHECK(verify(dst).ok == 14);
  ConvertResult all_l3 = convert_dataset(options(src, dst, "l3:1,bmp:0"));
  CHECK(all_l3.converted == r.manifest.formats["bmp"].samples);
  CHECK(all_l3.up_to_date == r.manifest.formats["l3"].samples);
  CHECK(verify(dst).ok == 14);
  // The bmp files that moved to l3 were removed.
  for (const auto& e : fs::recursive_directory_iterator(dst / "data"))
    CHECK(e.path().extension() != ".bmp");
}

TEST_CASE("changed options make that format's files stale") {
  fs::path root = scratch("options");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  convert_dataset(options(src, dst, "l3"));
  ConvertResult r = convert_dataset(options(src, dst, "l3:8"));
  CHECK(r.converted == 14);
  CHECK(convert_dataset(options(src, dst, "l3:8")).converted == 0);
}

TEST_CASE("shards merge into exactly the unsharded dataset") {
  fs::path root = scratch("shards");
  fs::path src = make_tree(root);
  convert_dataset(options(src, root / "all", "l3:0.6,bmp:0.4"));
  MergeOptions m;
  m.output = root / "merged";
  m.tool = "dlprep test";
  uint64_t total = 0;
  for (uint32_t k = 0; k < 3; ++k) {
    auto o = options(src, root / ("part" + std::to_string(k)), "l3:0.6,bmp:0.4");
    o.shard_index = k;
    o.shard_count = 3;
    total += convert_dataset(o).manifest.samples;
    m.inputs.push_back(o.destination);
  }
  CHECK(total == 14);
  std::reverse(m.inputs.begin(), m.inputs.end());
  Manifest merged = merge_datasets(m);
  CHECK(merged.samples == 14);
  CHECK(slurp(root / "merged" / kIndexName) == slurp(root / "all" / kIndexName));
  CHECK(verify(root / "merged").ok == 14);
  // Merging again is idempotent; an incomplete set of shards is refused.
  CHECK(merge_datasets(m).samples == 14);
  m.inputs.pop_back();
  m.output = root / "merged2";
  CHECK_THROWS_AS(merge_datasets(m), Error);
}

TEST_CASE("a corrupt source fails the conversion, or is skipped and counted") {
  fs::path root = scratch("corrupt");
  fs::path src = make_tree(root);
  {
    std::string png = slurp(src / "alpha" / "autumn_320x240.png");
    std::ofstream(src / "beta" / "broken.png", std::ios::binary) << png.substr(0, png.size() / 3);
  }
  fs::path dst = root / "dst";
  try {
    convert_dataset(options(src, dst, "l3"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("broken.png") != std::string::npos);
    CHECK(e.code() == Errc::corrupt_data);
  }
  CHECK_FALSE(read_manifest(dst).complete);
  auto o = options(src, dst, "l3");
  o.skip_errors = true;
  std::vector<std::string> warnings;
  o.warning = [&](const std::string& w) { warnings.push_back(w); };
  ConvertResult r = convert_dataset(o);
  CHECK(r.failed == 1);
  CHECK(r.manifest.samples == 14);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("broken.png") != std::string::npos);
  CHECK(verify(dst).ok == 14);
  o.max_errors = 0;
  CHECK_THROWS_AS(convert_dataset(o), Error);
}

TEST_CASE("verify names a tampered, a missing and a truncated sample") {
  fs::path root = scratch("tamper");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  convert_dataset(options(src, dst, "bmp"));
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dst / "data"))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x55');
  }
  fs::remove(files[1]);
  fs::resize_file(files[2], 10);
  std::vector<std::string> problems;
  VerifyOptions v;
  v.dataset = dst;
  v.threads = 3;
  v.problem = [&](const Error& e) {
    CHECK(e.code() == Errc::mismatch);
    problems.push_back(e.what());
  };
  VerifyResult r = verify_dataset(v);
  CHECK(r.mismatched == 3);
  CHECK(r.ok == 11);
  std::sort(problems.begin(), problems.end());
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].find(files[0].string()) == 0);
  CHECK(problems[0].find("crc32") != std::string::npos);
  CHECK(problems[1].find("missing") != std::string::npos);
  CHECK(problems[2].find("bytes") != std::string::npos);
  // A rerun of convert repairs all three.
  ConvertResult repair = convert_dataset(options(src, dst, "bmp"));
  CHECK(repair.converted >= 2);
  CHECK(verify(dst).ok == 14);
}

TEST_CASE("a list file with labels is a source; a dataset is a source") {
  fs::path root = scratch("list");
  fs::path images = fs::path(DLPREP_SAMPLE_DATA) / "images";
  {
    std::ofstream list(root / "list.txt");
    list << "# path<TAB>label\n";
    list << (images / "kay_256x256.png").string() << "\tdog\n";
    list << (images / "kite_199x301.png").string() << "\tcat\n\n";
    list << (images / "onestandsout_161x121.bmp").string() << "\n";
  }
  ConvertResult r = convert_dataset(options(root / "list.txt", root / "dst", "l3"));
  CHECK(r.manifest.samples == 3);
  CHECK(r.manifest.source_kind == "list");
  CHECK(r.manifest.classes.count("dog") == 1);
  CHECK(r.manifest.classes.count("") == 1);
  ConvertResult again = convert_dataset(options(root / "dst", root / "bmp", "bmp"));
  CHECK(again.manifest.samples == 3);
  CHECK(again.manifest.source_kind == "dataset");
  CHECK(verify(root / "bmp").ok == 3);
}

TEST_CASE("a non-dataset destination with files in it is refused") {
  fs::path root = scratch("refuse");
  fs::path src = make_tree(root);
  fs::create_directories(root / "busy");
  std::ofstream(root / "busy" / "keep.txt") << "mine\n";
  try {
    convert_dataset(options(src, root / "busy", "l3"));
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::invalid_argument);
  }
  CHECK(fs::exists(root / "busy" / "keep.txt"));
}

TEST_CASE("a destination inside the source tree is not read back as source") {
  fs::path root = scratch("inside");
  fs::path src = make_tree(root);
  ConvertResult r = convert_dataset(options(src, src / "out", "bmp"));
  CHECK(r.manifest.samples == 14);
  ConvertResult again = convert_dataset(options(src, src / "out", "bmp"));
  CHECK(again.manifest.samples == 14);
  CHECK(again.up_to_date == 14);
  // Another dataset nested in the tree is skipped as well.
  ConvertResult other = convert_dataset(options(src, root / "elsewhere", "l3"));
  CHECK(other.manifest.samples == 14);
}
