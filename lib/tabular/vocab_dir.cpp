// A run's vocabulary directory (vocab_dir.hpp), and the conventions it records for --vocab-from.
#include "tabular/vocab_dir.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "tabular/json_file.hpp"
#include "tabular/npy_format.hpp"
#include "tabular/parse_tsv.hpp"

namespace dlprep::tabular {
namespace fs = std::filesystem;
using json = nlohmann::json;
namespace {

template <typename T>
void write_npy_1d(const fs::path& p, const char* descr, const std::vector<T>& v) {
  AtomicFile f(p);
  std::string h = npy_header(descr, v.size(), 0);
  f.write(bytes_of(h));
  f.write(ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)));
  f.commit();
}

// How a run turns values into IDs and dense values into arrays: what a --vocab-from run takes by
// default (apply_vocab_conventions), so that its outputs match this run's.
json conventions_of(const PreprocessOptions& o) {
  json c = {{"min_freq", o.min_freq},
            {"id_base", o.id_base},
            {"oov_id", o.oov_id ? json(*o.oov_id) : json()},
            {"apply_log", o.apply_log},
            {"log_offset", o.log_offset}};
  if (o.output_format != OutputFormat::none)
    c["output_format"] = output_format_name(o.output_format);
  return c;
}

}  // namespace

fs::path vocab_json_of(const fs::path& where) {
  return fs::exists(where / "vocab.json") ? where / "vocab.json" : where / "vocab" / "vocab.json";
}

void write_vocab_dir(const fs::path& dir, const std::array<uint32_t, kNumSparse>& modulus,
                     const std::vector<ColumnVocab>& vocab, const PreprocessOptions& options,
                     json fields) {
  std::error_code made;
  fs::create_directories(dir, made);
  if (made) throw Error(Errc::io, dir.string() + ": cannot create the folder: " + made.message());
  // First: an earlier vocab.json must never describe arrays half replaced by these (a rebuild
  // killed in between, whose arrays can match its cardinalities and counts). Without it, the
  // arrays are no vocabulary, and a rerun builds one anew. (Metadata changes reach the disk in
  // order on journaling file systems, so no fsync is needed between.)
  std::error_code ec;
  fs::remove(dir / "vocab.json", ec);
  if (ec) throw Error(Errc::io, (dir / "vocab.json").string() + ": cannot remove: " + ec.message());
  std::vector<uint64_t> cardinality;
  std::vector<fs::path> arrays;
  for (int j = 0; j < kNumSparse; ++j) {
    const std::string c = field_name(kFirstSparseField + j);
    arrays.push_back(dir / (c + "_values.npy"));
    write_npy_1d(arrays.back(), "<u4", vocab[j].values());
    arrays.push_back(dir / (c + "_counts.npy"));
    write_npy_1d(arrays.back(), "<u8", vocab[j].counts());
    cardinality.push_back(vocab[j].size());
  }
  fields["schema"] = "dlprep.criteo-vocab/1";
  fields["modulus"] = modulus;
  fields["cardinality"] = cardinality;
  fields["conventions"] = conventions_of(options);
  flush_to_storage(arrays);  // vocab.json, the checkpoint, only once the arrays it names are stored
  write_json_file(dir / "vocab.json", fields);
}

void update_vocab_conventions(const fs::path& dir, const PreprocessOptions& options) {
  json v = read_json_file(dir / "vocab.json");
  if (!v.is_object())
    throw Error(Errc::corrupt_data, (dir / "vocab.json").string() + ": not a dlprep vocabulary");
  const json conventions = conventions_of(options);
  if (v.value("conventions", json()) == conventions) return;
  v["conventions"] = conventions;
  write_json_file(dir / "vocab.json", v);
}

std::vector<fs::path> remove_vocab_dir(const fs::path& dir) {
  std::vector<fs::path> removed;
  std::error_code ec;
  const auto remove = [&](const fs::path& f) {
    if (fs::remove(f, ec)) removed.push_back(f);
  };
  remove(dir / "vocab.json");  // first: without it, the arrays are no vocabulary
  for (int j = 0; j < kNumSparse; ++j) {
    const std::string c = field_name(kFirstSparseField + j);
    remove(dir / (c + "_values.npy"));
    remove(dir / (c + "_counts.npy"));
  }
  if (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)) fs::remove(dir, ec);
  return removed;
}

