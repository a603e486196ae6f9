// criteo-preprocess's options as the CLI gives them: layout names, per-column moduli, the presets
// that reproduce the conventions of the tools users already have (DLRM, TorchRec, PIPER), and the
// check of the inputs' day order.
#include <cctype>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "tabular/criteo_preprocess.hpp"

namespace dlprep::tabular {

std::string output_format_name(OutputFormat f) {
  switch (f) {
    case OutputFormat::npy:
      return "npy";
    case OutputFormat::dlrm:
      return "dlrm";
    case OutputFormat::split:
      return "split";
    case OutputFormat::none:
      break;
  }
  return "none";
}

std::array<uint32_t, kNumSparse> parse_modulus_list(const std::string& text) {
  std::array<uint32_t, kNumSparse> out{};
  std::vector<uint64_t> vals;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // A plus sign as the other integer options take it ("+5"); "-5" is no whole number from 0.
    const std::string digits = item.size() > 1 && item[0] == '+' ? item.substr(1) : item;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
      throw Error(Errc::invalid_argument,
                  "--modulus: '" + item + "' is not a whole number from 0 to 4294967295");
    // Past 10 digits it is out of range whatever they are (stoull would throw past 20).
    const uint64_t v = digits.size() > 10 ? uint64_t{UINT32_MAX} + 1 : std::stoull(digits);
    if (v > UINT32_MAX)
      throw Error(Errc::invalid_argument, "--modulus: " + item + " is more than 4294967295");
    vals.push_back(v);
  }
  if (vals.size() == 1) {
    out.fill(static_cast<uint32_t>(vals[0]));
  } else if (vals.size() == kNumSparse) {
    for (int j = 0; j < kNumSparse; ++j) out[j] = static_cast<uint32_t>(vals[j]);
  } else {
    throw Error(Errc::invalid_argument, "--modulus: give one value or 26 comma-separated values");
  }
  return out;
}

namespace {

// A tool's conventions. Every preset also sets --min-freq 1 (no threshold).
struct Preset {
  const char* name;
  uint32_t modulus;  // every column's; 0: as given
  int64_t id_base;
  std::optional<int64_t> oov_id;  // none: the default (id_base - 1, or past the last ID)
  bool apply_log;
  double log_offset;
  OutputFormat output_format;
  SplitLast split_last;
};

const Preset kPresets[] = {
    // Meta DLRM data_utils.py: 0-based first-appearance IDs over all days, no threshold,
    // negatives to 0, log(x+1) left to the loader; MLPerf-v1 binary; last day test then val.
    {"dlrm", 0, 0, std::nullopt, false, 1.0, OutputFormat::dlrm, SplitLast::test_val},
    // MLPerf DLRMv2 / TorchRec npy pipeline: IDs from 2, OOV 1, log(x+3) stored. The last day
    // stays whole (day_23_*.npy): TorchRec's loaders take every file but the last day's for
    // training and split that day themselves, its first half validation, the second test.
    {"torchrec", 0, 2, 1, true, 3.0, OutputFormat::npy, SplitLast::none},
    // PIPER's benchmark: modulus 5000, first-appearance IDs from 0, log(x+1).
    {"piper", 5000, 0, std::nullopt, true, 1.0, OutputFormat::npy, SplitLast::none},
};

}  // namespace

void apply_preset(const std::string& name, PreprocessOptions& o) {
  std::string names;
  for (const Preset& p : kPresets) {
    names += (names.empty() ? "" : ", ") + std::string(p.name);
    if (name != p.name) continue;
    if (p.modulus != 0) o.modulus.fill(p.modulus);
    o.id_base = p.id_base;
    o.oov_id = p.oov_id;
    o.min_freq = 1;
    o.apply_log = p.apply_log;
    o.log_offset = p.log_offset;
    o.output_format = p.output_format;
    o.split_last = p.split_last;
    return;
  }
  throw Error(Errc::invalid_argument, "unknown preset '" + name + "' (" + names + ")");
}

namespace {

// N of a file named day_N, or day_N followed by '.' and anything (day_N.gz, day_N.tsv.gz).
std::optional<uint64_t> day_number(const std::filesystem::path& input) {
  const std::string name = input.filename().string();
  constexpr std::string_view kPrefix = "day_";
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  size_t end = kPrefix.size();
  while (end < name.size() && end < kPrefix.size() + 9 &&
         std::isdigit(static_cast<unsigned char>(name[end])))
    ++end;
  if (end == kPrefix.size() || (end < name.size() && name[end] != '.')) return std::nullopt;
  return std::stoull(name.substr(kPrefix.size(), end - kPrefix.size()));
}

}  // namespace

std::string day_order_problem(const std::vector<std::filesystem::path>& inputs) {
  std::optional<uint64_t> previous;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::optional<uint64_t> day = day_number(inputs[i]);
    if (!day) return "";
    if (previous && *day <= *previous) {
      // Only where every input is named after its day: look at the rest first.
      for (size_t j = i + 1; j < inputs.size(); ++j)
        if (!day_number(inputs[j])) return "";
      return "the inputs are read in the order given, and " + inputs[i - 1].filename().string() +
             " comes before " + inputs[i].filename().string() +
             " there (a shell glob sorts names, not numbers): give day_{0..23}.gz or --days N "
             "to read the days in order";
    }
    previous = day;
  }
  return "";
}

}  // namespace dlprep::tabular
