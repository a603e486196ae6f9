// Hostile input: every truncation and every single-bit flip of a small file, empty and
// oversized inputs, and tables that point outside the file must end in dlprep::Error (run
// under -DDLPREP_SANITIZE=ON too: no crash, hang or out-of-bounds read).
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "l3/format.hpp"
#include "l3/kernels.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

using testing::Content;
using testing::make_image;
using testing::put_u32;
using testing::resign_header;

// Decodes with the active kernels and with the scalar reference; both must reject the input.
void require_rejected(const Bytes& file, Errc expected = Errc::corrupt_data) {
  const FileInfo* no_info = nullptr;
  (void)no_info;
  try {
    (void)decode(file);
    FAIL("decode accepted a corrupt file");
  } catch (const Error& e) {
    CHECK(e.code() == expected);
  }
  try {
    Image out(64, 64, 4);  // larger than any test image here; the shape check comes first
    detail::decode_into_with(file, out.data(), 64 * 4, 1, detail::kScalarKernels);
    FAIL("the scalar decoder accepted a corrupt file");
  } catch (const Error& e) {
    CHECK(e.code() == expected);
  }
}

Bytes small_file() { return encode(make_image(19, 11, 3, Content::mixed, 5), {8, 1}); }

size_t table_bytes(const Bytes& file) {
  const uint32_t patch = 1u << file[kOffPatchLog2];
  const uint32_t w = testing::get_u32(&file[kOffWidth]), h = testing::get_u32(&file[kOffHeight]);
  return kTableEntryBytes * file[kOffChannels] * ((w + patch - 1) / patch) *
         ((h + patch - 1) / patch);
}

TEST_CASE("an empty input and a non-L3 input are rejected") {
  require_rejected({});
  require_rejected(Bytes(100, 0));
  const std::string png = "\x89PNG\r\n\x1a\n0000000000000000000000000000000000000000";
  require_rejected(Bytes(png.begin(), png.end()));
}

TEST_CASE("every truncation of a small file is rejected") {
  const Bytes file = small_file();
  for (size_t n = 0; n < file.size(); ++n) {
    CAPTURE(n);
    require_rejected(Bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n)));
  }
}

TEST_CASE("trailing bytes after the file are rejected") {
  Bytes file = small_file();
  file.push_back(0);
  require_rejected(file);
}

TEST_CASE("every single-bit flip of a small file is detected") {
  const Bytes file = small_file();
  for (size_t byte = 0; byte < file.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes bad = file;
      bad[byte] ^= static_cast<uint8_t>(1 << bit);
      CAPTURE(byte);
      CAPTURE(bit);
      std::string decode_error;
      try {
        (void)decode(bad);
        FAIL("a bit flip went undetected");
      } catch (const Error& e) {
        // A flipped version or mode byte is "unsupported", dimensions past the limits are
        // "limit exceeded"; everything else is corrupt data.
        CHECK((e.code() == Errc::corrupt_data || e.code() == Errc::unsupported ||
               e.code() == Errc::limit_exceeded));
        decode_error = e.what();
      }
      try {
        (void)verify(bad);
        FAIL("verify missed a bit flip");
      } catch (const Error& e) {
        CHECK(e.what() == decode_error);
      }
    }
  }
}

TEST_CASE("a damaged patch is reported with its index and channel") {
  Bytes file = small_file();
  file[file.size() - 1] ^= 0x10;  // the last patch of the last channel
  try {
    (void)decode(file);
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "l3: patch 5 of channel 2: checksum mismatch");
  }
  for (unsigned threads : {1u, 3u}) {
    try {
      (void)verify(file, threads);
      FAIL("verify accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "l3: patch 5 of channel 2: checksum mismatch");
    }
  }
}

TEST_CASE("verify passes a good file and says what inspect says") {
  const Bytes file = small_file();
  const FileInfo checked = verify(file, 2), inspected = inspect(file);
  CHECK(checked.shape == inspected.shape);
  CHECK(checked.channel_bytes == inspected.channel_bytes);
  CHECK(checked.file_bytes == file.size());
}

// Linux resets a process's peak resident memory (VmHWM) on "5" to clear_refs.
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  return static_cast<bool>(clear << "5" << std::flush);
}
std::optional<uint64_t> peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return std::nullopt;
}

