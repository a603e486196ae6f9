// The convert engine, verify and merge on the real images of sample_data/.
#include "dataset/convert.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/assign.hpp"
#include "dataset/dataset_merge.hpp"
#include "dataset/dataset_verify.hpp"
#include "dataset/manifest.hpp"
#include "dataset/sample_source.hpp"
#include "image/codec.hpp"
#include "test_scratch.hpp"

using namespace dlprep;
using namespace dlprep::dataset;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_scratch::fresh("dataset-convert", name); }

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
  // Names in other encodings: each byte of an invalid UTF-8 sequence as %XX (core/utf8.hpp).
  CHECK(key_from_path("caf\xe9/x.png") == "caf%E9/x");
}

TEST_CASE("a Latin-1 file name keeps its file: the key and the data file are escaped alike") {
  fs::path root = scratch("latin1");
  fs::path images = fs::path(DLPREP_SAMPLE_DATA) / "images";
  fs::create_directories(root / "src" / "caf\xe9");
  fs::create_directories(root / "src" / "caf\xe8");
  fs::copy_file(images / "kay_256x256.png", root / "src" / "caf\xe9" / "d\xe9j\xe0.png");
  fs::copy_file(images / "kite_199x301.png", root / "src" / "caf\xe8" / "x.png");
  ConvertResult r = convert_dataset(options(root / "src", root / "dst", "l3"));
  CHECK(r.manifest.samples == 2);
  CHECK(r.manifest.classes.size() == 2);  // two folders, two classes (not one U+FFFD name)
  CHECK(fs::exists(root / "dst" / "data" / "caf%E9" / "d%E9j%E0.l3"));
  // The index names each source apart, escaped as the key is (not both as U+FFFD).
  std::ifstream index(root / "dst" / "samples.jsonl");
  const std::string text((std::istreambuf_iterator<char>(index)), std::istreambuf_iterator<char>());
  CHECK(text.find("caf%E9/d%E9j%E0.png\"") != std::string::npos);
  CHECK(text.find("caf%E8/x.png\"") != std::string::npos);
  CHECK(verify(root / "dst").ok == 2);
  CHECK(convert_dataset(options(root / "src", root / "dst", "l3")).up_to_date == 2);
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

TEST_CASE("a rerun removes the files of samples no longer in the source, and only those") {
  fs::path root = scratch("orphans");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  convert_dataset(options(src, dst, "l3"));
  REQUIRE(fs::exists(dst / "data" / "alpha" / "autumn_320x240.l3"));
  fs::remove(src / "alpha" / "autumn_320x240.png");
  std::ofstream(dst / "data" / "mine.txt") << "not the dataset's\n";
  // What a run killed by SIGKILL left under temporary names goes too.
  std::ofstream(dst / ".samples.jsonl.tmp.AbC123") << "{";
  std::ofstream(dst / "data" / ".shard-000000.tar.tmp.XyZ789") << "";
  ConvertResult r = convert_dataset(options(src, dst, "l3"));
  CHECK_FALSE(fs::exists(dst / ".samples.jsonl.tmp.AbC123"));
  CHECK_FALSE(fs::exists(dst / "data" / ".shard-000000.tar.tmp.XyZ789"));
  CHECK(r.removed == 1);
  CHECK(r.manifest.samples == 13);
  CHECK_FALSE(fs::exists(dst / "data" / "alpha" / "autumn_320x240.l3"));
  CHECK(fs::exists(dst / "data" / "mine.txt"));  // listed by no index: not this tool's to remove
  VerifyResult v = verify(dst);
  CHECK(v.ok == 13);
  CHECK(v.dataset_problems == 1);  // verify names it: data/ should hold the dataset alone
  fs::remove(dst / "data" / "mine.txt");
  CHECK(verify(dst).dataset_problems == 0);

  // An index that lists a file outside data/ (a hostile or hand-edited dataset) removes nothing,
  // through ".." or through a link to a folder outside.
  fs::path outside = root / "outside.l3";
  fs::create_directories(dst / "data" / "alpha");
  fs::create_directory_symlink(root, dst / "data" / "link");
  for (const char* hostile : {"../outside.l3", "data/link/outside.l3"}) {
    std::ofstream(outside) << "keep me\n";
    std::string index = slurp(dst / kIndexName);
    const std::string field = "\"location\":\"";
    size_t at = index.find(field + "data/alpha/");
    REQUIRE(at != std::string::npos);
    at += field.size();
    index.replace(at, index.find('"', at) - at, hostile);
    std::ofstream(dst / kIndexName, std::ios::binary) << index;
    convert_dataset(options(src, dst, "l3"));
    CHECK_MESSAGE(fs::exists(outside), hostile);
  }

  // data/ itself a link to a folder elsewhere: what it holds is not the dataset's to remove.
  fs::path elsewhere = root / "elsewhere";
  fs::rename(dst / "data", elsewhere);
  fs::create_directory_symlink(elsewhere, dst / "data");
  REQUIRE(fs::exists(elsewhere / "beta"));
  std::vector<fs::path> beta;
  for (const auto& e : fs::directory_iterator(elsewhere / "beta")) beta.push_back(e.path());
  REQUIRE_FALSE(beta.empty());
  fs::remove_all(src / "beta");
  CHECK(convert_dataset(options(src, dst, "l3")).removed == 0);
  for (const auto& file : beta) CHECK_MESSAGE(fs::exists(file), file);
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

TEST_CASE("a transform resizes every sample, is recorded, and a changed one reconverts all") {
  fs::path root = scratch("transform");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  ConvertOptions o = options(src, dst, "bmp");
  o.transform.resize = {16, 9};
  o.transform.center_crop = true;
  ConvertResult r = convert_dataset(o);
  CHECK(r.converted == 14);  // the bmp source too: its pixels changed, so it is not copied
  CHECK(r.manifest.transform == "resize=16x9,center-crop");
  CHECK(read_manifest(dst).transform == "resize=16x9,center-crop");
  IndexReader reader(dst / kIndexName);
  SampleRecord record;
  int n = 0;
  for (; reader.next(record); ++n) CHECK((record.shape.width == 16 && record.shape.height == 9));
  CHECK(n == 14);
  CHECK(verify(dst).ok == 14);
  CHECK(convert_dataset(o).up_to_date == 14);
  o.transform.resize = {8, 8};
  CHECK(convert_dataset(o).converted == 14);
  ConvertResult plain = convert_dataset(options(src, dst, "bmp"));
  CHECK(plain.converted == 14);
  CHECK(plain.manifest.transform.empty());
  o.transform.max_side = 4;  // with resize: inconsistent
  CHECK_THROWS_AS(convert_dataset(o), Error);
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
  Manifest merged = merge_datasets(m).manifest;
  CHECK(merged.samples == 14);
  CHECK(slurp(root / "merged" / kIndexName) == slurp(root / "all" / kIndexName));
  CHECK(verify(root / "merged").ok == 14);
  // Merging again is idempotent; an incomplete set of shards is refused.
  CHECK(merge_datasets(m).manifest.samples == 14);
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
  // alpha/README.txt is no image: left out and counted, before any sample is converted.
  CHECK(r.not_images == 1);
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0].find("broken.png") != std::string::npos);
  CHECK(warnings[1] == "1 file in SRC is not an image by its contents and left out (the first: " +
                           (src / "alpha" / "README.txt").string() + ")");
  CHECK(verify(dst).ok == 14);
  o.max_errors = 0;
  CHECK_THROWS_AS(convert_dataset(o), Error);
}

