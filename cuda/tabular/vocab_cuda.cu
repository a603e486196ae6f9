// GenVocab and ApplyVocab tables on the GPU (mirrors lib/tabular/vocab.cpp). The algorithm and the
// proof that it gives ColumnVocab's vocabulary exactly, whatever the order of the atomics, are in
// lib/tabular/vocab_table.hpp; tests/unit/tabular/vocab_table_test.cpp replays these kernels'
// decomposition on the host in shuffled orders.
//
// Insert: one warp per (32 consecutive rows, column). Lanes holding equal values are grouped with
// __match_any_sync; the group's lowest lane (its first row, so its smallest key) makes one
// atomicAdd of the group's size and one atomicMin of its key. Zipf-like Criteo columns repeat
// their few hot values in most rows, so this removes most of the contention on them.
// Read back: mark used entries, select their slots, sort by first key (radix sort), gather.
// A single pass: after a chunk's insert, flag the (row, column) positions whose entry's first key
// is the row's own key, select them in column-major order (so each column's new values form a run
// in row order, their first-appearance order) and number each run from the column's next ID.
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "core/cuda_check.hpp"
#include "tabular/criteo_kernels.cuh"
#include "tabular/vocab_table.hpp"

namespace dlprep::cuda::criteo {
namespace {

using tabular::kEmptySlot;
using tabular::row_key;
using tabular::vocab_hash_find_or_insert;

// The atomics vocab_hash_find_or_insert is written against.
struct DeviceAtomics {
  __device__ uint64_t load(uint64_t* p) const {
    return *reinterpret_cast<volatile unsigned long long*>(p);
  }
  __device__ uint64_t cas(uint64_t* p, uint64_t expected, uint64_t desired) const {
    return atomicCAS(reinterpret_cast<unsigned long long*>(p),
                     static_cast<unsigned long long>(expected),
                     static_cast<unsigned long long>(desired));
  }
};

__device__ inline void atomic_min_u64(uint64_t* p, uint64_t v) {
  // Most groups are not a value's first rows: skip the atomic when the stored key is already
  // smaller (it only ever decreases, so a stale read can only be larger, never wrongly smaller).
  if (*reinterpret_cast<volatile unsigned long long*>(p) <= v) return;
  atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

__device__ inline void atomic_add_u64(uint64_t* p, uint64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

constexpr unsigned kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    vocab_insert_kernel(RowSource src, uint64_t key_base, VocabTables t, uint32_t* hash_sizes) {
  const uint32_t n = *src.num_good;
  const uint32_t lane = threadIdx.x & 31;
  const uint64_t warp = (static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const uint64_t warps = (static_cast<uint64_t>(gridDim.x) * blockDim.x) >> 5;
  const uint64_t work = (static_cast<uint64_t>(n) + 31) / 32 * kNumSparse;
  DeviceAtomics ops;
  for (uint64_t w = warp; w < work; w += warps) {  // uniform across the warp
    const uint32_t j = static_cast<uint32_t>(w % kNumSparse);
    const uint64_t r64 = w / kNumSparse * 32 + lane;
    const bool valid = r64 < n;
    const unsigned active = __ballot_sync(0xffffffffu, valid);
    if (!valid) continue;
    const auto r = static_cast<uint32_t>(r64);
    const uint32_t slot = src.row_slot != nullptr ? src.row_slot[r] : r;
    const uint32_t v =
        t.mod[j](src.rows[static_cast<size_t>(slot) * kNumFields + kFirstSparseField + j]);
    const unsigned peers = __match_any_sync(active, v);
    const int leader = __ffs(static_cast<int>(peers)) - 1;
    if (static_cast<int>(lane) != leader) continue;
    uint64_t e = v;
    if (t.keys[j] != nullptr) {
      bool inserted = false;
      e = vocab_hash_find_or_insert(t.keys[j], t.bits[j], v, ops, &inserted);
      if (inserted) atomicAdd(&hash_sizes[j], 1u);
    }
    atomic_add_u64(&t.count[j][e], static_cast<uint64_t>(__popc(peers)));
    atomic_min_u64(&t.first[j][e], row_key(key_base, slot));
  }
}

__global__ void vocab_rehash_kernel(const uint64_t* old_keys, const uint64_t* old_first,
                                    const uint64_t* old_count, const int32_t* old_ids,
                                    uint64_t old_n, uint64_t* keys, uint64_t* first,
                                    uint64_t* count, int32_t* ids, uint32_t bits) {
  DeviceAtomics ops;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < old_n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint64_t k = old_keys[i];
    if (k == kEmptySlot) continue;
    bool inserted = false;
    const uint32_t e =
        vocab_hash_find_or_insert(keys, bits, static_cast<uint32_t>(k), ops, &inserted);
    first[e] = old_first[i];
    count[e] = old_count[i];
    if (ids != nullptr) ids[e] = old_ids[i];
  }
}

__global__ void vocab_seed_kernel(const uint32_t* values, const uint64_t* counts, uint32_t n,
                                  uint64_t* keys, uint32_t bits, uint64_t* first, uint64_t* count,
                                  int32_t* ids, int32_t id_base) {
  DeviceAtomics ops;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint64_t e = values[i];
    if (keys != nullptr) {
      bool inserted = false;
      e = vocab_hash_find_or_insert(keys, bits, values[i], ops, &inserted);
    }
    first[e] = i;  // a saved vocabulary's order is its indices; new rows' keys start above
    count[e] = counts[i];
    if (ids != nullptr) ids[e] = id_base + static_cast<int32_t>(i);
  }
}

// The table entry of row r's value in column j (present: the chunk's insert put it there).
__device__ inline int64_t entry_of(const RowSource& src, const VocabTables& t, uint32_t j,
                                   uint32_t slot) {
  const uint32_t v =
      t.mod[j](src.rows[static_cast<size_t>(slot) * kNumFields + kFirstSparseField + j]);
  return t.keys[j] != nullptr ? tabular::vocab_hash_find(t.keys[j], t.bits[j], v) : v;
}

__global__ void __launch_bounds__(kThreads)
    flag_new_kernel(RowSource src, uint32_t stride, uint64_t key_base, VocabTables t,
                    uint8_t* flags) {
  const uint32_t n = *src.num_good;
  const uint64_t items = static_cast<uint64_t>(stride) * kNumSparse;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const auto j = static_cast<uint32_t>(i / stride);
    const auto r = static_cast<uint32_t>(i % stride);
    uint8_t is_new = 0;
    if (r < n) {
      const uint32_t slot = src.row_slot != nullptr ? src.row_slot[r] : r;
      const int64_t e = entry_of(src, t, j, slot);
      is_new = e >= 0 && t.first[j][e] == row_key(key_base, slot) ? 1 : 0;
    }
    flags[i] = is_new;
  }
}

// The first index of sorted[0, n) that is >= v.
__device__ inline uint32_t lower_bound(const uint32_t* sorted, uint32_t n, uint64_t v) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// positions hold j * stride + r in increasing order: column j's new values are a run of it,
// in row order, which is their first-appearance order.
__global__ void __launch_bounds__(kThreads)
    assign_ids_kernel(RowSource src, uint32_t stride, const uint32_t* positions,
                      const uint32_t* num, VocabTables t, const int32_t* next_id) {
  const uint32_t n = *num;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t p = positions[i];
    const uint32_t j = p / stride, r = p % stride;
    const uint32_t run_start = lower_bound(positions, n, uint64_t{j} * stride);
    const uint32_t slot = src.row_slot != nullptr ? src.row_slot[r] : r;
    const int64_t e = entry_of(src, t, j, slot);
    if (e >= 0) t.ids[j][e] = next_id[j] + static_cast<int32_t>(i - run_start);
  }
}

__global__ void advance_ids_kernel(uint32_t stride, const uint32_t* positions, const uint32_t* num,
                                   int32_t* next_id) {
  const uint32_t j = threadIdx.x;
  if (j >= static_cast<uint32_t>(kNumSparse)) return;
  const uint32_t n = *num;
  next_id[j] += static_cast<int32_t>(lower_bound(positions, n, uint64_t{j + 1} * stride) -
                                     lower_bound(positions, n, uint64_t{j} * stride));
}

__global__ void mark_used_kernel(const uint64_t* first, uint64_t n, uint8_t* flags) {
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    flags[i] = first[i] != kEmptySlot ? 1 : 0;
}

__global__ void gather_first_kernel(const uint64_t* first, const uint32_t* slots, uint32_t n,
                                    uint64_t* keys_out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    keys_out[i] = first[slots[i]];
}

__global__ void gather_entries_kernel(const uint32_t* slots, uint32_t n, const uint64_t* keys,
                                      const uint64_t* count, uint32_t* values, uint64_t* counts) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t s = slots[i];
    values[i] = keys != nullptr ? static_cast<uint32_t>(keys[s]) : s;
    counts[i] = count[s];
  }
}

