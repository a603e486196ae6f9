// The JSON files of a run (vocab.json, state.json, stats.json): read with errors that name the
// file, written atomically and indented.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace dlprep::tabular {

/// Deepest nesting read_json_file accepts: the run's own files nest a few levels, and a deeper
/// hand-edited value would overflow the stack of the recursive dump that writes it back.
constexpr int kMaxJsonDepth = 64;

/// The largest of these files read: the run's own are a few KiB to a few MiB (a state.json of
/// thousands of days); more is another file at that name (or /dev/zero), not read whole.
constexpr uint64_t kMaxJsonFileBytes = uint64_t{256} << 20;

/// Throws Error(io) when the file cannot be read (missing, a folder: the message says which),
/// Error(corrupt_data) when it is not JSON (or nests deeper than kMaxJsonDepth).
inline nlohmann::json read_json_file(const std::filesystem::path& p) {
  const Bytes text = read_file(p, kMaxJsonFileBytes);
  const auto shallow = [&p](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxJsonDepth)
      throw Error(Errc::corrupt_data,
                  p.string() + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), shallow);
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 2, ...": the library's tag is noise.
    std::string what = e.what();
    if (what.starts_with("[json.")) what.erase(0, what.find("] ") + 2);
    throw Error(Errc::corrupt_data, p.string() + ": not valid JSON (" + what + ")");
  }
}

/// A count of the run's own JSON files (rows, days, bytes): an unsigned integer, else
/// Error(corrupt_data). get<uint64_t>() would wrap a negative one and is undefined for a float
/// out of range (1e30).
inline uint64_t json_count(const nlohmann::json& value) {
  if (!value.is_number_unsigned()) throw Error(Errc::corrupt_data, "a count is not one");
  return value.get<uint64_t>();
}

inline void write_json_file(const std::filesystem::path& p, const nlohmann::json& j) {
  // replace: a string that is not UTF-8 must not abort the run after its work is done.
  const std::string s = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  write_file_atomic(p, bytes_of(s));
}

}  // namespace dlprep::tabular
