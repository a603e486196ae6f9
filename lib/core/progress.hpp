// Progress of long operations, reported through a callback: the library never prints.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace dlprep {

/// A snapshot of a long operation: `done` of `total` items (total 0 when unknown).
struct ProgressEvent {
  std::string what;  ///< e.g. "l3 encode"
  uint64_t done = 0;
  uint64_t total = 0;
  std::string item;  ///< the item just finished, e.g. a file name
};

/// Called by the library after each item; tools/ decides whether and how often to print.
/// Must be thread-safe: parallel workers call it concurrently.
using ProgressCallback = std::function<void(const ProgressEvent&)>;

/// Called by the library with a warning it does not treat as an error (e.g. a 16-bit PNG reduced
/// to 8 bits). Must be thread-safe.
using WarningCallback = std::function<void(const std::string&)>;

}  // namespace dlprep