__global__ void fill_i32_kernel(int32_t* p, uint64_t n, int32_t v) {
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

__global__ void scatter_ids_kernel(const uint32_t* values, const int32_t* ids, uint32_t n,
                                   int32_t* table) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    table[values[i]] = ids[i];
}

__global__ void hash_ids_kernel(const uint32_t* values, const int32_t* ids, uint32_t n,
                                uint64_t* keys, int32_t* slot_ids, uint32_t bits) {
  DeviceAtomics ops;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    bool inserted = false;
    const uint32_t e = vocab_hash_find_or_insert(keys, bits, values[i], ops, &inserted);
    slot_ids[e] = ids[i];
  }
}

}  // namespace

void vocab_insert(const RowSource& src, uint32_t max_rows, uint64_t key_base,
                  const VocabTables& tables, uint32_t* hash_sizes, cudaStream_t stream) {
  if (max_rows == 0) return;
  const uint64_t threads = (static_cast<uint64_t>(max_rows) + 31) / 32 * kNumSparse * 32;
  vocab_insert_kernel<<<grid_for(threads, kThreads), kThreads, 0, stream>>>(src, key_base, tables,
                                                                            hash_sizes);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void vocab_rehash(const uint64_t* old_keys, const uint64_t* old_first, const uint64_t* old_count,
                  const int32_t* old_ids, uint32_t old_bits, uint64_t* keys, uint64_t* first,
                  uint64_t* count, int32_t* ids, uint32_t bits, cudaStream_t stream) {
  const uint64_t n = uint64_t{1} << bits, old_n = uint64_t{1} << old_bits;
  fill_u64(keys, n, kEmptySlot, stream);
  fill_u64(first, n, kEmptySlot, stream);
  DLPREP_CUDA_CHECK(cudaMemsetAsync(count, 0, n * sizeof(uint64_t), stream));
  vocab_rehash_kernel<<<grid_for(old_n, kThreads), kThreads, 0, stream>>>(
      old_keys, old_first, old_count, old_ids, old_n, keys, first, count, ids, bits);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void vocab_seed(const uint32_t* values, const uint64_t* counts, uint32_t n, uint64_t* keys,
                uint32_t bits, uint64_t* first, uint64_t* count, int32_t* ids, int32_t id_base,
                cudaStream_t stream) {
  if (n == 0) return;
  vocab_seed_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(values, counts, n, keys, bits,
                                                                    first, count, ids, id_base);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void vocab_flag_new(const RowSource& src, uint32_t stride, uint64_t key_base,
                    const VocabTables& tables, uint8_t* flags, cudaStream_t stream) {
  if (stride == 0) return;
  flag_new_kernel<<<grid_for(uint64_t{stride} * kNumSparse, kThreads), kThreads, 0, stream>>>(
      src, stride, key_base, tables, flags);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void vocab_assign_ids(const RowSource& src, uint32_t stride, const uint32_t* positions,
                      const uint32_t* num, const VocabTables& tables, int32_t* next_id,
                      cudaStream_t stream) {
  if (stride == 0) return;
  // Sized for the worst case (every position new); after the first chunks most threads find
  // nothing to do.
  assign_ids_kernel<<<grid_for(uint64_t{stride} * kNumSparse, kThreads, 1024), kThreads, 0,
                      stream>>>(src, stride, positions, num, tables, next_id);
  DLPREP_CUDA_CHECK(cudaGetLastError());
  advance_ids_kernel<<<1, 32, 0, stream>>>(stride, positions, num, next_id);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void vocab_mark_used(const uint64_t* first, uint64_t n, uint8_t* flags, cudaStream_t stream) {
  mark_used_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(first, n, flags);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

size_t vocab_extract_temp_bytes(uint64_t n) {
  size_t a = 0, b = 0;
  DLPREP_CUDA_CHECK(cub::DeviceSelect::Flagged(
      nullptr, a, thrust::counting_iterator<uint32_t>(0), static_cast<const uint8_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), static_cast<int64_t>(n)));
  DLPREP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, b, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<int64_t>(n)));
  return std::max(a, b);
}

void vocab_select_used(const uint8_t* flags, uint64_t n, uint32_t* slots, uint32_t* num, void* temp,
                       size_t temp_bytes, cudaStream_t stream) {
  DLPREP_CUDA_CHECK(cub::DeviceSelect::Flagged(temp, temp_bytes,
                                               thrust::counting_iterator<uint32_t>(0), flags, slots,
                                               num, static_cast<int64_t>(n), stream));
}

void vocab_gather_first(const uint64_t* first, const uint32_t* slots, uint32_t n,
                        uint64_t* keys_out, cudaStream_t stream) {
  if (n == 0) return;
  gather_first_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(first, slots, n, keys_out);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void vocab_sort_by_first(uint64_t* keys_in, uint64_t* keys_out, uint32_t* slots_in,
                         uint32_t* slots_out, uint32_t n, void* temp, size_t temp_bytes,
                         cudaStream_t stream) {
  if (n == 0) return;
  DLPREP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      temp, temp_bytes, static_cast<const uint64_t*>(keys_in), keys_out,
      static_cast<const uint32_t*>(slots_in), slots_out, static_cast<int64_t>(n), 0, 64, stream));
}

void vocab_gather_entries(const uint32_t* slots, uint32_t n, const uint64_t* keys,
                          const uint64_t* count, uint32_t* values, uint64_t* counts,
                          cudaStream_t stream) {
  if (n == 0) return;
  gather_entries_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(slots, n, keys, count,
                                                                        values, counts);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void lookup_build_flat(const uint32_t* values, const int32_t* ids, uint32_t n, uint32_t m,
                       int32_t oov, int32_t* table, cudaStream_t stream) {
  fill_i32_kernel<<<grid_for(m, kThreads), kThreads, 0, stream>>>(table, m, oov);
  DLPREP_CUDA_CHECK(cudaGetLastError());
  if (n == 0) return;
  scatter_ids_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(values, ids, n, table);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

void lookup_build_hash(const uint32_t* values, const int32_t* ids, uint32_t n, uint64_t* keys,
                       int32_t* slot_ids, uint32_t bits, cudaStream_t stream) {
  fill_u64(keys, uint64_t{1} << bits, kEmptySlot, stream);
  if (n == 0) return;
  hash_ids_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(values, ids, n, keys, slot_ids,
                                                                  bits);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dlprep::cuda::criteo
