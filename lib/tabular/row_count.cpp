// Row counts of a day before it is read (row_count.hpp).
#include "tabular/row_count.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "core/mapped_files.hpp"
#include "core/parallel.hpp"
#include "tabular/parse_tsv.hpp"

namespace dlprep::tabular {

uint64_t count_lines(std::span<const char> text) {
  uint64_t lines = 0;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end && (p = static_cast<const char*>(std::memchr(p, '\n', end - p))) != nullptr) {
    ++lines;
    ++p;
  }
  return lines;
}

std::optional<uint64_t> count_file_lines(const std::filesystem::path& path, unsigned threads) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* map = size > 0 ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);
  if (size == 0) return 0;
  if (map == MAP_FAILED) return std::nullopt;
  ::madvise(map, size, MADV_SEQUENTIAL);
  std::optional<MappedFileRegistration> registration;
  registration.emplace(map, size, path);  // a file that shrinks is named
  const char* text = static_cast<const char*>(map);
  std::vector<uint64_t> lines(threads, 0);
  parallel_for(threads, threads, [&](size_t k) {
    const size_t begin = size / threads * k,
                 end = k + 1 == threads ? size : size / threads * (k + 1);
    lines[k] = count_lines({text + begin, end - begin});
  });
  uint64_t total = text[size - 1] != '\n' ? 1 : 0;
  for (uint64_t n : lines) total += n;
  registration.reset();  // before the unmapping, as ~MappedFile does
  ::munmap(map, size);
  return total;
}

uint64_t valid_rows(std::span<const char> text, unsigned threads) {
  std::vector<size_t> cut(threads + 1, text.size());
  cut[0] = 0;
  for (size_t k = 1; k < threads; ++k) {
    const size_t at = std::max(cut[k - 1], text.size() / threads * k);
    const void* nl =
        at < text.size() ? std::memchr(text.data() + at, '\n', text.size() - at) : nullptr;
    cut[k] = nl ? static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1 : text.size();
  }
  std::vector<uint64_t> rows(threads, 0);
  parallel_for(threads, threads, [&](size_t k) {
    if (cut[k] == cut[k + 1]) return;
    std::vector<uint32_t> decoded;
    rows[k] = decode_tsv(text.data() + cut[k], text.data() + cut[k + 1], false, decoded).rows;
  });
  uint64_t total = 0;
  for (uint64_t r : rows) total += r;
  return total;
}

}  // namespace dlprep::tabular
