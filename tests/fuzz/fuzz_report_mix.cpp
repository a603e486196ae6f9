// libFuzzer target for the profile-mix report as convert-dataset --mix-from reads it
// (profile/report.hpp: read_report_mix, then dataset::parse_mix) and as report_from_json parses it
// (built with DLPREP_BUILD_FUZZERS and clang), or, in a normal build, the function that
// replay_main.cpp runs over every file of corpus/report_mix/.
//
// The input is the report file. Hostile input may only throw dlprep::Error. A mix that
// parse_mix accepts has finite, non-negative ratios that sum to 1 and survives a round trip
// through mix_text; a report that report_from_json accepts writes JSON that reads back to the
// same JSON.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/target_spec.hpp"
#include "profile/report.hpp"

using namespace dlprep;
namespace fs = std::filesystem;

namespace {

// The report file, rewritten for each input and removed at the process's exit: --mix-from reads
// a path, and the size check it makes first needs a regular file.
struct ReportFile {
  fs::path path =
      fs::temp_directory_path() / ("dlprep-fuzz-report-" + std::to_string(::getpid()) + ".json");
  ~ReportFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

const fs::path& report_path() {
  static const ReportFile file;
  return file.path;
}

void check_mix(const std::vector<dataset::MixEntry>& mix) {
  double sum = 0;
  for (const dataset::MixEntry& e : mix) {
    if (!std::isfinite(e.ratio) || e.ratio < 0) std::abort();
    sum += e.ratio;
  }
  if (mix.empty() || std::fabs(sum - 1) > 1e-9) std::abort();
  // mix_text rounds to 6 significant digits, so the ratios read back only nearly equal.
  const std::vector<dataset::MixEntry> back = dataset::parse_mix(dataset::mix_text(mix));
  if (back.size() != mix.size()) std::abort();
  for (size_t i = 0; i < mix.size(); ++i)
    if (back[i].target.text != mix[i].target.text || std::fabs(back[i].ratio - mix[i].ratio) > 1e-5)
      std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path& path = report_path();
  write_file_atomic(path, ByteSpan(data, size));
  try {
    std::string channels, transform;
    check_mix(dataset::parse_mix(profile::read_report_mix(path, &channels, &transform)));
  } catch (const Error&) {
  }
  std::string json;
  try {
    json = profile::report_to_json(
        profile::report_from_json(std::string_view(reinterpret_cast<const char*>(data), size)));
  } catch (const Error&) {
    return 0;
  }
  // Outside the try: a report accepted once must read back, as the same JSON.
  if (profile::report_to_json(profile::report_from_json(json)) != json) std::abort();
  return 0;
}
