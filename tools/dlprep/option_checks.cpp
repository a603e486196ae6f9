#include "option_checks.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dlprep::cli {
namespace {

// Reads the number in `text` into `value`; false, with `error` saying why, when it is none.
bool parse_number(const std::string& text, bool whole, double& value, std::string& error) {
  const char* begin = text.c_str();
  char* end = nullptr;
  value = std::strtod(begin, &end);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (text.empty() || end == begin || *end != '\0' || std::isnan(value)) {
    error = "'" + text + "' is not a number";
    return false;
  }
  if (std::isinf(value)) {
    error = "must be finite";
    return false;
  }
  if (whole) {
    // Read as CLI11 stores it (strtoll base 0: "017" is octal 15, "0x10" is 16), so that the
    // number checked is the number used.
    errno = 0;
    long long integer = std::strtoll(begin, &end, 0);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (end == begin || *end != '\0' || errno == ERANGE) {
      error = "'" + text + "' is not a whole number";
      return false;
    }
    value = static_cast<double>(integer);
  }
  return true;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

CLI::Validator checked(bool whole, std::function<std::string(double)> check) {
  return CLI::Validator(
      [whole, check](const std::string& text) {
        double value = 0;
        std::string error;
        if (!parse_number(text, whole, value, error)) return error;
        return check(value);
      },
      "");
}

}  // namespace

const CLI::Validator kNotNegative(
    [](const std::string& text) {
      const size_t first = text.find_first_not_of(" \t");
      if (first != std::string::npos && text[first] == '-')
        return std::string("must not be negative");
      errno = 0;
      char* end = nullptr;
      std::strtoull(text.c_str(), &end, 0);  // CLI11 would store 2^64 - 1 for anything larger
      if (errno == ERANGE) return "'" + text + "' is out of range (0 to 2^64 - 1)";
      return std::string();
    },
    "");

CLI::Validator number_in(double lo, double hi, bool whole) {
  return checked(whole, [lo, hi](double v) {
    return v < lo || v > hi ? "must be from " + number_text(lo) + " to " + number_text(hi)
                            : std::string();
  });
}

CLI::Validator positive_number() {
  return checked(false,
                 [](double v) { return v > 0 ? std::string() : "must be a positive number"; });
}

CLI::Validator not_negative_number() {
  return checked(false, [](double v) { return v >= 0 ? std::string() : "must not be negative"; });
}

}  // namespace dlprep::cli
