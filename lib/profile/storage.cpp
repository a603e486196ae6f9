// Page-cache-free, rate-limited reads (BENCHMARKS.md "A throttled storage").
#include "profile/storage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/timing.hpp"

namespace dlprep::profile {
namespace {

// O_DIRECT needs the buffer, the offset and the length aligned to the logical block size; 4096
// covers every common device (512-byte and 4K-sector disks, NVMe).
constexpr size_t kDirectAlign = 4096;

Error io_error(const std::filesystem::path& path, const char* what) {
  return Error(Errc::io, path.string() + ": " + what + ": " + std::strerror(errno));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Reads with O_DIRECT; returns false (nothing read) if the file system refuses O_DIRECT.
bool read_direct(const std::filesystem::path& path, Bytes& out) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (f.fd < 0) {
    if (errno == EINVAL) return false;  // tmpfs and some FUSE file systems
    throw io_error(path, "cannot open");
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw io_error(path, "cannot stat");
  size_t size = static_cast<size_t>(st.st_size);
  size_t capacity = (size + kDirectAlign - 1) / kDirectAlign * kDirectAlign + kDirectAlign;
  void* raw = nullptr;
  if (::posix_memalign(&raw, kDirectAlign, capacity) != 0) throw std::bad_alloc();
  std::unique_ptr<void, FreeDeleter> buffer(raw);
  size_t done = 0;
  for (;;) {
    ssize_t n = ::pread(f.fd, static_cast<char*>(raw) + done, capacity - done,
                        static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && done == 0) return false;
      throw io_error(path, "read failed");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
    if (done % kDirectAlign != 0 || done >= capacity) break;  // a short read is the end of file
  }
  if (done < size) throw Error(Errc::io, path.string() + ": file shrank while being read");
  auto* bytes = static_cast<const uint8_t*>(raw);
  out.assign(bytes, bytes + size);
  return true;
}

void read_evicting(const std::filesystem::path& path, Bytes& out) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw io_error(path, "cannot open");
  ::fdatasync(f.fd);  // dirty pages cannot be dropped; nothing to sync on a read-only file
  ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw io_error(path, "cannot stat");
  out.resize(static_cast<size_t>(st.st_size));
  out.resize(pread_up_to(f.fd, out.data(), out.size(), 0, path));
  ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
}

}  // namespace

TokenBucket::TokenBucket(double rate_bytes_per_s, double burst_bytes)
    : rate_(rate_bytes_per_s), burst_(burst_bytes < 0 ? 0 : burst_bytes) {
  if (!(rate_bytes_per_s > 0)) throw Error(Errc::invalid_argument, "the rate must be positive");
}

void TokenBucket::acquire(uint64_t bytes) {
  double until;
  {
    std::lock_guard lock(mutex_);
    double now = monotonic_seconds();
    // An idle bucket has saved up at most `burst` bytes.
    double earliest = now - burst_ / rate_;
    if (!started_ || booked_until_ < earliest) booked_until_ = earliest;
    started_ = true;
    booked_until_ += static_cast<double>(bytes) / rate_;
    until = booked_until_;
  }
  double wait = until - monotonic_seconds();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
}

double throttle_burst_bytes(double rate_bytes_per_s) {
  // The bucket books a read's bytes after the fact, so the burst need not hold one image; it only
  // lets a few reads overlap without waiting. Scaled with the rate, it stays a small share of any
  // timed pass, however slow the storage.
  return std::min(1e6, rate_bytes_per_s * 0.01);
}

StorageReader::StorageReader(double rate_bytes_per_s) {
  if (rate_bytes_per_s > 0)
    bucket_ =
        std::make_unique<TokenBucket>(rate_bytes_per_s, throttle_burst_bytes(rate_bytes_per_s));
}

Bytes StorageReader::read(const std::filesystem::path& path) {
  Bytes out;
  bool direct = read_direct(path, out);
  if (!direct) read_evicting(path, out);
  if (bucket_) bucket_->acquire(out.size());
  std::lock_guard lock(mutex_);
  bytes_ += out.size();
  (direct ? direct_ : fadvise_) += 1;
  return out;
}

uint64_t StorageReader::bytes_read() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}
uint64_t StorageReader::direct_reads() const {
  std::lock_guard lock(mutex_);
  return direct_;
}
uint64_t StorageReader::fadvise_reads() const {
  std::lock_guard lock(mutex_);
  return fadvise_;
}

void evict_from_page_cache(const std::filesystem::path& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return;
  ::fdatasync(f.fd);
  ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
}

namespace {

// A byte range read with its pages dropped from the cache before (O_DIRECT would need aligned
// offsets, which tar members only have to 512 bytes).
uint64_t read_range_evicting(const std::filesystem::path& path, uint64_t offset, uint64_t size) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw io_error(path, "cannot open");
  ::posix_fadvise(f.fd, static_cast<off_t>(offset), static_cast<off_t>(size), POSIX_FADV_DONTNEED);
  Bytes out(static_cast<size_t>(size));
  size_t done = pread_up_to(f.fd, out.data(), out.size(), offset, path);
  ::posix_fadvise(f.fd, static_cast<off_t>(offset), static_cast<off_t>(size), POSIX_FADV_DONTNEED);
  return done;
}

}  // namespace

double measure_read_bandwidth(const std::vector<dataset::SourceEntry>& samples, unsigned threads) {
  if (samples.empty()) throw Error(Errc::invalid_argument, "no files to measure the storage with");
  StorageReader reader;
  std::atomic<uint64_t> member_bytes{0};
  Stopwatch watch;
  parallel_for(samples.size(), threads == 0 ? 1 : threads, [&](size_t i) {
    const dataset::SourceEntry& e = samples[i];
    if (e.member.empty())
      reader.read(e.path);
    else
      member_bytes += read_range_evicting(e.path, e.offset, e.size);
  });
  double seconds = watch.seconds();
  if (seconds <= 0) seconds = 1e-9;
  return static_cast<double>(reader.bytes_read() + member_bytes) / seconds;
}

double measure_read_bandwidth(const std::vector<std::filesystem::path>& files, unsigned threads) {
  if (files.empty()) throw Error(Errc::invalid_argument, "no files to measure the storage with");
  StorageReader reader;
  Stopwatch watch;
  parallel_for(files.size(), threads == 0 ? 1 : threads, [&](size_t i) { reader.read(files[i]); });
  double seconds = watch.seconds();
  if (seconds <= 0) seconds = 1e-9;
  return static_cast<double>(reader.bytes_read()) / seconds;
}

}  // namespace dlprep::profile
