// The token bucket and the page-cache-free reader. Timing checks are loose on purpose: the
// machines that run the tests are shared.
#include "profile/storage.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/timing.hpp"

using namespace dlprep;
using namespace dlprep::profile;
namespace fs = std::filesystem;

TEST_CASE("the token bucket never grants more than the rate plus the burst") {
  // 4 threads ask for 100 kB each, 5 times: 2 MB at 10 MB/s with a 100 kB burst takes at least
  // (2 MB - 100 kB) / 10 MB/s = 0.19 s whatever the scheduling.
  TokenBucket bucket(10e6, 100e3);
  Stopwatch w;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) bucket.acquire(100000);
    });
  for (auto& t : threads) t.join();
  double s = w.seconds();
  CHECK(s >= 0.185);
  CHECK(s < 5.0);  // and it does not stall (generous: a loaded machine)
}

TEST_CASE("an idle token bucket grants its burst at once") {
  TokenBucket bucket(1e6, 500e3);
  Stopwatch w;
  bucket.acquire(400000);
  CHECK(w.seconds() < 0.3);
  CHECK_THROWS_AS(TokenBucket(0, 1), Error);
}

TEST_CASE("the storage reader returns the file's bytes and is throttled") {
  fs::path dir = fs::path(DLPREP_TEST_SCRATCH) / "profile-storage";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<fs::path> files;
  for (int i = 0; i < 4; ++i) {
    Bytes b(300000 + i * 1234);
    for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<uint8_t>(k * 7 + i);
    files.push_back(dir / std::to_string(i));
    write_file_atomic(files.back(), b);
  }
  StorageReader plain;
  for (size_t i = 0; i < files.size(); ++i) CHECK(plain.read(files[i]) == read_file(files[i]));
  CHECK(plain.direct_reads() + plain.fadvise_reads() == files.size());

  // 1.2 MB at 4 MB/s with a 40 kB burst: at least 0.29 s; far more would mean a broken bucket.
  StorageReader slow(4e6);
  Stopwatch w;
  for (const fs::path& f : files) slow.read(f);
  CHECK(w.seconds() >= 0.28);
  CHECK(w.seconds() < 5.0);
  CHECK(slow.bytes_read() == 4 * 300000 + 1234 * 6);

  CHECK(measure_read_bandwidth(files, 2) > 0);
  CHECK_THROWS_AS(plain.read(dir / "missing"), Error);
  fs::remove_all(dir);
}

TEST_CASE("the reader's burst scales with the rate, so that a slow storage is throttled too") {
  CHECK(throttle_burst_bytes(100e3) == doctest::Approx(1e3));  // 10 ms of the rate
  CHECK(throttle_burst_bytes(50e6) == doctest::Approx(500e3));
  CHECK(throttle_burst_bytes(10e9) == doctest::Approx(1e6));  // at most 1 MB

  // 120 kB at 300 kB/s (a network file system): at least (120 kB - 3 kB) / 300 kB/s = 0.39 s. A
  // fixed 1 MB burst granted it all at once.
  fs::path dir = fs::path(DLPREP_TEST_SCRATCH) / "profile-storage-slow";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<fs::path> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back(dir / std::to_string(i));
    write_file_atomic(files.back(), Bytes(30000, static_cast<uint8_t>(i)));
  }
  StorageReader slow(300e3);
  Stopwatch w;
  std::vector<std::thread> threads;  // as the loaders read: several at once
  for (const fs::path& f : files) threads.emplace_back([&slow, f] { slow.read(f); });
  for (auto& t : threads) t.join();
  CHECK(w.seconds() >= 0.38);
  CHECK(w.seconds() < 5.0);
  CHECK(slow.bytes_read() == 120000);
  fs::remove_all(dir);
}
