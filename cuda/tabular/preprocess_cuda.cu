// The CUDA backend of criteo-preprocess (mirrors lib/tabular/preprocess_cpu.cpp; the shared
// pipeline is lib/tabular/preprocess.cpp). Per device chunk (whole lines, at most chunk_bytes):
//
//   pass 1  H2D -> lines (select '\n') -> rows (parse_row, one thread per line) -> select valid
//           rows -> GenVocab (vocab_cuda.cu) -> counters D2H; at delivery, optionally gather the
//           valid rows (kept in device memory for pass 2, and/or copied back for --emit-binary)
//   pass 2  H2D (or the rows kept from pass 1) -> lines -> rows -> select -> transform (Modulus,
//           ApplyVocab, Neg2Zero, Logarithm: one thread per (row, field)) -> D2H of the arrays
//   single  (CriteoPass1Setup::assign_ids) pass 1 up to GenVocab -> the chunk's new values get
//   pass    their IDs (vocab_assign_ids) -> transform, reading the IDs from pass 1's tables -> D2H
//           of the arrays (and of the valid rows for --emit-binary): the copy back of chunk i
//           overlaps the copy in of chunk i+1, and nothing is read twice
//
// Slots, each with a stream, events and buffers, take chunks in turn (two for text, three for
// rows): chunk i+1's copy in overlaps chunk i's kernels, and chunk i-1's results are copied back
// and handed to the caller (in input order) while chunk i runs. GenVocab updates of consecutive
// chunks are chained with an event, so that the hash tables can grow between them; the results do
// not depend on their order anyway (vocab_table.hpp).
//
// Bit-identical outputs: integer work is exact; dense logs below kLogTableSize come from a table
// the host made with dense_log, larger ones from the device's double log when
// log_rounding_is_safe holds and from the host's dense_log otherwise (patched after the copy).
// Malformed rows: the device flags them and finds the first; the caller words the message with
// the CPU parser from the line's text, which is copied back.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/error.hpp"
#include "tabular/criteo_kernels.cuh"
#include "tabular/parse_row.hpp"
#include "tabular/parse_tsv.hpp"
#include "tabular/preprocess_cuda.hpp"
#include "tabular/vocab.hpp"
#include "tabular/vocab_table.hpp"

namespace dlprep::cuda {
namespace criteo {
namespace {

constexpr unsigned kThreads = 256;

__global__ void fill_u64_kernel(uint64_t* p, uint64_t n, uint64_t v) {
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

// One thread per (row, field): the 40 threads of a row read its 160 bytes together.
__global__ void __launch_bounds__(kThreads)
    transform_kernel(RowSource src, LookupTables t, DenseSetup d, int32_t* __restrict__ labels,
                     uint32_t* __restrict__ dense, int32_t* __restrict__ sparse,
                     LogPatch* __restrict__ patches, uint32_t patch_capacity,
                     ChunkCounters* counters) {
  const uint64_t items = static_cast<uint64_t>(*src.num_good) * kNumFields;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const auto r = static_cast<uint32_t>(i / kNumFields);
    const auto f = static_cast<uint32_t>(i % kNumFields);
    const uint32_t slot = src.row_slot != nullptr ? src.row_slot[r] : r;
    const uint32_t w = src.rows[static_cast<size_t>(slot) * kNumFields + f];
    if (f == 0) {
      labels[r] = static_cast<int32_t>(w);
    } else if (f < static_cast<uint32_t>(kFirstSparseField)) {
      const uint32_t k = f - kFirstDenseField;
      const auto x = static_cast<int32_t>(w);
      uint32_t out;
      if (d.mode == DenseMode::int32) {
        out = static_cast<uint32_t>(tabular::neg2zero(x));
      } else if (d.mode == DenseMode::plain_float) {
        out = __float_as_uint(static_cast<float>(tabular::neg2zero(x)));
      } else if (x < tabular::kLogTableSize) {
        out = __float_as_uint(__ldg(&d.lut[x < 0 ? 0 : x]));
      } else {
        // As dense_log: log in double of double(x) + offset, rounded once to float.
        const double e = log(static_cast<double>(x) + d.offset);
        const float fl = __double2float_rn(e);
        out = __float_as_uint(fl);
        if (!tabular::log_rounding_is_safe(e, fl)) {
          const uint32_t p = atomicAdd(&counters->num_patches, 1u);
          if (p < patch_capacity) patches[p] = LogPatch{r * kNumDense + k, x};
        }
      }
      dense[static_cast<size_t>(r) * kNumDense + k] = out;
    } else {
      const uint32_t j = f - kFirstSparseField;
      const uint32_t v = t.mod[j](w);
      int32_t id;
      if (t.flat[j] != nullptr) {
        id = t.flat[j][v];
      } else {
        const int64_t e = tabular::vocab_hash_find(t.keys[j], t.bits[j], v);
        id = e < 0 ? t.oov[j] : t.ids[j][e];
      }
      sparse[static_cast<size_t>(r) * kNumSparse + j] = id;
    }
  }
}

// Valid rows, compacted: out[r] = row r (for keeping them and for --emit-binary).
__global__ void gather_rows_kernel(RowSource src, uint32_t n, uint32_t* __restrict__ out) {
  const uint64_t items = static_cast<uint64_t>(n) * kNumFields;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const auto r = static_cast<uint32_t>(i / kNumFields);
    const auto f = static_cast<uint32_t>(i % kNumFields);
    const uint32_t slot = src.row_slot != nullptr ? src.row_slot[r] : r;
    out[i] = src.rows[static_cast<size_t>(slot) * kNumFields + f];
  }
}

}  // namespace

void fill_u64(uint64_t* p, uint64_t n, uint64_t value, cudaStream_t stream) {
  if (n == 0) return;
  fill_u64_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(p, n, value);
  DLPREP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace criteo

using namespace criteo;  // NOLINT: this file is the backend's implementation
using tabular::kEmptySlot;
using tabular::kFlatMaxModulus;

namespace {

// Device chunk by default: ~260K text rows (~9 ms at the 30M rows/s target), enough to amortise
// the per-chunk launches and synchronisations; ~1.2 GB of buffers per slot (see Slot).
constexpr size_t kDefaultChunkBytes = size_t{64} << 20;
// Positions inside a chunk are 32-bit; this keeps every offset and count far from 2^32.
constexpr size_t kMaxChunkBytes = size_t{256} << 20;
constexpr uint32_t kNoBadLine = 0xFFFFFFFFu;
// Pass 2 and a single pass take binary and kept rows in pieces of at most this many rows: the
// pinned arrays a piece comes back in (160 bytes a row, three slots) then take 31 MB instead of
// a whole chunk's 201 MB, and pinning host memory is slow (estimated from the H100 session's
// preloads: about 0.3 s per GB, which would be 40 ms of a 120 ms run; stats' cuda.alloc_seconds
// measures it).
constexpr uint32_t kPass2PieceRows = 1u << 16;
// Chunks in flight at most (see acquire).
constexpr int kSlots = 3;

// Rows a chunk of `bytes` text bytes can hold: text rows are at least kMinRowBytes long.
size_t rows_for_bytes(size_t bytes) { return bytes / tabular::kMinRowBytes + 1; }

// What to reserve for `n` elements when at most `most` are expected: a quarter more, so that
// chunks a few bytes longer than the first do not grow the arrays again (growing frees them,
// and cudaFree waits for the device).
size_t with_slack(size_t n, size_t most) { return std::max(n, std::min(most, n + n / 4)); }

// Adds the host time of its scope to `ms` (stats: cuda.alloc_seconds, wait_seconds and
// setup_seconds, which say where a run's wall time goes beside the device's).
class HostTimer {
 public:
  explicit HostTimer(double& ms) : ms_(ms), start_(std::chrono::steady_clock::now()) {}
  ~HostTimer() {
    ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
               .count();
  }
  HostTimer(const HostTimer&) = delete;
  HostTimer& operator=(const HostTimer&) = delete;

 private:
  double& ms_;
  std::chrono::steady_clock::time_point start_;
};

float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  DLPREP_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

// What a slot's chunk still has to do when it is finished (delivered).
struct Pending {
  int pass = 0;
  bool text = false;
  size_t day = 0;
  uint32_t lines = 0;  // lines (text) or rows
  CriteoChunkSink sink;
  RowSource src{};                 // where its valid rows are (num_good unused)
  uint32_t* owned_rows = nullptr;  // a chunk of rows kept from pass 1, freed once delivered
  uint32_t owned_count = 0;        // its rows
};

// One of the two pipelines. Buffers grow to what the chunks need:
//   text               capacity bytes        the chunk (text or binary rows)
//   nl/good/line_slot  text_capacity lines   text only; a line is at least 1 byte
//   rows, row_slot     rows_for_bytes        text only; parsed rows at start / 40
//   outputs, patches   out_rows              pass 2 only: the rows of a text chunk or a piece
// about 18 bytes per text byte (1.2 GB for 64 MiB chunks); binary rows need only `text`.
struct Slot {
  cudaStream_t stream = nullptr;
  cudaEvent_t ev_begin = nullptr, ev_h2d = nullptr, ev_lines = nullptr, ev_done = nullptr;
  cudaEvent_t ev_d2h_begin = nullptr, ev_d2h_end = nullptr, ev_inserted = nullptr;
  size_t capacity = 0, text_capacity = 0, out_rows = 0, host_out_rows = 0;
  uint32_t queued_rows = 0;  // pass-2 outputs already queued for the copy back (row sources)
  DeviceArray<uint8_t> text;
  DeviceArray<uint32_t> nl, line_slot, row_slot, rows;
  DeviceArray<uint8_t> good;
  DeviceArray<int32_t> labels, sparse;
  DeviceArray<uint32_t> dense;
  DeviceArray<LogPatch> patches;
  DeviceArray<uint8_t> temp;
  size_t temp_bytes = 0;
  // A single pass: the chunk's (column, row) flags of new values and their selected positions.
  DeviceArray<uint8_t> new_flags, new_temp;
  DeviceArray<uint32_t> new_positions, new_count;
  size_t new_capacity = 0, new_temp_bytes = 0;
  DeviceArray<ChunkCounters> counters;
  PinnedArray<ChunkCounters> h_counters, h_init;
  PinnedArray<uint32_t> h_sizes, h_rows, h_dense, h_nl;
  PinnedArray<int32_t> h_labels, h_sparse;
  PinnedArray<LogPatch> h_patches;
  PinnedArray<char> h_text;
  bool busy = false;
  uint64_t seq = 0;
  Pending pending;
};

}  // namespace

uint8_t* criteo_alloc_pinned(size_t bytes) {
  void* p = nullptr;
  DLPREP_CUDA_CHECK(cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable));
  return static_cast<uint8_t*>(p);
}

void criteo_free_pinned(uint8_t* p) noexcept {
  if (p != nullptr) (void)cudaFreeHost(p);
}

struct CriteoPreprocessorCuda::Impl {
  size_t chunk_bytes = kDefaultChunkBytes;
  Slot slots[kSlots];
  int next_slot = 0;
  int active_slots = 2;  // the slots chunks rotate through (acquire)
  uint64_t next_seq = 0;
  cudaMemPool_t pool = nullptr;
  CriteoCudaTimings timings;
  std::string bad_text;