TEST_CASE("an output that cannot be written stops the run, even with --on-error skip") {
  fs::path root = scratch("unwritable");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  auto o = options(src, dst, "l3");
  convert_dataset(o);
  // A full disk for one sample: its file is a link to /dev/full, which AtomicFile writes in place.
  fs::path full = dst / "data" / "alpha" / "autumn_320x240.l3";
  REQUIRE(fs::exists(full));
  fs::remove(full);
  fs::create_symlink("/dev/full", full);
  o.force = true;
  o.skip_errors = true;
  std::vector<std::string> warnings;
  o.warning = [&](const std::string& w) { warnings.push_back(w); };
  try {
    convert_dataset(o);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::io);
    CHECK(std::string(e.what()).find("No space left on device") != std::string::npos);
    CHECK(std::string(e.what()).find("autumn_320x240") != std::string::npos);
  }
  CHECK(warnings.empty());
  CHECK_FALSE(read_manifest(dst).complete);  // incomplete, to resume; never "complete" and short
  fs::remove(full);
  o.force = false;
  ConvertResult r = convert_dataset(o);
  CHECK(r.failed == 0);
  CHECK(r.manifest.complete);
  CHECK(verify(dst).ok == r.manifest.samples);
}

TEST_CASE("an image in a format dlprep does not read is a failing sample, not left out") {
  fs::path root = scratch("unreadable");
  fs::path src = make_tree(root);
  std::ofstream(src / "beta" / "anim.gif", std::ios::binary) << "GIF89a\x01\0\x01\0\0\0\0;";
  std::ofstream(src / "beta" / "notes.bin", std::ios::binary) << "GIF7 is no magic";
  try {
    convert_dataset(options(src, root / "dst", "l3"));
    FAIL("the GIF was left out");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::unsupported);
    CHECK(std::string(e.what()).find("anim.gif: a GIF image: not a format dlprep reads") !=
          std::string::npos);
  }
  auto o = options(src, root / "dst", "l3");
  o.skip_errors = true;
  ConvertResult r = convert_dataset(o);
  CHECK(r.failed == 1);
  CHECK(r.manifest.samples == 14);
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

TEST_CASE("a list line with a third field is an error naming the list and the line") {
  fs::path root = scratch("list_fields");
  fs::path images = fs::path(DLPREP_SAMPLE_DATA) / "images";
  {
    std::ofstream list(root / "list.tsv");
    list << (images / "kay_256x256.png").string() << "\tcat\n";
    list << (images / "kite_199x301.png").string() << "\tcat\ttrain\n";
  }
  try {
    convert_dataset(options(root / "list.tsv", root / "dst", "l3"));
    FAIL("a label with a tab in it was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()) ==
          (root / "list.tsv").string() +
              ":2: more than two tab-separated fields: the format is PATH[<TAB>LABEL] (a label "
              "holds no tab)");
  }
  CHECK(!fs::exists(root / "dst" / "dataset.json"));
}

