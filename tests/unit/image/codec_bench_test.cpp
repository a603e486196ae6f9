#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/codec.hpp"
#include "image/codec_bench.hpp"

using namespace dlprep;
using namespace dlprep::image;

namespace {

/// A smooth gradient with a little noise: compresses well with every codec, like a photo.
Image photo_like(uint32_t w, uint32_t h, uint32_t channels, uint32_t seed) {
  Image img(w, h, channels);
  std::mt19937 rng(seed);
  for (uint32_t y = 0; y < h; ++y)
    for (uint32_t x = 0; x < w; ++x)
      for (uint32_t c = 0; c < channels; ++c)
        img.row(y)[x * channels + c] =
            static_cast<uint8_t>((x * (c + 1) + y * 2 + seed * 7 + rng() % 3) & 0xff);
  return img;
}

std::vector<Image> small_set() {
  std::vector<Image> v;
  v.push_back(photo_like(96, 64, 3, 1));
  v.push_back(photo_like(130, 67, 3, 2));  // not a multiple of any patch size
  v.push_back(photo_like(64, 64, 3, 3));
  return v;
}

/// The codecs of the default list that this build has, plus l3 (always built).
std::vector<std::string> built(std::vector<std::string> wanted) {
  std::vector<std::string> out;
  for (const std::string& w : wanted)
    if (find_codec(w)) out.push_back(w);
  return out;
}

Errc error_code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  FAIL("no dlprep::Error thrown");
  return Errc::internal;
}

/// A test-only "codec": stores the raw pixels behind a 12-byte header; its decoder can be told to
/// return wrong pixels or a wrong shape after some number of correct decodes.
class FakeCodec final : public Codec {
 public:
  enum class Fault { none, flip_pixel, wrong_shape };
  FakeCodec(std::string name, bool lossless, Fault fault, int good_decodes = 0,
            bool vary_encode = false)
      : name_(std::move(name)),
        lossless_(lossless),
        fault_(fault),
        good_decodes_(good_decodes),
        vary_encode_(vary_encode) {}

  std::string_view name() const override { return name_; }
  std::string extension(uint32_t) const override { return "fake"; }
  bool sniff(ByteSpan) const override { return false; }
  bool lossless() const override { return lossless_; }
  bool round_trips(uint32_t) const override { return true; }
  ImageInfo probe(ByteSpan file) const override { return {name_, shape_of(file)}; }
  Image decode(ByteSpan file) const override {
    ImageShape shape = shape_of(file);
    const bool faulty = decodes_.fetch_add(1) >= good_decodes_;
    if (faulty && fault_ == Fault::wrong_shape) shape.width += 1;
    Image out(shape);
    std::memcpy(out.data(), file.data() + 12, std::min<size_t>(out.size_bytes(), file.size() - 12));
    if (faulty && fault_ == Fault::flip_pixel) out.data()[out.size_bytes() / 2] ^= 1;
    return out;
  }
  Bytes encode(const Image& image, const EncodeOptions&) const override {
    Bytes b(12 + image.size_bytes());
    const uint32_t dims[3] = {image.width(), image.height(), image.channels()};
    std::memcpy(b.data(), dims, 12);
    std::memcpy(b.data() + 12, image.data(), image.size_bytes());
    if (vary_encode_) b.push_back(static_cast<uint8_t>(encodes_.fetch_add(1)));  // trailing junk
    return b;
  }
  int decodes() const { return decodes_.load(); }

 private:
  static ImageShape shape_of(ByteSpan file) {
    uint32_t dims[3];
    std::memcpy(dims, file.data(), 12);
    return {dims[0], dims[1], dims[2]};
  }
  std::string name_;
  bool lossless_;
  Fault fault_;
  int good_decodes_;
  bool vary_encode_;
  mutable std::atomic<int> decodes_{0};
  mutable std::atomic<int> encodes_{0};
};

}  // namespace