  // The pass in progress.
  int pass = 0;
  CriteoPass1Setup p1;
  CriteoPass2Setup p2;
  std::array<FastMod, kNumSparse> mod{};

  // Pass 1: the first-appearance tables.
  struct Column {
    bool flat = false;
    uint32_t modulus = 0;
    uint32_t bits = 0;  // hash columns
    uint64_t size = 0;  // hash columns: entries used after the last chained insert
    DeviceArray<uint64_t> keys, first, count;
    DeviceArray<int32_t> ids;  // a single pass: each entry's ID
  };
  Column cols[kNumSparse];
  bool any_hash = false;
  DeviceArray<uint32_t> hash_sizes;
  uint64_t key_base = 0;
  int last_insert_slot = -1;
  DeviceArray<int32_t> next_id;  // a single pass: per column, the ID of its next new value

  // Pass 1 -> pass 2: valid rows kept in device memory, per day, in chunks.
  struct KeptChunk {
    uint32_t* rows;
    uint32_t n;
  };
  struct KeptDay {
    bool started = false;
    bool dropped = false;
    std::vector<KeptChunk> chunks;
  };
  std::vector<KeptDay> kept;
  uint64_t kept_bytes = 0, keep_budget = 0;

  // Pass 2: the lookups and the dense transform.
  DeviceArray<int32_t> flat_ids[kNumSparse];
  DeviceArray<uint64_t> lookup_keys[kNumSparse];
  DeviceArray<int32_t> lookup_ids[kNumSparse];
  LookupTables lookup{};
  DeviceArray<float> lut;  // dense_log of 0 .. kLogTableSize-1 for lut_offset (256 KB, kept)
  double lut_offset = 0;
  DenseSetup dense{};

  explicit Impl(size_t bytes) {
    set_chunk_bytes(bytes);
    int device = 0;
    DLPREP_CUDA_CHECK(cudaGetDevice(&device));
    for (Slot& s : slots) {
      DLPREP_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
      for (cudaEvent_t* e : {&s.ev_begin, &s.ev_h2d, &s.ev_lines, &s.ev_done, &s.ev_d2h_begin,
                             &s.ev_d2h_end, &s.ev_inserted})
        DLPREP_CUDA_CHECK(cudaEventCreate(e));
      s.counters.reserve(1);
      s.h_counters.reserve(1);
      s.h_init.reserve(1);
      s.h_sizes.reserve(kNumSparse);
      s.h_nl.reserve(2);
      s.new_count.reserve(1);
    }
    hash_sizes.reserve(kNumSparse);
    next_id.reserve(kNumSparse);
    // A pool of our own for the kept rows (stream-ordered allocations), which keeps its memory
    // between frees instead of returning it to the driver at every synchronisation.
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    DLPREP_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t keep_all = ~uint64_t{0};
    DLPREP_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  }