TEST_CASE("a list from a pipe is read once and converts whole; binary bytes are no list") {
  fs::path root = scratch("list_pipe");
  fs::path images = fs::path(DLPREP_SAMPLE_DATA) / "images";
  const std::string list = (images / "kay_256x256.png").string() + "\tdog\n" +
                           (images / "kite_199x301.png").string() + "\tcat\n";
  fs::path fifo = root / "list.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The writer opens the FIFO once: a reader that opened it twice would see the end the second
  // time (the mix assignment and the conversion each read the source).
  std::thread writer([&] {
    write_file_atomic(fifo, ByteSpan(reinterpret_cast<const uint8_t*>(list.data()), list.size()));
  });
  ConvertResult r = convert_dataset(options(fifo, root / "dst", "l3"));
  writer.join();
  CHECK(r.manifest.samples == 2);
  CHECK(r.manifest.source_kind == "list");
  CHECK(verify(root / "dst").ok == 2);

  std::string png = slurp(images / "kay_256x256.png");
  std::ofstream(root / "image.dat", std::ios::binary) << png;  // no image extension: sniffed
  try {
    convert_dataset(options(root / "image.dat", root / "dst2", "l3"));
    FAIL("an image was accepted as a source");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::invalid_argument);  // an image, not a list
  }
  std::string garbage = png.substr(8, 64);
  std::ofstream(root / "garbage.txt", std::ios::binary) << "x.png\n" << garbage << "\n";
  try {
    convert_dataset(options(root / "garbage.txt", root / "dst3", "l3"));
    FAIL("binary bytes were read as paths");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()).find("control characters in a path: not a list file") !=
          std::string::npos);
  }
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

namespace {

ConvertOptions tar_options(const fs::path& src, const fs::path& dst, const std::string& mix,
                           uint64_t max_shard_bytes) {
  ConvertOptions o = options(src, dst, mix);
  o.max_shard_bytes = max_shard_bytes;
  return o;
}

// The records without where they are stored: what sharded and unsharded runs share.
std::string records_without_location(const fs::path& index) {
  std::string out;
  IndexReader reader(index);
  SampleRecord r;
  while (reader.next(r)) {
    r.location.clear();
    r.offset.reset();
    out += format_record(r) + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("a tar-layout conversion verifies and a rerun keeps every shard") {
  fs::path root = scratch("tar");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  ConvertResult r = convert_dataset(tar_options(src, dst, "bmp", 400000));
  CHECK(r.manifest.layout == "tar");
  CHECK(r.manifest.samples == 14);
  CHECK(r.manifest.shard_files >= 3);
  CHECK(r.manifest.labels == std::vector<std::string>{"alpha", "beta", "gamma"});
  CHECK(fs::exists(dst / "data" / "shard-000000.tar"));
  CHECK_FALSE(fs::exists(dst / "data" / "alpha"));
  VerifyResult v = verify(dst);
  CHECK(v.ok == 14);
  CHECK(v.dataset_problems == 0);
  CHECK(read_manifest(dst).shard_files == r.manifest.shard_files);

  std::string index = slurp(dst / kIndexName);
  auto shard_mtime = mtime_ns(dst / "data" / "shard-000001.tar");
  ConvertResult again = convert_dataset(tar_options(src, dst, "bmp", 400000));
  CHECK(again.converted == 0);
  CHECK(again.up_to_date == 14);
  CHECK(slurp(dst / kIndexName) == index);
  CHECK(mtime_ns(dst / "data" / "shard-000001.tar") == shard_mtime);

  // Without the index (an interrupted first run), the records are rebuilt from the shards.
  fs::remove(dst / kIndexName);
  ConvertResult rebuilt = convert_dataset(tar_options(src, dst, "bmp", 400000));
  CHECK(rebuilt.converted == 0);
  CHECK(slurp(dst / kIndexName) == index);

  // The same samples with another thread count give the same shards and index.
  auto o1 = tar_options(src, root / "one", "bmp", 400000);
  o1.threads = 1;
  convert_dataset(o1);
  CHECK(slurp(root / "one" / kIndexName) == index);
  CHECK(slurp(root / "one" / "data" / "shard-000000.tar") ==
        slurp(dst / "data" / "shard-000000.tar"));

  // A touched source: its shard and the ones after it are rewritten, the ones before kept.
  std::vector<fs::path> sources;
  for (const auto& e : fs::recursive_directory_iterator(src))
    if (e.is_regular_file() && e.path().extension() != ".txt") sources.push_back(e.path());
  std::sort(sources.begin(), sources.end());  // the walk's order: the last one is in the last shard
  auto first_mtime = mtime_ns(dst / "data" / "shard-000000.tar");
  fs::last_write_time(sources.back(), fs::file_time_type::clock::now());
  ConvertResult touched = convert_dataset(tar_options(src, dst, "bmp", 400000));
  CHECK(touched.converted >= 1);
  CHECK(touched.converted < 14);
  CHECK(mtime_ns(dst / "data" / "shard-000000.tar") == first_mtime);
  CHECK(verify(dst).ok == 14);
  CHECK(slurp(dst / kIndexName) == index);
}

// Flips one byte of a file and gives it back its modification time: bit rot, or cp -p of a
// damaged copy. Only reading the bytes can find it.
void damage_keeping_mtime(const fs::path& file, uint64_t offset) {
  auto mtime = fs::last_write_time(file);
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = static_cast<char>(f.get());
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x10));
  f.close();
  fs::last_write_time(file, mtime);
}

TEST_CASE("--recheck mends damage that kept its modification time, converting only that sample") {
  fs::path root = scratch("recheck");
  fs::path src = make_tree(root);
  for (bool tar : {false, true}) {
    CAPTURE(tar);
    fs::path dst = root / (tar ? "tar" : "files");
    auto opts = [&] {
      return tar ? tar_options(src, dst, "bmp", 400000) : options(src, dst, "bmp");
    };
    convert_dataset(opts());
    std::string index = slurp(dst / kIndexName);
    // The sample of the index's middle line: in the tar layout, not in the first shard.
    std::istringstream lines(index);
    std::string line;
    for (int i = 0; i <= 7; ++i) std::getline(lines, line);
    SampleRecord damaged = parse_record(line);
    damage_keeping_mtime(dst / damaged.location, damaged.offset.value_or(0) + damaged.bytes / 2);

    CHECK(convert_dataset(opts()).converted == 0);  // mtimes say up to date
    CHECK(verify(dst).mismatched == 1);

    ConvertOptions recheck = opts();
    recheck.recheck = true;
    ConvertResult mended = convert_dataset(recheck);
    if (tar) {
      // Its shard is rewritten from it on (the samples before it copied), the shards before kept.
      CHECK(mended.converted >= 1);
      CHECK(mended.converted < 14);
    } else {
      CHECK(mended.converted == 1);
    }
    CHECK(verify(dst).ok == 14);
    CHECK(slurp(dst / kIndexName) == index);
    CHECK(convert_dataset(recheck).converted == 0);  // intact: nothing to do
  }
}

TEST_CASE("a source replaced while its shard is written fails the run; the rerun converts it") {
  fs::path root = scratch("replaced-source");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  std::vector<fs::path> sources;
  for (const auto& e : fs::recursive_directory_iterator(src))
    if (e.is_regular_file() && e.path().extension() != ".txt") sources.push_back(e.path());
  std::sort(sources.begin(), sources.end());  // the walk's order: the first sample is sources[0]
  const fs::path first = sources[0], other = sources[1];
  ConvertOptions o = tar_options(src, dst, "bmp", 100000000);  // one shard for all
  o.threads = 1;
  bool replaced = false;
  o.progress = [&](const ProgressEvent& e) {
    // Once the first sample is in the shard, its source is replaced (written anew, renamed over
    // it, as editors and rsync do): the shard, finished later, is newer than the new file.
    if (e.what == "convert-dataset" && e.done == 1 && !replaced) {
      fs::copy_file(other, first.string() + ".new");
      fs::rename(first.string() + ".new", first);
      replaced = true;
    }
  };
  try {
    convert_dataset(o);
    FAIL("a shard with a replaced source was kept");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(first.string() +
                                     ": changed while its shard was being written") == 0);
  }
  CHECK(replaced);
  CHECK_FALSE(fs::exists(dst / "data" / "shard-000000.tar"));
  o.progress = nullptr;
  CHECK(convert_dataset(o).converted == 14);
  CHECK(verify(dst).ok == 14);
  // The index records the new source's image (the other file's shape).
  std::ifstream index(dst / kIndexName);
  std::string line;
  std::getline(index, line);
  const SampleRecord r = parse_record(line);
  MappedFile again(other);
  CHECK(r.shape == image::sniff_codec_or_throw(again.bytes()).probe(again.bytes()).shape);
}

