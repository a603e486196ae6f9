// Names that JSON can hold: file names are bytes, JSON strings are UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace dlprep {

/// `name` with each byte of an invalid UTF-8 sequence (RFC 3629) written as %XX (upper-case hex):
/// names in other encodings (Latin-1 "caf\xe9" -> "caf%E9") become strings that JSON can hold
/// and that compare equal from one run to the next; valid UTF-8 is kept as it is.
std::string escape_invalid_utf8(std::string_view name);

}  // namespace dlprep