  ~Impl() {
    for (Slot& s : slots)
      if (s.stream != nullptr) (void)cudaStreamSynchronize(s.stream);
    for (KeptDay& d : kept)
      for (KeptChunk& c : d.chunks)
        if (c.rows != nullptr) (void)cudaFreeAsync(c.rows, slots[0].stream);
    for (Slot& s : slots)
      if (s.pending.owned_rows != nullptr)
        (void)cudaFreeAsync(s.pending.owned_rows, slots[0].stream);
    if (slots[0].stream != nullptr) (void)cudaStreamSynchronize(slots[0].stream);
    if (pool != nullptr) (void)cudaMemPoolDestroy(pool);
    for (Slot& s : slots) {
      for (cudaEvent_t e : {s.ev_begin, s.ev_h2d, s.ev_lines, s.ev_done, s.ev_d2h_begin,
                            s.ev_d2h_end, s.ev_inserted})
        if (e != nullptr) (void)cudaEventDestroy(e);
      if (s.stream != nullptr) (void)cudaStreamDestroy(s.stream);
    }
  }

  void set_chunk_bytes(size_t bytes) {
    chunk_bytes = std::clamp<size_t>(bytes, size_t{1} << 12, kMaxChunkBytes);
  }

  // ---- buffers -------------------------------------------------------------------------------

  // Host time spent allocating (stats: cuda.alloc_seconds), around each growth, and their count
  // (cuda.allocations: a reused preprocessor's runs after the first need few).
  template <class F>
  void timed_alloc(F&& allocate) {
    HostTimer t(timings.alloc_ms);
    ++timings.allocations;
    allocate();
  }

  // Blocks until `event` has completed, while chunks go through (stats: cuda.wait_seconds).
  void wait_for(cudaEvent_t event) {
    HostTimer t(timings.wait_ms);
    DLPREP_CUDA_CHECK(cudaEventSynchronize(event));
  }

  void ensure_input(Slot& s, size_t bytes) {
    if (bytes <= s.capacity) return;
    timed_alloc([&] {
      s.capacity = with_slack(bytes, chunk_bytes);
      s.text.reserve(s.capacity);
    });
  }

  // The line and row buffers of text chunks.
  void ensure_text(Slot& s, size_t bytes) {
    ensure_input(s, bytes);
    if (bytes <= s.text_capacity) return;
    timed_alloc([&] {
      const size_t n = with_slack(bytes, chunk_bytes), rows = rows_for_bytes(n);
      s.nl.reserve(n);
      s.good.reserve(n);
      s.line_slot.reserve(n);
      s.row_slot.reserve(rows);
      s.rows.reserve(rows * kNumFields);
      s.temp_bytes = line_select_temp_bytes(n);
      s.temp.reserve(s.temp_bytes);
      s.text_capacity = n;
    });
  }

  // The pass-2 arrays of a chunk or piece of up to `rows` rows, of at most `most` in this run.
  void ensure_outputs(Slot& s, size_t rows, size_t most) {
    if (rows <= s.out_rows) return;
    timed_alloc([&] {
      const size_t n = with_slack(rows, most);
      s.labels.reserve(n);
      s.dense.reserve(n * kNumDense);
      s.sparse.reserve(n * kNumSparse);
      s.patches.reserve(n);
      s.out_rows = n;
    });
  }

  // The pinned host arrays a chunk's `rows` outputs come back in.
  void ensure_host_outputs(Slot& s, uint32_t rows) {
    if (s.h_labels.get() != nullptr && rows <= s.host_out_rows) return;
    timed_alloc([&] {
      const size_t n = with_slack(rows, s.out_rows);
      s.h_labels.reserve(n);
      s.h_dense.reserve(n * kNumDense);
      s.h_sparse.reserve(n * kNumSparse);
      s.host_out_rows = n;
    });
  }

  // A single pass's flags and positions for chunks of up to `stride` valid rows.
  void ensure_new_values(Slot& s, uint32_t stride) {
    const size_t items = size_t{stride} * kNumSparse;
    if (items <= s.new_capacity) return;
    timed_alloc([&] {
      const size_t n = with_slack(items, items * 2);
      s.new_flags.reserve(n);
      s.new_positions.reserve(n);
      s.new_temp_bytes = vocab_extract_temp_bytes(n);
      s.new_temp.reserve(s.new_temp_bytes);
      s.new_capacity = n;
    });
  }

  bool single_pass() const { return pass == 1 && p1.assign_ids; }
  // Whether a chunk of pass `which` ends with the transformed arrays.
  bool transforms(int which) const { return which == 2 || single_pass(); }

  // ---- the pipeline --------------------------------------------------------------------------

  // The next slot for a chunk of text (`rows` false) or of rows. Rows come in pieces whose time
  // is their two copies: with three in flight, one piece's copy back runs beside the next one's
  // copy in while the host comes round to a third. A text chunk's time is its kernels, so a third
  // would only cost buffers (pinned ones are slow to allocate). A day is all text or all rows, and
  // flushed at its end, so changing the rotation costs nothing.
  Slot& acquire(bool rows) {
    const int want = rows ? kSlots : 2;
    if (want != active_slots) {
      flush();
      active_slots = want;
      next_slot = 0;
    }
    Slot& s = slots[next_slot];
    next_slot = (next_slot + 1) % active_slots;
    if (s.busy) finish(s);  // the oldest chunk in flight
    return s;
  }

  void flush() {
    Slot* order[kSlots];
    for (int i = 0; i < kSlots; ++i) order[i] = &slots[i];
    std::sort(order, order + kSlots, [](const Slot* a, const Slot* b) { return a->seq < b->seq; });
    for (Slot* s : order)
      if (s->busy) finish(*s);
  }

