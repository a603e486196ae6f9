// Decode on the GPU (mirrors lib/tabular/parse_tsv.cpp): the lines of a text chunk are found with
// a select over the bytes, then one thread parses one line with tabular::parse_row, the same
// byte-by-byte rules the CPU decoder is tested against (tests/unit/tabular/parse_row_test.cpp).
//
// Rows are written where the line starts: slot = start / kMinRowBytes. A valid line is at least
// kMinRowBytes long, so valid rows never share a slot, their slots increase with their order, and
// the row buffer needs bytes / 40 + 1 slots however many (short, malformed) lines the chunk holds.
// A select then lists the slots of the valid lines in order: downstream kernels read row r at
// rows[row_slot[r] * 40], and the slot doubles as the row's first-appearance key (vocab_table.hpp).
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cub/device/device_select.cuh>

#include "core/cuda_check.hpp"
#include "tabular/criteo_kernels.cuh"
#include "tabular/parse_row.hpp"

namespace dlprep::cuda::criteo {
namespace {

using tabular::kMinRowBytes;
using tabular::parse_row;
using tabular::RowFault;

struct IsNewline {
  const uint8_t* text;
  __device__ bool operator()(uint32_t i) const { return text[i] == '\n'; }
};

// Lines per block: one thread each; the block's rows are staged in shared memory (41 words per
// row: 41 is odd, so the 32 threads of a warp writing field f hit 32 different banks) and
// written out 40 consecutive words at a time.
constexpr int kParseBlock = 128;

__global__ void __launch_bounds__(kParseBlock)
    parse_lines_kernel(const uint8_t* __restrict__ text, const uint32_t* __restrict__ nl,
                       uint32_t num_lines, uint32_t* __restrict__ rows, uint8_t* __restrict__ good,
                       uint32_t* __restrict__ line_slot, ChunkCounters* counters) {
  __shared__ uint32_t srow[kParseBlock][kNumFields + 1];
  __shared__ uint32_t sslot[kParseBlock];
  __shared__ uint8_t sgood[kParseBlock];
  const uint32_t t = threadIdx.x;
  const uint32_t line = blockIdx.x * kParseBlock + t;
  bool ok = false;
  uint32_t slot = 0;
  if (line < num_lines) {
    const uint32_t start = line == 0 ? 0 : nl[line - 1] + 1;
    const uint32_t end = nl[line];
    RowFault fault;
    ok = parse_row(text + start, text + end, srow[t], fault);
    slot = start / kMinRowBytes;
    good[line] = ok ? 1 : 0;
    line_slot[line] = slot;
    if (!ok) atomicMin(&counters->first_bad_line, line);
  }
  sgood[t] = ok ? 1 : 0;
  sslot[t] = slot;
  __syncthreads();
  for (uint32_t i = t; i < kParseBlock * kNumFields; i += kParseBlock) {
    const uint32_t l = i / kNumFields, f = i % kNumFields;
    if (sgood[l]) rows[static_cast<size_t>(sslot[l]) * kNumFields + f] = srow[l][f];
  }
}

}  // namespace

size_t line_select_temp_bytes(size_t max_bytes) {
  size_t a = 0, b = 0;
  const auto n = static_cast<int64_t>(max_bytes);
  DLPREP_CUDA_CHECK(cub::DeviceSelect::If(nullptr, a, thrust::counting_iterator<uint32_t>(0),
                                          static_cast<uint32_t*>(nullptr),
                                          static_cast<uint32_t*>(nullptr), n, IsNewline{nullptr}));
  DLPREP_CUDA_CHECK(cub::DeviceSelect::Flagged(
      nullptr, b, static_cast<const uint32_t*>(nullptr), static_cast<const uint8_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), n));
  return std::max(a, b);
}

void find_newlines(const uint8_t* text, uint32_t bytes, uint32_t* nl, ChunkCounters* counters,
                   void* temp, size_t temp_bytes, cudaStream_t stream) {
  DLPREP_CUDA_CHECK(cub::DeviceSelect::If(temp, temp_bytes, thrust::counting_iterator<uint32_t>(0),
                                          nl, &counters->num_lines, static_cast<int64_t>(bytes),
                                          IsNewline{text}, stream));
}

void parse_lines(const uint8_t* text, const uint32_t* nl, uint32_t num_lines, uint32_t* rows,
                 uint8_t* good, uint32_t* line_slot, uint32_t* row_slot, ChunkCounters* counters,
                 void* temp, size_t temp_bytes, cudaStream_t stream) {
  if (num_lines == 0) return;
  const unsigned blocks = (num_lines + kParseBlock - 1) / kParseBlock;
  parse_lines_kernel<<<blocks, kParseBlock, 0, stream>>>(text, nl, num_lines, rows, good, line_slot,
                                                         counters);
  DLPREP_CUDA_CHECK(cudaGetLastError());
  DLPREP_CUDA_CHECK(cub::DeviceSelect::Flagged(
      temp, temp_bytes, static_cast<const uint32_t*>(line_slot), static_cast<const uint8_t*>(good),
      row_slot, &counters->num_good, static_cast<int64_t>(num_lines), stream));
}

}  // namespace dlprep::cuda::criteo
