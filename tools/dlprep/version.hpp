// What `dlprep --version` prints: the version and the features compiled into this binary.
#pragma once

#include <string>

#include "output.hpp"

namespace dlprep::cli {

/// The build, as manifests record their writer: e.g. "dlprep 0.1.0 (png jpeg webp l3 cuda=13.0)".
std::string version_string();

/// What --version prints, for bug reports: the build and what this machine runs with it, the L3
/// and Criteo CPU kernels and the gzip inflater, e.g.
/// "dlprep 0.1.0 (png l3 l3-cpu=avx2 criteo-cpu=scalar gzip=zlib)".
std::string version_with_machine();

/// What --version --json prints: the same as a document, e.g. {"schema": "dlprep.version/1",
/// "version": "0.1.0", "features": ["png", "l3", "cuda"], "l3_cpu": "avx2", "criteo_cpu":
/// "scalar", "gzip": "zlib", "cuda_runtime": "13.0"}.
Json version_document();

}  // namespace dlprep::cli
