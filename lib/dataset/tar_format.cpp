// ustar headers written and read by hand: the format is small and fixed (POSIX.1-2001, "ustar
// Interchange Format": a 512-byte header of fixed-width fields, numbers in octal text, a checksum
// that is the byte sum of the header with the checksum field read as spaces).
#include "dataset/tar_format.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/error.hpp"

namespace dlprep::dataset::tar {
namespace {

// Field offsets and widths of the ustar header.
constexpr size_t kName = 0, kNameLen = 100;
constexpr size_t kMode = 100, kUid = 108, kGid = 116, kNumLen = 8;
constexpr size_t kSize = 124, kMtime = 136, kBigNumLen = 12;
constexpr size_t kChecksum = 148, kChecksumLen = 8;
constexpr size_t kType = 156;
constexpr size_t kMagic = 257, kVersion = 263;
constexpr size_t kPrefix = 345, kPrefixLen = 155;
// The largest size that 11 octal digits hold; larger sizes are written in base-256 (GNU), which
// GNU tar, bsdtar and Python's tarfile all read.
constexpr uint64_t kMaxOctalSize = (uint64_t{1} << 33) - 1;
// What Python's tarfile names pax headers; readers that do not know pax extract it as a file.
constexpr std::string_view kPaxName = "././@PaxHeader";
// POSIX ustar magic and version: "ustar", NUL, "00".
constexpr uint8_t kUstarMagic[8] = {'u', 's', 't', 'a', 'r', 0, '0', '0'};

Error corrupt(const std::string& what) { return Error(Errc::corrupt_data, what); }

void put_octal(uint8_t* field, size_t width, uint64_t value) {
  // width - 1 digits and a NUL, zero-padded.
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<uint8_t>('0' + (value & 7));
    value >>= 3;
  }
  field[width - 1] = 0;
}

void put_text(uint8_t* field, size_t width, std::string_view text) {
  std::memcpy(field, text.data(), std::min(width, text.size()));
}

uint32_t checksum(const uint8_t* block, bool is_signed) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    bool in_field = i >= kChecksum && i < kChecksum + kChecksumLen;
    uint8_t b = in_field ? uint8_t(' ') : block[i];
    sum += is_signed ? static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(b))) : b;
  }
  return sum;
}

void header_block(uint8_t* block, std::string_view name, uint64_t size, char type) {
  std::memset(block, 0, kBlock);
  put_text(block + kName, kNameLen, name);
  put_octal(block + kMode, kNumLen, 0644);
  put_octal(block + kUid, kNumLen, 0);
  put_octal(block + kGid, kNumLen, 0);
  if (size <= kMaxOctalSize) {
    put_octal(block + kSize, kBigNumLen, size);
  } else {
    block[kSize] = 0x80;
    for (size_t i = kBigNumLen; i-- > 1; size >>= 8) block[kSize + i] = static_cast<uint8_t>(size);
  }
  put_octal(block + kMtime, kBigNumLen, 0);
  block[kType] = static_cast<uint8_t>(type);
  std::memcpy(block + kMagic, kUstarMagic, sizeof kUstarMagic);
  // "%06o\0 ": six digits, NUL, space (what tar has always written).
  uint32_t sum = checksum(block, false);
  put_octal(block + kChecksum, 7, sum);
  block[kChecksum + 7] = ' ';
}

// "LEN path=NAME\n", LEN counting the whole record including its own digits.
std::string pax_record(std::string_view key, std::string_view value) {
  size_t body = 1 + key.size() + 1 + value.size() + 1;  // " key=value\n"
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  return std::to_string(len) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

// A numeric field: octal text (leading spaces allowed, NUL or space terminated), or base-256.
uint64_t parse_number(const uint8_t* field, size_t width, const char* what) {
  if (field[0] & 0x80) {
    if (field[0] != 0x80) throw corrupt(std::string("negative or oversized ") + what);
    uint64_t v = 0;
    for (size_t i = 1; i < width; ++i) {
      if (v >> 55) throw corrupt(std::string(what) + " too large");
      v = (v << 8) | field[i];
    }
    return v;
  }
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  uint64_t v = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v >> 60) throw corrupt(std::string(what) + " too large");
    v = v * 8 + (field[i] - '0');
  }
  if (i < width && field[i] != 0 && field[i] != ' ')
    throw corrupt(std::string(what) + " is not an octal number");
  return v;
}

std::string field_text(const uint8_t* field, size_t width) {
  size_t n = 0;
  while (n < width && field[n] != 0) ++n;
  return std::string(reinterpret_cast<const char*>(field), n);
}

bool is_regular(char type) { return type == '0' || type == '\0' || type == '7'; }

}  // namespace

Bytes member_headers(std::string_view name, uint64_t size) {
  Bytes out;
  if (name.size() > kNameLen) {
    std::string records = pax_record("path", name);
    out.resize(kBlock + padded(records.size()));
    header_block(out.data(), kPaxName, records.size(), 'x');
    std::memcpy(out.data() + kBlock, records.data(), records.size());
  }
  size_t at = out.size();
  out.resize(at + kBlock);
  header_block(out.data() + at, stored_name(name), size, '0');
  return out;
}

uint64_t member_bytes(std::string_view name, uint64_t size) {
  uint64_t headers = kBlock;
  if (name.size() > kNameLen) headers += kBlock + padded(pax_record("path", name).size());
  return headers + padded(size);
}

std::string stored_name(std::string_view name) {
  return std::string(name.substr(0, std::min(name.size(), kNameLen)));
}

bool is_zero_block(ByteSpan block) {
  return std::all_of(block.begin(), block.end(), [](uint8_t b) { return b == 0; });
}

