// The unit tests' scratch directories, in the build tree (DLPREP_TEST_SCRATCH).
#pragma once

#include <filesystem>
#include <string>

namespace dlprep::test_scratch {

/// DLPREP_TEST_SCRATCH/group/name, emptied and created anew.
inline std::filesystem::path fresh(const std::string& group, const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(DLPREP_TEST_SCRATCH) / group / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace dlprep::test_scratch
