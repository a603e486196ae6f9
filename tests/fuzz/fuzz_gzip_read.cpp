// libFuzzer target for the streaming gzip reader of lib/tabular (gzip_reader.hpp: ISA-L or zlib,
// whichever the build picked; built with DLPREP_BUILD_FUZZERS and clang), or, in a normal build,
// the function that replay_main.cpp runs over every file of corpus/gzip/.
//
// The input is a (possibly multi-member) gzip file, given to the reader through a memfd as
// criteo-preprocess gives it a day file. Reads of odd sizes must end (0) or throw dlprep::Error,
// never crash or spin; output is capped so a small bomb does not slow the fuzzer down.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/error.hpp"
#include "tabular/gzip_reader.hpp"

using namespace dlprep;
using namespace dlprep::tabular;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz_gzip", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (size && ::write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  if (::lseek(fd, 0, SEEK_SET) != 0) std::abort();
  try {
    auto reader = open_gzip_reader(fd, "fuzz.gz");
    std::vector<uint8_t> out(4099);
    size_t total = 0, chunk = 1;
    for (;;) {
      size_t n = reader->read(out.data(), chunk);
      if (n > chunk) std::abort();
      if (n == 0) break;
      total += n;
      if (total > (size_t{64} << 20)) break;
      chunk = (chunk + 97) % out.size() + 1;  // 1, 99, 197, ... 1..4099: odd sizes cross members
    }
    if (reader->compressed_bytes() > size) std::abort();
  } catch (const Error&) {
  }
  ::close(fd);
  return 0;
}