  void start_chunk(Slot& s, uint32_t lines, uint32_t good) {
    *s.h_init.get() = ChunkCounters{lines, good, kNoBadLine, 0};
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.counters.get(), s.h_init.get(), sizeof(ChunkCounters),
                                      cudaMemcpyHostToDevice, s.stream));
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_begin, s.stream));
  }

  void text_chunk(int which, size_t day, const char* text, size_t bytes,
                  const CriteoChunkSink& sink) {
    Slot& s = acquire(false);
    ensure_text(s, bytes);
    if (transforms(which)) ensure_outputs(s, rows_for_bytes(bytes), rows_for_bytes(chunk_bytes));
    start_chunk(s, 0, 0);
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.text.get(), text, bytes, cudaMemcpyHostToDevice, s.stream));
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_h2d, s.stream));
    const auto n = static_cast<uint32_t>(bytes);
    find_newlines(s.text.get(), n, s.nl.get(), s.counters.get(), s.temp.get(), s.temp_bytes,
                  s.stream);
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(&s.h_counters.get()->num_lines, &s.counters.get()->num_lines,
                                      sizeof(uint32_t), cudaMemcpyDeviceToHost, s.stream));
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_lines, s.stream));
    // The parse grid needs the line count; from here on the caller's text is not read again.
    wait_for(s.ev_lines);
    const uint32_t lines = s.h_counters.get()->num_lines;
    parse_lines(s.text.get(), s.nl.get(), lines, s.rows.get(), s.good.get(), s.line_slot.get(),
                s.row_slot.get(), s.counters.get(), s.temp.get(), s.temp_bytes, s.stream);
    RowSource src{s.rows.get(), s.row_slot.get(), &s.counters.get()->num_good};
    compute(s, which, src, lines, tabular::row_key_span(true, bytes));
    s.pending = Pending{which, true, day, lines, sink, src, nullptr, 0};
  }

  void rows_chunk(int which, size_t day, const uint32_t* rows, size_t count,
                  const CriteoChunkSink& sink, bool stable) {
    Slot& s = acquire(true);
    const size_t bytes = count * tabular::kBinaryRowBytes;
    ensure_input(s, bytes);
    const auto n = static_cast<uint32_t>(count);
    if (transforms(which)) ensure_outputs(s, n, kPass2PieceRows);
    start_chunk(s, n, n);
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.text.get(), rows, bytes, cudaMemcpyHostToDevice, s.stream));
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_h2d, s.stream));
    // The caller may reuse `rows` after this, unless they are stable (preloaded): then the next
    // chunk's copy is queued behind this one at once, and the copy engine never waits for the
    // host.
    if (!stable) wait_for(s.ev_h2d);
    RowSource src{reinterpret_cast<const uint32_t*>(s.text.get()), nullptr,
                  &s.counters.get()->num_good};
    compute(s, which, src, n, tabular::row_key_span(false, count));
    s.pending = Pending{which, false, day, n, sink, src, nullptr, 0};
  }

  // A span of whole lines (or of binary rows) cut into chunks of at most chunk_bytes.
  void text_chunks(int which, size_t day, const char* text, size_t bytes,
                   const CriteoChunkSink& sink) {
    size_t pos = 0;
    while (pos < bytes) {
      const size_t n = tabular::whole_lines_prefix(text + pos, bytes - pos, chunk_bytes);
      if (n >= kMaxChunkBytes)
        throw Error(Errc::limit_exceeded,
                    "criteo-preprocess on cuda: a line of " + std::to_string(n) + " bytes");
      text_chunk(which, day, text + pos, n, sink);
      pos += n;
    }
  }

  void rows_chunks(int which, size_t day, const uint32_t* rows, size_t count,
                   const CriteoChunkSink& sink, bool stable) {
    size_t per = std::max<size_t>(chunk_bytes / tabular::kBinaryRowBytes, 1);
    if (transforms(which)) per = std::min<size_t>(per, kPass2PieceRows);
    for (size_t r = 0; r < count; r += per)
      rows_chunk(which, day, rows + r * kNumFields, std::min(per, count - r), sink, stable);
  }

  // The chunk's kernels after decoding, then its counters back; marks the slot busy.
  void compute(Slot& s, int which, const RowSource& src, uint32_t max_rows, uint64_t key_span) {
    if (which == 1 && p1.build_vocab) {
      // GenVocab updates are chained from chunk to chunk: a hash table can then grow in between.
      if (last_insert_slot >= 0) {
        Slot& prev = slots[last_insert_slot];
        DLPREP_CUDA_CHECK(cudaStreamWaitEvent(s.stream, prev.ev_inserted, 0));
        if (any_hash) {
          wait_for(prev.ev_inserted);
          for (int j = 0; j < kNumSparse; ++j)
            if (!cols[j].flat) cols[j].size = prev.h_sizes.get()[j];
        }
      }
      if (any_hash) grow_tables(s, max_rows);
      const VocabTables t = tables();
      vocab_insert(src, max_rows, key_base, t, hash_sizes.get(), s.stream);
      // A single pass: the chunk's new values get their IDs, then the transform reads them from
      // the tables; both before the next chunk's insert (chained behind ev_inserted), which may
      // regrow them. Valid rows are at most the lines and at most the row keys.
      const auto stride = static_cast<uint32_t>(std::min<uint64_t>(max_rows, key_span));
      if (single_pass() && stride > 0) {
        ensure_new_values(s, stride);
        vocab_flag_new(src, stride, key_base, t, s.new_flags.get(), s.stream);
        vocab_select_used(s.new_flags.get(), uint64_t{stride} * kNumSparse, s.new_positions.get(),
                          s.new_count.get(), s.new_temp.get(), s.new_temp_bytes, s.stream);
        vocab_assign_ids(src, stride, s.new_positions.get(), s.new_count.get(), t, next_id.get(),
                         s.stream);
        transform(s, src, max_rows, single_pass_lookup());
      }
      if (any_hash)
        DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.h_sizes.get(), hash_sizes.get(),
                                          kNumSparse * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                          s.stream));
      DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_inserted, s.stream));
      last_insert_slot = static_cast<int>(&s - slots);
    }
    if (which == 1) key_base += key_span;
    if (which == 2) transform(s, src, max_rows, lookup);
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.h_counters.get(), s.counters.get(), sizeof(ChunkCounters),
                                      cudaMemcpyDeviceToHost, s.stream));
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_done, s.stream));
    // Rows that need no parse are all valid: their outputs go back at once, without waiting
    // for the host to come round to this slot again.
    if (transforms(which) && src.row_slot == nullptr) queue_outputs(s, max_rows);
    s.busy = true;
    s.seq = next_seq++;
    ++timings.chunks;
  }

  // Modulus, ApplyVocab (through `ids`), Neg2Zero and Logarithm into the slot's arrays.
  void transform(Slot& s, const RowSource& src, uint32_t max_rows, const LookupTables& ids) {
    if (max_rows == 0) return;
    transform_kernel<<<grid_for(uint64_t{max_rows} * kNumFields, kThreads), kThreads, 0,
                       s.stream>>>(src, ids, dense, s.labels.get(), s.dense.get(), s.sparse.get(),
                                   s.patches.get(), static_cast<uint32_t>(s.out_rows),
                                   s.counters.get());
    DLPREP_CUDA_CHECK(cudaGetLastError());
  }

  // Copies the valid rows of a chunk, compacted, to `out` (device), on the slot's stream.
  void gather_rows(Slot& s, const RowSource& src, uint32_t n, uint32_t* out) {
    if (src.row_slot == nullptr) {
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(out, src.rows, size_t{n} * tabular::kBinaryRowBytes,
                                        cudaMemcpyDeviceToDevice, s.stream));
      return;
    }
    gather_rows_kernel<<<grid_for(uint64_t{n} * kNumFields, kThreads), kThreads, 0, s.stream>>>(
        src, n, out);
    DLPREP_CUDA_CHECK(cudaGetLastError());
  }

  uint32_t* pool_alloc(size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    timed_alloc([&] {
      DLPREP_CUDA_CHECK(cudaMallocFromPoolAsync(&p, std::max<size_t>(bytes, 4), pool, stream));
    });
    return static_cast<uint32_t*>(p);
  }

  // The line's text (for the caller's message), while the chunk is still on the device.
  void fetch_line(Slot& s, uint32_t line) {
    uint32_t start = 0, end = 0;
    const uint32_t first = line == 0 ? 0 : line - 1;
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.h_nl.get(), s.nl.get() + first,
                                      (line == 0 ? 1 : 2) * sizeof(uint32_t),
                                      cudaMemcpyDeviceToHost, s.stream));
    DLPREP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    if (line == 0) {
      end = s.h_nl.get()[0];
    } else {
      start = s.h_nl.get()[0] + 1;
      end = s.h_nl.get()[1];
    }
    const size_t n = size_t{end} - start + 1;
    s.h_text.reserve(n);
    DLPREP_CUDA_CHECK(
        cudaMemcpyAsync(s.h_text.get(), s.text.get() + start, n, cudaMemcpyDeviceToHost, s.stream));
    DLPREP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    bad_text.assign(s.h_text.get(), n);
  }

  void drop_kept_day(size_t day) {
    KeptDay& d = kept[day];
    // A gather into these buffers may still run on either stream.
    for (Slot& s : slots) DLPREP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    for (KeptChunk& c : d.chunks) {
      DLPREP_CUDA_CHECK(cudaFreeAsync(c.rows, slots[0].stream));
      kept_bytes -= uint64_t{c.n} * tabular::kBinaryRowBytes;
    }
    d.chunks.clear();
    d.dropped = true;
  }

  void finish(Slot& s) {
    s.busy = false;
    Pending p = std::move(s.pending);
    s.pending = Pending{};
    wait_for(s.ev_done);
    const ChunkCounters c = *s.h_counters.get();
    timings.h2d_ms += elapsed_ms(s.ev_begin, s.ev_h2d);
    timings.kernel_ms += elapsed_ms(s.ev_h2d, s.ev_done);
    CriteoChunkResult r;
    const uint32_t lines = p.text ? c.num_lines : p.lines;
    const uint32_t n = c.num_good;
    r.lines = lines;
    r.rows = n;
    r.bad_rows = lines - n;
    if (c.first_bad_line != kNoBadLine) {
      r.first_bad_line = c.first_bad_line;
      fetch_line(s, c.first_bad_line);
      r.first_bad_text = bad_text;
      const bool stop = p.pass == 1 ? p1.stop_at_error : p2.stop_at_error;
      if (stop) {
        // The caller stops at this row; only the lines before it count.
        r.lines = c.first_bad_line + uint64_t{1};
        r.bad_rows = 1;
        r.rows = c.first_bad_line;
        p.sink(r);
        throw Error(Errc::internal,
                    "criteo-preprocess on cuda: a malformed row did not stop "
                    "the run");
      }
    }
    if (p.pass == 1 && p1.assign_ids) {
      // The arrays first: their copy back (queued in compute() for rows) is timed by the slot's
      // D2H events, which the decoded rows' copy (want_rows) then records again.
      finish_pass2(s, p, r, n, c.num_patches);
      finish_pass1(s, p, r, n);
    } else if (p.pass == 1) {
      finish_pass1(s, p, r, n);
    } else {
      finish_pass2(s, p, r, n, c.num_patches);
      if (p2.want_rows) copy_rows_back(s, p, r, n);
      if (p.owned_rows != nullptr) {
        DLPREP_CUDA_CHECK(cudaFreeAsync(p.owned_rows, s.stream));
        kept_bytes -= uint64_t{p.owned_count} * tabular::kBinaryRowBytes;
      }
    }
    p.sink(r);
  }

  void finish_pass1(Slot& s, const Pending& p, CriteoChunkResult& r, uint32_t n) {
    const uint64_t bytes = uint64_t{n} * tabular::kBinaryRowBytes;
    uint32_t* compact = nullptr;
    if (p1.keep_rows && n > 0) {
      KeptDay& d = kept[p.day];
      if (!d.dropped && kept_bytes + bytes > keep_budget) drop_kept_day(p.day);
      if (!d.dropped) {
        compact = pool_alloc(bytes, s.stream);
        gather_rows(s, p.src, n, compact);
        d.chunks.push_back(KeptChunk{compact, n});
        kept_bytes += bytes;
        timings.kept_rows += n;
      }
    }
    if (p1.want_rows) copy_rows_back(s, p, r, n, compact);
  }

  // The chunk's `n` valid rows into pinned host memory for the sink (r.decoded): from `compact`
  // when they were gathered there already, else gathered for the copy.
  void copy_rows_back(Slot& s, const Pending& p, CriteoChunkResult& r, uint32_t n,
                      uint32_t* compact = nullptr) {
    if (n == 0) return;
    const uint64_t bytes = uint64_t{n} * tabular::kBinaryRowBytes;
    const bool temporary = compact == nullptr;
    if (temporary) {
      compact = pool_alloc(bytes, s.stream);
      gather_rows(s, p.src, n, compact);
    }
    s.h_rows.reserve(size_t{n} * kNumFields);
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_d2h_begin, s.stream));
    DLPREP_CUDA_CHECK(
        cudaMemcpyAsync(s.h_rows.get(), compact, bytes, cudaMemcpyDeviceToHost, s.stream));
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_d2h_end, s.stream));
    if (temporary) DLPREP_CUDA_CHECK(cudaFreeAsync(compact, s.stream));
    wait_for(s.ev_d2h_end);
    timings.d2h_ms += elapsed_ms(s.ev_d2h_begin, s.ev_d2h_end);
    r.decoded = s.h_rows.get();
  }

  // The copy back of a chunk's `n` output rows into the slot's pinned arrays, on its stream.
  void queue_outputs(Slot& s, uint32_t n) {
    ensure_host_outputs(s, n);
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_d2h_begin, s.stream));
    if (n > 0) {
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.h_labels.get(), s.labels.get(), size_t{n} * 4,
                                        cudaMemcpyDeviceToHost, s.stream));
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.h_dense.get(), s.dense.get(), size_t{n} * kNumDense * 4,
                                        cudaMemcpyDeviceToHost, s.stream));
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.h_sparse.get(), s.sparse.get(),
                                        size_t{n} * kNumSparse * 4, cudaMemcpyDeviceToHost,
                                        s.stream));
    }
    DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_d2h_end, s.stream));
    s.queued_rows = n;
  }

  void finish_pass2(Slot& s, const Pending& p, CriteoChunkResult& r, uint32_t n,
                    uint32_t num_patches) {
    // Text chunks learn their row count here; row sources queued their copy in compute().
    if (!p.text && s.queued_rows != n)
      throw Error(Errc::internal, "criteo-preprocess on cuda: rows lost on the device");
    if (p.text) queue_outputs(s, n);
    s.queued_rows = 0;
    wait_for(s.ev_d2h_end);
    timings.d2h_ms += elapsed_ms(s.ev_d2h_begin, s.ev_d2h_end);
    const uint32_t patches = std::min<uint32_t>(num_patches, static_cast<uint32_t>(s.out_rows));
    if (patches > 0) {
      s.h_patches.reserve(patches);
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(s.h_patches.get(), s.patches.get(),
                                        size_t{patches} * sizeof(LogPatch), cudaMemcpyDeviceToHost,
                                        s.stream));
      HostTimer t(timings.wait_ms);
      DLPREP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    }
    uint32_t* dense_out = s.h_dense.get();
    if (num_patches > patches) {
      // More values near a rounding boundary than patch slots (an adversarial input): recompute
      // every log the device took from the rows themselves.
      recompute_logs(s, p.src, n, dense_out);
    } else {
      for (uint32_t i = 0; i < patches; ++i) {
        const LogPatch& q = s.h_patches.get()[i];
        const float f = tabular::dense_log(q.x, dense.offset);
        std::memcpy(&dense_out[q.index], &f, 4);
      }
      timings.log_values_on_host += patches;
    }
    r.labels = s.h_labels.get();
    r.dense = dense_out;
    r.sparse = s.h_sparse.get();
  }

  void recompute_logs(Slot& s, const RowSource& src, uint32_t n, uint32_t* dense_out) {
    const size_t bytes = size_t{n} * tabular::kBinaryRowBytes;
    uint32_t* compact = pool_alloc(bytes, s.stream);
    gather_rows(s, src, n, compact);
    std::vector<uint32_t> rows(size_t{n} * kNumFields);
    DLPREP_CUDA_CHECK(
        cudaMemcpyAsync(rows.data(), compact, bytes, cudaMemcpyDeviceToHost, s.stream));
    DLPREP_CUDA_CHECK(cudaFreeAsync(compact, s.stream));
    DLPREP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    for (uint32_t r = 0; r < n; ++r)
      for (int k = 0; k < kNumDense; ++k) {
        const auto x = static_cast<int32_t>(rows[size_t{r} * kNumFields + kFirstDenseField + k]);
        if (x < tabular::kLogTableSize) continue;
        const float f = tabular::dense_log(x, dense.offset);
        std::memcpy(&dense_out[size_t{r} * kNumDense + k], &f, 4);
        ++timings.log_values_on_host;
      }
  }

  // ---- tables --------------------------------------------------------------------------------

  VocabTables tables() const {
    VocabTables t{};
    for (int j = 0; j < kNumSparse; ++j) {
      t.keys[j] = cols[j].flat ? nullptr : cols[j].keys.get();
      t.first[j] = cols[j].first.get();
      t.count[j] = cols[j].count.get();
      t.ids[j] = cols[j].ids.get();
      t.bits[j] = cols[j].bits;
      t.mod[j] = mod[j];
    }
    return t;
  }

  // A single pass's ApplyVocab: the IDs in pass 1's tables (flat: indexed by value).
  LookupTables single_pass_lookup() const {
    LookupTables l{};
    for (int j = 0; j < kNumSparse; ++j) {
      const Column& c = cols[j];
      if (c.flat) {
        l.flat[j] = c.ids.get();
      } else {
        l.keys[j] = c.keys.get();
        l.ids[j] = c.ids.get();
        l.bits[j] = c.bits;
      }
      l.mod[j] = mod[j];
    }
    return l;
  }

  // Before a chunk of up to `rows` rows: every hash table at most half full afterwards.
  void grow_tables(Slot& s, uint32_t rows) {
    for (int j = 0; j < kNumSparse; ++j) {
      Column& c = cols[j];
      if (c.flat) continue;
      uint64_t incoming = rows;
      if (c.modulus != 0) incoming = std::min<uint64_t>(incoming, c.modulus);
      const uint64_t need = c.size + incoming;
      if (2 * need <= (uint64_t{1} << c.bits)) continue;
      const uint32_t bits = tabular::vocab_hash_bits_for(need) + 1;  // room for the next chunks
      if (bits > 31)
        throw Error(Errc::limit_exceeded, "criteo-preprocess on cuda: column C" +
                                              std::to_string(j + 1) +
                                              " has too many distinct values for its table");
      Column grown;
      const uint64_t n = uint64_t{1} << bits;
      grown.keys.reserve(n);
      grown.first.reserve(n);
      grown.count.reserve(n);
      if (c.ids.get() != nullptr) grown.ids.reserve(n);
      vocab_rehash(c.keys.get(), c.first.get(), c.count.get(), c.ids.get(), c.bits,
                   grown.keys.get(), grown.first.get(), grown.count.get(), grown.ids.get(), bits,
                   s.stream);
      // cudaFree (when the old arrays go) waits for the rehash; growth is geometric, so rare.
      c.keys.swap(grown.keys);
      c.first.swap(grown.first);
      c.count.swap(grown.count);
      c.ids.swap(grown.ids);
      c.bits = bits;
    }
  }

  void begin_pass1(const CriteoPass1Setup& setup) {
    flush();
    HostTimer t(timings.setup_ms);
    if (setup.assign_ids && (!setup.build_vocab || setup.keep_rows))
      throw Error(Errc::internal,
                  "criteo-preprocess on cuda: a single pass only builds the vocabulary");
    pass = 1;
    p1 = setup;
    release_pass2();
    if (setup.assign_ids) setup_dense(setup.int_dense, setup.apply_log, setup.log_offset);
    cudaStream_t st = slots[0].stream;
    any_hash = false;
    uint64_t seeded = 0;
    std::vector<uint32_t> sizes(kNumSparse, 0);
    std::vector<int32_t> first_ids(kNumSparse, setup.id_base);
    for (int j = 0; j < kNumSparse; ++j) {
      Column& c = cols[j];
      mod[j] = FastMod(setup.modulus[j]);
      c.modulus = setup.modulus[j];
      c.flat = c.modulus != 0 && c.modulus <= kFlatMaxModulus;
      c.keys.release();
      c.first.release();
      c.count.release();
      c.ids.release();
      c.size = 0;
      c.bits = 0;
      const std::vector<uint32_t>* values = setup.seed_values[j];
      const std::vector<uint64_t>* counts = setup.seed_counts[j];
      const size_t seed = values != nullptr ? values->size() : 0;
      if (!setup.build_vocab) continue;
      uint64_t entries;
      if (c.flat) {
        entries = c.modulus;
      } else {
        any_hash = true;
        c.bits = tabular::vocab_hash_bits_for(seed + 1);
        entries = uint64_t{1} << c.bits;
        c.keys.reserve(entries);
        fill_u64(c.keys.get(), entries, kEmptySlot, st);
        c.size = seed;
        sizes[j] = static_cast<uint32_t>(seed);
      }
      c.first.reserve(entries);
      c.count.reserve(entries);
      if (setup.assign_ids) c.ids.reserve(entries);  // entries are read only once assigned
      fill_u64(c.first.get(), entries, kEmptySlot, st);
      DLPREP_CUDA_CHECK(cudaMemsetAsync(c.count.get(), 0, entries * sizeof(uint64_t), st));
      if (seed > 0) {
        DeviceArray<uint32_t> v;
        DeviceArray<uint64_t> n;
        v.reserve(seed);
        n.reserve(seed);
        DLPREP_CUDA_CHECK(
            cudaMemcpyAsync(v.get(), values->data(), seed * 4, cudaMemcpyHostToDevice, st));
        DLPREP_CUDA_CHECK(
            cudaMemcpyAsync(n.get(), counts->data(), seed * 8, cudaMemcpyHostToDevice, st));
        vocab_seed(v.get(), n.get(), static_cast<uint32_t>(seed), c.keys.get(), c.bits,
                   c.first.get(), c.count.get(), c.ids.get(), setup.id_base, st);
        DLPREP_CUDA_CHECK(cudaStreamSynchronize(st));  // before v and n are freed
      }
      seeded = std::max<uint64_t>(seeded, seed);
      first_ids[j] += static_cast<int32_t>(seed);
    }
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(hash_sizes.get(), sizes.data(), kNumSparse * 4,
                                      cudaMemcpyHostToDevice, st));
    DLPREP_CUDA_CHECK(cudaMemcpyAsync(next_id.get(), first_ids.data(), kNumSparse * 4,
                                      cudaMemcpyHostToDevice, st));
    DLPREP_CUDA_CHECK(cudaStreamSynchronize(st));
    // Keys of new rows start above the saved vocabulary's indices.
    key_base = seeded;
    last_insert_slot = -1;
    for (KeptDay& d : kept)
      for (KeptChunk& k : d.chunks)
        if (k.rows != nullptr) DLPREP_CUDA_CHECK(cudaFreeAsync(k.rows, st));
    DLPREP_CUDA_CHECK(cudaStreamSynchronize(st));
    kept.clear();
    kept_bytes = 0;
    keep_budget = 0;
    if (setup.keep_rows) {
      size_t free_bytes = 0, total = 0;
      DLPREP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
      // Half of what is free once the tables exist, leaving room for the slot buffers and the
      // pass-2 lookups. DLPREP_CUDA_KEEP_BYTES sets it (tests: days that do not fit).
      keep_budget = free_bytes / 2;
      if (const char* b = std::getenv("DLPREP_CUDA_KEEP_BYTES"); b != nullptr && *b)
        keep_budget = std::strtoull(b, nullptr, 10);
    }
  }

  void ensure_day(size_t day) {
    if (kept.size() <= day) kept.resize(day + 1);
    kept[day].started = true;
  }

  void read_vocab(std::array<std::vector<uint32_t>, kNumSparse>& values,
                  std::array<std::vector<uint64_t>, kNumSparse>& counts) {
    flush();
    HostTimer t(timings.setup_ms);
    for (Slot& s : slots) DLPREP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    cudaStream_t st = slots[0].stream;
    // Scratch for every column (each ends synchronised): 26 columns' worth of cudaMalloc and
    // cudaFree, each of which waits, would cost more than the extraction.
    DeviceArray<uint8_t> flags;
    DeviceArray<uint32_t> slots_a, slots_b, num, vals;
    DeviceArray<uint64_t> keys_a, keys_b, cnts;
    DeviceArray<uint8_t> temp;
    for (int j = 0; j < kNumSparse; ++j) {
      Column& c = cols[j];
      values[j].clear();
      counts[j].clear();
      if (!c.first.get()) continue;
      const uint64_t entries = c.flat ? c.modulus : uint64_t{1} << c.bits;
      const size_t temp_bytes = vocab_extract_temp_bytes(entries);
      flags.reserve(entries);
      slots_a.reserve(entries);
      num.reserve(1);
      temp.reserve(temp_bytes);
      vocab_mark_used(c.first.get(), entries, flags.get(), st);
      vocab_select_used(flags.get(), entries, slots_a.get(), num.get(), temp.get(), temp_bytes, st);
      uint32_t used = 0;
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(&used, num.get(), 4, cudaMemcpyDeviceToHost, st));
      DLPREP_CUDA_CHECK(cudaStreamSynchronize(st));
      if (used == 0) continue;
      slots_b.reserve(used);
      keys_a.reserve(used);
      keys_b.reserve(used);
      vals.reserve(used);
      cnts.reserve(used);
      vocab_gather_first(c.first.get(), slots_a.get(), used, keys_a.get(), st);
      vocab_sort_by_first(keys_a.get(), keys_b.get(), slots_a.get(), slots_b.get(), used,
                          temp.get(), temp_bytes, st);
      vocab_gather_entries(slots_b.get(), used, c.flat ? nullptr : c.keys.get(), c.count.get(),
                           vals.get(), cnts.get(), st);
      values[j].resize(used);
      counts[j].resize(used);
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(values[j].data(), vals.get(), size_t{used} * 4,
                                        cudaMemcpyDeviceToHost, st));
      DLPREP_CUDA_CHECK(cudaMemcpyAsync(counts[j].data(), cnts.get(), size_t{used} * 8,
                                        cudaMemcpyDeviceToHost, st));
      DLPREP_CUDA_CHECK(cudaStreamSynchronize(st));
    }
  }

  void release_pass2() {
    for (int j = 0; j < kNumSparse; ++j) {
      flat_ids[j].release();
      lookup_keys[j].release();
      lookup_ids[j].release();
    }
  }

  void begin_pass2(const CriteoPass2Setup& setup) {
    flush();
    HostTimer t(timings.setup_ms);
    for (Slot& s : slots) DLPREP_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    pass = 2;
    p2 = setup;
    for (Column& c : cols) {  // pass 1's tables are done
      c.keys.release();
      c.first.release();
      c.count.release();
      c.ids.release();
    }
    release_pass2();
    cudaStream_t st = slots[0].stream;
    lookup = LookupTables{};
    DeviceArray<uint32_t> v;  // each column's vocabulary, uploaded (reused: every column waits)
    DeviceArray<int32_t> id;
    for (int j = 0; j < kNumSparse; ++j) {
      mod[j] = FastMod(setup.modulus[j]);
      lookup.mod[j] = mod[j];
      lookup.oov[j] = setup.oov[j];
      const std::vector<uint32_t>& values = *setup.values[j];
      const std::vector<int32_t>& ids = *setup.ids[j];
      if (values.size() != ids.size())
        throw Error(Errc::internal, "criteo-preprocess on cuda: vocabulary not finalised");
      const auto n = static_cast<uint32_t>(values.size());
      v.reserve(n);
      id.reserve(n);
      if (n > 0) {
        DLPREP_CUDA_CHECK(
            cudaMemcpyAsync(v.get(), values.data(), size_t{n} * 4, cudaMemcpyHostToDevice, st));
        DLPREP_CUDA_CHECK(
            cudaMemcpyAsync(id.get(), ids.data(), size_t{n} * 4, cudaMemcpyHostToDevice, st));
      }
      const uint32_t m = setup.modulus[j];
      if (m != 0 && m <= kFlatMaxModulus) {
        flat_ids[j].reserve(m);
        lookup_build_flat(v.get(), id.get(), n, m, setup.oov[j], flat_ids[j].get(), st);
        lookup.flat[j] = flat_ids[j].get();
      } else {
        const uint32_t bits = tabular::vocab_hash_bits_for(n);
        lookup_keys[j].reserve(uint64_t{1} << bits);
        lookup_ids[j].reserve(uint64_t{1} << bits);
        lookup_build_hash(v.get(), id.get(), n, lookup_keys[j].get(), lookup_ids[j].get(), bits,
                          st);
        lookup.keys[j] = lookup_keys[j].get();
        lookup.ids[j] = lookup_ids[j].get();
        lookup.bits[j] = bits;
      }
      DLPREP_CUDA_CHECK(cudaStreamSynchronize(st));  // before v and id are used again
    }
    setup_dense(setup.int_dense, setup.apply_log, setup.log_offset);
  }

  // Neg2Zero and Logarithm as the pass's transform asks.
  void setup_dense(bool int_dense, bool apply_log, double log_offset) {
    dense = DenseSetup{DenseMode::log, nullptr, log_offset};
    if (int_dense) {
      dense.mode = DenseMode::int32;
    } else if (!apply_log) {
      dense.mode = DenseMode::plain_float;
    } else {
      // The table of the CPU's fast path, made by the same function (once per offset: the
      // next run of a reused preprocessor has it).
      if (lut.get() == nullptr || lut_offset != log_offset) {
        std::vector<float> table(tabular::kLogTableSize);
        for (int32_t x = 0; x < tabular::kLogTableSize; ++x)
          table[x] = tabular::dense_log(x, log_offset);
        lut.reserve(table.size());
        cudaStream_t st = slots[0].stream;
        DLPREP_CUDA_CHECK(
            cudaMemcpyAsync(lut.get(), table.data(), table.size() * 4, cudaMemcpyHostToDevice, st));
        DLPREP_CUDA_CHECK(cudaStreamSynchronize(st));
        lut_offset = log_offset;
      }
      dense.lut = lut.get();
    }
  }

  void kept_day_chunks(size_t day, const CriteoChunkSink& sink) {
    if (day >= kept.size() || !kept[day].started || kept[day].dropped)
      throw Error(Errc::internal,
                  "criteo-preprocess on cuda: day " + std::to_string(day) + " was not kept");
    KeptDay& d = kept[day];
    // A chunk goes in pieces of at most kPass2PieceRows rows. It passes from the day's list to
    // the Pending of its last piece, which frees it once delivered (finish) or, after an error,
    // on destruction.
    for (KeptChunk& k : d.chunks) {
      for (uint32_t first = 0; first < k.n;) {
        const uint32_t n = std::min(k.n - first, kPass2PieceRows);
        const bool last = first + n == k.n;
        Slot& s = acquire(true);  // may deliver (and throw): k and the next chunks are listed
        ensure_outputs(s, n, kPass2PieceRows);
        start_chunk(s, n, n);
        DLPREP_CUDA_CHECK(cudaEventRecord(s.ev_h2d, s.stream));
        RowSource src{k.rows + size_t{first} * kNumFields, nullptr, &s.counters.get()->num_good};
        s.pending = Pending{2, false, day, n, sink, src, last ? k.rows : nullptr, last ? k.n : 0};
        if (last) k.rows = nullptr;  // owned by the Pending from here
        compute(s, 2, src, n, 0);
        first += n;
      }
    }
    d.chunks.clear();
    d.dropped = true;  // consumed
  }
};

