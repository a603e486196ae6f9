// nvJPEG's batched decoder for the L3 GPU benchmark's baseline (jpeg_nvjpeg.hpp). The calls are
// those of NVIDIA's batched-decode samples: nvjpegCreateEx with the chosen backend,
// nvjpegJpegStateCreate, nvjpegDecodeBatchedInitialize once per batch size (RGBI output), then
// nvjpegDecodeBatched on a stream of our own.
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/error.hpp"
#include "l3/jpeg_nvjpeg.hpp"

namespace dlprep::cuda {
namespace {

const char* nvjpeg_status_name(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS:
      return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG:
      return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    default:
      return "an unknown nvJPEG status";
  }
}

void check(nvjpegStatus_t status, const char* what, Errc code = Errc::device_failure) {
  if (status != NVJPEG_STATUS_SUCCESS)
    throw Error(code, std::string("nvjpeg: ") + what + ": " + nvjpeg_status_name(status) + " (" +
                          std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace

struct NvjpegBatchDecoder::Impl {
  explicit Impl(bool hw) : hardware(hw) {}
  ~Impl() {
    if (state != nullptr) (void)nvjpegJpegStateDestroy(state);
    if (handle != nullptr) (void)nvjpegDestroy(handle);
  }
  bool hardware;
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  Stream stream;
  size_t initialized_batch = 0;
  std::vector<nvjpegImage_t> destinations;
};

NvjpegBatchDecoder::NvjpegBatchDecoder(bool hardware) : impl_(std::make_unique<Impl>(hardware)) {
  const nvjpegBackend_t backend = hardware ? NVJPEG_BACKEND_HARDWARE : NVJPEG_BACKEND_DEFAULT;
  // A GPU without JPEG engines refuses the hardware backend at creation.
  check(nvjpegCreateEx(backend, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &impl_->handle),
        hardware ? "nvjpegCreateEx(hardware backend)" : "nvjpegCreateEx(default backend)",
        hardware ? Errc::device_unavailable : Errc::device_failure);
  check(nvjpegJpegStateCreate(impl_->handle, &impl_->state), "nvjpegJpegStateCreate");
}

NvjpegBatchDecoder::~NvjpegBatchDecoder() = default;

std::string NvjpegBatchDecoder::name() const {
  return impl_->hardware ? "nvjpeg-hardware" : "nvjpeg-default";
}

void NvjpegBatchDecoder::image_info(const uint8_t* data, size_t size, int* width, int* height,
                                    int* components) {
  int n = 0;
  nvjpegChromaSubsampling_t subsampling{};
  int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
  check(nvjpegGetImageInfo(impl_->handle, data, size, &n, &subsampling, widths, heights),
        "nvjpegGetImageInfo", Errc::corrupt_data);
  *width = widths[0];  // component 0 (luma) has the image's full size
  *height = heights[0];
  *components = n;
}

double NvjpegBatchDecoder::decode(const uint8_t* const* data, const size_t* sizes, size_t count,
                                  uint8_t* device_out, const uint64_t* offsets, const int* widths) {
  Impl& m = *impl_;
  if (count == 0) return 0;
  if (m.initialized_batch != count) {
    // One CPU thread: the batched call does its own work; the figure is per calling thread.
    check(nvjpegDecodeBatchedInitialize(m.handle, m.state, static_cast<int>(count), 1,
                                        NVJPEG_OUTPUT_RGBI),
          "nvjpegDecodeBatchedInitialize");
    m.initialized_batch = count;
  }
  m.destinations.assign(count, nvjpegImage_t{});
  for (size_t i = 0; i < count; ++i) {
    m.destinations[i].channel[0] = device_out + offsets[i];
    m.destinations[i].pitch[0] = static_cast<size_t>(widths[i]) * 3;
  }
  const auto start = std::chrono::steady_clock::now();
  check(nvjpegDecodeBatched(m.handle, m.state, data, sizes, m.destinations.data(), m.stream.get()),
        "nvjpegDecodeBatched");
  m.stream.synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace dlprep::cuda