TEST_CASE("changing the layout or the shard size removes the other layout's data") {
  fs::path root = scratch("tar-switch");
  fs::path src = make_tree(root);
  fs::path dst = root / "dst";
  convert_dataset(options(src, dst, "l3"));
  CHECK(fs::exists(dst / "data" / "alpha"));
  convert_dataset(tar_options(src, dst, "l3", 1 << 20));
  CHECK_FALSE(fs::exists(dst / "data" / "alpha"));
  CHECK(verify(dst).ok == 14);
  uint64_t before = read_manifest(dst).shard_files;
  ConvertResult smaller = convert_dataset(tar_options(src, dst, "l3", 200000));
  CHECK(smaller.converted == 14);
  CHECK(smaller.manifest.shard_files > before);
  CHECK(verify(dst).ok == 14);
  ConvertResult back = convert_dataset(options(src, dst, "l3"));
  CHECK(back.converted == 14);
  for (const auto& e : fs::recursive_directory_iterator(dst / "data"))
    CHECK(e.path().extension() != ".tar");
  CHECK(verify(dst).ok == 14);
  ConvertResult forced = convert_dataset([&] {
    auto o = tar_options(src, dst, "l3", 200000);
    o.force = true;
    return o;
  }());
  CHECK(forced.converted == 14);
}