// A flat gray image of 255 x 17 full 256-pixel patches (271 MiB of pixels in a 9 MB file): the
// patch of a flat 256 x 256 image repeated, with the table and header signed.
Bytes large_flat_file(uint8_t value) {
  Image flat(256, 256, 1);
  std::memset(flat.data(), value, flat.size_bytes());
  const Bytes one = encode(flat, {256, 1});
  const Bytes patch(one.begin() + kHeaderBytes + kTableEntryBytes, one.end());
  const uint32_t px = 255, py = 17, patches = px * py;
  Bytes file(one.begin(), one.begin() + kHeaderBytes);
  put_u32(&file[kOffWidth], px * 256);
  put_u32(&file[kOffHeight], py * 256);
  for (uint32_t i = 0; i < patches; ++i) {
    file.resize(file.size() + kTableEntryBytes);
    put_u32(&file[file.size() - 8], static_cast<uint32_t>((i + 1) * patch.size()));
    std::memcpy(&file[file.size() - 4], &one[kHeaderBytes + 4], 4);  // the patch's Adler-32
  }
  for (uint32_t i = 0; i < patches; ++i) file.insert(file.end(), patch.begin(), patch.end());
  const uint64_t size = file.size();
  for (int b = 0; b < 8; ++b) file[kOffFileSize + b] = static_cast<uint8_t>(size >> (8 * b));
  resign_header(file, size_t{kTableEntryBytes} * patches);
  return file;
}

TEST_CASE("a large declared image is checked whole before its output is allocated") {
  Bytes file = large_flat_file(7);
  const Image image = decode(file, 2);
  REQUIRE(image.shape() == ImageShape{65280, 4352, 1});
  CHECK(image.row(0)[0] == 7);
  CHECK(image.row(4351)[65279] == 7);
  CHECK(verify(file).shape == image.shape());

  file[file.size() - 1] ^= 0x01;  // only the last patch is damaged
  const bool measured = reset_peak_rss();
  const std::optional<uint64_t> before = peak_rss_bytes();
  for (unsigned threads : {1u, 2u}) {
    try {
      (void)decode(file, threads);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "l3: patch 4334 of channel 0: checksum mismatch");
    }
    CHECK_THROWS_AS((void)verify(file, threads), Error);
  }
  const std::optional<uint64_t> after = peak_rss_bytes();
  if (!measured || !before || !after) {
    MESSAGE("peak memory not checked: /proc/self/clear_refs or VmHWM unavailable");
    return;
  }
  // Decoding up to the last patch before finding it would have touched 271 MiB.
  CHECK(*after - *before < (uint64_t{64} << 20));
}

TEST_CASE("oversized dimensions are rejected before any allocation") {
  Bytes file = small_file();
  put_u32(&file[kOffWidth], 70000);
  resign_header(file, 0);
  require_rejected(file, Errc::limit_exceeded);
  put_u32(&file[kOffWidth], 65535);
  put_u32(&file[kOffHeight], 65535);  // 2^32 pixels > 2^30
  require_rejected(file, Errc::limit_exceeded);
  put_u32(&file[kOffWidth], 0);
  require_rejected(file, Errc::corrupt_data);
  // Within the limits but far larger than the file: the patch table cannot fit.
  put_u32(&file[kOffWidth], 30000);
  put_u32(&file[kOffHeight], 30000);
  file[kOffPatchLog2] = 3;
  resign_header(file, 0);
  require_rejected(file);
}

TEST_CASE("patch table offsets outside the file are rejected even with a valid header checksum") {
  const Bytes good = small_file();
  const size_t table = table_bytes(good);
  const size_t entries = table / kTableEntryBytes;
  for (uint32_t value : {0u, 1u, 0x7FFFFFFFu, 0xFFFFFFFFu}) {
    for (size_t entry : {size_t{0}, entries / 2, entries - 1}) {
      Bytes file = good;
      put_u32(&file[kHeaderBytes + entry * kTableEntryBytes], value);
      resign_header(file, table);
      CAPTURE(value);
      CAPTURE(entry);
      require_rejected(file);
    }
  }
  // Two patches swapping sizes keeps the total but makes both disagree with their codes.
  Bytes file = good;
  const uint32_t first_end = testing::get_u32(&file[kHeaderBytes]);
  put_u32(&file[kHeaderBytes], first_end + 1);
  resign_header(file, table);
  require_rejected(file);
}

TEST_CASE("unknown versions, modes and flags are refused") {
  Bytes file = small_file();
  file[kOffVersion] = kVersion + 1;
  require_rejected(file, Errc::unsupported);
  file = small_file();
  file[kOffMode] = 1;
  require_rejected(file, Errc::unsupported);
  file = small_file();
  file[kOffFlags] |= 0x80;
  resign_header(file, table_bytes(file));
  require_rejected(file);
  // Subtract-green needs three channels.
  file = encode(make_image(5, 5, 2, Content::noise), {8, 1});
  file[kOffFlags] = kFlagSubtractGreen;
  resign_header(file, table_bytes(file));
  require_rejected(file);
}

}  // namespace
}  // namespace dlprep::l3
