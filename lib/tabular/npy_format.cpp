#include "tabular/npy_format.hpp"

#include <zlib.h>

#include <cctype>
#include <cstring>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace dlprep::tabular {

std::string npy_header(const char* descr, uint64_t rows, uint32_t cols) {
  return cols ? npy_header(descr, std::vector<uint64_t>{rows, cols})
              : npy_header(descr, std::vector<uint64_t>{rows});
}

std::string npy_header(const char* descr, const std::vector<uint64_t>& shape) {
  std::string dims;  // Python's tuple: "(7,)" for one dimension, "(2, 3)" for more
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic(6) + version(2) + header_len(2) + dict + padding + '\n', total a multiple of 64.
  size_t total = 10 + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  size_t header_len = total - 10;
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header_len & 0xff));
  out.push_back(static_cast<char>(header_len >> 8));
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out.push_back('\n');
  return out;
}

namespace {

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

std::string npz_archive(const std::vector<std::pair<std::string, std::string>>& arrays) {
  // The zip layout (PKWARE APPNOTE 4.3): per member a local header and its data, then the central
  // directory and its end record. Method 0 (stored), version 2.0, dated 1980-01-01 so that the
  // bytes depend on the arrays alone.
  constexpr uint16_t kVersion = 20, kDosDate = (1 << 5) | 1;
  std::string out, directory;
  for (const auto& member : arrays) {
    const std::string& npy = member.second;  // not a structured binding: the lambda below uses it
    const std::string file = member.first + ".npy";
    if (out.size() + npy.size() + 2 * file.size() + 200 > UINT32_MAX)
      throw Error(Errc::limit_exceeded, "an .npz archive over 4 GiB");
    const auto crc = static_cast<uint32_t>(::crc32(::crc32(0, nullptr, 0),
                                                   reinterpret_cast<const Bytef*>(npy.data()),
                                                   static_cast<uInt>(npy.size())));
    const auto offset = static_cast<uint32_t>(out.size());
    const auto common = [&](std::string& h) {
      put_le(h, kVersion, 2);  // version needed to extract
      put_le(h, 0, 2);         // flags
      put_le(h, 0, 2);         // method: stored
      put_le(h, 0, 2);         // time
      put_le(h, kDosDate, 2);
      put_le(h, crc, 4);
      put_le(h, npy.size(), 4);  // compressed size
      put_le(h, npy.size(), 4);  // size
      put_le(h, file.size(), 2);
      put_le(h, 0, 2);  // extra field length
    };
    put_le(out, 0x04034b50, 4);
    common(out);
    out += file;
    out += npy;
    put_le(directory, 0x02014b50, 4);
    put_le(directory, kVersion, 2);  // version made by
    common(directory);
    put_le(directory, 0, 2);  // comment length
    put_le(directory, 0, 2);  // disk number
    put_le(directory, 0, 2);  // internal attributes
    put_le(directory, 0, 4);  // external attributes
    put_le(directory, offset, 4);
    directory += file;
  }
  const auto directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 2);  // this disk
  put_le(out, 0, 2);  // the directory's disk
  put_le(out, arrays.size(), 2);
  put_le(out, arrays.size(), 2);
  put_le(out, directory.size(), 4);
  put_le(out, directory_offset, 4);
  put_le(out, 0, 2);  // comment length
  return out;
}

namespace {

/// A decimal number of at most 19 digits (so it fits in 63 bits) starting at `i`; advances `i`.
bool parse_count(const std::string& s, size_t& i, uint64_t& value) {
  size_t start = i;
  value = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 19)
    value = value * 10 + static_cast<uint64_t>(s[i++] - '0');
  return i > start && (i >= s.size() || s[i] < '0' || s[i] > '9');
}

}  // namespace

NpyArray parse_npy(ByteSpan bytes, const std::string& name) {
  auto bad = [&](const std::string& what) { return Error(Errc::corrupt_data, name + ": " + what); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw bad("not a .npy file");
  size_t header_len = 0, start = 0;
  if (bytes[6] == 1) {
    header_len = bytes[8] | (size_t{bytes[9]} << 8);
    start = 10;
  } else if (bytes[6] == 2 || bytes[6] == 3) {
    if (bytes.size() < 12) throw bad("truncated .npy header");
    header_len =
        bytes[8] | (size_t{bytes[9]} << 8) | (size_t{bytes[10]} << 16) | (size_t{bytes[11]} << 24);
    start = 12;
  } else {
    throw bad("unsupported .npy version");
  }
  if (header_len > bytes.size() - start) throw bad("truncated .npy header");
  std::string dict(reinterpret_cast<const char*>(bytes.data()) + start, header_len);
  NpyArray a;
  auto d = dict.find("'descr':");
  auto s = dict.find("'shape':");
  if (d == std::string::npos || s == std::string::npos) throw bad("bad .npy header");
  auto q1 = dict.find('\'', d + 8);
  auto q2 = q1 == std::string::npos ? q1 : dict.find('\'', q1 + 1);
  if (q2 == std::string::npos) throw bad("bad .npy header");
  a.descr = dict.substr(q1 + 1, q2 - q1 - 1);
  // A dtype this reader knows the item size of: byte order, kind, 1..16 bytes (e.g. "<u4").
  uint64_t item = 0;
  size_t at = 2;
  if (a.descr.size() < 3 || !std::strchr("<>|=", a.descr[0]) || !std::isalpha(a.descr[1] & 0xff) ||
      !parse_count(a.descr, at, item) || at != a.descr.size() || item == 0 || item > 16)
    throw bad("unsupported dtype '" + a.descr + "'");
  if (dict.find("'fortran_order': True") != std::string::npos) throw bad("fortran order");
  auto p1 = dict.find('(', s), p2 = dict.find(')', s);
  if (p1 == std::string::npos || p2 == std::string::npos || p2 < p1) throw bad("bad .npy shape");
  std::string shape = dict.substr(p1 + 1, p2 - p1 - 1);
  std::vector<uint64_t> dims;
  size_t i = 0;
  while (i < shape.size()) {
    while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= shape.size()) break;
    uint64_t dim = 0;
    if (!parse_count(shape, i, dim)) throw bad("bad .npy shape");
    dims.push_back(dim);
  }
  if (dims.empty() || dims.size() > 2) throw bad("only 1-D and 2-D arrays are read");
  if (dims.size() == 2 && (dims[1] == 0 || dims[1] > UINT32_MAX)) throw bad("bad .npy shape");
  a.rows = dims[0];
  a.cols = dims.size() == 2 ? static_cast<uint32_t>(dims[1]) : 0;
  uint64_t want = 0;
  size_t data_start = start + header_len;
  if (__builtin_mul_overflow(a.rows, uint64_t{a.cols ? a.cols : 1u}, &want) ||
      __builtin_mul_overflow(want, item, &want) || bytes.size() - data_start != want)
    throw bad("data size does not match shape");
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end());
  return a;
}

NpyArray read_npy(const std::filesystem::path& path) {
  return parse_npy(read_file(path), path.string());
}

}  // namespace dlprep::tabular
