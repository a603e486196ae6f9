// libFuzzer target for how criteo-preprocess reads a day file (tabular/input_reader.hpp:
// detect_file_kind, then InputReader's chunks of text lines or of binary rows after their header,
// as --input-format auto, tsv or bin gives it; built with DLPREP_BUILD_FUZZERS and clang), or, in
// a normal build, the function that replay_main.cpp runs over every file of corpus/input_reader/.
//
// The first byte chooses the format (data[0] % 3: auto, tsv, bin) and whether the rest is given
// as a file (a memfd: binary rows are mapped) or as a pipe (read(2)); the rest is the day file.
// Hostile input may only throw dlprep::Error. Text chunks are whole lines with kTsvReadPadding
// readable bytes after them, and together are the file with a final '\n' added when missing;
// binary chunks are whole rows, and together are the file after its header. A gzip file must
// end or throw (fuzz_gzip_read checks what it inflates to).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "tabular/criteo_schema.hpp"
#include "tabular/input_reader.hpp"
#include "tabular/parse_tsv.hpp"

using namespace dlprep;
using namespace dlprep::tabular;

namespace {

// A pipe holds this much without a reader; larger inputs go through the memfd only.
constexpr size_t kPipeBytes = 65536;

// An fd whose /proc/self/fd path InputReader opens as criteo-preprocess opens a day file.
int make_fd(const uint8_t* data, size_t size, bool pipe) {
  if (pipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
    if (size && ::write(fds[1], data, size) != static_cast<ssize_t>(size)) std::abort();
    ::close(fds[1]);  // the reader sees the end after the data
    return fds[0];
  }
  int fd = memfd_create("fuzz_input", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (size && ::write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  return fd;
}

// Reads every chunk and checks it against the file's bytes.
void read_all(const std::string& path, FileKind kind, const uint8_t* data, size_t size) {
  InputReader reader(path, kind, 4096);
  std::string got;
  for (InputChunk chunk = reader.next(); !chunk.empty(); chunk = reader.next()) {
    if (!chunk.text.empty()) {
      if (kind == FileKind::bin || chunk.text.back() != '\n') std::abort();
      unsigned char padding = 0;  // ASan reports a read past what the decoder may read
      for (size_t i = 0; i < kTsvReadPadding; ++i)
        padding |= chunk.text.data()[chunk.text.size() + i];
      static_cast<void>(padding);
      got.append(chunk.text.data(), chunk.text.size());
    } else {
      if (kind != FileKind::bin || chunk.rows.size_bytes() % kBinaryRowBytes != 0) std::abort();
      got.append(reinterpret_cast<const char*>(chunk.rows.data()), chunk.rows.size_bytes());
    }
  }
  std::string want(reinterpret_cast<const char*>(data), size);
  if (kind == FileKind::bin) {
    if (size < kBinaryHeaderBytes) std::abort();
    want.erase(0, kBinaryHeaderBytes);
  } else if (kind == FileKind::tsv_gzip) {
    return;
  } else if (!want.empty() && want.back() != '\n') {
    want += '\n';
  }
  if (got != want) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const InputFormat format = static_cast<InputFormat>(data[0] % 3);
  const bool pipe = data[0] / 3 % 2 == 1 && size - 1 <= kPipeBytes;
  const int fd = make_fd(data + 1, size - 1, pipe);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    // Sniffing a pipe would eat its first bytes: there the format byte names the kind.
    const FileKind kind = pipe ? (format == InputFormat::bin ? FileKind::bin : FileKind::tsv)
                               : detect_file_kind(path, format);
    if ((format == InputFormat::bin) != (kind == FileKind::bin) &&
        format != InputFormat::auto_detect)
      std::abort();
    read_all(path, kind, data + 1, size - 1);
  } catch (const Error&) {
  }
  ::close(fd);
  return 0;
}
