// The storage side of profile-mix: a reader that keeps the page cache out of the way and can be
// throttled to a given bandwidth (BENCHMARKS.md, "A throttled storage"), and a measurement of the
// read bandwidth of a directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "core/file_io.hpp"
#include "dataset/sample_source.hpp"

namespace dlprep::profile {

/// A token bucket shared by all reader threads: acquire(n) returns once n more bytes fit under
/// the rate. Implemented as a virtual clock: each request books the next n / rate seconds after
/// the previous booking (or after now minus the burst, when the bucket has been idle) and sleeps
/// until its booking ends, so over any window the bytes granted are at most rate * window + burst.
/// Thread-safe.
class TokenBucket {
 public:
  /// rate_bytes_per_s > 0; burst_bytes >= 0 is how much may be granted at once after idling.
  /// Throws Error(invalid_argument) for a non-positive rate.
  TokenBucket(double rate_bytes_per_s, double burst_bytes);
  /// Blocks until `bytes` more are allowed.
  void acquire(uint64_t bytes);

 private:
  double rate_, burst_;
  std::mutex mutex_;
  double booked_until_ = 0;  ///< monotonic seconds up to which the bandwidth is booked
  bool started_ = false;
};

/// The burst of a reader throttled to `rate_bytes_per_s`: 10 ms of the rate, at most 1 MB. A pass
/// of T seconds then measures at most rate * (1 + 0.01 / T) (a fixed 1 MB let a pass at 100 kB/s
/// run unthrottled). A read larger than the burst is still granted: it waits for its bytes.
double throttle_burst_bytes(double rate_bytes_per_s);

/// Reads whole files with the page cache out of the way (O_DIRECT into an aligned buffer where the
/// file system allows it, else a plain read bracketed by posix_fadvise(DONTNEED) after an
/// fdatasync so that the pages really go), optionally throttled by a TokenBucket. Thread-safe.
class StorageReader {
 public:
  /// rate_bytes_per_s = 0: no throttle.
  explicit StorageReader(double rate_bytes_per_s = 0);
  /// The file's bytes. Throws Error(io) naming the path.
  Bytes read(const std::filesystem::path& path);
  /// Bytes read so far by all threads.
  uint64_t bytes_read() const;
  /// Files read with O_DIRECT / with the fadvise fallback.
  uint64_t direct_reads() const;
  uint64_t fadvise_reads() const;

 private:
  std::unique_ptr<TokenBucket> bucket_;
  mutable std::mutex mutex_;
  uint64_t bytes_ = 0, direct_ = 0, fadvise_ = 0;
};

/// Evicts a file's pages from the page cache (fdatasync, then posix_fadvise DONTNEED); best effort.
void evict_from_page_cache(const std::filesystem::path& path);

/// Storage bandwidth measured by reading `files` once, page cache out of the way, on `threads`
/// threads (a few readers in flight, as a loader has). Returns bytes/s; throws Error(io), or
/// Error(invalid_argument) when there is nothing to read.
double measure_read_bandwidth(const std::vector<std::filesystem::path>& files, unsigned threads);
/// The same on source samples: whole files, or the byte ranges of tar members (a loader of a
/// tar-layout dataset reads members, not whole shards).
double measure_read_bandwidth(const std::vector<dataset::SourceEntry>& samples, unsigned threads);

}  // namespace dlprep::profile
