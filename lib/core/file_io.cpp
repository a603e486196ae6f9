#include "core/file_io.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <string_view>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace dlprep {
namespace fs = std::filesystem;

namespace {

Error io_error(const fs::path& path, const std::string& what, int err) {
  return Error(Errc::io, path.string() + ": " + what + ": " + std::strerror(err), err);
}

}  // namespace

size_t read_some(int fd, uint8_t* out, size_t capacity, const fs::path& path) {
  for (;;) {
    ssize_t n = ::read(fd, out, capacity);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR) throw io_error(path, "read failed", errno);
  }
}

size_t read_up_to(int fd, uint8_t* out, size_t capacity, const fs::path& path) {
  size_t got = 0;
  while (got < capacity) {
    size_t n = read_some(fd, out + got, capacity - got, path);
    if (n == 0) break;
    got += n;
  }
  return got;
}

size_t pread_up_to(int fd, uint8_t* out, size_t capacity, uint64_t offset, const fs::path& path) {
  size_t got = 0;
  while (got < capacity) {
    ssize_t n = ::pread(fd, out + got, capacity - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw io_error(path, "read failed", errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

void write_all(int fd, ByteSpan bytes, const fs::path& path) {
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw io_error(path, "write failed", errno);
    p += n;
    left -= static_cast<size_t>(n);
  }
}

namespace {

Error too_large(const fs::path& path, uint64_t max_bytes) {
  return Error(Errc::limit_exceeded,
               path.string() + (max_bytes == limits::kMaxFileBytes
                                    ? ": input larger than 16 GiB"
                                    : ": larger than " + std::to_string(max_bytes) +
                                          " bytes, far more than such a file holds"));
}

Bytes read_fd(int fd, const fs::path& path, const HeadCheck& check_head = {},
              uint64_t max_bytes = limits::kMaxFileBytes) {
  Bytes out;
  size_t used = 0;
  bool head_checked = !check_head;
  std::optional<uint64_t> declared;  // the size the head gives, if any
  out.resize(1 << 16);
  for (;;) {
    if (!head_checked && used >= kHeadCheckBytes) {
      declared = check_head(ByteSpan(out.data(), used));
      head_checked = true;
    }
    if (declared && used > *declared)
      throw Error(Errc::corrupt_data, path.string() + ": runs past the " +
                                          std::to_string(*declared) +
                                          " bytes its header gives (trailing data)");
    if (used > max_bytes) throw too_large(path, max_bytes);
    if (used == out.size()) {
      if (out.size() >= limits::kMaxFileBytes) throw too_large(path, limits::kMaxFileBytes);
      out.resize(static_cast<size_t>(std::min<uint64_t>(out.size() * 2, max_bytes + 1)));
    }
    size_t n = read_some(fd, out.data() + used, out.size() - used, path);
    if (n == 0) break;
    used += n;
  }
  out.resize(used);
  if (!head_checked && used > 0) check_head(out);
  return out;
}

// Temp files of live AtomicFiles, as fixed C strings so a signal handler can unlink them.
constexpr int kMaxPending = 256;
constexpr size_t kMaxPathLen = 4096;
char g_pending[kMaxPending][kMaxPathLen];
std::atomic<bool> g_pending_used[kMaxPending];
std::mutex g_pending_mutex;

// Caller holds g_pending_mutex, from before mkstemp, so a cleanup cannot miss a new temp file.
void register_pending_locked(const std::string& path) {
  if (path.size() >= kMaxPathLen) return;
  for (int i = 0; i < kMaxPending; ++i) {
    if (!g_pending_used[i].load()) {
      std::memcpy(g_pending[i], path.c_str(), path.size() + 1);
      g_pending_used[i].store(true);
      return;
    }
  }
  // too many at once: still atomic, just not cleaned up on SIGINT
}

// Live TempDirectory paths (removed by the signal thread, which may take locks and allocate).
std::vector<std::string> g_pending_dirs;
// Directories created by live OutputDirectory objects (removed by the signal thread where empty).
std::vector<fs::path> g_output_dirs;

// Removes `dir` and the directories below it, deepest first, where they are empty.
void remove_empty_tree(const fs::path& dir) noexcept {
  std::error_code ec;
  std::vector<fs::path> subdirs;
  try {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_directory(ec) && !e.is_symlink(ec)) subdirs.push_back(e.path());
  } catch (...) {
    return;  // out of memory: leave the tree as it is
  }
  for (const auto& d : subdirs) remove_empty_tree(d);
  if (fs::is_empty(dir, ec) && !ec) fs::remove(dir, ec);
}

// NAME as its temp file's name holds it: cut so that ".NAME.tmp.XXXXXX" stays within NAME_MAX
// (255 bytes), where NAME itself may use all of it.
constexpr size_t kMaxTempStem = 255 - std::string_view("..tmp.XXXXXX").size();
std::string temp_stem(const std::string& name) { return name.substr(0, kMaxTempStem); }

// The NAME of an AtomicFile's temp file ".NAME.tmp.XXXXXX" (mkstemp's six letters and digits;
// NAME as temp_stem cut it); empty for any other file name.
std::string temp_file_target(const std::string& file) {
  constexpr std::string_view kTmp = ".tmp.";
  constexpr size_t kSuffix = 6;
  if (file.size() < 1 + 1 + kTmp.size() + kSuffix || file[0] != '.') return "";
  const size_t tmp = file.size() - kSuffix - kTmp.size();
  if (file.compare(tmp, kTmp.size(), kTmp) != 0) return "";
  for (size_t i = file.size() - kSuffix; i < file.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(file[i]))) return "";
  return file.substr(1, tmp - 1);
}

void unregister_pending(const std::string& path) {
  std::lock_guard lock(g_pending_mutex);
  for (int i = 0; i < kMaxPending; ++i)
    if (g_pending_used[i].load() && path == g_pending[i]) {
      g_pending_used[i].store(false);
      return;
    }
}

}  // namespace

namespace {

/// `p` with the folders on its way resolved as the kernel resolves them (links, "..", "//"): the
/// last name is kept, itself perhaps a link. `p` as it is where its folder cannot be resolved.
fs::path resolve_folders(const fs::path& p) {
  const fs::path name = p.filename();
  std::error_code ec;
  if (name.empty() || name == "." || name == "..") {
    const fs::path dir = fs::canonical(p, ec);
    return ec ? p.lexically_normal() : dir;
  }
  const fs::path dir = fs::canonical(p.parent_path().empty() ? fs::path(".") : p.parent_path(), ec);
  return ec ? p.lexically_normal() : dir / name;
}

/// Follows the chain of links from `p` until a path that is no link, or one where `stop` says so
/// (of the path as it is written or with its folders resolved: /dev/fd//1, fds/1 with fds a link
/// to /proc/self/fd).
template <class Stop>
fs::path follow_links(const fs::path& p, const Stop& stop) {
  fs::path at = p;
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's limit
    if (stop(at.string())) return at;
    const fs::path resolved = resolve_folders(at);
    if (stop(resolved.string())) return resolved;
    struct stat st {};
    std::error_code ec;
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
    const fs::path to = fs::read_symlink(at, ec);
    if (ec) return at;
    // A relative target is taken from the link's folder as the kernel finds it, and so are the
    // folders on the target's way: through a linked folder, "../x" is not where the text says.
    at = resolve_folders(to.is_absolute() ? to : resolved.parent_path() / to);
  }
  return at;
}

/// An open file of this process (/dev/stdout, /dev/fd/N, /proc/*/fd/N, /proc/*/task/*/fd/N), not
/// a link to follow.
bool names_open_file(const std::string& name) {
  if (name == "/dev/stdin" || name == "/dev/stdout" || name == "/dev/stderr" ||
      name.starts_with("/dev/fd/"))
    return true;
  size_t slash = name.starts_with("/proc/") ? name.find('/', 6) : std::string::npos;
  if (slash != std::string::npos && name.compare(slash, 6, "/task/") == 0)
    slash = name.find('/', slash + 6);  // a thread's folder: /proc/PID/task/TID
  return slash != std::string::npos && name.compare(slash, 4, "/fd/") == 0;
}

std::atomic<unsigned> g_closed_standard_streams{0};  // bit fd: closed when the process started

// Whether `name` (one that names_open_file accepts) is a standard stream that was closed: by its
// folders resolved, /dev/stdout or /dev/stderr, or a descriptor in the /proc fd folder of this
// process or of one of its threads (which share its descriptors), however the path spells it
// (/dev/fd/./1, /proc/self/fd//1, /proc/PID/task/TID/fd/1).
bool names_closed_standard_stream(const std::string& name) {
  if (g_closed_standard_streams.load() == 0) return false;
  const fs::path resolved = resolve_folders(name);
  int fd = -1;
  if (resolved == "/dev/stdin") fd = 0;
  if (resolved == "/dev/stdout") fd = 1;
  if (resolved == "/dev/stderr") fd = 2;
  const fs::path folder = resolved.parent_path();
  std::error_code ec;
  if (fd < 0 && (fs::equivalent(folder, "/proc/self/fd", ec) ||
                 fs::equivalent(folder, "/proc/thread-self/fd", ec) ||
                 (folder.filename() == "fd" &&
                  fs::equivalent(folder.parent_path().parent_path(), "/proc/self/task", ec)))) {
    const std::string digits = resolved.filename().string();
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), fd);
    if (err != std::errc() || end != digits.data() + digits.size()) fd = -1;
  }
  return fd >= 0 && fd <= 2 && (g_closed_standard_streams.load() >> fd & 1u) != 0;
}

