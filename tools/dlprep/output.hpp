// How dlprep talks to its user: results on stdout (text tables or one JSON document), errors,
// warnings and progress on stderr, and the one table from Errc to exit codes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "core/error.hpp"

namespace dlprep::cli {

/// JSON documents keep their keys in insertion order ("schema" first).
using Json = nlohmann::ordered_json;

/// Exit codes, the same for every command (man/dlprep.1, EXIT STATUS).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitMismatch = 3;
inline constexpr int kExitDeviceUnavailable = 77;
inline constexpr int kExitInterrupted = 130;

/// Per-file results held at once by a command that reports them in input order (l3 encode,
/// decode and verify): a slow file holds up the report of at most this many after it (a few
/// hundred bytes each) before the workers wait for it.
inline constexpr size_t kReportOrderWindow = 4096;

/// The exit code for an error class: the only mapping from Errc to exit codes.
int exit_code_for(Errc code) noexcept;

/// The exit code for one failed item of a multi-file command: like exit_code_for, except that an
/// invalid argument found in one file's data is a failure of that file (1), not a usage error.
int item_exit_code(Errc code) noexcept;

/// Combines the outcomes of several items into one exit code: interrupted beats failure, which
/// beats "device unavailable", usage, then "a difference was found" (like cmp(1), trouble wins
/// over a difference), then success.
int worse_exit(int a, int b) noexcept;

/// `error` with "path: " in front unless its message already starts with the path (file_io's
/// messages name the file themselves).
Error with_path(const std::filesystem::path& path, const Error& error);

/// The user-visible spelling of a path: "-" is shown as "<stdin>" or "<stdout>" by callers.
std::string display_path(const std::filesystem::path& path);

/// "out of memory", and the address-space limit when one is set (`ulimit -v`): it counts every
/// mapping, so it can fail long before RAM does, and the user should know it was the limit.
std::string out_of_memory_message();

/// Writes "dlprep: error: <command>: <message>" to stderr (thread-safe; clears a progress line).
void print_error(std::string_view command, std::string_view message);
/// Writes "dlprep: warning: <command>: <message>" to stderr unless quiet.
void print_warning(const Globals& globals, std::string_view command, std::string_view message);
/// Writes a diagnostic line (summaries, -v details) to stderr as is, unless quiet.
void print_note(const Globals& globals, std::string_view line);

/// -j, or fewer threads where each holding `files_per_thread` open files would pass the open-file
/// limit (`ulimit -n`), with a warning that says so: past it, whichever thread opens last fails,
/// a different sample every run, reported as damaged. For the dataset commands: the files one
/// holds for the whole run, opened after this call (kDatasetCommandFiles), are set aside too.
unsigned jobs_within_fd_limit(const Globals& globals, std::string_view command,
                              unsigned files_per_thread);

/// Writes text (lines of a listing) to stdout, first clearing a progress line when stdout is the
/// terminal that shows it.
void write_stdout(std::string_view text);

/// Writes a JSON document to stdout (two-space indent, one trailing newline).
void print_json(const Json& document);
/// Whether print_json has written a document: with --json, a command that fails before it
/// prints its report gets an error document instead, so that stdout always holds one.
bool json_printed();

/// A text table printed to stdout: a header row, then rows; columns are padded to their widest
/// cell; columns whose cells are all numbers ("12", "0.33", "1.10x", "-") are aligned right.
/// With a `lookahead`, widths and alignment come from the first `lookahead` rows, which are
/// printed once that many are there; later rows are printed as they are added (a wider cell
/// widens its own row only), so that a listing of a million files is never held whole.
class Table {
 public:
  explicit Table(std::vector<std::string> header, size_t lookahead = SIZE_MAX)
      : header_(std::move(header)), lookahead_(lookahead) {}
  void add_row(std::vector<std::string> row);
  /// Prints what is not printed yet: the header and every row, without a lookahead.
  void print();

