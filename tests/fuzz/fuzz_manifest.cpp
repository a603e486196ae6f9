// libFuzzer target for the dataset index and manifest readers of lib/dataset (manifest.hpp: a
// line of samples.jsonl, and dataset.json; built with DLPREP_BUILD_FUZZERS and clang), or, in a
// normal build, the function that replay_main.cpp runs over every file of corpus/manifest/.
//
// The first byte chooses the reader (even: parse_record, odd: manifest_from_json), the rest is the
// text. Hostile text may only throw dlprep::Error. What a reader accepts must survive a round trip
// through its writer: the record formats to a line that parses back to the same record, and the
// manifest's JSON reads back to the same JSON.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "dataset/manifest.hpp"

using namespace dlprep;
using namespace dlprep::dataset;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // A string of exactly the text's size, so that ASan sees any read past it.
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      const SampleRecord record = parse_record(text);
      if (!(parse_record(format_record(record)) == record)) std::abort();
    } else {
      const std::string json = manifest_to_json(manifest_from_json(text));
      if (manifest_to_json(manifest_from_json(json)) != json) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