TEST_CASE("the benchmark returns a checked row per codec and thread count, memcpy included") {
  const std::vector<Image> images = small_set();
  CodecBenchParams p;
  p.codecs = built({"l3", "png", "webp", "jpeg"});
  p.thread_counts = {1, 2};
  p.repeats = 1;
  p.image_names = {"a.png", "b.png", "c.png"};
  std::vector<std::string> progress;
  p.progress = [&](const ProgressEvent& e) { progress.push_back(e.item); };
  const CodecBenchReport r = run_codec_bench(images, p);

  uint64_t raw = 0;
  for (const Image& img : images) raw += img.size_bytes();
  CHECK(r.images == 3);
  CHECK(r.raw_bytes == raw);
  REQUIRE(r.rows.size() == (p.codecs.size() + 1) * 2);
  CHECK(progress.size() == r.rows.size());
  CHECK(r.rows.back().codec == "memcpy");
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const CodecBenchRow& row = r.rows[i];
    CAPTURE(row.codec);
    CHECK(row.threads == (i % 2 == 0 ? 1u : 2u));
    CHECK(row.parallel == "images");
    CHECK(row.verified);
    CHECK(row.raw_bytes == raw);
    CHECK(row.compressed_bytes > 0);
    CHECK(row.ratio > 0);
    CHECK(row.ratio <= 1.1);
    CHECK(row.mean_ratio > 0);
    CHECK(row.mean_ratio <= 1.1);
    CHECK(row.median_encode_mb_s > 0);
    CHECK(row.median_decode_mb_s > 0);
    CHECK(row.min_time_encode_mb_s >= row.median_encode_mb_s);
    CHECK(row.min_time_decode_mb_s >= row.median_decode_mb_s);
    CHECK(row.encode_mb_per_cpu_s > 0);
    CHECK(row.decode_mb_per_cpu_s > 0);
    CHECK(row.median_decode_cpu_s > 0);
    CHECK(row.encode_runs == 1);
    CHECK(row.decode_runs == 1);
    CHECK(row.lossless == (row.codec.rfind("jpeg", 0) != 0));
  }
  const CodecBenchRow& memcpy_row = r.rows.back();
  CHECK(memcpy_row.compressed_bytes == raw);
  CHECK(memcpy_row.ratio == doctest::Approx(1.0));

  if (find_codec("png")) {
    CHECK(r.size_reference == "png:6");
    for (const CodecBenchRow& row : r.rows) {
      CAPTURE(row.codec);
      CHECK(row.size_vs_png > 0);
      CHECK(row.worst_size_vs_png >= row.median_size_vs_png);
      CHECK(!row.worst_size_vs_png_image.empty());
      CHECK(row.decode_speedup_vs_png > 0);
      if (row.codec == "png:6") {
        CHECK(row.size_vs_png == doctest::Approx(1.0));
        CHECK(row.mean_size_vs_png == doctest::Approx(1.0));
        CHECK(row.decode_speedup_vs_png == doctest::Approx(1.0));
        CHECK(row.decode_cpu_speedup_vs_png == doctest::Approx(1.0));
      }
    }
  }
}

TEST_CASE("codec specs are canonicalised and memcpy is added only once") {
  CHECK(canonical_codec_spec("l3") == "l3");
  CHECK(canonical_codec_spec("l3:64") == "l3:64");
  CHECK(canonical_codec_spec("l3@patches") == "l3@patches");
  CHECK(canonical_codec_spec("memcpy") == "memcpy");
  if (find_codec("png")) {
    CHECK(canonical_codec_spec("png") == "png:6");
    CHECK(canonical_codec_spec("png:1") == "png:1");
  }
  if (find_codec("jpeg")) CHECK(canonical_codec_spec("jpg") == "jpeg:90");
  if (find_codec("webp")) {
    CHECK(canonical_codec_spec("webp") == "webp");
    CHECK(canonical_codec_spec("webp-lossy") == "webp-lossy:90");
    CHECK(canonical_codec_spec("webp-lossless:6") == "webp-lossless:6");
    // Lossy quality 6 to convert-dataset, effort 6 once here: refused, naming both spellings.
    CHECK_THROWS_WITH_AS(canonical_codec_spec("webp:6"),
                         doctest::Contains("write webp-lossless:6 for lossless effort 6, or "
                                           "webp-lossy:6 for quality 6"),
                         Error);
  }

  CodecBenchParams p;
  p.codecs = {"memcpy", "l3", "l3"};  // duplicates are benchmarked once
  p.repeats = 1;
  const CodecBenchReport r = run_codec_bench(small_set(), p);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].codec == "memcpy");
  CHECK(r.rows[1].codec == "l3");
  CHECK(r.size_reference.empty());  // no png:6 in the run: no size-vs-png figures
  CHECK(r.rows[1].size_vs_png == 0);
}

