// The readers of a criteo-preprocess day (preprocess.cpp): its file, its copy preloaded into the
// backend's host memory, its binary mapping kept from pass 1, or its decode cache (pass 1's
// decoded rows in an unnamed temporary file, read by pass 2 instead of the text).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "tabular/preprocess_run.hpp"

namespace dlprep::tabular::preprocess_detail {
void Run::open_cache(size_t day) {
  // O_TMPFILE: a file without a name, freed by the kernel when closed, even after SIGKILL; a
  // file system without it gets a named file unlinked at once.
  int fd = ::open(o_.out_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::string pattern = (o_.out_dir / ".decode-cache.XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    fd = ::mkstemp(buf.data());
    if (fd < 0)
      throw Error(Errc::io, o_.out_dir.string() +
                                ": cannot create the decode cache: " + std::strerror(errno));
    ::unlink(buf.data());
  }
  cache_fds_[day] = fd;
}

void Run::write_cache(size_t day, const uint8_t* data, size_t bytes) {
  while (bytes > 0) {
    ssize_t n = ::write(cache_fds_[day], data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(Errc::io, o_.out_dir.string() + ": writing the decode cache failed: " +
                                std::strerror(errno) + " (--decode-cache off avoids it)");
    data += n;
    bytes -= static_cast<size_t>(n);
  }
}

void Run::preload() {
  // Each day whole, decompressed, in memory from the backend (pinned for a GPU): the passes then
  // start from host memory, as BENCHMARKS.md counts the CUDA figures.
  preloaded_.resize(o_.inputs.size());
  preloaded_bytes_.assign(o_.inputs.size(), 0);
  for (size_t day = 0; day < o_.inputs.size(); ++day) {
    InputReader reader(o_.inputs[day], kinds_[day], chunk_bytes_, &read_buffers_);
    std::vector<uint8_t> grown;  // gzip: the size is known only at the end
    HostBuffer buf;
    size_t used = 0;
    const uint64_t file_size = regular_file_size(o_.inputs[day]);
    if (kinds_[day] != FileKind::tsv_gzip && file_size > 0)
      buf = backend_->allocate_host(file_size + 1 + kTsvReadPadding);
    for (;;) {
      InputChunk chunk = reader.next();
      if (chunk.empty()) break;
      const auto* src = chunk.text.empty() ? reinterpret_cast<const uint8_t*>(chunk.rows.data())
                                           : reinterpret_cast<const uint8_t*>(chunk.text.data());
      size_t n = chunk.text.empty() ? chunk.rows.size_bytes() : chunk.text.size();
      if (buf && used + n + 1 + kTsvReadPadding <= buf.size()) {
        std::memcpy(buf.data() + used, src, n);
      } else {
        if (buf) {  // the file grew while being read: continue in the vector
          grown.assign(buf.data(), buf.data() + used);
          buf.reset();
        }
        grown.insert(grown.end(), src, src + n);
      }
      used += n;
    }
    if (!buf) {
      buf = backend_->allocate_host(used + 1 + kTsvReadPadding);
      if (used) std::memcpy(buf.data(), grown.data(), used);
    }
    std::memset(buf.data() + used, 0, 1 + kTsvReadPadding);  // the text decoder's padding
    preloaded_[day] = std::move(buf);
    preloaded_bytes_[day] = used;
  }
}

InputReader& Run::open_reader(std::optional<InputReader>& storage, size_t day, bool cached) {
  PhaseTimer t(read_seconds_);
  if (cached) {
    storage.emplace(cache_fds_[day], o_.inputs[day].string() + " (decoded)", chunk_bytes_,
                    &read_buffers_);
  } else if (day < kept_maps_.size() && kept_maps_[day]) {
    storage.emplace(kept_maps_[day], o_.inputs[day].string(), chunk_bytes_);
  } else if (!preloaded_.empty()) {
    FileKind kind = kinds_[day] == FileKind::bin ? FileKind::bin : FileKind::tsv;
    storage.emplace(std::span<const uint8_t>(preloaded_[day].data(), preloaded_bytes_[day]), kind,
                    chunk_bytes_, regular_file_size(o_.inputs[day]));
  } else {
    // Read by its path again (pass 2, or the single pass): it must still be the file that the
    // run started on (its size and time), or the passes would see two files. Pass 2 would map
    // the new one's values through the old one's vocabulary.
    const json& started = pass1_fp_.at("inputs").at(day);
    if (file_identity(o_.inputs[day]) != started)
      throw Error(Errc::corrupt_data,
                  o_.inputs[day].string() +
                      ": the input changed during the run (replaced or modified since it started: "
                      "another size or modification time); rerun to preprocess it anew");
    storage.emplace(o_.inputs[day], kinds_[day], chunk_bytes_, &read_buffers_);
  }
  return *storage;
}

InputChunk Run::next_chunk(InputReader& reader) {
  PhaseTimer t(read_seconds_);
  return reader.next();
}

}  // namespace dlprep::tabular::preprocess_detail
