// criteo-preprocess's options as the CLI gives them: layout names, per-column moduli and the
// presets that reproduce the conventions of the tools users already have (DLRM, TorchRec, PIPER).
#include <sstream>

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
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        item.size() > 10)
      throw Error(Errc::invalid_argument, "--modulus: '" + item + "' is not a number");
    uint64_t v = std::stoull(item);
    if (v > UINT32_MAX) throw Error(Errc::invalid_argument, "--modulus: " + item + " > 2^32-1");
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

void apply_preset(const std::string& name, PreprocessOptions& o) {
  if (name == "dlrm") {
    // Meta DLRM data_utils.py: 0-based first-appearance IDs over all days, no threshold,
    // negatives to 0, log(x+1) left to the loader; MLPerf-v1 binary; last day test then val.
    o.id_base = 0;
    o.oov_id.reset();
    o.min_freq = 1;
    o.apply_log = false;
    o.log_offset = 1.0;
    o.output_format = OutputFormat::dlrm;
    o.split_last = SplitLast::test_val;
  } else if (name == "torchrec") {
    // MLPerf DLRMv2 / TorchRec npy pipeline: IDs from 2, OOV 1, log(x+3) stored; val then test.
    o.id_base = 2;
    o.oov_id = 1;
    o.min_freq = 1;
    o.apply_log = true;
    o.log_offset = 3.0;
    o.output_format = OutputFormat::npy;
    o.split_last = SplitLast::val_test;
  } else if (name == "piper") {
    // PIPER's benchmark: modulus 5000, first-appearance IDs from 0, log(x+1).
    o.modulus.fill(5000);
    o.id_base = 0;
    o.oov_id.reset();
    o.min_freq = 1;
    o.apply_log = true;
    o.log_offset = 1.0;
    o.output_format = OutputFormat::npy;
    o.split_last = SplitLast::none;
  } else {
    throw Error(Errc::invalid_argument, "unknown preset '" + name + "' (dlrm, torchrec, piper)");
  }
}

}  // namespace dlprep::tabular