TEST_CASE("tar parts merge into the unsharded samples; a tar dataset is a source") {
  fs::path root = scratch("tar-parts");
  fs::path src = make_tree(root);
  convert_dataset(tar_options(src, root / "all", "l3:0.6,bmp:0.4", 300000));
  MergeOptions m;
  m.output = root / "merged";
  m.tool = "dlprep test";
  for (uint32_t k = 0; k < 3; ++k) {
    auto o = tar_options(src, root / ("part" + std::to_string(k)), "l3:0.6,bmp:0.4", 300000);
    o.shard_index = k;
    o.shard_count = 3;
    convert_dataset(o);
    CHECK(fs::exists(o.destination / "data" / ("part-" + std::to_string(k) + "-of-3-000000.tar")));
    m.inputs.push_back(o.destination);
  }
  Manifest merged = merge_datasets(m).manifest;
  CHECK(merged.samples == 14);
  CHECK(merged.layout == "tar");
  CHECK(records_without_location(root / "merged" / kIndexName) ==
        records_without_location(root / "all" / kIndexName));
  CHECK(verify(root / "merged").ok == 14);
  // Parts with another shard size do not belong together.
  auto odd = tar_options(src, root / "odd", "l3:0.6,bmp:0.4", 100000);
  odd.shard_index = 2;
  odd.shard_count = 3;
  convert_dataset(odd);
  m.inputs.back() = root / "odd";
  m.output = root / "merged2";
  CHECK_THROWS_AS(merge_datasets(m), Error);

  // The tar dataset as the source of a file tree and of another tar dataset.
  ConvertResult files = convert_dataset(options(root / "all", root / "png", "png"));
  CHECK(files.manifest.samples == 14);
  CHECK(verify(root / "png").ok == 14);
  ConvertResult tar = convert_dataset(tar_options(root / "merged", root / "retar", "bmp", 1 << 20));
  CHECK(tar.manifest.samples == 14);
  CHECK(verify(root / "retar").ok == 14);
}

TEST_CASE("--shuffle orders the samples by the seed, mixing the classes; its parts merge") {
  fs::path root = scratch("shuffle");
  fs::path src = make_tree(root);
  const auto index_of = [](const fs::path& dst) {
    std::vector<SampleRecord> records;
    IndexReader reader(dst / kIndexName);
    for (SampleRecord r; reader.next(r);) records.push_back(r);
    return records;
  };
  ConvertOptions o = tar_options(src, root / "all", "l3:0.6,bmp:0.4", 300000);
  o.shuffle = true;
  o.seed = 7;
  ConvertResult r = convert_dataset(o);
  CHECK(r.manifest.shuffled);
  CHECK(slurp(o.destination / kManifestName).find("\"order\": \"shuffled\"") != std::string::npos);
  const std::vector<SampleRecord> records = index_of(o.destination);
  REQUIRE(records.size() == 14);
  // In shuffle_rank order, positions counted in it; the classes not one after the other.
  std::vector<std::string> labels;
  for (size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].ordinal == i);
    labels.push_back(records[i].label);
    if (i > 0) CHECK(shuffle_rank(records[i - 1].key, 7) <= shuffle_rank(records[i].key, 7));
  }
  CHECK_FALSE(std::is_sorted(labels.begin(), labels.end()));
  CHECK(verify(o.destination).ok == 14);
  // A rerun keeps every shard and writes nothing; another seed is another order.
  const std::string manifest = slurp(o.destination / kManifestName);
  CHECK(convert_dataset(o).converted == 0);
  CHECK(slurp(o.destination / kManifestName) == manifest);
  ConvertOptions other = o;
  other.destination = root / "seed8";
  other.seed = 8;
  convert_dataset(other);
  std::vector<std::string> keys7, keys8;
  for (const auto& rec : records) keys7.push_back(rec.key);
  for (const auto& rec : index_of(other.destination)) keys8.push_back(rec.key);
  CHECK(keys7 != keys8);
  // The same samples as without --shuffle, in another order, with the same formats.
  ConvertOptions plain = o;
  plain.shuffle = false;
  plain.destination = root / "plain";
  convert_dataset(plain);
  std::map<std::string, std::string> format_of;
  for (const auto& rec : index_of(plain.destination)) format_of[rec.key] = rec.format;
  for (const auto& rec : records) CHECK(format_of.at(rec.key) == rec.format);

  // Parts shuffled alike merge into the unsharded dataset; a part in source order is refused.
  MergeOptions m;
  m.output = root / "merged";
  m.tool = "dlprep test";
  for (uint32_t k = 0; k < 3; ++k) {
    ConvertOptions part = o;
    part.destination = root / ("part" + std::to_string(k));
    part.shard_index = k;
    part.shard_count = 3;
    convert_dataset(part);
    m.inputs.push_back(part.destination);
  }
  CHECK(merge_datasets(m).manifest.shuffled);
  CHECK(records_without_location(root / "merged" / kIndexName) ==
        records_without_location(o.destination / kIndexName));
  ConvertOptions unshuffled = o;
  unshuffled.shuffle = false;
  unshuffled.destination = root / "unshuffled";
  unshuffled.shard_index = 2;
  unshuffled.shard_count = 3;
  convert_dataset(unshuffled);
  m.inputs.back() = unshuffled.destination;
  m.output = root / "merged2";
  CHECK_THROWS_WITH_AS(merge_datasets(m), doctest::Contains("order: shuffled vs source"), Error);
}

