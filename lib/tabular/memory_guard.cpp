#include "tabular/memory_guard.hpp"

#include <unistd.h>

#include <cstdio>

#include "core/error.hpp"

namespace dlprep::tabular {

uint64_t resident_bytes() {
  // statm: size, resident, ... in pages.
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::string memory_text(uint64_t bytes) {
  constexpr uint64_t kMiB = 1u << 20;
  if (bytes < kMiB) return std::to_string(bytes) + " bytes";
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  const uint64_t tenths = (bytes * 10 + kMiB - 1) / kMiB;  // no overflow below 1.6 EiB
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " MiB";
}

void MemoryGuard::reserve(uint64_t bytes, const std::string& what) {
  if (!limit_) return;
  const uint64_t announced = pending_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  const uint64_t need = resident_bytes() + announced;
  if (need <= limit_) return;
  pending_.fetch_sub(bytes, std::memory_order_relaxed);
  throw Error(Errc::limit_exceeded, (stage_.empty() ? "" : stage_ + ": ") + what + " (" +
                                        memory_text(bytes) + ") would take memory use to " +
                                        memory_text(need) + ", over --max-memory " +
                                        memory_text(limit_));
}

}  // namespace dlprep::tabular
