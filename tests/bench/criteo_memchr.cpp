// The scan ceiling of the Criteo benchmark: count the lines of the file with memchr, reading it
// with read(2) in 4 MiB blocks exactly as dlprep's input reader does (file in page cache).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

uint64_t criteo_memchr_lines(const std::string& input) {
  int fd = ::open(input.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(input + ": cannot open");
  std::vector<char> buf(size_t{4} << 20);
  uint64_t lines = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      ::close(fd);
      throw std::runtime_error(input + ": read failed");
    }
    if (n == 0) break;
    const char* p = buf.data();
    const char* end = p + n;
    while ((p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p))))) {
      ++lines;
      ++p;
    }
  }
  ::close(fd);
  return lines;
}