namespace {

// vocab.json's lists of a vocabulary: each column's modulus, and its cardinality (empty when
// absent). Throws Error(corrupt_data) naming the file.
struct VocabShape {
  std::vector<uint64_t> modulus, cardinality;
};
VocabShape read_vocab_shape(const json& v, const fs::path& vocab_json) {
  auto bad = [&](const std::string& what) {
    return Error(Errc::corrupt_data, vocab_json.string() + ": " + what);
  };
  // A list of one integer from 0 to `max` per sparse column, or empty when `key` is absent;
  // checked before get<>(), which would wrap -1 and truncate 1.5.
  auto column_list = [&](const char* key, uint64_t max) {
    std::vector<uint64_t> out;
    if (!v.contains(key)) return out;
    const json& list = v.at(key);
    if (!list.is_array() || list.size() != kNumSparse)
      throw bad(std::string("bad ") + key + " list");
    for (const json& n : list) {
      if (!n.is_number_unsigned() || n.get<uint64_t>() > max)
        throw bad(std::string("bad ") + key + " list");
      out.push_back(n.get<uint64_t>());
    }
    return out;
  };
  if (!v.is_object() || v.value("schema", json()) != "dlprep.criteo-vocab/1")
    throw bad("not a dlprep vocabulary");
  // A column holds at most 2^32 distinct 32-bit values: a larger count is damage, and would
  // overflow the table sizes computed from it (an endless loop doubling a slot count).
  VocabShape shape{column_list("modulus", UINT32_MAX),
                   column_list("cardinality", uint64_t{1} << 32)};
  if (shape.modulus.empty()) throw bad("no modulus list");
  return shape;
}

uint64_t shape_bytes(const VocabShape& shape) {
  uint64_t bytes = 0;
  for (size_t j = 0; j < shape.cardinality.size(); ++j)
    bytes += ColumnVocab::bytes_for(static_cast<uint32_t>(shape.modulus[j]), shape.cardinality[j]);
  return bytes;
}

}  // namespace

uint64_t vocab_dir_bytes(const fs::path& where) {
  const fs::path vocab_json = vocab_json_of(where);
  return shape_bytes(read_vocab_shape(read_json_file(vocab_json), vocab_json));
}

SavedVocab read_vocab_dir(const fs::path& where, MemoryGuard* guard) {
  const fs::path vocab_json = vocab_json_of(where);
  const fs::path dir = vocab_json.parent_path();
  const json v = read_json_file(vocab_json);
  auto bad = [&](const std::string& what) {
    return Error(Errc::corrupt_data, vocab_json.string() + ": " + what);
  };
  const VocabShape shape = read_vocab_shape(v, vocab_json);
  const std::vector<uint64_t>& m = shape.modulus;
  const std::vector<uint64_t>& cardinality = shape.cardinality;
  // Every row counts once in each column: the counts add up to the rows of the days the
  // vocabulary covers. Arrays renamed into place while their vocab.json was not (a checkpoint
  // interrupted in between) hold more, and would otherwise pass when no column gained a value.
  std::optional<uint64_t> rows;
  if (v.contains("days") && v["days"].is_array()) {
    const json& days = v["days"];
    const json done = v.value("days_done", json(days.size()));
    if (!done.is_number_unsigned() || done.get<uint64_t>() > days.size())
      throw bad("bad days_done");
    rows = 0;
    for (size_t d = 0; d < done.get<uint64_t>(); ++d) {
      if (!days[d].is_object() || !days[d].value("rows", json()).is_number_unsigned())
        throw bad("bad day rows");
      *rows += days[d]["rows"].get<uint64_t>();
    }
  }
  SavedVocab saved;
  for (int j = 0; j < kNumSparse; ++j)
    saved.modulus[j] = static_cast<uint32_t>(m[j]);  // <= UINT32_MAX, checked above
  if (guard && !cardinality.empty()) {
    uint64_t values = 0;
    for (uint64_t n : cardinality) values += n;
    const uint64_t bytes = shape_bytes(shape);
    guard->reserve(bytes, dir.string() + "'s vocabulary of " + std::to_string(values) + " values");
    guard->release(bytes);
  }
  for (int j = 0; j < kNumSparse; ++j) {
    const std::string c = field_name(kFirstSparseField + j);
    NpyArray values = read_npy(dir / (c + "_values.npy"));
    NpyArray counts = read_npy(dir / (c + "_counts.npy"));
    if (values.descr != "<u4" || counts.descr != "<u8" || values.cols != 0 || counts.cols != 0 ||
        values.rows != counts.rows)
      throw Error(Errc::corrupt_data, dir.string() + ": bad vocabulary arrays for " + c);
    if (!cardinality.empty() && cardinality[j] != values.rows)
      throw Error(Errc::corrupt_data, dir.string() + ": " + c + " does not match vocab.json");
    std::vector<uint32_t> vv(values.rows);
    std::vector<uint64_t> cc(counts.rows);
    std::memcpy(vv.data(), values.data.data(), vv.size() * 4);
    std::memcpy(cc.data(), counts.data.data(), cc.size() * 8);
    uint64_t counted = 0;
    for (uint64_t c : cc) counted += c;
    if (rows && counted != *rows)
      throw Error(Errc::corrupt_data, dir.string() + ": " + c + "'s counts add up to " +
                                          std::to_string(counted) + " rows, vocab.json's days to " +
                                          std::to_string(*rows) +
                                          " (a checkpoint interrupted while it was written?)");
    saved.columns.emplace_back(saved.modulus[j], guard);
    try {
      saved.columns.back().assign(std::move(vv), std::move(cc));
    } catch (const Error& e) {
      throw e.with_context(dir.string() + "/" + c);
    }
  }
  return saved;
}