CriteoPreprocessorCuda::CriteoPreprocessorCuda(size_t chunk_bytes)
    : impl_(std::make_unique<Impl>(chunk_bytes)) {}

CriteoPreprocessorCuda::~CriteoPreprocessorCuda() = default;

size_t CriteoPreprocessorCuda::default_chunk_bytes() { return kDefaultChunkBytes; }

void CriteoPreprocessorCuda::begin_pass1(const CriteoPass1Setup& setup) {
  impl_->begin_pass1(setup);
}

void CriteoPreprocessorCuda::pass1_text(size_t day, const char* text, size_t bytes,
                                        const CriteoChunkSink& sink) {
  impl_->ensure_day(day);
  impl_->text_chunks(1, day, text, bytes, sink);
}

void CriteoPreprocessorCuda::pass1_rows(size_t day, const uint32_t* rows, size_t count,
                                        const CriteoChunkSink& sink, bool stable) {
  impl_->ensure_day(day);
  impl_->rows_chunks(1, day, rows, count, sink, stable);
}

void CriteoPreprocessorCuda::flush() { impl_->flush(); }

void CriteoPreprocessorCuda::read_vocab(std::array<std::vector<uint32_t>, kCriteoColumns>& values,
                                        std::array<std::vector<uint64_t>, kCriteoColumns>& counts) {
  impl_->read_vocab(values, counts);
}

bool CriteoPreprocessorCuda::kept_day(size_t day) const {
  return impl_->p1.keep_rows && day < impl_->kept.size() && impl_->kept[day].started &&
         !impl_->kept[day].dropped;
}

void CriteoPreprocessorCuda::begin_pass2(const CriteoPass2Setup& setup) {
  impl_->begin_pass2(setup);
}

void CriteoPreprocessorCuda::pass2_text(const char* text, size_t bytes,
                                        const CriteoChunkSink& sink) {
  impl_->text_chunks(2, 0, text, bytes, sink);
}

void CriteoPreprocessorCuda::pass2_rows(const uint32_t* rows, size_t count,
                                        const CriteoChunkSink& sink, bool stable) {
  impl_->rows_chunks(2, 0, rows, count, sink, stable);
}

void CriteoPreprocessorCuda::pass2_kept_day(size_t day, const CriteoChunkSink& sink) {
  impl_->kept_day_chunks(day, sink);
}

CriteoCudaTimings CriteoPreprocessorCuda::timings() const { return impl_->timings; }

void CriteoPreprocessorCuda::reset_timings() { impl_->timings = CriteoCudaTimings{}; }

}  // namespace dlprep::cuda
