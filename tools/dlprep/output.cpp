#include "output.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <iostream>
#include <mutex>
#include <thread>

#include "core/file_io.hpp"
#include "core/mapped_files.hpp"
#include "core/parallel.hpp"
#include "core/utf8.hpp"

namespace dlprep::cli {
namespace {

// One lock for everything written to stderr, so that an error printed by a worker thread never
// lands in the middle of a progress line.
std::mutex g_stderr_mutex;
Progress* g_active_progress = nullptr;
std::atomic<bool> g_broken_pipe{false};  // set by the SIGPIPE handler: lock-free
static_assert(std::atomic<bool>::is_always_lock_free);

void write_stderr(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stderr); }

}  // namespace

bool broken_pipe() { return g_broken_pipe.load(); }

// Blanks the progress line (terminal) or ends it (pipe) before another line goes to stderr;
// the next step() draws it again.
void clear_progress_locked() {
  Progress* p = g_active_progress;
  if (!p || !p->drawn_) return;
  if (p->tty_)
    write_stderr("\r" + std::string(p->width_, ' ') + "\r");
  else
    write_stderr("\n");
  p->drawn_ = false;
}

int exit_code_for(Errc code) noexcept {
  switch (code) {
    case Errc::invalid_argument:
      return kExitUsage;
    case Errc::mismatch:
      return kExitMismatch;
    case Errc::device_unavailable:
      return kExitDeviceUnavailable;
    case Errc::interrupted:
      return kExitInterrupted;
    case Errc::io:
    case Errc::corrupt_data:
    case Errc::unsupported:
    case Errc::limit_exceeded:
    case Errc::device_failure:
    case Errc::internal:
      return kExitFailure;
  }
  return kExitFailure;
}

int item_exit_code(Errc code) noexcept {
  return code == Errc::invalid_argument ? kExitFailure : exit_code_for(code);
}

