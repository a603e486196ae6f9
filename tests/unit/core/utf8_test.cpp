#include "core/utf8.hpp"

#include <doctest/doctest.h>

namespace dlprep {

TEST_CASE("escape_invalid_utf8 keeps valid UTF-8 and writes every other byte as %XX") {
  CHECK(escape_invalid_utf8("") == "");
  CHECK(escape_invalid_utf8("plain/ascii_01.png") == "plain/ascii_01.png");
  CHECK(escape_invalid_utf8("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x90\x88") ==
        "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x90\x88");
  CHECK(escape_invalid_utf8("caf\xe9") == "caf%E9");                 // Latin-1
  CHECK(escape_invalid_utf8("\xc3") == "%C3");                       // cut short
  CHECK(escape_invalid_utf8("\xc0\xaf") == "%C0%AF");                // overlong
  CHECK(escape_invalid_utf8("\xe0\x80\xaf") == "%E0%80%AF");         // overlong, 3 bytes
  CHECK(escape_invalid_utf8("\xed\xa0\x80") == "%ED%A0%80");         // a surrogate
  CHECK(escape_invalid_utf8("\xf4\x90\x80\x80") == "%F4%90%80%80");  // above U+10FFFF
  CHECK(escape_invalid_utf8("\xf0\x9f\x90") == "%F0%9F%90");         // 4-byte sequence cut short
  CHECK(escape_invalid_utf8("\xff\xfe") == "%FF%FE");
  CHECK(escape_invalid_utf8("\xe9\xc3\xa9") == "%E9\xc3\xa9");  // resynchronises
}

}  // namespace dlprep
