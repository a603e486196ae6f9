// The one file of tools/ that knows which optional features were built: CMake passes
// DLPREP_VERSION and DLPREP_HAVE_<FEATURE>=0|1 to this file only.
#include "version.hpp"

#include "l3/l3.hpp"
#include "tabular/gzip_reader.hpp"
#include "tabular/row_transform.hpp"

#if DLPREP_HAVE_CUDA
#include "core/device_info.hpp"
#endif

namespace dlprep::cli {

namespace {

std::string build_features() {
  std::string features;
  auto add = [&](const std::string& feature) {
    if (!features.empty()) features += ' ';
    features += feature;
  };
#if DLPREP_HAVE_PNG
  add("png");
#endif
#if DLPREP_HAVE_JPEG
  add("jpeg");
#endif
#if DLPREP_HAVE_WEBP
  add("webp");
#endif
  add("l3");
#if DLPREP_HAVE_CUDA
  add("cuda=" + dlprep::cuda::runtime_version());
#endif
#if DLPREP_HAVE_XRT
  add("xrt");
#endif
  return features;
}

}  // namespace

std::string version_string() {
  return std::string("dlprep ") + DLPREP_VERSION + " (" + build_features() + ")";
}

std::string version_with_machine() {
  return std::string("dlprep ") + DLPREP_VERSION + " (" + build_features() +
         " l3-cpu=" + std::string(l3::kernels_name()) +
         " criteo-cpu=" + std::string(tabular::active_row_kernels().name) +
         " gzip=" + tabular::gzip_backend_name() + ")";
}

}  // namespace dlprep::cli