int worse_exit(int a, int b) noexcept {
  auto rank = [](int code) {
    switch (code) {
      case kExitOk:
        return 0;
      case kExitMismatch:
        return 1;
      case kExitUsage:
        return 2;
      case kExitDeviceUnavailable:
        return 3;
      case kExitFailure:
        return 4;
      case kExitInterrupted:
        return 5;
      default:
        return 4;
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

std::string display_path(const std::filesystem::path& path) {
  return path == "-" ? std::string("<stdin>") : path.string();
}

Error with_path(const std::filesystem::path& path, const Error& error) {
  std::string shown = display_path(path);
  std::string_view message = error.what();
  if (message.starts_with(shown + ":") || message.starts_with(path.string() + ":")) return error;
  return error.with_context(shown);
}

std::string out_of_memory_message() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return "out of memory";
  return "out of memory under an address-space limit of " + format_bytes(limit.rlim_cur) +
         " (ulimit -v), which counts all mapped memory (buffers, input files mapped whole, each "
         "thread's malloc arena), not only memory in use";
}

namespace {
// print_error's line, also after a broken pipe.
void write_error_line(std::string_view command, std::string_view message) {
  std::string line = "dlprep: error: ";
  if (!command.empty()) line.append(command).append(": ");
  line.append(message).append("\n");
  std::lock_guard lock(g_stderr_mutex);
  clear_progress_locked();
  write_stderr(line);
}
}  // namespace

void print_error(std::string_view command, std::string_view message) {
  if (broken_pipe()) return;  // the write errors that follow: the run ends as SIGPIPE's
  write_error_line(command, message);
}

// What a dataset command (convert-dataset, the most) holds while its threads work, opened once
// -j is settled: the lock on its dataset, the old index it reads, the old index the new one is
// compared with (AtomicFile's defer mode) and the new one's temp file, the tar shard it writes,
// and the folder, list or source index it reads its samples from.
constexpr unsigned kDatasetCommandFiles = 6;

unsigned jobs_within_fd_limit(const Globals& globals, std::string_view command,
                              unsigned files_per_thread) {
  const unsigned threads =
      clamp_workers_to_fd_limit(globals.jobs, files_per_thread, nullptr, kDatasetCommandFiles);
  if (threads < globals.jobs)
    print_warning(globals, command,
                  "-j" + std::to_string(globals.jobs) +
                      " would open more files than the limit allows (ulimit -n): using " +
                      std::to_string(threads) + (threads == 1 ? " thread" : " threads"));
  return threads;
}

void print_warning(const Globals& globals, std::string_view command, std::string_view message) {
  if (globals.quiet) return;
  std::string line = "dlprep: warning: ";
  if (!command.empty()) line.append(command).append(": ");
  line.append(message).append("\n");
  std::lock_guard lock(g_stderr_mutex);
  clear_progress_locked();
  write_stderr(line);
}

void print_note(const Globals& globals, std::string_view text) {
  if (globals.quiet) return;
  std::string line(text);
  line.append("\n");
  std::lock_guard lock(g_stderr_mutex);
  clear_progress_locked();
  write_stderr(line);
}

namespace {
// The error of the first failed write to stdout, kept for close_stdout: errno is overwritten by
// the calls that follow it.
std::atomic<int> g_stdout_errno{0};

void note_stdout_error() {
  int expected = 0;
  if (std::cout.fail()) g_stdout_errno.compare_exchange_strong(expected, errno ? errno : EIO);
}

std::atomic<bool> g_json_printed{false};
// Held while a document goes to stdout, so that an interrupt's error document never lands in it.
std::timed_mutex g_json_mutex;
// Held while a listing's rows go to stdout, so that an interrupt can flush whole rows.
std::timed_mutex g_stdout_mutex;
// What an interrupt reports: the command, and whether it owes an error document (--json).
std::mutex g_interrupt_mutex;
std::string g_interrupt_command;
bool g_interrupt_json = false;

// File names that are not UTF-8, written as dataset keys are (%XX per byte): JSON holds them, and
// two such names stay apart (U+FFFD would make them one).
void escape_names(Json& j) {
  if (j.is_string()) {
    j = escape_invalid_utf8(j.get_ref<const std::string&>());
  } else if (j.is_structured()) {
    for (Json& item : j) escape_names(item);
  }
}
}  // namespace

void print_json(const Json& document) {
  Json escaped = document;
  escape_names(escaped);
  std::lock_guard lock(g_json_mutex);
  errno = 0;
  std::cout << escaped.dump(2) << '\n';
  std::cout.flush();  // an interrupt exits without flushing
  note_stdout_error();
  g_json_printed = true;
}

namespace {
// The JsonStream being written, under g_json_mutex: whether one is open, and whether its array
// has an element yet ("[]" or "\n  ]" ends it).
bool g_stream_open = false;
bool g_stream_empty = true;

// `value` as dump(2) writes it `depth` spaces in: every line after the first indented by that
// (a string holds no raw newline, JSON escapes it).
std::string indented(const Json& value, size_t depth) {
  Json escaped = value;
  escape_names(escaped);
  const std::string text = escaped.dump(2);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '\n') out.append(depth, ' ');
  }
  return out;
}

// The rest of the open document: the array closed, then `tail`'s fields.
std::string stream_ending_locked(const Json& tail) {
  std::string text = g_stream_empty ? "[]" : "\n  ]";
  for (const auto& [key, value] : tail.items())
    text += ",\n  " + Json(key).dump() + ": " + indented(value, 2);
  text += "\n}\n";
  g_stream_open = false;
  return text;
}

}  // namespace

void write_stdout(std::string_view text) {
  // On the terminal that shows a progress line, a listing's line would be written into it.
  static const bool shared_terminal = ::isatty(STDOUT_FILENO) == 1;
  std::lock_guard rows(g_stdout_mutex);  // before g_stderr_mutex, as report_interrupt takes them
  std::unique_lock<std::mutex> lock;
  if (shared_terminal) {
    lock = std::unique_lock(g_stderr_mutex);
    clear_progress_locked();
  }
  errno = 0;
  std::cout << text;
  note_stdout_error();
}

JsonStream::JsonStream(const Json& head, const std::string& key) {
  std::string text = "{";
  for (const auto& [name, value] : head.items())
    text += "\n  " + Json(name).dump() + ": " + indented(value, 2) + ",";
  text += "\n  " + Json(key).dump() + ": ";
  std::lock_guard lock(g_json_mutex);
  g_stream_open = true;
  g_stream_empty = true;
  g_json_printed = true;
  write_stdout(text);
}

void JsonStream::add(const Json& element) {
  std::string text = indented(element, 4);
  std::lock_guard lock(g_json_mutex);
  write_stdout((g_stream_empty ? "[\n    " : ",\n    ") + text);
  g_stream_empty = false;
}

void JsonStream::finish(const Json& tail) {
  std::lock_guard lock(g_json_mutex);
  if (!g_stream_open) return;
  write_stdout(stream_ending_locked(tail));
  std::cout.flush();  // an interrupt exits without flushing
  note_stdout_error();
}

