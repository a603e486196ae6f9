// libFuzzer target for the image codecs of lib/image (built with DLPREP_BUILD_FUZZERS and clang),
// or, in a normal build, the function that replay_main.cpp runs over every file of corpus/image/.
//
// Each input is decoded twice:
//  - by the codec that image::sniff_codec picks for it (what decode_any does with a file), and
//  - by the codec that its first byte chooses from image::all_codecs(), on the remaining bytes,
//    so that mutations reach every decoder's header parsing without first having to keep (or
//    find) that format's magic bytes.
// probe() and decode() may only throw dlprep::Error; anything else (a crash, std::bad_alloc from
// a hostile size, another exception type, a sanitizer report) is a finding. A decoded image must
// have the shape probe() declared and size_bytes() == width * height * channels. A small decoded
// image is also encoded again and decoded: a lossless codec must give back the same pixels.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/image.hpp"
#include "image/codec.hpp"

namespace {

using namespace dlprep;

// Largest image decoded: a valid header may declare up to limits::kMaxPixels (4 GiB as RGBA),
// which would only measure the allocator here (the l3 target draws the same line).
constexpr uint64_t kMaxDecodeBytes = uint64_t{1} << 26;
// Largest decoded image that is encoded again (encoders are slow next to a 13 x 7 decode).
constexpr uint64_t kMaxRoundTripBytes = 4096;

void check_round_trip(const image::Codec& codec, const Image& img) {
  if (img.size_bytes() > kMaxRoundTripBytes || !codec.round_trips(img.channels())) return;
  image::EncodeOptions options;
  options.level = 1;  // fastest png and webp-lossless effort: the bytes, not the ratio, matter
  const Bytes encoded = codec.encode(img, options);
  const Image again = codec.decode(encoded);
  if (again.shape() != img.shape()) std::abort();
  if (codec.lossless() && !again.same_pixels(img)) std::abort();
}

void exercise(const image::Codec& codec, ByteSpan file) {
  bool probed = false;
  ImageShape declared;
  try {
    const image::ImageInfo info = codec.probe(file);
    if (info.format != codec.name()) std::abort();
    declared = info.shape;
    probed = true;
  } catch (const dlprep::Error&) {
  }
  if (probed && declared.pixel_bytes() > kMaxDecodeBytes) return;
  Image img;
  try {
    img = codec.decode(file);
  } catch (const dlprep::Error&) {
    return;
  }
  // A decode that succeeds where the probe failed, or with another shape, breaks the contract
  // that probe() reads the same header.
  if (!probed || img.shape() != declared) std::abort();
  if (img.channels() < 1 || img.channels() > 4 || img.width() == 0 || img.height() == 0)
    std::abort();
  if (img.size_bytes() != size_t{img.width()} * img.height() * img.channels()) std::abort();
  if (img.data() == nullptr) std::abort();
  // Touch every byte, so that ASan and MSan see a short pixel buffer.
  volatile uint8_t sum = 0;
  for (size_t i = 0; i < img.size_bytes(); ++i) sum = sum + img.data()[i];
  check_round_trip(codec, img);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteSpan file(data, size);
  if (const image::Codec* sniffed = image::sniff_codec(file)) exercise(*sniffed, file);
  const auto& codecs = image::all_codecs();
  if (size >= 1 && !codecs.empty()) exercise(*codecs[data[0] % codecs.size()], file.subspan(1));
  return 0;
}
