#include "core/byte_size.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <string>

namespace dlprep {

std::optional<ByteSize> parse_byte_size(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data() || !std::isfinite(value) || std::signbit(value))
    return std::nullopt;
  std::string unit(end, text.data() + text.size());
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const struct {
    const char* unit;
    double scale;
  } kUnits[] = {
      {"", 1},         {"b", 1},        {"k", 0x1p10},   {"m", 0x1p20},   {"g", 0x1p30},
      {"t", 0x1p40},   {"ki", 0x1p10},  {"mi", 0x1p20},  {"gi", 0x1p30},  {"ti", 0x1p40},
      {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30}, {"tib", 0x1p40}, {"kb", 1e3},
      {"mb", 1e6},     {"gb", 1e9},     {"tb", 1e12},
  };
  const auto* found = std::find_if(std::begin(kUnits), std::end(kUnits),
                                   [&](const auto& u) { return unit == u.unit; });
  if (found == std::end(kUnits) || (found->scale == 1 && value != std::floor(value)))
    return std::nullopt;
  return ByteSize{value * found->scale, !unit.empty()};
}

}  // namespace dlprep