bool end_json_stream(const std::string& error, int exit_status) {
  std::lock_guard lock(g_json_mutex);
  if (!g_stream_open) return false;
  write_stdout(stream_ending_locked({{"error", error}, {"exit_status", exit_status}}));
  std::cout.flush();
  note_stdout_error();
  return true;
}

bool json_printed() { return g_json_printed.load(); }

namespace {

// Terminal columns of a cell: its UTF-8 characters (not bytes, so that "große" lines up).
size_t columns_of(const std::string& cell) {
  return static_cast<size_t>(std::count_if(cell.begin(), cell.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

void Table::add_row(std::vector<std::string> row) {
  if (streaming_) return emit(row);
  rows_.push_back(std::move(row));
  if (rows_.size() >= lookahead_) print();
}

void Table::print() {
  if (!streaming_) {
    lay_out();
    emit(header_);
  }
  for (const auto& row : rows_) emit(row);
  rows_.clear();
  streaming_ = lookahead_ != SIZE_MAX;
}

void Table::lay_out() {
  size_t columns = header_.size();
  for (const auto& row : rows_) columns = std::max(columns, row.size());
  width_.assign(columns, 0);
  // A column is right-aligned when every cell in it is a number ("12", "0.331", "1.10x", "-"),
  // so that a file name that starts with a digit stays left-aligned.
  numeric_.assign(columns, true);
  auto is_number = [](const std::string& cell) {
    if (cell == "-") return true;
    if (cell.empty() || !std::isdigit(static_cast<unsigned char>(cell[0]))) return false;
    size_t end = cell.back() == 'x' ? cell.size() - 1 : cell.size();
    for (size_t i = 0; i < end; ++i)
      if (!std::isdigit(static_cast<unsigned char>(cell[i])) && cell[i] != '.') return false;
    return true;
  };
  for (size_t i = 0; i < header_.size(); ++i) width_[i] = columns_of(header_[i]);
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size(); ++i) {
      width_[i] = std::max(width_[i], columns_of(row[i]));
      if (!row[i].empty() && !is_number(row[i])) numeric_[i] = false;
    }
}

void Table::emit(const std::vector<std::string>& row) const {
  std::string line;
  for (size_t i = 0; i < row.size(); ++i) {
    // A row past the lookahead may have a wider cell, or a column more: it pads nothing.
    const size_t width = i < width_.size() ? width_[i] : 0;
    const size_t pad = width - std::min(width, columns_of(row[i]));
    const bool numeric = i < numeric_.size() && numeric_[i];
    if (i > 0) line += "  ";
    if (numeric) line.append(pad, ' ');
    line.append(row[i]);
    if (!numeric) line.append(pad, ' ');
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  line += '\n';
  write_stdout(line);
}

std::string format_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1000) return std::to_string(bytes) + " B";
  static const char* kUnits[] = {"kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1000 && u < 3) {
    v /= 1000;
    ++u;
  }
  return format_fixed(v, v < 10 ? 2 : v < 100 ? 1 : 0) + " " + kUnits[u];
}

namespace {

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto s = static_cast<uint64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60),
                  static_cast<unsigned long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llu:%02llu", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  return buf;
}

// A few refreshes per second: fast enough to look alive, rare enough to cost nothing.
constexpr auto kRefresh = std::chrono::milliseconds(250);

}  // namespace

Progress::Progress(const Globals& globals, std::string what, uint64_t total, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), total_(total) {
  tty_ = ::isatty(STDERR_FILENO) == 1;
  enabled_ =
      !globals.quiet && (globals.progress == "always" || (globals.progress == "auto" && tty_));
  start_ = last_draw_ = std::chrono::steady_clock::now();
  if (enabled_) {
    std::lock_guard lock(g_stderr_mutex);
    g_active_progress = this;
  }
}

Progress::~Progress() { finish(); }

void Progress::step(uint64_t items, uint64_t bytes) {
  if (!enabled_) return;
  std::lock_guard lock(g_stderr_mutex);
  done_ += items;
  bytes_ += bytes;
  draw_locked(false);
}

void Progress::set(uint64_t done, uint64_t total, const std::string& stage) {
  if (!enabled_) return;
  std::lock_guard lock(g_stderr_mutex);
  done_ = done;
  total_ = total;
  if (!stage.empty()) stage_ = stage;
  draw_locked(false);
}