/// Opens `path` to read it, "-" for standard input. A standard stream closed when the process
/// started holds /dev/null (main.cpp), which would read as an empty file: it is refused.
int open_to_read(const fs::path& path) {
  const bool closed =
      g_closed_standard_streams.load() != 0 &&
      (path == "-" ? (g_closed_standard_streams.load() & 1u) != 0
                   : names_closed_standard_stream(follow_links(path, names_open_file).string()));
  if (closed) {
    errno = EBADF;
    return -1;
  }
  return path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

}  // namespace

void mark_standard_stream_closed(int fd) {
  if (fd >= 0 && fd <= 2) g_closed_standard_streams.fetch_or(1u << fd);
}

std::optional<fs::path> file_in_the_way(const fs::path& dir) {
  std::error_code ec;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    // A link to nothing is in the way too: no folder can be made through it.
    const bool dangling = fs::is_symlink(fs::symlink_status(p, ec)) && !fs::exists(p, ec);
    if (dangling || (fs::exists(p, ec) && !fs::is_directory(p, ec))) {
      std::string s = p.string();
      while (s.size() > 1 && s.back() == '/') s.pop_back();
      return fs::path(s);
    }
    if (p == p.parent_path()) break;
  }
  return std::nullopt;
}

bool is_within(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(link_destination(path)), ec);
  const fs::path d = fs::weakly_canonical(fs::absolute(dir), ec);
  auto at = p.begin();
  for (const fs::path& part : d) {
    if (part.empty()) continue;  // the "" of a trailing '/'
    if (at == p.end() || *at != part) return false;
    ++at;
  }
  return true;
}

