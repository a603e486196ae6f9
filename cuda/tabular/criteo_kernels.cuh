// Internal to cuda/tabular: the kernels of the Criteo backend and their launchers, shared by
// preprocess_cuda.cu (orchestration, transform), parse_tsv_cuda.cu (lines, rows) and
// vocab_cuda.cu (first-appearance tables, lookups). Every launcher enqueues on `stream` and checks
// the launch; none synchronises.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "tabular/criteo_schema.hpp"

namespace dlprep::cuda::criteo {

using tabular::FastMod;
using tabular::kFirstDenseField;
using tabular::kFirstSparseField;
using tabular::kNumDense;
using tabular::kNumFields;
using tabular::kNumSparse;

/// What a chunk's kernels count on the device; copied back to pinned host memory at its end.
struct ChunkCounters {
  uint32_t num_lines;       ///< newlines found (text) or rows (binary, set by the host)
  uint32_t num_good;        ///< valid rows (select) or rows (binary)
  uint32_t first_bad_line;  ///< atomicMin over malformed lines; UINT32_MAX: none
  uint32_t num_patches;     ///< dense logs left to the host (may exceed the patch capacity)
};

/// A dense value whose float the host computes (tabular::log_rounding_is_safe said no).
struct LogPatch {
  uint32_t index;  ///< into the chunk's dense array (row * 13 + k)
  int32_t x;
};

/// Pass 1 tables, one per sparse column. Flat columns (keys == nullptr): entry = value. Hash
/// columns: 2^bits entries, keys[e] = value or kEmptySlot. ids: a single pass's IDs per entry
/// (CriteoPass1Setup::assign_ids), else nullptr.
struct VocabTables {
  uint64_t* keys[kNumSparse];
  uint64_t* first[kNumSparse];
  uint64_t* count[kNumSparse];
  int32_t* ids[kNumSparse];
  uint32_t bits[kNumSparse];
  FastMod mod[kNumSparse];
};

/// Pass 2 lookups: flat[j][value] = ID; or a hash table keys[j] (2^bits) with ids[j][slot].
struct LookupTables {
  const int32_t* flat[kNumSparse];
  const uint64_t* keys[kNumSparse];
  const int32_t* ids[kNumSparse];
  uint32_t bits[kNumSparse];
  int32_t oov[kNumSparse];
  FastMod mod[kNumSparse];
};

enum class DenseMode : int { log, plain_float, int32 };

struct DenseSetup {
  DenseMode mode;
  const float* lut;  ///< dense_log(x) for 0 <= x < kLogTableSize, made on the host
  double offset;
};

/// Where a chunk's valid rows are: rows[slot(r) * 40], slot(r) = row_slot[r] (text: the line start
/// / kMinRowBytes) or r itself when row_slot is null (binary rows, kept rows).
struct RowSource {
  const uint32_t* rows;
  const uint32_t* row_slot;
  const uint32_t* num_good;  ///< device pointer: the number of valid rows
};

// parse_tsv_cuda.cu
/// Temporary-storage bytes the line and row selects need for chunks of up to `max_bytes`.
size_t line_select_temp_bytes(size_t max_bytes);
/// Positions of every '\n' of text[0, bytes) into nl, their number into counters->num_lines.
void find_newlines(const uint8_t* text, uint32_t bytes, uint32_t* nl, ChunkCounters* counters,
                   void* temp, size_t temp_bytes, cudaStream_t stream);
/// Parses lines [0, num_lines): valid rows to rows[(start / kMinRowBytes) * 40], per line a good
/// flag and the slot; the first malformed line into counters->first_bad_line (preset UINT32_MAX);
/// then the slots of the valid lines, in order, into row_slot and their number into
/// counters->num_good.
void parse_lines(const uint8_t* text, const uint32_t* nl, uint32_t num_lines, uint32_t* rows,
                 uint8_t* good, uint32_t* line_slot, uint32_t* row_slot, ChunkCounters* counters,
                 void* temp, size_t temp_bytes, cudaStream_t stream);

// vocab_cuda.cu
/// GenVocab for up to max_rows rows (the exact number at src.num_good): per (row, column),
/// first = min(key), count += 1, with a warp's equal values aggregated. hash_sizes[j] counts the
/// entries claimed in hash columns.
void vocab_insert(const RowSource& src, uint32_t max_rows, uint64_t key_base,
                  const VocabTables& tables, uint32_t* hash_sizes, cudaStream_t stream);
/// Fills a new hash table (keys, first: kEmptySlot; count: 0) and moves the entries of the old one,
/// with their IDs when ids is not null.
void vocab_rehash(const uint64_t* old_keys, const uint64_t* old_first, const uint64_t* old_count,
                  const int32_t* old_ids, uint32_t old_bits, uint64_t* keys, uint64_t* first,
                  uint64_t* count, int32_t* ids, uint32_t bits, cudaStream_t stream);
/// Sets entries of a saved vocabulary: value i gets first = i, its count and, when ids is not
/// null, the ID id_base + i.
void vocab_seed(const uint32_t* values, const uint64_t* counts, uint32_t n, uint64_t* keys,
                uint32_t bits, uint64_t* first, uint64_t* count, int32_t* ids, int32_t id_base,
                cudaStream_t stream);
/// A single pass, after a chunk's vocab_insert (the same src, key_base): flags[j * stride + r] = 1
/// where row r's value of column j is first seen in the chunk (its entry's first key is the row's
/// key), 0 elsewhere, for r < stride (stride >= the valid rows, stride * 26 < 2^32).
void vocab_flag_new(const RowSource& src, uint32_t stride, uint64_t key_base,
                    const VocabTables& tables, uint8_t* flags, cudaStream_t stream);
/// Then, with `positions` the flagged indices in order (vocab_select_used) and *num their number:
/// gives each new value its ID, next_id[j] + its rank among the column's new values, in row
/// order; then advances next_id[j] past them. No host synchronisation.
void vocab_assign_ids(const RowSource& src, uint32_t stride, const uint32_t* positions,
                      const uint32_t* num, const VocabTables& tables, int32_t* next_id,
                      cudaStream_t stream);
/// Marks used entries (first != kEmptySlot) of a table of n entries.
void vocab_mark_used(const uint64_t* first, uint64_t n, uint8_t* flags, cudaStream_t stream);
/// The temp bytes of vocab_select_used / vocab_sort_by_first for n entries.
size_t vocab_extract_temp_bytes(uint64_t n);
/// Slots of the flagged entries, in slot order, and their number.
void vocab_select_used(const uint8_t* flags, uint64_t n, uint32_t* slots, uint32_t* num, void* temp,
                       size_t temp_bytes, cudaStream_t stream);
/// keys_out[i] = first[slots[i]] for i < n.
void vocab_gather_first(const uint64_t* first, const uint32_t* slots, uint32_t n,
                        uint64_t* keys_out, cudaStream_t stream);
/// Sorts (key, slot) pairs by key (radix sort; the keys are distinct).
void vocab_sort_by_first(uint64_t* keys_in, uint64_t* keys_out, uint32_t* slots_in,
                         uint32_t* slots_out, uint32_t n, void* temp, size_t temp_bytes,
                         cudaStream_t stream);
/// values[i] = value of entry slots[i] (the slot for flat tables), counts[i] = its count.
void vocab_gather_entries(const uint32_t* slots, uint32_t n, const uint64_t* keys,
                          const uint64_t* count, uint32_t* values, uint64_t* counts,
                          cudaStream_t stream);
/// Pass 2: a flat lookup table of m entries, oov everywhere, then table[values[i]] = ids[i].
void lookup_build_flat(const uint32_t* values, const int32_t* ids, uint32_t n, uint32_t m,
                       int32_t oov, int32_t* table, cudaStream_t stream);
/// Pass 2: a hash lookup (keys and ids of 2^bits slots) of the n distinct values.
void lookup_build_hash(const uint32_t* values, const int32_t* ids, uint32_t n, uint64_t* keys,
                       int32_t* slot_ids, uint32_t bits, cudaStream_t stream);

// preprocess_cuda.cu
/// 64-bit fill (cudaMemset fills bytes only).
void fill_u64(uint64_t* p, uint64_t n, uint64_t value, cudaStream_t stream);

/// Blocks for a grid-stride kernel over `items` items with `threads` threads per block.
inline unsigned grid_for(uint64_t items, unsigned threads, unsigned max_blocks = 8192) {
  uint64_t blocks = (items + threads - 1) / threads;
  if (blocks == 0) blocks = 1;
  return static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks);
}

}  // namespace dlprep::cuda::criteo
