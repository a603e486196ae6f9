// The numeric option checks, through CLI11 itself: what an option holds after parsing is what
// the user meant, and a refusal names the option.
#include "option_checks.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlprep::cli {
namespace {

// Parses `--n TEXT` into an option of type T declared as dlprep declares its integer options.
template <typename T>
T parse(const std::string& text, T initial = 0) {
  CLI::App app;
  T value = initial;
  app.add_option("--n", value)->transform(kDecimal)->check(number_in(-1e6, 1e6, true));
  std::vector<std::string> args = {text, "--n"};  // CLI11 takes them in reverse
  app.parse(args);
  return value;
}

std::string refusal(const std::string& text) {
  try {
    parse<int64_t>(text);
  } catch (const CLI::ValidationError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("integer options are decimal: leading zeros are no octal") {
  CHECK(parse<int64_t>("010") == 10);  // CLI11 alone: 8
  CHECK(parse<int64_t>("08") == 8);    // CLI11 alone: "could not convert"
  CHECK(parse<unsigned>("0009") == 9);
  CHECK(parse<int64_t>("000") == 0);
  CHECK(parse<int64_t>("-010") == -10);
  CHECK(parse<int64_t>("+7") == 7);
  CHECK(parse<int64_t>("12") == 12);
}

TEST_CASE("a hexadecimal, fractional or non-number integer option is refused, naming the option") {
  CHECK(refusal("0x10") == "--n: '0x10' is not a decimal number");
  CHECK(refusal("-0X10") == "--n: '-0X10' is not a decimal number");
  CHECK(refusal("1.5") == "--n: '1.5' is not a whole number");
  CHECK(refusal("1e3") == "--n: '1e3' is not a whole number");
  CHECK(refusal("abc") == "--n: 'abc' is not a number");
  CHECK(refusal("") == "--n: '' is not a number");
  CHECK(refusal("2000000") == "--n: '2000000' is not from -1000000 to 1000000");
  CHECK(refusal("99999999999999999999") ==
        "--n: '99999999999999999999' is not from -1000000 to 1000000");
}

TEST_CASE("an unsigned option refuses a negative or too large value, in decimal") {
  auto parse_unsigned = [](const std::string& text) {
    CLI::App app;
    uint64_t value = 0;
    app.add_option("--seed", value)->transform(kDecimal)->check(kNotNegative);
    std::vector<std::string> args = {text, "--seed"};
    app.parse(args);
    return value;
  };
  CHECK(parse_unsigned("010") == 10);
  CHECK(parse_unsigned("18446744073709551615") == UINT64_MAX);
  CHECK(parse_unsigned("-0") == 0);
  CHECK_THROWS_WITH_AS(parse_unsigned("-1"), "--seed: '-1' is negative", CLI::ValidationError);
  CHECK_THROWS_WITH_AS(parse_unsigned("18446744073709551616"),
                       "--seed: '18446744073709551616' is out of range (0 to 2^64 - 1)",
                       CLI::ValidationError);
  CHECK_THROWS_WITH_AS(parse_unsigned("0x10"), "--seed: '0x10' is not a decimal number",
                       CLI::ValidationError);
}

TEST_CASE("a decimal number option refuses hexadecimal floats") {
  CLI::App app;
  double value = 0;
  app.add_option("--s", value)->check(not_negative_number());
  std::vector<std::string> args = {"0x1p4", "--s"};
  CHECK_THROWS_WITH_AS(app.parse(args), "--s: '0x1p4' is not a decimal number",
                       CLI::ValidationError);
  args = {"007.5", "--s"};
  app.parse(args);
  CHECK(value == 7.5);
}

}  // namespace dlprep::cli