void Progress::restart(uint64_t total, std::string unit) {
  if (!enabled_) return;
  std::lock_guard lock(g_stderr_mutex);
  done_ = bytes_ = 0;
  total_ = total;
  unit_ = std::move(unit);
  stage_.clear();
  // The first line of the phase comes a refresh later: a rate over a few samples is noise.
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

void Progress::draw_locked(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < kRefresh) return;
  last_draw_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  // Byte counts read as MB (criteo-preprocess's input runs to GBs); other units as counts.
  const bool in_bytes = unit_ == "bytes";
  const double scale = in_bytes ? 1e6 : 1;
  auto count = [in_bytes, scale](uint64_t n) {
    return in_bytes ? format_fixed(static_cast<double>(n) / scale, 1) : std::to_string(n);
  };
  const std::string unit = in_bytes ? "MB" : unit_;
  std::string line = what_ + (stage_.empty() ? "" : " (" + stage_ + ")") + ": " + count(done_);
  if (total_ > 0) line += "/" + count(total_);
  line += " " + unit;
  if (total_ > 0)
    line += " (" + std::to_string(std::min<uint64_t>(100, done_ * 100 / total_)) + "%)";
  if (elapsed > 0) {
    line +=
        ", " + format_fixed(static_cast<double>(done_) / elapsed / scale, 1) + " " + unit + "/s";
    if (bytes_ > 0)
      line += ", " + format_fixed(static_cast<double>(bytes_) / 1e6 / elapsed, 1) + " MB/s";
  }
  if (total_ > 0 && done_ > 0 && done_ < total_)
    line += ", eta " +
            format_eta(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  std::string out = "\r" + line;
  if (line.size() < width_) out.append(width_ - line.size(), ' ');
  width_ = line.size();
  write_stderr(out);
  drawn_ = true;
}

void Progress::finish() {
  if (!enabled_) return;
  std::lock_guard lock(g_stderr_mutex);
  if (!tty_) draw_locked(true);  // a log keeps the final count
  clear_progress_locked();
  if (g_active_progress == this) g_active_progress = nullptr;
  enabled_ = false;
}

namespace {
std::shared_mutex g_output_mutex;
void report_interrupt(const std::string& what, int code);
void report_in_time(const std::string& what, int code);
// A read past the end of a file that shrank under its mapping (SIGBUS): the file, for the signal
// thread's report. Written by the handler before it wakes that thread.
std::atomic<bool> g_bus_claimed{false};  // a thread is handling a SIGBUS
std::atomic<bool> g_bus_fault{false};    // ... of a mapped file, whose path is written
char g_bus_fault_path[512];

// SIGBUS in a mapped input: the faulting thread cannot go on (returning would fault again), so it
// hands the exit to the signal thread below (temp files removed, one error naming the file,
// exit status 1) and waits for it. Any other SIGBUS keeps its default action: a crash.
void on_bus_fault(int, siginfo_t* info, void*) {
  // (si_code <= 0: sent by kill or raise, whose si_addr means nothing.)
  if (info->si_code > 0 && !g_bus_claimed.exchange(true)) {
    if (mapped_file_at(info->si_addr, g_bus_fault_path, sizeof g_bus_fault_path)) {
      g_bus_fault.store(true);  // after the path: the signal thread reads it
      ::kill(::getpid(), SIGTERM);
      for (;;) ::pause();
    }
  } else if (info->si_code > 0) {
    for (;;) ::pause();  // another thread's fault is being reported
  }
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);  // pending until the return: a sent one is not raised again by the return
}
}  // namespace

std::shared_lock<std::shared_mutex> defer_interrupts() {
  return std::shared_lock<std::shared_mutex>(g_output_mutex);
}