fs::path link_destination(const fs::path& p) {
  return follow_links(p, [](const std::string&) { return false; });
}

MappedFile::MappedFile(const fs::path& path, const HeadCheck& check_head) {
  const int fd = open_to_read(path);
  if (fd < 0) throw io_error(path == "-" ? "<stdin>" : path, "cannot open", errno);
  if (path == "-") {
    owned_ = read_fd(STDIN_FILENO, "<stdin>", check_head);
    data_ = owned_.data();
    size_ = owned_.size();
    return;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw io_error(path, "cannot stat", e);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(Errc::io, path.string() + ": is a directory");
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    if (static_cast<uint64_t>(st.st_size) > limits::kMaxFileBytes) {
      ::close(fd);
      throw Error(Errc::limit_exceeded, path.string() + ": input larger than 16 GiB");
    }
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      ::close(fd);
      data_ = static_cast<const uint8_t*>(p);
      size_ = static_cast<size_t>(st.st_size);
      mapped_ = true;
      registration_.emplace(data_, size_, path);
      return;
    }
  }
  try {
    owned_ = read_fd(fd, path, check_head);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  data_ = owned_.data();
  size_ = owned_.size();
}

MappedFile::~MappedFile() {
  registration_.reset();  // first: a fault after the unmapping is no longer this file's
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void read_file_into(const fs::path& path, Bytes& out, const HeadCheck& check_head,
                    uint64_t max_bytes) {
  const int fd = open_to_read(path);
  if (fd < 0) throw io_error(path == "-" ? "<stdin>" : path, "cannot open", errno);
  if (path == "-") {
    out = read_fd(STDIN_FILENO, "<stdin>", check_head, max_bytes);
    return;
  }
  try {
    struct stat st{};
    if (::fstat(fd, &st) != 0) throw io_error(path, "cannot stat", errno);
    if (S_ISDIR(st.st_mode)) throw Error(Errc::io, path.string() + ": is a directory");
    if (!S_ISREG(st.st_mode)) {
      out = read_fd(fd, path, check_head, max_bytes);
    } else {
      if (static_cast<uint64_t>(st.st_size) > max_bytes) throw too_large(path, max_bytes);
      // One read of the known size (no mapping: unmapping interrupts every other thread of the
      // process for a TLB flush); a file that grew meanwhile is read on to its end.
      out.resize(static_cast<size_t>(st.st_size));
      out.resize(read_up_to(fd, out.data(), out.size(), path));  // it may have shrunk meanwhile
      uint8_t more = 0;
      if (read_some(fd, &more, 1, path) > 0) {  // it grew meanwhile
        out.push_back(more);
        if (out.size() > max_bytes) throw too_large(path, max_bytes);
        Bytes rest;
        try {
          rest = read_fd(fd, path, {}, max_bytes - out.size());
        } catch (const Error& e) {
          if (e.code() != Errc::limit_exceeded) throw;
          throw too_large(path, max_bytes);  // the limit, not what was left of it
        }
        out.insert(out.end(), rest.begin(), rest.end());
      }
    }
    ::close(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
}

void MappedFile::release_pages(uint64_t from, uint64_t to) const {
  if (!mapped_) return;
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  from = (from + page - 1) / page * page;  // whole pages inside the range only
  to = std::min<uint64_t>(to, size_) / page * page;
  // A read-only private mapping: MADV_DONTNEED only drops the pages, the file's bytes stay.
  if (from < to) ::madvise(const_cast<uint8_t*>(data_) + from, to - from, MADV_DONTNEED);
}

Bytes read_file(const fs::path& path, uint64_t max_bytes) {
  Bytes out;
  read_file_into(path, out, {}, max_bytes);
  return out;
}

// A file read through a window of its bytes, to compare it with what is written: mapping it whole
// put all of a rerun's old index (235 bytes a sample) in the process's RSS. Owns the descriptor.
class AtomicFile::WindowedFile {
 public:
  WindowedFile(int fd, const fs::path& path) : fd_(fd), path_(path) {
    if (::fstat(fd, &opened_) != 0) opened_ = {};
    size_ = static_cast<uint64_t>(opened_.st_size);
  }
  ~WindowedFile() { ::close(fd_); }
  WindowedFile(const WindowedFile&) = delete;
  WindowedFile& operator=(const WindowedFile&) = delete;
  uint64_t size() const { return size_; }
  /// Whether the file is as it was when opened: the same size and modification time (any write
  /// moves it). One written since is never taken for the bytes compared with it. Not the change
  /// time: chmod, a hard link (a snapshot by `cp -al`) or a rename move it and change no byte.
  bool unchanged() const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 && st.st_size == opened_.st_size &&
           st.st_mtim.tv_sec == opened_.st_mtim.tv_sec &&
           st.st_mtim.tv_nsec == opened_.st_mtim.tv_nsec;
  }

  /// Whether `bytes` are the file's, from `offset`.
  bool matches(uint64_t offset, ByteSpan bytes) {
    if (bytes.size() > size_ - std::min(offset, size_)) return false;
    while (!bytes.empty()) {
      const ByteSpan have = window_at(offset);
      if (have.empty()) return false;  // it shrank meanwhile
      const size_t n = std::min(have.size(), bytes.size());
      if (std::memcmp(have.data(), bytes.data(), n) != 0) return false;
      bytes = bytes.subspan(n);
      offset += n;
    }
    return true;
  }

  /// Whether the two files hold the same bytes.
  bool same_as(WindowedFile& other) {
    if (size_ != other.size_) return false;
    for (uint64_t offset = 0; offset < size_;) {
      const ByteSpan have = window_at(offset);
      if (have.empty() || !other.matches(offset, have)) return false;
      offset += have.size();
    }
    return true;
  }

  /// Writes the file's first `n` bytes (matched already) to `out`.
  void copy_prefix(uint64_t n, int out, const fs::path& target) {
    for (uint64_t offset = 0; offset < n;) {
      const ByteSpan have = window_at(offset);
      if (have.empty()) throw Error(Errc::io, path_.string() + ": changed while being read");
      const size_t take = static_cast<size_t>(std::min<uint64_t>(have.size(), n - offset));
      write_all(out, have.first(take), target);
      offset += take;
    }
  }

 private:
  static constexpr size_t kWindowBytes = size_t{1} << 16;

  /// The bytes of the window from `offset` on, read when it lies outside; empty at the end.
  ByteSpan window_at(uint64_t offset) {
    if (offset < start_ || offset >= start_ + filled_) {
      window_.resize(kWindowBytes);
      start_ = offset;
      filled_ = pread_up_to(fd_, window_.data(), window_.size(), offset, path_);
    }
    return ByteSpan(window_).subspan(static_cast<size_t>(offset - start_),
                                     static_cast<size_t>(start_ + filled_ - offset));
  }

  int fd_;
  fs::path path_;
  struct stat opened_ {};
  uint64_t size_ = 0;
  Bytes window_;
  uint64_t start_ = 0;  // the file offset of window_[0]
  size_t filled_ = 0;   // bytes of window_ read
};

AtomicFile::AtomicFile(const fs::path& target, Mode mode) : target_(target), final_(target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Any link on the way to an open file: /dev/shm/x is an ordinary file, followed.
    const std::string reached = follow_links(target, names_open_file).string();
    // A closed stdout (>&-) is held by /dev/null, which opening /dev/stdout would reopen.
    if (names_closed_standard_stream(reached)) throw io_error(target, "cannot open", EBADF);
    if (names_open_file(reached)) {
      // /dev/stdout, /dev/fd/N: an open file of this process, appended to where it is (renaming
      // a temp file over the link would replace the system's /dev/stdout, as root).
      fd_ = ::open(target.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd_ < 0) throw io_error(target, "cannot open", errno);
      return;
    }
    // A link to the real output: that file is replaced, the link stays.
    final_ = link_destination(target);
  }
  if (::stat(final_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A device or FIFO (/dev/null, a named pipe): written in place, since renaming a temp file
    // over it would replace the device itself.
    fd_ = ::open(final_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw io_error(target, "cannot open", errno);
    return;
  }
  if (mode == Mode::defer && ::stat(final_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    // Non-blocking and checked again once open: a FIFO swapped in meanwhile must not block.
    const int fd = ::open(final_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat opened {};
    if (fd >= 0 && ::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode)) {
      existing_ = std::make_unique<WindowedFile>(fd, final_);
      return;
    }
    if (fd >= 0) ::close(fd);  // unreadable or no file now: then it is simply replaced
  }
  open_temp();
}

void make_directories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec == std::errc::filename_too_long) {  // maybe only libstdc++'s depth limit: level by level
    ec.clear();
    fs::path prefix;
    for (const fs::path& part : dir) {
      prefix /= part;
      if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
        ec.assign(errno, std::generic_category());
        break;
      }
    }
    if (!ec && !fs::is_directory(dir, ec) && !ec)
      ec = std::make_error_code(std::errc::not_a_directory);
  }
  if (ec)
    throw Error(Errc::io, dir.string() + ": cannot create directory: " + ec.message(), ec.value());
}

void AtomicFile::open_temp() {
  fs::path dir = final_.parent_path();
  if (!dir.empty()) make_directories(dir);
  std::string pattern = (dir.empty() ? fs::path(".") : dir).string() + "/." +
                        temp_stem(final_.filename().string()) + ".tmp.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  std::lock_guard lock(g_pending_mutex);
  fd_ = ::mkostemp(buf.data(), O_CLOEXEC);  // a child would keep its lock (below) alive
  if (fd_ < 0) throw io_error(target_, "cannot create temporary file", errno);
  temp_ = buf.data();
  ::fchmod(fd_, 0644);
  // Locked while open: remove_unlocked_temp_files tells a live run's temp file from a dead one's.
  ::flock(fd_, LOCK_EX | LOCK_NB);
  register_pending_locked(temp_);
}

AtomicFile::AtomicFile(const fs::path& target, const fs::path& kept, uint64_t bytes)
    : target_(target), final_(target), temp_(kept.string()), kept_(true) {
  struct stat st {};
  final_ = link_destination(target);
  std::error_code ec;
  const fs::path dir = final_.parent_path().empty() ? fs::path(".") : final_.parent_path();
  if (temp_file_target(kept.filename().string()) != temp_stem(final_.filename().string()) ||
      !fs::equivalent(kept.parent_path().empty() ? fs::path(".") : kept.parent_path(), dir, ec))
    throw Error(Errc::io, kept.string() + ": not a temporary file of " + target.string());
  fd_ = ::open(kept.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd_ < 0) throw io_error(kept, "cannot open", errno);
  ::flock(fd_, LOCK_EX | LOCK_NB);  // as open_temp's
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < bytes ||
      ::ftruncate(fd_, static_cast<off_t>(bytes)) != 0 ||
      ::lseek(fd_, static_cast<off_t>(bytes), SEEK_SET) < 0) {
    ::close(fd_);
    fd_ = -1;
    throw Error(Errc::io,
                kept.string() + ": cannot continue it from byte " + std::to_string(bytes));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty() && !kept_) {
    ::unlink(temp_.c_str());
    unregister_pending(temp_);
  }
}

