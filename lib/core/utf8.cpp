#include "core/utf8.hpp"

namespace dlprep {

std::string escape_invalid_utf8(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  const auto* s = reinterpret_cast<const unsigned char*>(name.data());
  const size_t n = name.size();
  for (size_t i = 0; i < n;) {
    // The length of the valid sequence at i (RFC 3629), or 0.
    size_t len = 0;
    const unsigned c = s[i];
    auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
      return i + k < n && s[i + k] >= lo && s[i + k] <= hi;
    };
    if (c < 0x80)
      len = 1;
    else if (c >= 0xC2 && c <= 0xDF)
      len = cont(1) ? 2 : 0;
    else if (c == 0xE0)
      len = cont(1, 0xA0) && cont(2) ? 3 : 0;
    else if (c == 0xED)
      len = cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    else if (c >= 0xE1 && c <= 0xEF)
      len = cont(1) && cont(2) ? 3 : 0;
    else if (c == 0xF0)
      len = cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    else if (c >= 0xF1 && c <= 0xF3)
      len = cont(1) && cont(2) && cont(3) ? 4 : 0;
    else if (c == 0xF4)
      len = cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    if (len > 0) {
      out.append(name.substr(i, len));
      i += len;
    } else {
      static const char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    }
  }
  return out;
}

}  // namespace dlprep