void install_interrupt_handler() {
  // A thread that waits for the signals (blocked everywhere else) can take locks, unlike a signal
  // handler: that is what lets it wait for a temp file to be registered or renamed, so no worker
  // is ever caught between creating its temp file and registering it for cleanup.
  // Past a file-size limit (ulimit -f), a write fails with EFBIG and the usual error path removes
  // the temp file; SIGXFSZ's default action would kill the process and leave it behind.
  ::signal(SIGXFSZ, SIG_IGN);
  // A reader that went away (| head): SIGPIPE comes to the thread that wrote, where its default
  // action would kill the process with temp files left. The handler marks it and wakes the
  // thread below with a SIGTERM (kill and a lock-free atomic are async-signal-safe; locks are
  // not), which cleans up and dies of SIGPIPE itself. A parent that ignores SIGPIPE (systemd's
  // default) wants write errors instead: then it stays ignored.
  struct sigaction inherited {};
  ::sigaction(SIGPIPE, nullptr, &inherited);
  if (inherited.sa_handler != SIG_IGN) {
    struct sigaction pipe_action {};
    pipe_action.sa_handler = [](int) {
      const int saved = errno;
      g_broken_pipe.store(true);
      ::kill(::getpid(), SIGTERM);
      errno = saved;
    };
    sigemptyset(&pipe_action.sa_mask);
    pipe_action.sa_flags = SA_RESTART;
    ::sigaction(SIGPIPE, &pipe_action, nullptr);
  }
  struct sigaction bus_action {};
  bus_action.sa_sigaction = on_bus_fault;
  sigemptyset(&bus_action.sa_mask);
  bus_action.sa_flags = SA_SIGINFO;
  ::sigaction(SIGBUS, &bus_action, nullptr);
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    siginfo_t info{};
    while (sigwaitinfo(&set, &info) < 0) {
    }
    if (g_bus_fault.load()) {
      // Not under g_output_mutex: the faulting thread may hold it (a source copied as it is),
      // and it never lets go. A failure, not an interrupt: exit status 1.
      dlprep::remove_pending_temp_files();
      report_in_time(
          std::string(g_bus_fault_path) +
              ": the file shrank while it was being read (truncated by another process?)",
          kExitFailure);
      ::_exit(kExitFailure);
    }
    std::unique_lock lock(g_output_mutex);
    dlprep::remove_pending_temp_files();
    if (g_broken_pipe.load()) {  // as a tool killed by it: a parent sees WTERMSIG == SIGPIPE
      ::signal(SIGPIPE, SIG_DFL);
      ::raise(SIGPIPE);
      ::_exit(128 + SIGPIPE);
    }
    const int sig = info.si_signo;
    const int code = sig == SIGINT ? kExitInterrupted : 128 + sig;
    report_in_time(std::string("interrupted by ") + (sig == SIGINT    ? "SIGINT"
                                                     : sig == SIGTERM ? "SIGTERM"
                                                                      : "SIGHUP"),
                   code);
    ::_exit(code);
  }).detach();
}

void set_interrupt_report(const std::string& command, bool json) {
  std::lock_guard lock(g_interrupt_mutex);
  g_interrupt_command = command;
  g_interrupt_json = json;
}

namespace {
// The report can block (a stderr or stdout pipe that nobody reads): it gets a moment on a thread
// of its own, and the exit does not wait for it longer.
void report_in_time(const std::string& what, int code) {
  auto reported = std::make_shared<std::promise<void>>();
  std::future<void> done = reported->get_future();
  std::thread([what, code, reported] {
    report_interrupt(what, code);
    reported->set_value();
  }).detach();
  done.wait_for(std::chrono::milliseconds(500));
}

void report_interrupt(const std::string& what, int code) {
  std::string command;
  bool json = false;
  {
    std::lock_guard lock(g_interrupt_mutex);
    command = g_interrupt_command;
    json = g_interrupt_json;
  }
  // `dlprep --json … | jq`: one document on stdout, this one unless another was begun, which is
  // then ended with the reason if it is a stream (a stdout that blocks is not waited for long).
  // First: scripts read it, people read stderr.
  if (json && g_json_mutex.try_lock_for(std::chrono::milliseconds(200))) {
    std::string doc;
    if (g_stream_open)
      doc = stream_ending_locked({{"error", what}, {"exit_status", code}});
    else if (!g_json_printed)
      doc = Json{{"schema", "dlprep.error/1"},
                 {"command", command},
                 {"error", what},
                 {"exit_status", code}}
                .dump(2) +
            "\n";
    if (!doc.empty()) {
      std::cout.flush();
      (void)!::write(STDOUT_FILENO, doc.data(), doc.size());
    }
  } else if (!json && g_stdout_mutex.try_lock_for(std::chrono::milliseconds(200))) {
    // A listing to a file or pipe is buffered: what was printed ends with a whole row, not in
    // the middle of one (the lock is kept: nothing more is written before the exit).
    std::cout.flush();
  }
  // Even when the document above met a reader that went away: the run stops for this reason.
  write_error_line(command, what);
}
}  // namespace

bool close_stdout() {
  errno = 0;
  std::cout.flush();
  bool ok = !std::cout.fail();
  int err = ok ? 0 : g_stdout_errno ? g_stdout_errno.load() : errno;
  if (std::fflush(stdout) != 0) {
    ok = false;
    err = errno;
  }
  if (std::ferror(stdout)) ok = false;
  // EBADF from the close alone: stdout was closed (`>&-`) and nothing was written to it through
  // stdio (a failed direct write was reported where it happened).
  if (std::fclose(stdout) != 0 && ok && errno != EBADF) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::string message = "write failed on standard output";
    if (err != 0) message += std::string(": ") + std::strerror(err);
    print_error("", message);
  }
  return ok;
}

}  // namespace dlprep::cli
