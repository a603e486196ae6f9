// The contract between main.cpp and one file per subcommand (cmd_<name>.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>

namespace dlprep::cli {

/// Options every subcommand sees (set by main.cpp before the action runs).
struct Globals {
  bool quiet = false;          ///< -q: no progress, no warnings
  int verbose = 0;             ///< -v (repeatable)
  bool json = false;           ///< --json: one JSON document on stdout instead of text
  unsigned jobs = 0;           ///< -j N; 0 before main.cpp resolves it to all cores
  std::string progress = "auto";  ///< auto | always | never
};

/// Runs a parsed subcommand; returns the process exit code. Library errors propagate as
/// dlprep::Error and main.cpp maps them (exit codes in man/dlprep.1).
using Action = std::function<int(const Globals&)>;

/// Each cmd_<name>.cpp defines one `Action add_<name>_command(CLI::App& app)`: it adds its
/// subcommand (and options, bound to state owned by the returned Action) to `app`, and main.cpp
/// runs the Action if that subcommand was chosen.
struct Command {
  const char* name;
  Action (*add)(CLI::App& app);
};

}  // namespace dlprep::cli
