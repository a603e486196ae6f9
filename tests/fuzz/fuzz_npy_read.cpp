// libFuzzer target for the .npy reader of lib/tabular (npy_format.hpp: what --vocab-from reads;
// built with DLPREP_BUILD_FUZZERS and clang), or, in a normal build, the function that
// replay_main.cpp runs over every file of corpus/npy/.
//
// The input is a .npy file, copied into a buffer of exactly its size so that ASan sees any read
// past it. An array parse_npy accepts must hold exactly rows x max(cols, 1) items of the size its
// dtype names; hostile input may only throw dlprep::Error.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "tabular/npy_format.hpp"

using namespace dlprep;
using namespace dlprep::tabular;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  try {
    NpyArray a = parse_npy(ByteSpan(copy.get(), size), "fuzz.npy");
    // An accepted dtype names its item size after the byte order and kind ("<i4", "|u1").
    unsigned item = 0;
    const char* digits = a.descr.data() + std::min<size_t>(2, a.descr.size());
    const char* end = a.descr.data() + a.descr.size();
    if (std::from_chars(digits, end, item).ptr != end || item == 0 || item > 16) {
      std::fprintf(stderr, "accepted dtype '%s' names no item size\n", a.descr.c_str());
      std::abort();
    }
    unsigned __int128 want = static_cast<unsigned __int128>(a.rows) * (a.cols ? a.cols : 1) * item;
    if (want != a.data.size()) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
