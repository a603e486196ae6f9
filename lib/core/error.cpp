#include "core/error.hpp"

namespace dlprep {

std::string_view errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::invalid_argument: return "invalid argument";
    case Errc::io: return "i/o error";
    case Errc::corrupt_data: return "corrupt data";
    case Errc::unsupported: return "unsupported";
    case Errc::limit_exceeded: return "limit exceeded";
    case Errc::device_unavailable: return "device unavailable";
    case Errc::device_failure: return "device failure";
    case Errc::mismatch: return "mismatch";
    case Errc::interrupted: return "interrupted";
    case Errc::internal: return "internal error";
  }
  return "unknown error";
}

}  // namespace dlprep