void AtomicFile::diverge() {
  // The bytes matched so far are copied from the target: changed meanwhile, it no longer holds
  // them, and a commit would publish neither this output nor the other writer's.
  if (!existing_->unchanged())
    throw Error(Errc::io,
                target_.string() + ": changed by another program while compared; run again");
  open_temp();
  existing_->copy_prefix(matched_, fd_, target_);
  existing_.reset();
}

namespace {
constexpr uint64_t kWritebackStep = 8u << 20;
}  // namespace

void AtomicFile::write(ByteSpan bytes) {
  if (bytes.empty()) return;  // (memcmp and write take no null pointer, even for 0 bytes)
  if (existing_) {
    if (existing_->matches(matched_, bytes)) {
      matched_ += bytes.size();
      return;
    }
    diverge();
  }
  write_all(fd_, bytes, target_);
  unstarted_ += bytes.size();
  if (unstarted_ >= kWritebackStep && !temp_.empty()) {
    // Writeback starts while the rest is computed, not at a checkpoint's flush, which then waits
    // only for the last step's bytes. Advice: a failure here leaves the pages to the kernel.
    ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
    unstarted_ = 0;
  }
}

void AtomicFile::write_at(uint64_t offset, ByteSpan bytes) {
  if (existing_) throw Error(Errc::internal, target_.string() + ": write_at on a deferred file");
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw io_error(target_, "write failed", n < 0 ? errno : EIO);
    bytes = bytes.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
}

void AtomicFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw io_error(target_, "close failed", errno);
}

void AtomicFile::commit() {
  if (existing_) {
    if (matched_ == existing_->size() && existing_->unchanged())
      return;   // the target holds these bytes already
    diverge();  // a shorter file: these bytes are a prefix of the target's
  }
  close();
  if (temp_.empty()) return;  // a device or FIFO, written in place
  if (::rename(temp_.c_str(), final_.c_str()) != 0) throw io_error(target_, "rename failed", errno);
  unregister_pending(temp_);
  temp_.clear();
}

bool AtomicFile::same_as_target() {
  if (existing_) return matched_ == existing_->size() && existing_->unchanged();
  close();
  if (temp_.empty()) return false;  // a device or FIFO: written in place already
  struct stat written {
  }, target{};
  if (::stat(temp_.c_str(), &written) != 0) throw io_error(target_, "cannot stat", errno);
  if (::stat(final_.c_str(), &target) != 0 || !S_ISREG(target.st_mode) ||
      target.st_size != written.st_size)
    return false;
  const int fd = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(temp_, "cannot open", errno);
  WindowedFile ours(fd, temp_);
  const int target_fd = ::open(final_.c_str(), O_RDONLY | O_CLOEXEC);
  if (target_fd < 0) return false;  // unreadable: replaced, as in Mode::defer
  WindowedFile theirs(target_fd, final_);
  return ours.same_as(theirs);
}

