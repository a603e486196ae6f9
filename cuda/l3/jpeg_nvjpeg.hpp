// nvJPEG's batched decoder, the baseline of the L3 GPU benchmark (issue 4): JPEG files in host
// memory to interleaved RGB in device memory. Built only when nvjpeg.h and libnvjpeg are found
// next to the CUDA toolkit (DLPREP_WITH_NVJPEG). No CUDA or nvJPEG type appears here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dlprep::cuda {

class NvjpegBatchDecoder {
 public:
  /// `hardware`: the JPEG decode engines of A100/H100-class GPUs (NVJPEG_BACKEND_HARDWARE);
  /// otherwise nvJPEG's default backend (what torchvision.io.decode_jpeg uses). Throws
  /// Error(device_unavailable) when nvJPEG refuses the backend on this GPU,
  /// Error(device_failure) for other failures.
  explicit NvjpegBatchDecoder(bool hardware);
  ~NvjpegBatchDecoder();
  NvjpegBatchDecoder(const NvjpegBatchDecoder&) = delete;
  NvjpegBatchDecoder& operator=(const NvjpegBatchDecoder&) = delete;

  /// "nvjpeg-hardware" or "nvjpeg-default".
  std::string name() const;
  /// Width, height and component count from the header (nvjpegGetImageInfo). Throws
  /// Error(corrupt_data) when nvJPEG cannot parse it.
  void image_info(const uint8_t* data, size_t size, int* width, int* height, int* components);
  /// Decodes `count` JPEGs to RGB, image i at device address `device_out + offsets[i]` with rows
  /// of widths[i] x 3 bytes; synchronous. Returns the milliseconds on the host clock from the
  /// call to the end of the stream's work (the default backend decodes Huffman on the CPU, which
  /// device events alone would not count).
  double decode(const uint8_t* const* data, const size_t* sizes, size_t count, uint8_t* device_out,
                const uint64_t* offsets, const int* widths);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlprep::cuda
