// libFuzzer target for the tar reader of lib/dataset (tar_format.hpp; built with
// DLPREP_BUILD_FUZZERS and clang), or, in a normal build, the function that replay_main.cpp runs
// over every file of corpus/tar/.
//
// The input is an archive, copied into a buffer of exactly its size so that ASan sees any read
// past it. Every member TarReader returns must lie inside the buffer, and header_before must find
// a regular file's header right before its data; hostile input may only throw dlprep::Error.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "dataset/tar_format.hpp"

using namespace dlprep;
using namespace dlprep::dataset;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  ByteSpan archive(copy.get(), size);
  try {
    tar::TarReader reader(archive);
    tar::Member m;
    for (int n = 0; n < 100000 && reader.next(m); ++n) {
      if (m.data_offset > size || m.size > size - m.data_offset) std::abort();
      // The block before the data is the member's own header (its size may differ from a pax
      // "size" record, then header_before may throw).
      tar::Header h = tar::header_before(archive, m.data_offset);
      if (h.type != '0' && h.type != '7') std::abort();
    }
  } catch (const Error&) {
  }
  for (uint64_t offset : {uint64_t(0), uint64_t(512), uint64_t(size / 512 * 512)}) {
    try {
      tar::header_before(archive, offset);
    } catch (const Error&) {
    }
  }
  return 0;
}
