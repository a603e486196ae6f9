// The one file of tools/ that knows which optional features were built: CMake passes
// DLPREP_VERSION and DLPREP_HAVE_<FEATURE>=0|1 to this file only.
#include "version.hpp"

#include <vector>

#include "l3/l3.hpp"
#include "tabular/gzip_reader.hpp"
#include "tabular/row_transform.hpp"

#if DLPREP_HAVE_CUDA
#include "core/device_info.hpp"
#endif

namespace dlprep::cli {

namespace {

// The optional features compiled in, in a fixed order: e.g. png jpeg webp l3 cuda xrt.
std::vector<std::string> build_features() {
  std::vector<std::string> features;
#if DLPREP_HAVE_PNG
  features.emplace_back("png");
#endif
#if DLPREP_HAVE_JPEG
  features.emplace_back("jpeg");
#endif
#if DLPREP_HAVE_WEBP
  features.emplace_back("webp");
#endif
  features.emplace_back("l3");
#if DLPREP_HAVE_CUDA
  features.emplace_back("cuda");
#endif
#if DLPREP_HAVE_XRT
  features.emplace_back("xrt");
#endif
  return features;
}

// The features as text, CUDA with the runtime's version: "png jpeg webp l3 cuda=13.0".
std::string features_text() {
  std::string text;
  for (const std::string& feature : build_features()) {
    if (!text.empty()) text += ' ';
    text += feature;
#if DLPREP_HAVE_CUDA
    if (feature == "cuda") text += "=" + dlprep::cuda::runtime_version();
#endif
  }
  return text;
}

}  // namespace

std::string version_string() {
  return std::string("dlprep ") + DLPREP_VERSION + " (" + features_text() + ")";
}

std::string version_with_machine() {
  return std::string("dlprep ") + DLPREP_VERSION + " (" + features_text() +
         " l3-cpu=" + std::string(l3::kernels_name()) +
         " criteo-cpu=" + std::string(tabular::active_row_kernels().name) +
         " gzip=" + tabular::gzip_backend_name() + ")";
}

Json version_document() {
  Json document{{"schema", "dlprep.version/1"},
                {"version", DLPREP_VERSION},
                {"features", build_features()},
                {"l3_cpu", std::string(l3::kernels_name())},
                {"criteo_cpu", std::string(tabular::active_row_kernels().name)},
                {"gzip", std::string(tabular::gzip_backend_name())}};
#if DLPREP_HAVE_CUDA
  document["cuda_runtime"] = dlprep::cuda::runtime_version();
#endif
  return document;
}

}  // namespace dlprep::cli
