// libFuzzer target for the streaming gzip readers of lib/tabular (gzip_reader.hpp; built with
// DLPREP_BUILD_FUZZERS and clang), or, in a normal build, the function that replay_main.cpp runs
// over every file of corpus/gzip/.
//
// The input is a (possibly multi-member) gzip file, given to each backend built (ISA-L when it
// was, and zlib) through a memfd as criteo-preprocess gives it a day file. Reads of odd sizes
// must end (0) or throw dlprep::Error, never crash or spin; output is capped so a small bomb does
// not slow the fuzzer down. The backends must agree: all of them throw, or all give the same
// bytes and consume the whole file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tabular/gzip_reader.hpp"

using namespace dlprep;
using namespace dlprep::tabular;

namespace {

struct Outcome {
  bool threw = false, capped = false;
  std::string bytes;  // up to the cap
  uint64_t compressed = 0;
};

Outcome read_all(const GzipBackend& backend, const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz_gzip", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (size && ::write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  if (::lseek(fd, 0, SEEK_SET) != 0) std::abort();
  Outcome o;
  try {
    auto reader = backend.open(fd, "fuzz.gz");
    std::vector<uint8_t> out(4099);
    size_t chunk = 1;
    for (;;) {
      size_t n = reader->read(out.data(), chunk);
      if (n > chunk) std::abort();
      if (n == 0) break;
      o.bytes.append(out.begin(), out.begin() + n);
      if (o.bytes.size() > (size_t{64} << 20)) {
        o.capped = true;
        break;
      }
      chunk = (chunk + 97) % out.size() + 1;  // 1, 99, 197, ... 1..4099: odd sizes cross members
    }
    o.compressed = reader->compressed_bytes();
    if (o.compressed > size) std::abort();
  } catch (const Error&) {
    o.threw = true;
  }
  ::close(fd);
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto backends = gzip_backends();
  const Outcome first = read_all(backends[0], data, size);
  for (size_t b = 1; b < backends.size(); ++b) {
    const Outcome other = read_all(backends[b], data, size);
    if (other.threw != first.threw) std::abort();  // one backend accepts what another rejects
    if (first.threw) continue;
    if (other.bytes != first.bytes) std::abort();
    if (!first.capped && other.compressed != first.compressed) std::abort();
  }
  return 0;
}
