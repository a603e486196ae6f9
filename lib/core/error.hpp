// The one exception type of libdlprep. Only tools/ maps it to exit codes.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace dlprep {

/// What kind of failure an Error reports; tools/ maps each to an exit code.
enum class Errc {
  invalid_argument,    ///< the caller passed a bad option or value (usage)
  io,                  ///< a read, write, rename or open failed
  corrupt_data,        ///< input bytes are malformed, truncated or fail a checksum
  unsupported,         ///< valid input that this build or format cannot handle
  limit_exceeded,      ///< input larger than a documented limit (see limits.hpp)
  device_unavailable,  ///< the requested backend (cuda, fpga) is not built or absent
  device_failure,      ///< the backend failed while running
  mismatch,            ///< a check found a difference (verify)
  interrupted,         ///< the operation was cancelled (SIGINT)
  internal,            ///< a bug in dlprep
};

/// The exception thrown by every part of libdlprep. The message is lower case and says what is
/// wrong; callers prepend context (the file, the sample) with with_context().
class Error : public std::runtime_error {
 public:
  /// `system_error`: the errno of the failed system call behind it, when there is one.
  Error(Errc code, const std::string& message, int system_error = 0)
      : std::runtime_error(message), code_(code), system_error_(system_error) {}
  Errc code() const noexcept { return code_; }
  /// The errno behind the error, 0 if none was recorded: tells a limit of the process (EMFILE)
  /// from a fault of the file named in the message.
  int system_error() const noexcept { return system_error_; }
  /// The same error with "context: " in front of the message, e.g. the file name.
  Error with_context(std::string_view context) const {
    return Error(code_, std::string(context) + ": " + what(), system_error_);
  }

 private:
  Errc code_;
  int system_error_ = 0;
};

}  // namespace dlprep
