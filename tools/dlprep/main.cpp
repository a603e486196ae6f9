// dlprep: the command table, the global flags, and the one place that turns errors into exit
// codes (man/dlprep.1, EXIT STATUS). Each subcommand lives in its own cmd_<name>.cpp.
#include <fcntl.h>
#include <malloc.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "command.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "help_formatter.hpp"
#include "option_checks.hpp"
#include "output.hpp"
#include "version.hpp"

namespace dlprep::cli {

// One line per subcommand (and its cmd_<name>.cpp in CMakeLists.txt): all it takes to add one.
Action add_info_command(CLI::App& app);
Action add_l3_command(CLI::App& app);
Action add_criteo_preprocess_command(CLI::App& app);
Action add_convert_dataset_command(CLI::App& app);
Action add_dataset_command(CLI::App& app);
Action add_profile_mix_command(CLI::App& app);

constexpr Command kCommands[] = {
    {"info", add_info_command},
    {"l3", add_l3_command},
    {"criteo-preprocess", add_criteo_preprocess_command},
    {"convert-dataset", add_convert_dataset_command},
    {"dataset", add_dataset_command},
    {"profile-mix", add_profile_mix_command},
};

namespace {

// "l3 encode": the chain of subcommands the parser entered (possibly only part of it when parsing
// failed), for messages and the "try 'dlprep … --help'" hint.
std::string command_path(const CLI::App& app) {
  std::string path;
  const CLI::App* current = &app;
  for (;;) {
    auto subs = current->get_subcommands();
    if (subs.empty()) break;
    current = subs.front();
    if (!path.empty()) path += ' ';
    path += current->get_name();
  }
  return path;
}

// CLI11's messages start with a capital ("The following argument was not expected"); ours are
// lower case.
std::string lower_first(std::string message) {
  if (message.size() > 1 && std::isupper(static_cast<unsigned char>(message[0])) &&
      !std::isupper(static_cast<unsigned char>(message[1])))
    message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
  return message;
}

// The deepest command given, and the words nothing took (with fallthrough, words the
// subcommand did not take may sit with a parent).
std::pair<CLI::App*, std::vector<std::string>> unparsed_words(CLI::App& app) {
  CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().front();
  std::vector<std::string> rest;
  for (CLI::App* a = current; a && rest.empty(); a = a->get_parent()) rest = a->remaining();
  return {current, rest};
}

std::string command_names(CLI::App* app) {
  std::string names;
  std::function<bool(CLI::App*)> all = [](CLI::App*) { return true; };
  for (const CLI::App* sub : app->get_subcommands(all))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// CLI11 checks "a subcommand is required" before it complains about what it did not recognise;
// name the word the user typed instead ("unknown command 'ifno'").
std::string parse_error_message(CLI::App& app, const CLI::ParseError& e) {
  std::string message = e.what();
  // CLI11's counts, in words: "--output: At Most 1 required but received 2", "--output: 1
  // required OUT missing".
  if (size_t at = message.find("At Most 1 required but received"); at != std::string::npos)
    return message.substr(0, at) + "given more than once (it takes one value)";
  if (message.ends_with(" missing")) {
    // "PREFIX: N required TYPE missing"
    size_t required = message.find(" required ");
    size_t colon = message.rfind(": ", required);
    if (required != std::string::npos && colon != std::string::npos) {
      std::string type = message.substr(required + 10, message.size() - 8 - required - 10);
      return message.substr(0, colon + 2) + "its value (" + type + ") is missing";
    }
  }
  if (message.ends_with(" is required") &&
      message.find("subcommand is required") == std::string::npos) {
    // "FILE is required" when the file was given but taken for an option: `info -a.png`.
    auto [current, rest] = unparsed_words(app);
    if (!rest.empty() && rest.front().starts_with("--"))  // a misspelt option: `--ouput`
      return "unknown option '" + rest.front() + "'";
    if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-')
      return "unknown option '" + rest.front() + "' (a file whose name starts with '-': write ./" +
             rest.front() + " or -- " + rest.front() + ")";
    return message;
  }
  if (message.find("subcommand is required") == std::string::npos) return message;
  auto [current, rest] = unparsed_words(app);
  const std::string names = command_names(current);
  if (rest.empty()) return "a command is required (" + names + ")";
  const std::string& word = rest.front();
  if (!word.empty() && word[0] == '-') return "unknown option '" + word + "'";
  return "unknown command '" + word + "' (commands: " + names + ")";
}

// `dlprep l3 convert --help`: CLI11 answers --help before it looks at the words it did not
// take, and would print l3's help with exit 0, as if `l3 convert` existed. "" when there is none.
std::string unknown_command_with_help(CLI::App& app) {
  auto [current, rest] = unparsed_words(app);
  std::function<bool(CLI::App*)> all = [](CLI::App*) { return true; };
  if (rest.empty() || current->get_subcommands(all).empty() || rest.front().starts_with("-"))
    return "";
  return "unknown command '" + rest.front() + "' (commands: " + command_names(current) + ")";
}

int usage_error(const std::string& path, const std::string& message) {
  print_error(path, lower_first(message));
  std::string hint = "try 'dlprep" + (path.empty() ? "" : " " + path) + " --help'\n";
  std::fputs(hint.c_str(), stderr);
  return kExitUsage;
}

// `dlprep --json … | jq`: stdout holds one document, also when the command stopped early (a
// streamed listing is ended with the failure).
void print_error_document(const std::string& path, const std::string& failure, int code) {
  if (end_json_stream(failure, code) || json_printed()) return;
  print_json(Json{
      {"schema", "dlprep.error/1"}, {"command", path}, {"error", failure}, {"exit_status", code}});
}

int finish(int code) {
  if (!close_stdout()) code = worse_exit(code, kExitFailure);
  return code;
}

// The kernel caps tests and benchmarks set: a misspelt one would silently measure the widest.
void check_isa_variables() {
  struct Variable {
    const char* name;
    std::vector<std::string> values;
  };
  for (const Variable& v : {Variable{"DLPREP_L3_ISA", {"scalar", "avx2", "gfni"}},
                            Variable{"DLPREP_CRITEO_ISA", {"scalar", "avx512"}}}) {
    const char* value = std::getenv(v.name);
    if (!value || !*value || std::find(v.values.begin(), v.values.end(), value) != v.values.end())
      continue;
    std::string expected;
    for (const std::string& allowed : v.values)
      expected += (expected.empty() ? "" : ", ") + allowed;
    throw Error(Errc::invalid_argument, std::string(v.name) + ": unknown value '" + value +
                                            "' (expected " + expected + ")");
  }
}

}  // namespace

int run(int argc, char** argv) {
  install_interrupt_handler();

  CLI::App app("dlprep: data preparation for deep-learning training", "dlprep");
  app.formatter(std::make_shared<HelpFormatter>());  // subcommands inherit it
  app.get_formatter()->column_width(30);
  app.set_help_flag("-h,--help", "print this help and exit");
  app.set_version_flag("--version", version_with_machine(),
                       "print the version and the compiled-in features");

  Globals globals;
  app.add_flag("-q,--quiet", globals.quiet, "no progress, warnings or summaries on stderr");
  app.add_flag("-v,--verbose", globals.verbose, "more detail on stderr (repeatable)");
  app.add_flag("--json", globals.json, "print one JSON document on stdout instead of text");
  app.add_option("-j,--jobs", globals.jobs, "threads to use (default: all cores)")
      ->type_name("N")
      ->transform(kDecimal)
      ->check(number_in(0, 4096, true));
  app.add_option("--progress", globals.progress,
                 "progress on stderr: auto (if a terminal), always, never")
      ->type_name("WHEN")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}).description(""));
  app.require_subcommand(1);
  // Global flags also work after the subcommand: `dlprep l3 encode a.png -o a.l3 -j4`.
  app.fallthrough();
  app.footer(
      "Global options go before or after the command. Results go to stdout, diagnostics and\n"
      "progress to stderr. Exit status: 0 success, 1 failure, 2 usage error, 3 a check found\n"
      "a difference, 77 device not available, 130 interrupted, 141 the reader of stdout went\n"
      "away (SIGPIPE; `set -o pipefail` scripts see it). See dlprep(1).\n"
      "\n"
      "Examples:\n"
      "  dlprep info photo.png\n"
      "  dlprep -j8 l3 encode images/ -o images-l3/\n"
      "  dlprep l3 verify images-l3/cat.l3 --against images/cat.png\n"
      "  dlprep --json l3 bench images/ > bench.json\n");

  std::vector<std::pair<std::string, Action>> actions;
  for (const Command& command : kCommands) actions.emplace_back(command.name, command.add(app));
  refuse_empty_values(app);

  // A malformed command line: exit 2, and with --json its error document.
  auto refuse = [&](const std::string& path, const std::string& message) {
    const int code = usage_error(path, message);
    if (app.get_option("--json")->count() > 0)  // as far as CLI11 parsed
      print_error_document(path, lower_first(message), code);
    return finish(code);
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    const bool version = dynamic_cast<const CLI::CallForVersion*>(&e) != nullptr;
    try {
      if (version) check_isa_variables();  // --version names the kernels they choose
    } catch (const Error& bad_variable) {
      return refuse("", bad_variable.what());
    }
    if (std::string unknown = version ? "" : unknown_command_with_help(app); !unknown.empty())
      return refuse(command_path(app), unknown);
    if (version && app.get_option("--json")->count() > 0) {
      print_json(version_document());
      return finish(kExitOk);
    }
    return finish(app.exit(e));
  } catch (const CLI::ParseError& e) {
    return refuse(command_path(app), parse_error_message(app, e));
  }
  // CLI11 takes a flag given an empty value (--shuffle="$(SHUFFLE)", unset) for the flag given;
  // the options that take a value refuse one already (refuse_empty_values).
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i)
    if (const std::string_view arg = argv[i];
        arg.size() > 3 && arg.starts_with("--") && arg.ends_with("="))
      return refuse(command_path(app),
                    std::string(arg.substr(0, arg.size() - 1)) + ": must not be empty");
  if (globals.jobs == 0) globals.jobs = hardware_threads();
  if (globals.quiet) globals.verbose = 0;

  std::string path = command_path(app);
  set_interrupt_report(path, globals.json);
  int code = kExitFailure;
  std::string failure;  // the error that stopped the command
  try {
    const Action* action = nullptr;
    for (const auto& [name, act] : actions)
      if (app.get_subcommand(name)->parsed()) action = &act;
    if (!action) throw Error(Errc::internal, "no subcommand was selected");
    check_isa_variables();
    code = (*action)(globals);
  } catch (const Error& e) {
    if (e.code() == Errc::invalid_argument) {
      code = usage_error(path, e.what());
    } else {
      print_error(path, e.what());
      code = exit_code_for(e.code());
    }
    failure = e.what();
  } catch (const std::bad_alloc&) {
    failure = out_of_memory_message();
    print_error(path, failure);
    code = kExitFailure;
  } catch (const std::exception& e) {
    print_error(path, std::string("internal error: ") + e.what());
    code = kExitFailure;
    failure = std::string("internal error: ") + e.what();
  }
  if (globals.json && !failure.empty()) print_error_document(path, failure, code);
  return finish(code);
}

}  // namespace dlprep::cli

int main(int argc, char** argv) {
  // A closed standard stream (2>&-) would be taken by the first file the run opens, and messages
  // written into it: /dev/null holds its place, opened the wrong way round, so that using the
  // stream still fails (EBADF) as on a closed one. (Without /dev/null, a chroot: as it was.)
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      const int held = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
      if (held >= 0 && held != fd) ::close(held);  // (a lower one was closed: never, in order)
      dlprep::mark_standard_stream_closed(fd);     // /dev/stdout must not reopen /dev/null
    }
  // Images are decoded into and encoded from fresh multi-megabyte buffers, one after another.
  // glibc's defaults map each such buffer anew or trim it back to the kernel when freed, so every
  // image paid ~1,500 first-touch page faults (15% of convert-dataset's time); keeping freed
  // memory for reuse is what a loader's buffer pool would do. Memory stays bounded by what is in
  // flight at once.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  const int code = dlprep::cli::run(argc, argv);
  // A broken pipe ends the process on the interrupt thread, once the temp files are gone; an
  // exit from here would race it (exit status 1, a "write failed" for what SIGPIPE ends).
  while (dlprep::cli::broken_pipe()) ::pause();
  return code;
}
