// The layout of --help: CLI11's, with each description word-wrapped to fit 100 columns and its
// continuation lines under the description column (CLI11 2.1 indents only at the newlines it is
// given, so long descriptions ran far past the terminal's edge).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace dlprep::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  /// Columns a help line may take.
  static constexpr size_t kWidth = 100;

  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_subcommand(const CLI::App* sub) const override;

  /// `text` with its spaces turned into newlines where a line would pass `width` columns (a
  /// word longer than that keeps its own line); newlines already there are kept.
  static std::string wrap(const std::string& text, size_t width);
};

}  // namespace dlprep::cli
