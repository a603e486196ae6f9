// The profile-mix report: JSON in and out, and the human table.
#include "profile/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "dataset/target_spec.hpp"
#include "image/transform.hpp"

namespace dlprep::profile {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kInf = std::numeric_limits<double>::infinity();

Json number_or_null(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
double number_or_inf(const Json& j) { return j.is_null() ? kInf : j.get<double>(); }

Json bounds_json(const Bounds& b) {
  return {{"images_per_s", number_or_null(b.images_per_s)},
          {"bound", b.bound},
          {"load_images_per_s", number_or_null(b.load_images_per_s)},
          {"decode_images_per_s", number_or_null(b.decode_images_per_s)},
          {"compute_images_per_s", number_or_null(b.compute_images_per_s)}};
}

Bounds bounds_from(const Json& j) {
  Bounds b;
  b.images_per_s = number_or_inf(j.at("images_per_s"));
  b.bound = j.at("bound").get<std::string>();
  b.load_images_per_s = number_or_inf(j.at("load_images_per_s"));
  b.decode_images_per_s = number_or_inf(j.at("decode_images_per_s"));
  b.compute_images_per_s = number_or_inf(j.at("compute_images_per_s"));
  return b;
}

Json measured_json(const MeasuredThroughput& m) {
  return {{"images_per_s", m.images_per_s},
          {"seconds", m.seconds},
          {"images", m.images},
          {"storage_bytes_per_s", m.storage_bytes_per_s},
          {"decode_cores", m.decode_cores}};
}

// A measured mix: its ratios (in the order of the formats) and its pass; null when absent.
Json measured_mix_json(const std::vector<double>& ratios,
                       const std::optional<MeasuredThroughput>& m) {
  if (!m) return nullptr;
  Json j = {{"ratios", ratios}};
  j.update(measured_json(*m));
  return j;
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string share_text(double r, int significant) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", significant, r);
  return buf;
}

}  // namespace

std::string ProfileReport::mix_text(const std::vector<double>& shares, int significant) const {
  std::string out;
  for (size_t i = 0; i < formats.size() && i < shares.size(); ++i) {
    if (shares[i] <= 0) continue;
    if (!out.empty()) out += ',';
    out += formats[i].spec + ':' + share_text(shares[i], significant);
  }
  return out;
}

std::string report_to_json(const ProfileReport& r) {
  Json formats = Json::array();
  for (size_t i = 0; i < r.formats.size(); ++i) {
    const FormatCost& c = r.formats[i];
    formats.push_back({{"format", c.format},
                       {"spec", c.spec},
                       {"bytes_per_image", c.bytes_per_image},
                       {"decode_cpu_seconds_per_image", c.decode_cpu_s_per_image}});
  }
  Json mix = Json::array();
  for (size_t i = 0; i < r.formats.size() && i < r.mix.size(); ++i)
    if (r.mix[i] > 0)
      mix.push_back({{"format", r.formats[i].format}, {"spec", r.formats[i].spec}, {"ratio", r.mix[i]}});
  Json sweep = Json::array();
  for (const SweepPoint& p : r.sweep) {
    Json point = {{"ratio", p.ratio_a}, {"predicted", bounds_json(p.predicted)}};
    point["measured_images_per_s"] =
        p.measured_images_per_s >= 0 ? Json(p.measured_images_per_s) : Json(nullptr);
    sweep.push_back(point);
  }
  Json doc = {
      {"schema", r.schema},
      {"dataset", r.dataset},
      {"sample_images", r.sample_images},
      {"formats", formats},
      {"resources",
       {{"storage_bytes_per_s", r.resources.storage_bytes_per_s},
        {"storage_source", r.storage_source},
        {"reader", r.reader},
        {"decode_workers", r.resources.decode_workers},
        {"decode_workers_source", r.decode_workers_source},
        {"jobs", r.jobs},
        {"compute_images_per_s", r.resources.compute_images_per_s > 0
                                     ? Json(r.resources.compute_images_per_s)
                                     : Json(nullptr)}}},
      {"search", r.search},
      {"channels", r.channels},
      {"transform", r.transform},
      {"mix", mix},
      {"mix_text", r.mix_text(kMixFromDigits)},
      {"predicted", bounds_json(r.predicted)},
  };
  doc["measured"] = r.measured ? measured_json(*r.measured) : Json(nullptr);
  doc["first_mix"] = measured_mix_json(r.first_mix, r.first_measured);
  doc["resolved_mix"] = measured_mix_json(r.resolved_mix, r.resolved_measured);
  doc["sweep"] = {{"format_a", r.formats.empty() ? "" : r.formats.at(r.sweep_a).spec},
                  {"format_b", r.formats.size() < 2 ? "" : r.formats.at(r.sweep_b).spec},
                  {"points", sweep}};
  doc["seconds"] = {{"probe", r.probe_seconds},
                    {"verify", r.verify_seconds},
                    {"sweep", r.sweep_seconds},
                    {"total", r.total_seconds}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// A count of a report read back: get<>() would wrap -1 and turn 1e30 into undefined behaviour.
template <typename T>
T count_at(const Json& j, const char* key) {
  const Json& n = j.at(key);
  if (!n.is_number_unsigned() || n.get<uint64_t>() > std::numeric_limits<T>::max())
    throw Error(Errc::corrupt_data, std::string("profile-mix report: \"") + key +
                                        "\" is not an integer from 0 to " +
                                        std::to_string(std::numeric_limits<T>::max()));
  return static_cast<T>(n.get<uint64_t>());
}

MeasuredThroughput measured_from(const Json& m) {
  return {m.at("images_per_s").get<double>(), m.at("seconds").get<double>(),
          count_at<uint64_t>(m, "images"), m.at("storage_bytes_per_s").get<double>(),
          m.at("decode_cores").get<double>()};
}

// A measured mix of measured_mix_json(), when the key is there and not null (reports of earlier
// versions have no resolved_mix).
void read_measured_mix(const Json& doc, const char* key, std::vector<double>& ratios,
                       std::optional<MeasuredThroughput>& measured) {
  if (!doc.contains(key) || doc.at(key).is_null()) return;
  ratios = doc.at(key).at("ratios").get<std::vector<double>>();
  measured = measured_from(doc.at(key));
}

}  // namespace

ProfileReport report_from_json(std::string_view text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(Errc::corrupt_data, std::string("profile-mix report: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string())
    throw Error(Errc::corrupt_data, "profile-mix report: no schema");
  if (doc["schema"] != kReportSchema)
    throw Error(Errc::unsupported, "profile-mix report: schema " +
                                       doc["schema"].get<std::string>() + " is not " +
                                       kReportSchema);
  try {
    ProfileReport r;
    r.dataset = doc.at("dataset").get<std::string>();
    r.sample_images = count_at<uint64_t>(doc, "sample_images");
    for (const Json& f : doc.at("formats")) {
      FormatCost c;
      c.format = f.at("format").get<std::string>();
      c.spec = f.at("spec").get<std::string>();
      c.bytes_per_image = f.at("bytes_per_image").get<double>();
      c.decode_cpu_s_per_image = f.at("decode_cpu_seconds_per_image").get<double>();
      r.formats.push_back(c);
    }
    const Json& res = doc.at("resources");
    r.resources.storage_bytes_per_s = res.at("storage_bytes_per_s").get<double>();
    r.storage_source = res.at("storage_source").get<std::string>();
    r.reader = res.at("reader").get<std::string>();
    r.resources.decode_workers = res.at("decode_workers").get<double>();
    r.decode_workers_source = res.at("decode_workers_source").get<std::string>();
    r.jobs = count_at<unsigned>(res, "jobs");
    r.resources.compute_images_per_s =
        res.at("compute_images_per_s").is_null() ? 0 : res["compute_images_per_s"].get<double>();
    r.search = doc.at("search").get<std::string>();
    r.channels = doc.value("channels", std::string("keep"));
    r.transform = doc.value("transform", std::string());
    r.mix.assign(r.formats.size(), 0.0);
    for (const Json& m : doc.at("mix")) {
      std::string spec = m.at("spec").get<std::string>();
      bool found = false;
      for (size_t i = 0; i < r.formats.size(); ++i)
        if (r.formats[i].spec == spec) {
          r.mix[i] = m.at("ratio").get<double>();
          found = true;
        }
      if (!found)
        throw Error(Errc::corrupt_data, "profile-mix report: mix names " + spec +
                                            ", which is not among the formats");
    }
    r.predicted = bounds_from(doc.at("predicted"));
    if (!doc.at("measured").is_null()) r.measured = measured_from(doc["measured"]);
    read_measured_mix(doc, "first_mix", r.first_mix, r.first_measured);
    read_measured_mix(doc, "resolved_mix", r.resolved_mix, r.resolved_measured);
    const Json& sw = doc.at("sweep");
    auto index_of = [&](const std::string& spec) -> size_t {
      for (size_t i = 0; i < r.formats.size(); ++i)
        if (r.formats[i].spec == spec) return i;
      return 0;
    };
    r.sweep_a = index_of(sw.at("format_a").get<std::string>());
    r.sweep_b = index_of(sw.at("format_b").get<std::string>());
    for (const Json& p : sw.at("points")) {
      SweepPoint s;
      s.ratio_a = p.at("ratio").get<double>();
      s.predicted = bounds_from(p.at("predicted"));
      s.measured_images_per_s =
          p.at("measured_images_per_s").is_null() ? -1 : p["measured_images_per_s"].get<double>();
      r.sweep.push_back(s);
    }
    const Json& sec = doc.at("seconds");
    r.probe_seconds = sec.at("probe").get<double>();
    r.verify_seconds = sec.at("verify").get<double>();
    r.sweep_seconds = sec.at("sweep").get<double>();
    r.total_seconds = sec.at("total").get<double>();
    return r;
  } catch (const Json::exception& e) {
    throw Error(Errc::corrupt_data, std::string("profile-mix report: ") + e.what());
  }
}

std::string read_report_mix(const std::filesystem::path& path, std::string* channels,
                            std::string* transform) {
  const std::string name = path.string();
  auto corrupt = [&](const std::string& what) {
    return Error(Errc::corrupt_data, name + ": " + what);
  };
  // A report is a few kilobytes; anything this large is some other file (/dev/zero, say).
  constexpr uint64_t kMaxReportBytes = uint64_t{16} << 20;
  Bytes bytes;
  try {
    bytes = read_file(path, kMaxReportBytes);  // io errors name the file
  } catch (const Error& e) {
    if (e.code() != Errc::limit_exceeded) throw;
    throw corrupt("too large to be a profile-mix report");
  }
  Json doc;
  try {
    doc = Json::parse(bytes.begin(), bytes.end());
  } catch (const Json::exception&) {
    throw corrupt("not a profile-mix report (not valid JSON)");
  }
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string())
    throw corrupt("not a profile-mix report (no \"schema\")");
  const std::string schema = doc["schema"].get<std::string>();
  if (schema != kReportSchema)
    throw Error(
        schema.rfind("dlprep.profile-mix/", 0) == 0 ? Errc::unsupported : Errc::corrupt_data,
        name + ": schema \"" + schema + "\" is not " + kReportSchema);
  if (!doc.contains("mix") || !doc["mix"].is_array() || doc["mix"].empty())
    throw corrupt("the report has no mix (\"mix\" is missing or empty)");
  std::string text;
  for (const Json& m : doc["mix"]) {
    if (!m.is_object() || !m.contains("spec") || !m["spec"].is_string() || !m.contains("ratio") ||
        !m["ratio"].is_number())
      throw corrupt("a \"mix\" entry lacks \"spec\" or a numeric \"ratio\"");
    text += (text.empty() ? "" : ",") + m["spec"].get<std::string>() + ":" +
            share_text(m["ratio"].get<double>(), kMixFromDigits);
  }
  if (channels) {
    *channels = "keep";
    if (doc.contains("channels") && doc["channels"].is_string())
      *channels = doc["channels"].get<std::string>();
    if (*channels != "keep" && *channels != "rgb")
      throw corrupt("\"channels\" is neither \"keep\" nor \"rgb\"");
  }
  if (transform) {
    *transform = "";
    if (doc.contains("transform")) {
      if (!doc["transform"].is_string()) throw corrupt("\"transform\" is not a string");
      *transform = doc["transform"].get<std::string>();
    }
    try {
      (void)image::parse_transform_text(*transform);
    } catch (const Error& e) {
      throw corrupt(std::string("\"transform\": ") + e.what());
    }
  }
  return text;
}

std::string report_table(const ProfileReport& r) {
  std::string out;
  char line[512];
  int width = 10;  // the format column, wide enough for the longest spec ("webp:lossless")
  for (const FormatCost& c : r.formats) width = std::max(width, static_cast<int>(c.spec.size()));
  std::snprintf(line, sizeof line, "%-*s %14s %18s %16s %8s\n", width, "format", "bytes/image",
                "decode ms/image", "img/s per core", "share");
  out += line;
  for (size_t i = 0; i < r.formats.size(); ++i) {
    const FormatCost& c = r.formats[i];
    double share = i < r.mix.size() ? r.mix[i] : 0;
    std::snprintf(line, sizeof line, "%-*s %14.0f %18.3f %16.1f %8s\n", width, c.spec.c_str(),
                  c.bytes_per_image, c.decode_cpu_s_per_image * 1e3,
                  c.decode_cpu_s_per_image > 0 ? 1 / c.decode_cpu_s_per_image : 0.0,
                  fixed(share, 3).c_str());
    out += line;
  }
  // A lossy candidate wins on size and speed by giving other pixels back: say so by the table.
  std::string lossy;
  for (const FormatCost& c : r.formats)
    if (!dataset::is_lossless(dataset::parse_target(c.spec)))
      lossy += (lossy.empty() ? "" : ", ") + c.spec;
  if (!lossy.empty()) out += "lossy: " + lossy + " (decodes to other pixels than the source's)\n";
  out += "\nstorage: " + fixed(r.resources.storage_bytes_per_s / 1e6, 1) + " MB/s (" +
         r.storage_source + (r.reader == "none" ? "" : ", the pass read via " + r.reader) + ")";
  out += "; decode workers: " + std::to_string(r.jobs);
  if (r.decode_workers_source == "measured")
    out += " (re-solved with the " + fixed(r.resources.decode_workers, 2) +
           " cores they really got)";
  out += "; compute ceiling: " +
         (r.resources.compute_images_per_s > 0 ? fixed(r.resources.compute_images_per_s, 1) + " img/s"
                                               : std::string("none"));
  out += "\nsample: " + std::to_string(r.sample_images) + " images" +
         (r.transform.empty() ? "" : " (made with " + r.transform + ")") + "; search: " + r.search +
         "\n";
  out += "mix: " + r.mix_text() + "\n";
  out += "predicted: " + fixed(r.predicted.images_per_s, 1) + " img/s (" + r.predicted.bound +
         "-bound; load " + fixed(r.predicted.load_images_per_s, 1) + ", decode " +
         fixed(r.predicted.decode_images_per_s, 1) + ")\n";
  if (r.first_measured)
    out += "first mix: " + r.mix_text(r.first_mix) + ", " +
           fixed(r.first_measured->images_per_s, 1) + " img/s measured, decode-bound on " +
           fixed(r.first_measured->decode_cores, 2) + " cores\n";
  if (r.resolved_measured && r.first_measured)
    out += "re-solved mix: " + r.mix_text(r.resolved_mix) + ", " +
           fixed(r.resolved_measured->images_per_s, 1) + " img/s measured" +
           (r.resolved_measured->images_per_s >= r.first_measured->images_per_s
                ? ": chosen\n"
                : ": slower, so the first mix is kept\n");
  if (r.measured)
    out += "measured: " + fixed(r.measured->images_per_s, 1) + " img/s over " +
           std::to_string(r.measured->images) + " images in " + fixed(r.measured->seconds, 2) +
           " s, storage delivered " + fixed(r.measured->storage_bytes_per_s / 1e6, 1) + " MB/s (" +
           fixed(100 * r.measured->images_per_s / r.predicted.images_per_s, 0) +
           "% of predicted)\n";
  bool measured_sweep = false;
  for (const SweepPoint& p : r.sweep) measured_sweep |= p.measured_images_per_s >= 0;
  if (measured_sweep && r.formats.size() >= 2) {
    const std::string title =
        "sweep " + r.formats[r.sweep_a].spec + ":" + r.formats[r.sweep_b].spec;
    const int first = static_cast<int>(title.size());
    std::snprintf(line, sizeof line, "\n%s %17s %16s\n", title.c_str(), "predicted img/s",
                  "measured img/s");
    out += line;
    for (const SweepPoint& p : r.sweep) {
      char share[32];
      std::snprintf(share, sizeof share, "%.1f:%.1f", p.ratio_a, 1 - p.ratio_a);
      std::snprintf(line, sizeof line, "%*s %17.1f %16.1f\n", first, share,
                    p.predicted.images_per_s, p.measured_images_per_s);
      out += line;
    }
  }
  out += "time: probe " + fixed(r.probe_seconds, 2) + " s, verify " + fixed(r.verify_seconds, 2) +
         " s";
  if (r.sweep_seconds > 0) out += ", sweep " + fixed(r.sweep_seconds, 2) + " s";
  out += ", total " + fixed(r.total_seconds, 2) + " s\n";
  return out;
}

}  // namespace dlprep::profile
