#include "help_formatter.hpp"

#include <sstream>

namespace dlprep::cli {

std::string HelpFormatter::wrap(const std::string& text, size_t width) {
  std::string out;
  size_t line = 0;  // columns on the current output line
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\n') {
      out += '\n';
      line = 0;
      ++i;
      continue;
    }
    size_t end = text.find_first_of(" \n", i);
    if (end == std::string::npos) end = text.size();
    const size_t word = end - i;
    if (line > 0 && line + 1 + word > width) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out.append(text, i, word);
    line += word;
    i = end;
    while (i < text.size() && text[i] == ' ') ++i;  // runs of spaces become one
  }
  return out;
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  std::stringstream out;
  CLI::detail::format_help(out, make_option_name(opt, is_positional) + make_option_opts(opt),
                           wrap(make_option_desc(opt), kWidth - column_width_), column_width_);
  return out.str();
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  std::stringstream out;
  CLI::detail::format_help(out, sub->get_display_name(true),
                           wrap(sub->get_description(), kWidth - column_width_), column_width_);
  return out.str();
}

}  // namespace dlprep::cli