TEST_CASE("a hostile tar index is corrupt data naming its line, never a crash") {
  fs::path root = scratch("tar-hostile");
  fs::path src = make_tree(root);
  fs::path ds = root / "ds";
  convert_dataset(tar_options(src, ds, "bmp", uint64_t{1} << 30));  // one shard
  std::string index = slurp(ds / kIndexName);
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < index.size();) {
    size_t nl = index.find('\n', pos);
    lines.push_back(index.substr(pos, nl - pos));
    pos = nl + 1;
  }
  auto with_line = [&](size_t n, const std::function<void(SampleRecord&)>& change) {
    std::string text;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i == n) {
        SampleRecord r = parse_record(lines[i]);
        change(r);
        text += format_record(r) + "\n";
      } else {
        text += lines[i] + "\n";
      }
    }
    std::ofstream(ds / kIndexName, std::ios::binary) << text;
  };
  struct Case {
    const char* what;
    std::function<void(SampleRecord&)> change;
  } cases[] = {
      {"past the end", [](SampleRecord& r) { r.offset = uint64_t{1} << 40; }},
      {"huge size", [](SampleRecord& r) { r.bytes = ~uint64_t{0}; }},
      {"unaligned", [](SampleRecord& r) { *r.offset += 3; }},
      {"overlapping", [&](SampleRecord& r) { r.offset = parse_record(lines[2]).offset; }},
      {"zero", [](SampleRecord& r) { r.offset = 0; }},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    with_line(3, c.change);
    try {
      convert_dataset(options(ds, root / "out", "png"));
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::corrupt_data);
      CHECK(std::string(e.what()).find(kIndexName + std::string(":4")) != std::string::npos);
    }
    VerifyResult v = verify(ds);
    CHECK(v.ok == 13);
    CHECK(v.mismatched == 1);
  }
  // An index that names another member there: that sample fails, naming the shard and member.
  with_line(3, [&](SampleRecord& r) { r.key += "x"; });
  auto o = options(ds, root / "out2", "png");
  o.skip_errors = true;
  std::vector<std::string> warnings;
  o.warning = [&](const std::string& w) { warnings.push_back(w); };
  ConvertResult r = convert_dataset(o);
  CHECK(r.failed == 1);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("shard-000000.tar(") != std::string::npos);
  CHECK(warnings[0].find("is for") != std::string::npos);
}

