#include "core/mapped_files.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

namespace dlprep {
namespace {

constexpr int kSlots = 4096;
constexpr size_t kPathBytes = 512;

// A slot is claimed (state 1), filled, then published (state 2); a handler reads only published
// slots. Unregistering sets it back to 0.
struct Slot {
  std::atomic<int> state{0};
  std::atomic<uintptr_t> begin{0}, end{0};
  char path[kPathBytes]{};
};
// constinit: zero pages in .bss, not a 2 MB initialiser run at every program's start.
constinit Slot g_slots[kSlots];
std::atomic<unsigned> g_next{0};  // where the search for a free slot starts

}  // namespace

MappedFileRegistration::MappedFileRegistration(const void* data, size_t size,
                                               const std::filesystem::path& path) noexcept {
  const unsigned start = g_next.fetch_add(1, std::memory_order_relaxed);
  for (int i = 0; i < kSlots; ++i) {
    const int k = static_cast<int>((start + static_cast<unsigned>(i)) % kSlots);
    int free = 0;
    if (!g_slots[k].state.compare_exchange_strong(free, 1, std::memory_order_acquire)) continue;
    Slot& s = g_slots[k];
    const std::string& text = path.native();
    const size_t n = std::min(text.size(), kPathBytes - 1);
    std::memcpy(s.path, text.data(), n);
    s.path[n] = '\0';
    s.begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_relaxed);
    s.end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_relaxed);
    s.state.store(2, std::memory_order_release);
    slot_ = k;
    return;
  }
}

MappedFileRegistration::~MappedFileRegistration() {
  if (slot_ >= 0) g_slots[slot_].state.store(0, std::memory_order_release);
}

bool mapped_file_at(const void* address, char* out, size_t capacity) noexcept {
  if (capacity == 0) return false;
  const auto a = reinterpret_cast<uintptr_t>(address);
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != 2) continue;
    if (a < s.begin.load(std::memory_order_relaxed) || a >= s.end.load(std::memory_order_relaxed))
      continue;
    size_t n = 0;
    while (n + 1 < capacity && n < kPathBytes && s.path[n] != '\0') {
      out[n] = s.path[n];
      ++n;
    }
    out[n] = '\0';
    return true;
  }
  return false;
}

}  // namespace dlprep
