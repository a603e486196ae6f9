// Which gzip backends were built (DLPREP_TABULAR_WITH_ISAL, set by CMake), fastest first.
#include "tabular/gzip_reader.hpp"

namespace dlprep::tabular {
namespace {

constexpr GzipBackend kBackends[] = {
#if DLPREP_TABULAR_WITH_ISAL
    {"isal", open_isal_gzip_reader},
#endif
    {"zlib", open_zlib_gzip_reader},
};

}  // namespace

std::span<const GzipBackend> gzip_backends() noexcept { return kBackends; }

std::unique_ptr<GzipReader> open_gzip_reader(int fd, const std::string& name) {
  return kBackends[0].open(fd, name);
}

const char* gzip_backend_name() noexcept { return kBackends[0].name; }

}  // namespace dlprep::tabular