TEST_CASE("the source row decodes the given files as they are, checked against their images") {
  const std::vector<Image> images = small_set();
  CodecBenchParams p;
  p.codecs = {"source", "l3"};
  p.repeats = 1;
  CHECK(error_code_of([&] { run_codec_bench(images, p); }) == Errc::invalid_argument);  // no files
  uint64_t file_bytes = 0;
  for (const Image& img : images) {
    // The files need not share a format: each is decoded by the codec its bytes name.
    const char* format = p.source_files.size() % 2 == 0 ? "l3" : "bmp";
    p.source_files.push_back(find_codec(format)->encode(img, EncodeOptions{}));
    file_bytes += p.source_files.back().size();
  }
  const CodecBenchReport r = run_codec_bench(images, p);
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[0].codec == "source");
  CHECK(r.rows[0].verified);
  CHECK(r.rows[0].lossless);
  CHECK(r.rows[0].compressed_bytes == file_bytes);
  CHECK(r.rows[0].median_decode_s > 0);
  CHECK(r.rows[2].codec == "memcpy");

  // A file that does not decode to its image is a mismatch, like a wrong lossless codec.
  p.source_files[1] = find_codec("bmp")->encode(images[2], EncodeOptions{});
  CHECK(error_code_of([&] { run_codec_bench(images, p); }) == Errc::mismatch);
}

TEST_CASE("unknown codecs and malformed specs are rejected as invalid arguments") {
  const std::vector<Image> images = small_set();
  for (const char* spec :
       {"no-such-codec", "png:x", "png:12", "png:", "jpeg:0", "memcpy:3", "png@patches", ":6",
        "l3:0", "l3:7", "l3:512", "source:1", "source@patches"}) {
    CAPTURE(spec);
    if (std::string(spec).rfind("png", 0) == 0 && !find_codec("png")) continue;
    if (std::string(spec).rfind("jpeg", 0) == 0 && !find_codec("jpeg")) continue;
    CodecBenchParams p;
    p.codecs = {spec};
    p.repeats = 1;
    CHECK(error_code_of([&] { run_codec_bench(images, p); }) == Errc::invalid_argument);
  }
  std::string msg;
  CodecBenchParams p;
  p.codecs = {"no-such-codec"};
  error_code_of([&] { run_codec_bench(images, p); }, &msg);
  CHECK(msg.find("no-such-codec") != std::string::npos);
}

TEST_CASE("bad benchmark parameters are rejected") {
  CodecBenchParams p;
  p.codecs = {"l3"};
  p.repeats = 1;
  CHECK(error_code_of([&] { run_codec_bench({}, p); }) == Errc::invalid_argument);
  p.thread_counts = {0};
  CHECK(error_code_of([&] { run_codec_bench(small_set(), p); }) == Errc::invalid_argument);
  p.thread_counts = {1};
  p.repeats = 0;
  CHECK(error_code_of([&] { run_codec_bench(small_set(), p); }) == Errc::invalid_argument);
  p.repeats = 1;
  p.image_names = {"only one name"};
  CHECK(error_code_of([&] { run_codec_bench(small_set(), p); }) == Errc::invalid_argument);
}