void AtomicFile::keep() {
  if (temp_.empty() || kept_) return;
  kept_ = true;
  unregister_pending(temp_);
}

namespace {

/// Opened to be flushed: for reading, or for writing where it may be written and not read.
int open_to_flush(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0 || errno != EACCES) return fd;
  return ::open(file.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
}

// Directories whose entries in their parents this process has flushed: an entry, once there,
// does not change, and an unlistable parent costs a syncfs of its whole file system.
std::mutex g_flushed_entries_mutex;
std::set<fs::path> g_flushed_entries;

}  // namespace

void flush_to_storage(const std::vector<fs::path>& files) {
  struct DirToFlush {
    fs::path file_in_it;  // opened for syncfs where the directory cannot be
    fs::path entry_of;    // the child directory whose entry this flush is for, if only that
  };
  std::map<fs::path, DirToFlush> dirs;
  for (const fs::path& file : files) {
    const int fd = open_to_flush(file);
    if (fd < 0 && errno == ENOENT) continue;
    if (fd < 0) throw io_error(file, "cannot flush to storage", errno);
    struct stat st {};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    const int rc = regular ? ::fdatasync(fd) : 0;
    const int err = errno;
    ::close(fd);
    if (rc != 0) throw io_error(file, "cannot flush to storage", err);
    // Its directory, and that directory's entry in its parent (a day folder, a new OUTDIR).
    const fs::path dir = fs::absolute(link_destination(file)).parent_path();
    if (!regular) continue;
    dirs[dir] = DirToFlush{file, {}};
    std::lock_guard lock(g_flushed_entries_mutex);
    if (dir.has_relative_path() && !g_flushed_entries.count(dir))
      dirs.emplace(dir.parent_path(), DirToFlush{file, dir});
  }
  for (const auto& [dir, what] : dirs) {
    if (!what.entry_of.empty()) {
      std::lock_guard lock(g_flushed_entries_mutex);
      if (g_flushed_entries.count(what.entry_of)) continue;
    }
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const bool listable = fd >= 0;
    if (!listable && errno == EACCES) fd = open_to_flush(what.file_in_it);
    if (fd < 0) throw io_error(dir, "cannot flush to storage", errno);
    const int rc = listable ? ::fsync(fd) : ::syncfs(fd);
    const int err = errno;
    ::close(fd);
    // EINVAL: a file system that cannot sync a directory (as PostgreSQL, nothing more to do)
    if (rc != 0 && !(listable && err == EINVAL))
      throw io_error(dir, "cannot flush to storage", err);
    if (!what.entry_of.empty()) {
      std::lock_guard lock(g_flushed_entries_mutex);
      g_flushed_entries.insert(what.entry_of);
    }
  }
}

