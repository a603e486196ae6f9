// stats.json of a criteo-preprocess run (PreprocessStats, criteo_preprocess.hpp).
#include <nlohmann/json.hpp>

#include "tabular/criteo_preprocess.hpp"

namespace dlprep::tabular {
using json = nlohmann::json;

uint64_t PreprocessStats::rows_written() const {
  uint64_t n = 0;
  for (const DayStats& d : days) n += d.skipped ? 0 : d.rows;
  return n;
}

std::string PreprocessStats::to_json() const {
  json days_j = json::array();
  for (const auto& d : days)
    days_j.push_back({{"input", d.input},
                      {"rows", d.rows},
                      {"bad_rows", d.bad_rows},
                      {"input_bytes", d.input_bytes},
                      {"skipped", d.skipped}});
  // Rows of the days written per second; null when every day was up to date (none were read).
  const auto rate = [this](double seconds) {
    return rows_written() > 0 && seconds > 0 ? json(static_cast<double>(rows_written()) / seconds)
                                             : json(nullptr);
  };
  // Where the time went. compute: both passes from chunks in host memory to the output arrays
  // back in host memory (for CUDA with preloaded inputs, the figure BENCHMARKS.md defines).
  json phases = {{"preload_seconds", preload_seconds},
                 {"read_seconds", read_seconds},
                 {"compute_seconds", compute_seconds},
                 {"write_seconds", write_seconds},
                 {"compute_rows_per_s", rate(compute_seconds)}};
  json j = {{"schema", "dlprep.criteo-preprocess/1"},
            {"rows", rows},
            {"bad_rows", bad_rows},
            {"days", days_j},
            {"cardinality", cardinality},
            {"kept", kept},
            {"num_embeddings", num_embeddings},
            {"pass1_seconds", pass1_seconds},
            {"pass2_seconds", pass2_seconds},
            {"total_seconds", total_seconds},
            {"rows_per_s", rate(total_seconds)},
            {"phases", phases},
            {"vocab_reused", vocab_reused},
            {"days_resumed_in_pass1", days_resumed_in_pass1},
            {"removed_outputs", removed_outputs},
            {"single_pass", single_pass},
            {"decode_cache", decode_cache},
            {"peak_rss_bytes", peak_rss_bytes},
            {"threads", threads},
            {"device", device},
            {"gzip_backend", gzip_backend}};
  if (device == "cuda") {
    // Sums of CUDA-event intervals; the streams overlap, so they may exceed compute_seconds.
    j["cuda"] = {{"h2d_seconds", h2d_seconds},
                 {"kernel_seconds", kernel_seconds},
                 {"d2h_seconds", d2h_seconds},
                 {"alloc_seconds", alloc_seconds},
                 {"allocations", allocations},
                 {"wait_seconds", wait_seconds},
                 {"setup_seconds", setup_seconds},
                 {"device_chunks", device_chunks},
                 {"log_values_on_host", log_values_on_host}};
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace);  // never throws on a name
}

}  // namespace dlprep::tabular