 private:
  void lay_out();  // widths and alignment from the header and the rows held
  void emit(const std::vector<std::string>& row) const;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  size_t lookahead_;
  bool streaming_ = false;  // laid out and header printed: rows go out as they come
  std::vector<size_t> width_;
  std::vector<bool> numeric_;
};

/// A --json document written to stdout as it is made, for listings too long to hold: the fields
/// of `head`, then the array `key` one element at a time, then the fields of finish()'s `tail`;
/// the text is what print_json would write for the whole. One at a time. If the command ends
/// another way (an error, an interrupt), "error" and "exit_status" fields end the document, so
/// that stdout still holds one valid document (end_json_stream).
class JsonStream {
 public:
  JsonStream(const Json& head, const std::string& key);
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;
  void add(const Json& element);
  void finish(const Json& tail = Json::object());
};

/// Ends the document of a JsonStream that was not finished with `error` and `exit_status`
/// fields; false when none is open.
bool end_json_stream(const std::string& error, int exit_status);

/// "1.5 MB", "812 kB", "17 B" (decimal units, like the MB/s of benchmarks).
std::string format_bytes(uint64_t bytes);
/// Fixed-point formatting: format_fixed(3.14159, 2) == "3.14".
std::string format_fixed(double value, int decimals);

/// Progress of a long operation on stderr: one `\r` line with done/total, rate and ETA,
/// refreshed at most 4 times a second. Enabled with --progress always, or auto when stderr is a
/// terminal; never with -q. Thread-safe: parallel workers call step() concurrently.
class Progress {
 public:
  Progress(const Globals& globals, std::string what, uint64_t total, std::string unit = "files");
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  bool enabled() const { return enabled_; }
  /// Records `items` more done (and `bytes` more processed, for the MB/s figure).
  void step(uint64_t items = 1, uint64_t bytes = 0);
  /// Sets the absolute count (for library callbacks that report done/total themselves) and,
  /// if not empty, the stage shown after the command's name, e.g. "pass 2".
  void set(uint64_t done, uint64_t total, const std::string& stage = {});
  /// Starts the next phase: 0 of `total` `unit`, no stage, and the rate and ETA measured from
  /// now (a phase before it, e.g. a walk of the source, does not dilute them).
  void restart(uint64_t total, std::string unit);
  /// Erases the line (on a terminal) or ends it with a newline; called by the destructor.
  void finish();

 private:
  void draw_locked(bool force);
  bool enabled_ = false;
  bool tty_ = false;
  bool drawn_ = false;
  std::string what_, unit_, stage_;
  uint64_t total_ = 0, done_ = 0, bytes_ = 0;
  size_t width_ = 0;  ///< length of the last line drawn, to blank it
  std::chrono::steady_clock::time_point start_, last_draw_;
  friend void clear_progress_locked();
};

/// Handles SIGINT, SIGTERM and SIGHUP on a thread of their own: it waits for the outputs being
/// written under defer_interrupts() to be committed, removes the temp files of any other
/// AtomicFile (remove_pending_temp_files), and exits 130 (SIGINT) or 128 + the signal number.
/// SIGXFSZ is ignored: a write past `ulimit -f` is an error (EFBIG) like a full disk. SIGPIPE
/// (the reader of a pipe went away) removes the temp files too, then ends the process by SIGPIPE
/// as its default action would (exit status 141 in a shell); inherited ignored, it stays so.
/// Call first thing in main(), before any thread starts (they inherit the blocked signals).
void install_interrupt_handler();
/// Whether a SIGPIPE came: the run is ending by it, its write errors are not reported, and the
/// main thread waits for that end (main()).
bool broken_pipe();
/// What an interrupt reports: "dlprep: error: COMMAND: interrupted by SIGINT" on stderr, and with
/// `json` the error document on stdout, unless the command has printed its own.
void set_interrupt_report(const std::string& command, bool json);

/// Held while one output file is created, written and renamed into place: an interrupt waits
/// until it is released, so an output is either complete or absent, never a stray temp file.
/// Not for writes that can block indefinitely (stdout, a FIFO).
std::shared_lock<std::shared_mutex> defer_interrupts();

/// Flushes and closes stdout; returns false (after printing why) when a write failed, e.g. a
/// full disk, so that main() exits 1 instead of 0.
bool close_stdout();

}  // namespace dlprep::cli