void write_file_atomic(const fs::path& path, ByteSpan bytes) {
  if (path == "-") {
    write_all(STDOUT_FILENO, bytes, "<stdout>");
    return;
  }
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

void write_file_if_changed(const fs::path& path, ByteSpan bytes) {
  AtomicFile f(path);
  f.write(bytes);
  if (!f.same_as_target()) f.commit();
}

namespace {

// The PREFIX-PID-K folders in `base` that killed processes (SIGKILL, the OOM killer) left: this
// user's, of a PID that no longer runs, untouched for ten minutes (a live process of another PID
// namespace sharing the folder is not taken for a dead one while it works).
void remove_dead_temp_directories(const fs::path& base, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size() + 1, prefix + "-") != 0) continue;
    const char* digits = name.c_str() + prefix.size() + 1;
    pid_t pid = 0;
    const auto [rest, err] = std::from_chars(digits, name.c_str() + name.size(), pid);
    if (err != std::errc() || rest == digits || *rest != '-' || pid <= 0) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
        std::time(nullptr) - st.st_mtime < 600)
      continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    fs::remove_all(it->path(), ignored);
  }
}

}  // namespace

TempDirectory::TempDirectory(const fs::path& parent, const std::string& prefix) {
  std::error_code ec;
  fs::path base = parent.empty() ? fs::temp_directory_path(ec) : parent;
  if (ec) throw Error(Errc::io, "no temporary directory: " + ec.message());
  remove_dead_temp_directories(base, prefix);
  std::lock_guard lock(g_pending_mutex);  // registered before anything can be written into it
  for (unsigned k = 0;; ++k) {
    path_ = base / (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(k));
    if (fs::create_directories(path_, ec)) break;
    if (ec || k > 100)
      throw Error(Errc::io, path_.string() + ": cannot create the work folder" +
                                (ec ? ": " + ec.message() : std::string()));
  }
  g_pending_dirs.push_back(path_.string());
}

TempDirectory::~TempDirectory() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  std::lock_guard lock(g_pending_mutex);
  std::erase(g_pending_dirs, path_.string());
}

OutputDirectory::OutputDirectory(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> missing;  // innermost first
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::lock_guard lock(g_pending_mutex);  // registered before anything can be written into it
  // Made here by mkdir, outermost first: a folder another process made in between (EEXIST) is
  // not this run's to remove.
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) {
      if (created_.empty()) created_ = *it;
    } else if (errno != EEXIST) {
      break;  // create_directories below says why
    }
  }
  fs::create_directories(dir, ec);
  if (ec) throw Error(Errc::io, dir.string() + ": cannot create: " + ec.message());
  if (!created_.empty()) g_output_dirs.push_back(created_);
}