TEST_CASE("a lossless codec whose decode is wrong in a timed run is reported, not timed") {
  // Correct during the warm-up (3 decodes), wrong from the first timed decode on: the check must
  // run on every decode, not only once.
  for (unsigned threads : {1u, 2u}) {
    CAPTURE(threads);
    FakeCodec broken("flip", true, FakeCodec::Fault::flip_pixel, 3);
    CodecBenchParams p;
    p.codecs = {"flip"};
    p.extra_codecs = {&broken};
    p.thread_counts = {threads};
    p.repeats = 2;
    p.image_names = {"a.png", "b.png", "c.png"};
    std::string msg;
    CHECK(error_code_of([&] { run_codec_bench(small_set(), p); }, &msg) == Errc::mismatch);
    CHECK(msg.find("flip") != std::string::npos);
    CHECK(msg.find(".png") != std::string::npos);  // names the image
    CHECK(msg.find("differ") != std::string::npos);
    CHECK(broken.decodes() > 3);
  }
}

TEST_CASE("the same faulty decoder passes as a lossy codec, which is checked for its shape only") {
  FakeCodec lossy("lossy-flip", false, FakeCodec::Fault::flip_pixel);
  CodecBenchParams p;
  p.codecs = {"lossy-flip"};
  p.extra_codecs = {&lossy};
  p.repeats = 1;
  const CodecBenchReport r = run_codec_bench(small_set(), p);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].codec == "lossy-flip");
  CHECK_FALSE(r.rows[0].lossless);
  CHECK(r.rows[0].verified);

  FakeCodec bad_shape("lossy-shape", false, FakeCodec::Fault::wrong_shape);
  p.codecs = {"lossy-shape"};
  p.extra_codecs = {&bad_shape};
  std::string msg;
  CHECK(error_code_of([&] { run_codec_bench(small_set(), p); }, &msg) == Errc::mismatch);
  CHECK(msg.find("shape") != std::string::npos);
}

TEST_CASE("an encoder that is not deterministic is accepted when its files decode correctly") {
  FakeCodec varying("varying", true, FakeCodec::Fault::none, 0, /*vary_encode=*/true);
  CodecBenchParams p;
  p.codecs = {"varying"};
  p.extra_codecs = {&varying};
  p.repeats = 2;
  const CodecBenchReport r = run_codec_bench(small_set(), p);
  CHECK(r.rows[0].verified);
  // Warm-up + 2 decode passes of 3 images, plus one check decode per differing timed re-encode.
  CHECK(varying.decodes() == 3 * 3 + 3 * 2);
}

TEST_CASE("a codec that cannot store a channel count is reported as unsupported") {
  if (!find_codec("jpeg") || find_codec("jpeg")->round_trips(2)) return;
  std::vector<Image> images;
  images.push_back(photo_like(16, 16, 2, 1));
  CodecBenchParams p;
  p.codecs = {"jpeg"};
  p.repeats = 1;
  CHECK(error_code_of([&] { run_codec_bench(images, p); }) == Errc::unsupported);
}

TEST_CASE("l3 over patches and gray or RGBA images round-trip through the lossless codecs") {
  std::vector<Image> images;
  images.push_back(photo_like(70, 33, 1, 4));
  images.push_back(photo_like(33, 70, 4, 5));
  CodecBenchParams p;
  p.codecs.clear();
  for (const std::string& name : built({"l3", "png", "webp"}))
    if (find_codec(name)->round_trips(1) && find_codec(name)->round_trips(4))
      p.codecs.push_back(name);
  p.codecs.push_back("l3:32@patches");
  p.thread_counts = {1, 2};
  p.repeats = 1;
  const CodecBenchReport r = run_codec_bench(images, p);
  bool saw_patches = false;
  for (const CodecBenchRow& row : r.rows) {
    CAPTURE(row.codec);
    CHECK(row.verified);
    if (row.codec == "l3:32" && row.parallel == "patches") {
      saw_patches = true;
      CHECK(row.parallel == "patches");
    }
  }
  CHECK(saw_patches);
}