namespace {

// The --shard K/COUNT parts made by `make(ROOT/PREFIXK)`, and merge options for them.
MergeOptions parts_of(const fs::path& root, const std::string& prefix, uint32_t count,
                      const std::function<ConvertOptions(fs::path)>& make) {
  MergeOptions m;
  m.tool = "dlprep test";
  for (uint32_t k = 0; k < count; ++k) {
    ConvertOptions o = make(root / (prefix + std::to_string(k)));
    o.shard_index = k;
    o.shard_count = count;
    convert_dataset(o);
    m.inputs.push_back(o.destination);
  }
  return m;
}

std::vector<std::string> problems_of(const fs::path& dataset) {
  std::vector<std::string> problems;
  VerifyOptions v;
  v.dataset = dataset;
  v.threads = 2;
  v.problem = [&](const Error& e) { problems.push_back(e.what()); };
  verify_dataset(v);
  return problems;
}

bool any_contains(const std::vector<std::string>& texts, const std::string& part) {
  return std::any_of(texts.begin(), texts.end(),
                     [&](const std::string& t) { return t.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("a merge into an earlier merge's output removes the files its new index does not name") {
  fs::path root = scratch("remerge");
  fs::path src = make_tree(root);
  auto files = [&](const fs::path& dst) { return options(src, dst, "bmp"); };
  MergeOptions m = parts_of(root, "part", 3, files);
  m.output = root / "merged";
  CHECK(merge_datasets(m).removed == 0);
  REQUIRE(fs::exists(m.output / "data" / "alpha" / "autumn_320x240.bmp"));
  fs::remove(src / "alpha" / "autumn_320x240.png");
  std::vector<fs::path> gamma;  // a whole class removed: its folder goes too (ImageFolder)
  for (const auto& e : fs::directory_iterator(src / "gamma")) gamma.push_back(e.path());
  fs::remove_all(src / "gamma");
  m = parts_of(root, "part", 3, files);
  m.output = root / "merged";
  MergeResult again = merge_datasets(m);
  CHECK(again.removed == 1 + gamma.size());
  CHECK(again.manifest.samples == 13 - gamma.size());
  CHECK_FALSE(fs::exists(m.output / "data" / "alpha" / "autumn_320x240.bmp"));
  CHECK_FALSE(fs::exists(m.output / "data" / "gamma"));
  CHECK(problems_of(m.output).empty());

  // Tar parts: a merge of 2 parts into the output of a merge of 3 leaves no part-K-of-3 shard,
  // which a loader globbing data/*.tar would read twice over.
  auto tar = [&](const fs::path& dst) { return tar_options(src, dst, "bmp", 300000); };
  MergeOptions three = parts_of(root, "three", 3, tar);
  three.output = root / "tar-merged";
  merge_datasets(three);
  // And the shard an interrupted merge of 4 parts had placed, which no index names.
  fs::copy_file(three.inputs[0] / "data" / "part-0-of-3-000000.tar",
                three.output / "data" / "part-0-of-4-000000.tar");
  MergeOptions two = parts_of(root, "two", 2, tar);
  two.output = root / "tar-merged";
  MergeResult r = merge_datasets(two);
  CHECK(r.removed >= 4);
  for (const auto& e : fs::directory_iterator(two.output / "data")) {
    CHECK_MESSAGE(e.path().filename().string().find("-of-3-") == std::string::npos, e.path());
    CHECK_MESSAGE(e.path().filename().string().find("-of-4-") == std::string::npos, e.path());
  }
  CHECK(problems_of(two.output).empty());
  CHECK(verify(two.output).ok == 13 - gamma.size());
}

TEST_CASE("merge sees 'src' and 'src/' as one source, and names what differs between parts") {
  fs::path root = scratch("merge-identity");
  fs::path src = make_tree(root);
  ConvertOptions a = options(src, root / "a", "png");
  a.shard_count = 2;
  convert_dataset(a);
  ConvertOptions b = options(src.string() + "/", root / "b", "png");
  b.shard_index = 1;
  b.shard_count = 2;
  convert_dataset(b);
  MergeOptions m;
  m.tool = "dlprep test";
  m.inputs = {a.destination, b.destination};
  m.output = root / "merged";
  CHECK(merge_datasets(m).manifest.samples == 14);
  // A part converted from a copy of the source at another path belongs too once that path is
  // not here (another machine's): the samples it saw are the same. While both are here, they are
  // two sources with the same keys (a dataset at another size, say), which do not merge.
  fs::copy(src, root / "copy", fs::copy_options::recursive);
  ConvertOptions copied = options(root / "copy", root / "b-of-copy", "png");
  copied.shard_index = 1;
  copied.shard_count = 2;
  convert_dataset(copied);
  m.inputs = {a.destination, copied.destination};
  m.output = root / "merged-copy";
  CHECK_THROWS_WITH_AS(merge_datasets(m), doctest::Contains("(source: directory '"), Error);
  fs::remove_all(root / "copy");
  CHECK(merge_datasets(m).manifest.samples == 14);
  // Its records name their source files as one run from the first part's source would have.
  CHECK(slurp(m.output / kIndexName) == slurp(root / "merged" / kIndexName));
  // So with the first part's source spelled src/. : its spelling throughout, as in one run.
  ConvertOptions dotted = options(src.string() + "/.", root / "dotted", "png");
  dotted.shard_count = 2;
  convert_dataset(dotted);
  ConvertOptions whole = options(src.string() + "/.", root / "whole", "png");
  convert_dataset(whole);
  m.inputs = {dotted.destination, b.destination};
  m.output = root / "merged-dotted";
  merge_datasets(m);
  CHECK(slurp(m.output / kIndexName) == slurp(whole.destination / kIndexName));

  ConvertOptions c = options(src, root / "c", "png");
  c.shard_index = 1;
  c.shard_count = 2;
  c.seed = 7;
  convert_dataset(c);
  m.inputs = {a.destination, c.destination};
  m.output = root / "merged2";
  try {
    merge_datasets(m);
    FAIL("parts of two seeds were merged");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::invalid_argument);
    CHECK(std::string(e.what()).find("(seed: 0 vs 7)") != std::string::npos);
  }
}

TEST_CASE("a re-merge that finds a part's file missing leaves the earlier output as it was") {
  fs::path root = scratch("remerge-missing");
  fs::path src = make_tree(root);
  MergeOptions m =
      parts_of(root, "part", 2, [&](const fs::path& d) { return options(src, d, "png"); });
  m.output = root / "merged";
  merge_datasets(m);
  const std::string manifest = slurp(m.output / kManifestName);
  // Part 0's files rewritten (so that a merge would place them again), and one of part 1's lost.
  IndexReader part0(m.inputs[0] / kIndexName), part1(m.inputs[1] / kIndexName);
  SampleRecord r;
  while (part0.next(r)) {
    const fs::path file = m.inputs[0] / r.location;
    fs::copy_file(file, root / "rewritten", fs::copy_options::overwrite_existing);
    fs::rename(root / "rewritten", file);
  }
  REQUIRE(part1.next(r));
  fs::remove(m.inputs[1] / r.location);
  try {
    merge_datasets(m);
    FAIL("merged without a part's file");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(r.location) != std::string::npos);
  }
  CHECK(slurp(m.output / kManifestName) == manifest);
  CHECK(problems_of(m.output).empty());
}

TEST_CASE("merge lists a few missing shards, whatever count a damaged dataset.json claims") {
  fs::path root = scratch("merge-count");
  fs::path src = make_tree(root);
  MergeOptions m =
      parts_of(root, "part", 2, [&](const fs::path& d) { return options(src, d, "png"); });
  m.inputs.pop_back();
  m.output = root / "merged";
  const fs::path manifest = m.inputs[0] / kManifestName;
  std::string text = slurp(manifest);
  const std::string count = "\"shard_count\": 2";
  REQUIRE(text.find(count) != std::string::npos);
  text.replace(text.find(count), count.size(), "\"shard_count\": 4294967295");
  std::ofstream(manifest, std::ios::binary) << text;
  // Sized by that count, the check took 16 GiB and a string of every shard number.
  CHECK_THROWS_WITH_AS(merge_datasets(m),
                       "shard(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 4294967284 more of 4294967295 "
                       "missing: every shard must be given",
                       Error);
  CHECK_FALSE(fs::exists(m.output));
}

TEST_CASE("an index whose record count is not its dataset.json's is refused by merge and convert") {
  fs::path root = scratch("index-count");
  fs::path src = make_tree(root);
  MergeOptions m =
      parts_of(root, "part", 2, [&](const fs::path& d) { return options(src, d, "png"); });
  // A last line without its newline is still a record: the merge is whole.
  fs::path index = m.inputs[1] / kIndexName;
  std::string text = slurp(index);
  std::ofstream(index, std::ios::binary) << text.substr(0, text.size() - 1);
  m.output = root / "merged";
  CHECK(merge_datasets(m).manifest.samples == 14);
  CHECK(convert_dataset(options(m.inputs[1], root / "copy", "png")).manifest.samples ==
        read_manifest(m.inputs[1]).samples);
  // Its last record gone, the part is damaged: neither a merge nor a conversion takes it.
  std::ofstream(index, std::ios::binary) << text.substr(0, text.rfind('\n', text.size() - 2) + 1);
  m.output = root / "merged2";
  for (auto run : std::vector<std::function<void()>>{
           [&] { merge_datasets(m); },
           [&] { convert_dataset(options(m.inputs[1], root / "copy2", "png")); }}) {
    try {
      run();
      FAIL("a short index was taken");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::corrupt_data);
      CHECK(std::string(e.what()).find("dataset.json counts") != std::string::npos);
    }
  }
}

TEST_CASE("an incomplete dataset is no source; verify reports it even before its first index") {
  fs::path root = scratch("incomplete");
  fs::path src = make_tree(root);
  fs::path ds = root / "ds";
  convert_dataset(options(src, ds, "png"));
  Manifest m = read_manifest(ds);
  m.complete = false;
  write_manifest(ds, m);
  CHECK_THROWS_AS(convert_dataset(options(ds, root / "out", "bmp")), Error);
  fs::remove(ds / kIndexName);
  VerifyResult r = verify(ds);
  CHECK(r.dataset_problems == 1);
  CHECK(r.samples == 0);
  CHECK(any_contains(problems_of(ds), "incomplete"));
}

TEST_CASE("verify compares the per-format and per-class totals, and finds a shard cut short") {
  fs::path root = scratch("verify-totals");
  fs::path src = make_tree(root);
  fs::path ds = root / "ds";
  convert_dataset(options(src, ds, "png"));
  std::string text = slurp(ds / kIndexName);
  size_t at = text.find("\"label\":\"alpha\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 15, "\"label\":\"zebra\"");
  std::ofstream(ds / kIndexName, std::ios::binary) << text;
  auto problems = problems_of(ds);
  CHECK(any_contains(problems, "class 'zebra': the index holds 1 samples, dataset.json records 0"));
  CHECK(any_contains(problems, "class 'alpha'"));

  fs::path tar = root / "tar";
  convert_dataset(tar_options(src, tar, "png", 1 << 30));
  fs::path shard = tar / "data" / "shard-000000.tar";
  REQUIRE(fs::exists(shard));
  fs::resize_file(shard, fs::file_size(shard) - 1500);  // the end-of-archive and a padding
  problems = problems_of(tar);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("not a whole tar archive") != std::string::npos);
}