OutputDirectory::~OutputDirectory() {
  if (created_.empty()) return;
  std::lock_guard lock(g_pending_mutex);
  std::erase(g_output_dirs, created_);
}

void OutputDirectory::discard_if_empty() noexcept {
  if (!created_.empty()) remove_empty_tree(created_);
}

DirectoryLock::DirectoryLock(const fs::path& dir, Access access) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw io_error(dir, "cannot open", errno);
  const int mode = access == Access::write ? LOCK_EX : LOCK_SH;
  int rc;
  while ((rc = ::flock(fd_, mode | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc == 0) return;
  const int err = errno;
  ::close(fd_);
  fd_ = -1;
  if (err == EWOULDBLOCK)
    throw Error(Errc::io, dir.string() + ": another dlprep run is writing into it");
  // A file system without flock (some network mounts): run unlocked rather than refuse.
  if (err != ENOLCK && err != EOPNOTSUPP) throw io_error(dir, "cannot lock", err);
}

bool DirectoryLock::held_by_writer(const fs::path& dir) {
  try {
    DirectoryLock reading(dir, Access::read);
    return false;
  } catch (const Error&) {
    return true;
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

bool is_temp_file_name(const std::string& file) { return !temp_file_target(file).empty(); }

std::string temp_file_name(const std::string& name, const std::string& suffix) {
  return "." + temp_stem(name) + ".tmp." + suffix;
}

uint64_t remove_dead_temp_files(const fs::path& dir, const std::string& name,
                                const fs::path& except) {
  uint64_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string target = temp_file_target(it->path().filename().string());
    std::error_code type_ec;
    if (target.empty() || (!name.empty() && target != temp_stem(name)) ||
        (!except.empty() && it->path().filename() == except.filename()) ||
        it->symlink_status(type_ec).type() != fs::file_type::regular)
      continue;
    std::error_code rm_ec;
    removed += fs::remove(it->path(), rm_ec) ? 1 : 0;
  }
  return removed;
}

constexpr time_t kLiveTempSeconds = 60;

uint64_t remove_unlocked_temp_files(const fs::path& dir,
                                    const std::function<bool(const std::string&)>& wanted) {
  uint64_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string target = temp_file_target(it->path().filename().string());
    if (target.empty() || !wanted(target)) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st {};
    // Locked: a live AtomicFile's. Unlockable (a file system without flock): left alone. Written
    // in the last minute: maybe a live one between mkstemp and flock, or between close and rename.
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_mtim.tv_sec + kLiveTempSeconds < ::time(nullptr) &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(it->path().c_str()) == 0)
      ++removed;
    ::close(fd);
  }
  return removed;
}

std::string temp_file_stem(const std::string& name) { return temp_stem(name); }

void remove_pending_temp_files() noexcept {
  g_pending_mutex.lock();  // held until exit: no new temp file can appear after the cleanup
  for (int i = 0; i < kMaxPending; ++i)
    if (g_pending_used[i].load()) ::unlink(g_pending[i]);
  // A worker may still rename a finished file into a directory being removed; retry a few times.
  for (const std::string& dir : g_pending_dirs)
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (!ec) break;
    }
  for (const fs::path& dir : g_output_dirs) remove_empty_tree(dir);
}

std::optional<FileStamp> file_stamp(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return FileStamp{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                   static_cast<uint64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                   static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

std::optional<FileStamp> convert_unchanged(const fs::path& source,
                                           const std::function<bool(bool again)>& convert,
                                           const std::function<void()>& discard) {
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    const std::optional<FileStamp> before = file_stamp(source);
    if (!convert(attempt > 1)) return std::nullopt;
    if (file_stamp(source) == before) return before;
    discard();
    if (attempt == kAttempts)
      throw Error(Errc::io, "changed while it was being converted, " + std::to_string(kAttempts) +
                                " times: rerun once nothing writes it");
  }
}

bool is_up_to_date(const fs::path& output, const std::vector<fs::path>& inputs) {
  std::error_code ec;
  if (!fs::is_regular_file(output, ec)) return false;  // missing, or a device/FIFO: always write
  auto out_time = fs::last_write_time(output, ec);
  if (ec) return false;
  for (const auto& in : inputs) {
    if (in == "-") return false;
    auto t = fs::last_write_time(in, ec);
    if (ec || t > out_time) return false;
  }
  return true;
}

}  // namespace dlprep