Header parse_header(ByteSpan span) {
  if (span.size() < kBlock) throw corrupt("truncated header");
  const uint8_t* block = span.data();
  bool posix = std::memcmp(block + kMagic, "ustar\0", 6) == 0;
  bool gnu = std::memcmp(block + kMagic, "ustar ", 6) == 0;
  if (!posix && !gnu) throw corrupt("not a ustar header (no magic)");
  uint64_t stored = parse_number(block + kChecksum, kChecksumLen, "header checksum");
  if (stored != checksum(block, false) && stored != checksum(block, true))
    throw corrupt("header checksum mismatch");
  Header h;
  h.name = field_text(block + kName, kNameLen);
  if (posix && block[kVersion] == '0') {
    std::string prefix = field_text(block + kPrefix, kPrefixLen);
    if (!prefix.empty()) h.name = prefix + "/" + h.name;
  }
  h.size = parse_number(block + kSize, kBigNumLen, "member size");
  h.type = block[kType] == 0 ? '0' : static_cast<char>(block[kType]);
  return h;
}

bool TarReader::next(Member& member) {
  if (ended_) return false;
  std::optional<std::string> long_name;
  bool has_long_size = false;  // (not std::optional: GCC 12 warns it may be uninitialised)
  uint64_t long_size = 0;
  uint64_t start = offset_;
  for (;;) {
    auto at = [&](const std::string& what) {
      return corrupt("offset " + std::to_string(offset_) + ": " + what);
    };
    if (archive_.size() < kBlock || offset_ > archive_.size() - kBlock)
      throw at("truncated archive (no end-of-archive marker)");
    ByteSpan block = archive_.subspan(offset_, kBlock);
    if (is_zero_block(block)) {
      // The end: two zero blocks (one followed by the end of the file, or by a short zero tail,
      // is tolerated, as tar does).
      ByteSpan after = archive_.subspan(offset_ + kBlock);
      if (!is_zero_block(after.first(std::min<size_t>(after.size(), kBlock))))
        throw at("a zero block inside the archive");
      if (long_name || has_long_size) throw at("extended header without a member");
      ended_ = true;
      return false;
    }
    Header h;
    try {
      h = parse_header(block);
    } catch (const Error& e) {
      throw at(e.what());
    }
    uint64_t data = offset_ + kBlock;
    uint64_t size = h.size;
    if (is_regular(h.type) && has_long_size) size = long_size;
    if (size > archive_.size() - data) throw at("member data past the end of the archive");
    ByteSpan body = archive_.subspan(data, size);
    if (h.type == 'x') {
      // "LEN key=value\n" records.
      size_t pos = 0;
      while (pos < body.size()) {
        size_t digits = pos;
        uint64_t len = 0;
        while (digits < body.size() && body[digits] >= '0' && body[digits] <= '9' &&
               len < kBlock * 1024)
          len = len * 10 + (body[digits++] - '0');
        if (digits == pos || digits >= body.size() || body[digits] != ' ' ||
            len > body.size() - pos || len < digits - pos + 3 || body[pos + len - 1] != '\n')
          throw at("malformed pax record");
        std::string_view record(reinterpret_cast<const char*>(body.data()) + digits + 1,
                                pos + len - 1 - (digits + 1));
        size_t eq = record.find('=');
        if (eq == std::string_view::npos) throw at("malformed pax record");
        std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
        if (key == "path") {
          long_name = std::string(value);
        } else if (key == "size") {
          uint64_t v = 0;
          if (value.empty() || value.size() > 19) throw at("bad pax size");
          for (char c : value) {
            if (c < '0' || c > '9') throw at("bad pax size");
            v = v * 10 + (c - '0');
          }
          long_size = v;
          has_long_size = true;
        }
        pos += len;
      }
    } else if (h.type == 'L') {
      long_name = field_text(body.data(), body.size());
    } else if (is_regular(h.type)) {
      member.name = long_name ? *long_name : h.name;
      member.header_offset = start;
      member.data_offset = data;
      member.size = size;
      offset_ = data + padded(size);
      return true;
    } else if (h.type != 'g' && h.type != '5') {
      throw at(std::string("unsupported member type '") + h.type + "'");
    }
    if (h.type == 'g' || h.type == '5') {
      long_name.reset();
      has_long_size = false;
      start = data + padded(size);
    }
    offset_ = data + padded(size);
  }
}

Header header_before(ByteSpan archive, uint64_t data_offset) {
  // An offset the check below refuses has no block before it inside the archive.
  const bool inside = data_offset >= kBlock && data_offset <= archive.size();
  return header_before(inside ? archive.subspan(data_offset - kBlock, kBlock) : ByteSpan(),
                       data_offset, archive.size());
}

Header header_before(ByteSpan block, uint64_t data_offset, uint64_t archive_size) {
  if (data_offset < kBlock || data_offset % kBlock != 0 || data_offset > archive_size)
    throw corrupt("offset " + std::to_string(data_offset) +
                  " is not where a member's data can start in an archive of " +
                  std::to_string(archive_size) + " bytes");
  Header h;
  try {
    h = parse_header(block);
  } catch (const Error& e) {
    throw corrupt("no member header before offset " + std::to_string(data_offset) + ": " +
                  e.what());
  }
  if (!is_regular(h.type))
    throw corrupt("the header before offset " + std::to_string(data_offset) +
                  " is not a regular file's");
  if (h.size > archive_size - data_offset)
    throw corrupt("member at offset " + std::to_string(data_offset) + " (" +
                  std::to_string(h.size) + " bytes) runs past the end of the archive");
  return h;
}

}  // namespace dlprep::dataset::tar
