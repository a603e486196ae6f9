// For the Python test on the emulated GPU (tests/python/CMakeLists.txt): a device tensor's bytes
// read back through the emulated CUDA runtime, as torch reads a real one back. Only in that
// test's copy of libdlprep_l3.so (exported by dlprep_l3.map's dlprep_l3_* pattern).
#include <cuda_runtime.h>

#include <cstddef>

extern "C" int dlprep_l3_emulated_read(void* host_dst, const void* device_src, size_t bytes) {
  return cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : 1;
}
