// What `dlprep --version` prints: the version and the features compiled into this binary.
#pragma once

#include <string>

namespace dlprep::cli {

/// e.g. "dlprep 0.1.0 (png jpeg webp l3 cuda=13.0)".
std::string version_string();

}  // namespace dlprep::cli