void apply_vocab_conventions(const fs::path& vocab_from, PreprocessOptions& o) {
  const fs::path file = vocab_json_of(vocab_from);
  std::error_code ec;
  if (!fs::exists(vocab_from, ec))  // a missing file fails (exit 1) as an input does, named
    throw Error(Errc::io,
                "--vocab-from " + vocab_from.string() + ": cannot open: No such file or directory");
  if (fs::is_directory(vocab_from, ec) && !fs::exists(file, ec))
    throw Error(Errc::invalid_argument,
                "--vocab-from " + vocab_from.string() +
                    ": holds no vocabulary (no vocab.json, nor vocab/vocab.json): not an OUTDIR "
                    "of criteo-preprocess, or one made with --no-vocab?");
  const json v = read_json_file(file);
  if (!v.is_object() || !v.contains("conventions")) return;  // a vocabulary of an older dlprep
  const json& c = v.at("conventions");
  const auto bad = [&](const std::string& key) {
    return Error(Errc::corrupt_data, file.string() + ": bad conventions." + key);
  };
  // An integer from `min` to 2^31 - 1, checked before get<>(), which would wrap or truncate it.
  const auto integer = [&](const char* key, uint64_t min) {
    const json& n = c.at(key);
    if (!n.is_number_unsigned() || n.get<uint64_t>() < min || n.get<uint64_t>() > INT32_MAX)
      throw bad(key);
    return n.get<uint64_t>();
  };
  if (!c.is_object()) throw bad("*");
  PreprocessOptions t = o;  // o changes only when every field is good
  try {
    t.min_freq = std::max<uint64_t>(integer("min_freq", 0), 1);  // 0: an older dlprep's 1
    t.id_base = static_cast<int64_t>(integer("id_base", 0));
    if (c.at("oov_id").is_null())
      t.oov_id.reset();
    else
      t.oov_id = static_cast<int64_t>(integer("oov_id", 0));
    if (!c.at("apply_log").is_boolean()) throw bad("apply_log");
    t.apply_log = c.at("apply_log").get<bool>();
    if (!c.at("log_offset").is_number() || !(c.at("log_offset").get<double>() > 0))
      throw bad("log_offset");
    t.log_offset = c.at("log_offset").get<double>();
    if (c.contains("output_format")) {
      const json& f = c.at("output_format");
      constexpr std::array kLayouts = {OutputFormat::npy, OutputFormat::dlrm, OutputFormat::split};
      const auto* it = std::find_if(kLayouts.begin(), kLayouts.end(),
                                    [&](OutputFormat k) { return f == output_format_name(k); });
      if (it == kLayouts.end()) throw bad("output_format");
      t.output_format = *it;
    }
  } catch (const json::exception&) {
    throw bad("*");  // a field missing
  }
  o = std::move(t);
}

}  // namespace dlprep::tabular
