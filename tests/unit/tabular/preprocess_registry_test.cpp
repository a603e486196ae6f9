// The backend registry: which backend runs for each --device, DLPREP_FORCE_DEVICE, and the
// reasons given when a device is missing (here, usually: no GPU, or CUDA not built in).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>

#include "core/error.hpp"
#include "tabular/preprocess_backend.hpp"

using namespace dlprep;
using namespace dlprep::tabular;

namespace {

// Sets DLPREP_FORCE_DEVICE for a scope (restoring what was there).
class ForceDevice {
 public:
  explicit ForceDevice(const char* value) {
    if (const char* old = std::getenv("DLPREP_FORCE_DEVICE")) old_ = old, had_ = true;
    ::setenv("DLPREP_FORCE_DEVICE", value, 1);
  }
  ~ForceDevice() {
    if (had_)
      ::setenv("DLPREP_FORCE_DEVICE", old_.c_str(), 1);
    else
      ::unsetenv("DLPREP_FORCE_DEVICE");
  }

 private:
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("cpu runs on the CPU; auto picks cuda only when it is usable") {
  ForceDevice none("");
  CHECK(make_preprocess_backend(Device::cpu, 2)->device_name() == "cpu");
  const bool cuda = criteo_cuda_unavailable_reason().empty();
  CHECK(make_preprocess_backend(Device::auto_select, 2)->device_name() == (cuda ? "cuda" : "cpu"));
  CHECK(make_preprocess_backend_cpu(1)->default_chunk_bytes() == size_t{16} << 20);
  CHECK(make_preprocess_backend_cpu(1)->host_decode_cache());
}

TEST_CASE("cuda without a usable device and fpga are refused with the reason") {
  ForceDevice none("");
  const std::string reason = criteo_cuda_unavailable_reason();
  if (reason.empty()) {
    MESSAGE("a CUDA device is usable here: only the fpga refusal is checked");
  } else {
    try {
      make_preprocess_backend(Device::cuda, 1);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == Errc::device_unavailable);
      CHECK(std::string(e.what()) == "--device cuda: " + reason);
    }
  }
  CHECK_THROWS_WITH_AS(make_preprocess_backend(Device::fpga, 1), doctest::Contains("--device fpga"),
                       Error);
}

TEST_CASE("DLPREP_FORCE_DEVICE overrides the device asked for") {
  {
    ForceDevice f("cpu");
    CHECK(make_preprocess_backend(Device::cuda, 1)->device_name() == "cpu");
  }
  {
    ForceDevice f("fpga");  // named as what asked for it: no --device fpga was given
    CHECK_THROWS_WITH_AS(make_preprocess_backend(Device::cpu, 1),
                         "DLPREP_FORCE_DEVICE=fpga: this build has no FPGA backend for "
                         "criteo-preprocess",
                         Error);
  }
  {
    ForceDevice f("gpu");
    CHECK_THROWS_WITH_AS(make_preprocess_backend(Device::cpu, 1),
                         doctest::Contains("DLPREP_FORCE_DEVICE"), Error);
  }
  if (!criteo_cuda_unavailable_reason().empty()) {
    ForceDevice f("cuda");
    CHECK_THROWS_WITH_AS(make_preprocess_backend(Device::cpu, 1),
                         doctest::Contains("DLPREP_FORCE_DEVICE=cuda: "), Error);
  }
}
