// Files read through a memory mapping, registered while they are mapped. A file that shrinks
// under its mapping (truncated by another process) turns the next read past its new end into
// SIGBUS; the registry lets the process's SIGBUS handler name that file and fail with a message
// instead of dying with "Bus error" (tools/dlprep/output.cpp).
#pragma once

#include <cstddef>
#include <filesystem>

namespace dlprep {

/// Registers [data, data + size) as a mapping of `path` for its lifetime. Registration is
/// lock-free; when every slot is taken (thousands of mappings at once) the mapping is simply not
/// named by a fault.
class MappedFileRegistration {
 public:
  MappedFileRegistration(const void* data, size_t size, const std::filesystem::path& path) noexcept;
  ~MappedFileRegistration();
  MappedFileRegistration(const MappedFileRegistration&) = delete;
  MappedFileRegistration& operator=(const MappedFileRegistration&) = delete;

 private:
  int slot_ = -1;
};

/// Copies the path of the registered mapping that holds `address` into `out` (NUL-terminated,
/// cut to `capacity`); false when none does. Async-signal-safe: for a SIGBUS handler.
bool mapped_file_at(const void* address, char* out, size_t capacity) noexcept;

}  // namespace dlprep