TEST_CASE("verify reports a FIFO in data/ without opening it") {
  fs::path root = scratch("verify-fifo");
  fs::path src = make_tree(root);
  fs::path ds = root / "ds";
  convert_dataset(options(src, ds, "png"));
  fs::path file = ds / "data" / "alpha" / "autumn_320x240.png";
  REQUIRE(fs::exists(file));
  fs::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  REQUIRE(::mkfifo((ds / "data" / "stray").c_str(), 0600) == 0);
  VerifyResult r = verify(ds);
  CHECK(r.mismatched == 1);
  CHECK(r.dataset_problems == 1);
  CHECK(any_contains(problems_of(ds), "not a regular file"));
}

TEST_CASE("progress reports the walk as scanning, then counts the conversion from 0") {
  fs::path root = scratch("progress");
  fs::path src = make_tree(root);
  std::mutex mutex;
  std::vector<ProgressEvent> events;
  ConvertOptions o = options(src, root / "dst", "bmp");
  o.progress = [&](const ProgressEvent& e) {
    std::lock_guard lock(mutex);
    events.push_back(e);
  };
  convert_dataset(o);
  size_t i = 0;
  uint64_t found = 0;
  for (; i < events.size() && events[i].what == "scanning"; ++i) {
    CHECK(events[i].total == 0);
    CHECK(events[i].done > found);
    found = events[i].done;
  }
  CHECK(found == 14);  // README.txt is no image
  REQUIRE(i < events.size());
  CHECK(events[i].what == "convert-dataset");
  CHECK(events[i].done == 0);  // the conversion's clock starts here, not at the walk
  CHECK(events[i].total == 14);
  CHECK(events.size() == i + 1 + 14);
  uint64_t most = 0;
  for (size_t k = i + 1; k < events.size(); ++k) most = std::max(most, events[k].done);
  CHECK(most == 14);
}

TEST_CASE("verify stops with one I/O error when file descriptors run out, counting no sample") {
  fs::path root = scratch("verify-emfile");
  fs::path src = make_tree(root);
  for (bool tar : {false, true}) {
    CAPTURE(tar);
    fs::path ds = root / (tar ? "tar" : "files");
    convert_dataset(tar ? tar_options(src, ds, "bmp", 400000) : options(src, ds, "bmp"));
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(lowest_free >= 0);
    ::close(lowest_free);
    // Room for the index alone: every sample's file fails to open with EMFILE.
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(lowest_free) + 1;
    std::vector<std::string> problems;
    VerifyOptions v;
    v.dataset = ds;
    v.threads = 3;
    v.problem = [&](const Error& e) { problems.push_back(e.what()); };
    std::optional<Error> error;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    try {
      verify_dataset(v);
    } catch (const Error& e) {
      error = e;
    }
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
    REQUIRE(error);
    CHECK(error->code() == Errc::io);
    CHECK(std::string(error->what()).find("out of file descriptors") != std::string::npos);
    CHECK(problems.empty());
    CHECK(verify(ds).ok == 14);
  }
}
