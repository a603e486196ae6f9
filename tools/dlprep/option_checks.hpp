// Validators for numeric options, with messages in dlprep's style. CLI11's own say "Value abc not
// in range 1 to 100" for a word, print DBL_MAX in 300 digits, and let "nan" through.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace dlprep::cli {

/// A transform for every integer option (add it with ->transform, so that it runs before the
/// checks): the text as a decimal integer, leading zeros and all ("010" is 10, "08" is 8), which
/// CLI11 alone reads with strtoll base 0 (octal 8, and "08" not at all); "0x10" is refused as
/// not decimal, "1.5" or "abc" as not a whole number.
extern const CLI::Validator kDecimal;

/// For unsigned options: CLI11 reads "-1" as 2^64 - 1, and 2^64 or more as 2^64 - 1 (two seeds
/// giving one dataset), surprises rather than errors.
extern const CLI::Validator kNotNegative;

/// Adds a check to every option of `app` and its subcommands that takes a value, positional ones
/// too: an empty value (`--against "$ORIG"` with ORIG unset in a Makefile) is refused ("must not
/// be empty"), never taken for the option left out or for its default.
void refuse_empty_values(CLI::App& app);

/// "a,b,c" -> {"a", "b", "c"}, for list options; throws Error(invalid_argument) "FLAG: empty
/// item in 'a,,c'" for an empty item, which would otherwise be taken for no item at all.
std::vector<std::string> split_list(const std::string& text, const std::string& flag);

/// A finite number from `lo` to `hi` ("'abc' is not a number", "'0' is not from 1 to 100"); with
/// `whole`, an integer ("'1.5' is not a whole number").
CLI::Validator number_in(double lo, double hi, bool whole = false);

/// A finite number above 0 ("'0' is not a positive number").
CLI::Validator positive_number();

/// A finite number of 0 or more ("'-1' is negative").
CLI::Validator not_negative_number();

}  // namespace dlprep::cli
