#include "option_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dlprep::cli {
namespace {

// "0x10" (hexadecimal) and "0x1p4" (a hexadecimal float): strtod and strtoll base 0 take them,
// but numbers on dlprep's command line are decimal.
bool hexadecimal(const std::string& text) {
  size_t i = text.find_first_not_of(" \t");
  if (i != std::string::npos && (text[i] == '-' || text[i] == '+')) ++i;
  return i != std::string::npos && i + 1 < text.size() && text[i] == '0' &&
         (text[i + 1] == 'x' || text[i + 1] == 'X');
}

// Reads the number in `text` into `value`; false, with `error` saying why, when it is none.
bool parse_number(const std::string& text, bool whole, double& value, std::string& error) {
  if (hexadecimal(text)) {
    error = "'" + text + "' is not a decimal number";
    return false;
  }
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
    // Base 10, as kDecimal has made the text that CLI11 converts: "017" is 17.
    errno = 0;
    long long integer = std::strtoll(begin, &end, 10);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    if (end == begin || *end != '\0') {
      error = "'" + text + "' is not a whole number";
      return false;
    }
    // Beyond 64 bits the double stays, for the range check to say so.
    if (errno != ERANGE) value = static_cast<double>(integer);
  }
  return true;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// The refusals quote the value: from $(nproc) or a CI variable, the user may not have seen it.
CLI::Validator checked(bool whole, std::function<std::string(double)> check) {
  return CLI::Validator(
      [whole, check](const std::string& text) {
        double value = 0;
        std::string error;
        if (!parse_number(text, whole, value, error)) return error;
        const std::string refusal = check(value);
        return refusal.empty() ? refusal : "'" + text + "' " + refusal;
      },
      "");
}

}  // namespace

const CLI::Validator kDecimal(
    [](std::string& text) {
      const size_t first = text.find_first_not_of(" \t");
      const size_t last = text.find_last_not_of(" \t");
      std::string digits = first == std::string::npos ? "" : text.substr(first, last - first + 1);
      const bool minus = !digits.empty() && digits[0] == '-';
      if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.erase(0, 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
        double value = 0;
        std::string error;
        if (!parse_number(text, true, value, error)) return error;
        return "'" + text + "' is not a whole number";
      }
      digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
      text = (minus && digits != "0" ? "-" : "") + digits;  // what CLI11 then reads as decimal
      return std::string();
    },
    "");

std::vector<std::string> split_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    if (item.empty()) throw Error(Errc::invalid_argument, flag + ": empty item in '" + text + "'");
    items.push_back(item);
    start = comma + 1;
  }
  return items;
}

void refuse_empty_values(CLI::App& app) {
  static const CLI::Validator not_empty(
      [](const std::string& text) { return text.empty() ? std::string("must not be empty") : ""; },
      "");
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size_min() > 0) option->check(not_empty);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    refuse_empty_values(*sub);
}

const CLI::Validator kNotNegative(
    [](const std::string& text) {
      const size_t first = text.find_first_not_of(" \t");
      if (first != std::string::npos && text[first] == '-') return "'" + text + "' is negative";
      errno = 0;
      char* end = nullptr;
      std::strtoull(text.c_str(), &end, 10);  // CLI11 would store 2^64 - 1 for anything larger
      if (errno == ERANGE) return "'" + text + "' is out of range (0 to 2^64 - 1)";
      return std::string();
    },
    "");

CLI::Validator number_in(double lo, double hi, bool whole) {
  return checked(whole, [lo, hi](double v) {
    return v < lo || v > hi ? "is not from " + number_text(lo) + " to " + number_text(hi)
                            : std::string();
  });
}

CLI::Validator positive_number() {
  return checked(false,
                 [](double v) { return v > 0 ? std::string() : "is not a positive number"; });
}

CLI::Validator not_negative_number() {
  return checked(false, [](double v) { return v >= 0 ? std::string() : "is negative"; });
}

}  // namespace dlprep::cli
