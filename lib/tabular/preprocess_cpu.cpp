// The CPU backend of criteo-preprocess, the reference every other backend is checked against.
//
// Outline (PIPER, Zhu et al., "PIPER: a dataflow accelerator for tabular preprocessing", sec. 3),
// per chunk of whole lines (preprocess.cpp reads the chunks and receives the pieces):
//   pass 1  row-parallel:    Decode (text -> 40-word rows), Modulus, transpose to columns
//           in order:        the pieces go to the sink (file:line of a malformed row, counts)
//           column-parallel: GenVocab, one thread per column at a time, rows in file order
//   pass 2  row-parallel:    Decode, Modulus, ApplyVocab, Neg2Zero, Logarithm into per-piece
//                            output blocks, handed to the sink (the writers) in order.
// A single pass (Pass1Setup::assign_ids) is pass 1 whose GenVocab also writes each value's
// first-appearance index, which is its ID less id_base: the pieces are then transformed as by
// pass 2 from those indices and handed to the sink once, in order, with their counts.
// The per-row arithmetic of both passes is in row_transform*.cpp (scalar and AVX-512 kernels).
// Determinism: pieces are cut at fixed byte offsets, vocabularies are updated column by column in
// row order, so every output byte is independent of the thread count.
#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "tabular/preprocess_backend.hpp"
#include "tabular/row_transform.hpp"

namespace dlprep::tabular {
namespace {

// Text per parallel work item: small enough that its decoded rows and outputs (about 1.3x the
// text) stay in a core's L2 cache, large enough to amortise the hand-out.
constexpr size_t kPieceBytes = size_t{256} << 10;
// Binary rows (the input, or the decode cache in pass 2) per work item. Pass 1 transposes its
// piece, so it stays small; pass 2's outputs go to write(2) a piece at a time, and larger writes
// cost the kernel less per byte (fewer, larger page-cache folios): 1,024 -> 16,384 rows took
// binary rows from 8.1-8.5M to 9.0-9.2M rows/s (CRITEO-RESULTS.md).
constexpr size_t kPass1PieceRows = 1024;
constexpr size_t kPass2PieceRows = 16384;
// A single pass both transposes its binary pieces and writes their outputs: 4,096 rows took
// 0.89x the two passes' time, 1,024 and 16,384 rows 0.93-0.94x (1M rows, outputs on tmpfs).
constexpr size_t kSinglePassPieceRows = 4096;
// Chunk size by default: enough pieces for every core, small enough to bound memory.
constexpr size_t kCpuChunkBytes = size_t{16} << 20;

struct Piece {
  const char* text = nullptr;
  size_t text_bytes = 0;
  const uint32_t* bin = nullptr;
  size_t bin_rows = 0;
  std::vector<uint32_t> row_buf;
  const uint32_t* rows = nullptr;
  size_t nrows = 0;
  TsvPieceResult result;
  std::vector<uint32_t> cols;   // pass 1: column-major sparse values after the modulus
  size_t stride = 0;            // distance between two columns in `cols`
  std::vector<int32_t> labels;  // pass 2 outputs
  std::vector<uint32_t> dense;
  std::vector<int32_t> sparse;
};

// Column stride of a transposed piece: not a multiple of 4 KiB, so that the 26 column streams do
// not all map to the same L1 cache sets (4K aliasing).
size_t col_stride(size_t n) { return (n + 15) / 16 * 16 + 16; }

// Cuts a chunk into work items: text at line ends about every kPieceBytes, binary rows every
// `piece_rows` rows.
size_t split_chunk(const InputChunk& chunk, std::vector<Piece>& pieces, size_t piece_rows) {
  size_t n = 0;
  auto next_piece = [&]() -> Piece& {
    if (n == pieces.size()) pieces.emplace_back();
    Piece& p = pieces[n++];
    p.text = nullptr;
    p.bin = nullptr;
    p.text_bytes = p.bin_rows = 0;
    return p;
  };
  if (!chunk.text.empty()) {
    const char* t = chunk.text.data();
    size_t size = chunk.text.size(), pos = 0;
    while (pos < size) {
      size_t end = std::min(pos + kPieceBytes, size);
      if (end < size) {
        const void* nl = std::memchr(t + end - 1, '\n', size - (end - 1));
        end = static_cast<size_t>(static_cast<const char*>(nl) - t) + 1;
      }
      Piece& p = next_piece();
      p.text = t + pos;
      p.text_bytes = end - pos;
      pos = end;
    }
  } else {
    size_t total = chunk.rows.size() / kNumFields;
    for (size_t r = 0; r < total; r += piece_rows) {
      Piece& p = next_piece();
      p.bin = chunk.rows.data() + r * kNumFields;
      p.bin_rows = std::min(piece_rows, total - r);
    }
  }
  return n;
}

// Pass 2's outputs of the piece's rows by `fn`.
void transform_piece(Piece& p, const RowKernels& kernels, const RowTransform& fn) {
  const size_t n = p.nrows;
  if (p.labels.size() < n) {
    p.labels.resize(n);
    p.dense.resize(n * kNumDense);
    p.sparse.resize(n * kNumSparse);
  }
  kernels.transform_rows(p.rows, n, fn, p.labels.data(), p.dense.data(), p.sparse.data());
}

// A single pass's IDs: id_base plus the first-appearance indices GenVocab left in the columns.
void ids_from_columns(Piece& p, int32_t id_base) {
  const uint32_t* cols = p.cols.data();
  for (size_t r = 0; r < p.nrows; ++r) {
    int32_t* s = p.sparse.data() + r * kNumSparse;
    for (int j = 0; j < kNumSparse; ++j)
      s[j] = id_base + static_cast<int32_t>(cols[j * p.stride + r]);
  }
}

void decode_piece(Piece& p, bool stop_at_error) {
  if (p.text) {
    p.result = decode_tsv(p.text, p.text + p.text_bytes, stop_at_error, p.row_buf);
    p.rows = p.row_buf.data();
    p.nrows = p.result.rows;
  } else {
    p.result = TsvPieceResult{};
    p.result.lines = p.result.rows = p.bin_rows;
    p.rows = p.bin;
    p.nrows = p.bin_rows;
  }
}

class PreprocessBackendCpu final : public PreprocessBackend {
 public:
  explicit PreprocessBackendCpu(unsigned threads)
      : threads_(threads ? threads : hardware_threads()) {}

  std::string_view device_name() const override { return "cpu"; }
  size_t default_chunk_bytes() const override { return kCpuChunkBytes; }
  bool host_decode_cache() const override { return true; }
  bool single_pass() const override { return true; }
  HostBuffer allocate_host(size_t bytes) override { return allocate_pageable(bytes); }

  void begin_pass1(const Pass1Setup& setup, std::vector<ColumnVocab>& vocab) override {
    p1_ = setup;
    vocab_ = &vocab;
    for (int j = 0; j < kNumSparse; ++j) fastmod_[j] = FastMod(setup.modulus[j]);
    if (setup.assign_ids) {
      if (!setup.build_vocab || setup.index_rows || setup.keep_rows)
        throw Error(Errc::internal, "criteo-preprocess on cpu: a single pass only builds IDs");
      make_log_table(setup.transform);
      single_fn_ = row_transform(setup.transform);
      single_fn_.sparse = RowTransform::Sparse::none;  // ids_from_columns
    }
  }

  void pass1_chunk(size_t /*day*/, const InputChunk& chunk, const PieceSink& sink,
                   const IndexRowsSink& index_sink) override {
    const unsigned threads = workers(chunk);
    const bool build_vocab = p1_.build_vocab;
    const bool single = p1_.assign_ids;
    // Index rows only for the days that have a decode cache (the caller passes their sink).
    const bool index_rows = p1_.index_rows && build_vocab && static_cast<bool>(index_sink);
    const size_t count =
        split_chunk(chunk, pieces_, single ? kSinglePassPieceRows : kPass1PieceRows);
    const auto decode = [&](size_t i) {
      Piece& p = pieces_[i];
      decode_piece(p, p1_.stop_at_error);
      if (!build_vocab) return;
      // Modulus, and the transpose that lets GenVocab read each column sequentially.
      size_t n = p.nrows;
      p.stride = col_stride(n);
      if (p.cols.size() < p.stride * kNumSparse) p.cols.resize(p.stride * kNumSparse);
      kernels_.modulus_columns(p.rows, n, fastmod_, p.cols.data(), p.stride);
    };
    if (single) {
      parallel_for(count, threads, decode);  // delivered once, transformed (below)
    } else {
      parallel_for_ordered(count, threads, count, decode, [&](size_t i) {
        const Piece& p = pieces_[i];
        PieceOutput out;
        out.result = p.result;
        out.rows = p1_.want_rows ? p.rows : nullptr;
        sink(out);
      });
    }
    if (!build_vocab) return;
    // GenVocab: each column by one thread, pieces in order -> first-appearance order. Each value
    // is replaced by its first-appearance index on the way when the decode cache or a single pass
    // wants them.
    std::vector<ColumnVocab>& vocab = *vocab_;
    const bool indices = index_rows || single;
    parallel_for(kNumSparse, threads, [&](size_t j) {
      for (size_t i = 0; i < count; ++i) {
        Piece& p = pieces_[i];
        uint32_t* col = p.cols.data() + j * p.stride;
        vocab[j].add(col, p.nrows, indices ? col : nullptr);
      }
    });
    if (single) {
      transform_pieces(
          count, threads, sink,
          [&](Piece& p) {
            transform_piece(p, kernels_, single_fn_);
            ids_from_columns(p, p1_.id_base);
          },
          p1_.want_rows);
      return;
    }
    if (!index_rows) return;
    // The decode cache gets the rows with indices instead of values: pass 2 then maps them through
    // a table per column indexed by first appearance, never by value.
    parallel_for_ordered(
        count, threads, count,
        [&](size_t i) {
          Piece& p = pieces_[i];
          uint32_t* rows = p.row_buf.data();
          const uint32_t* cols = p.cols.data();
          for (size_t r = 0; r < p.nrows; ++r) {
            uint32_t* s = rows + r * kNumFields + kFirstSparseField;
            for (int j = 0; j < kNumSparse; ++j) s[j] = cols[j * p.stride + r];
          }
        },
        [&](size_t i) {
          const Piece& p = pieces_[i];
          if (p.nrows) index_sink(p.row_buf.data(), p.nrows);
        });
  }

  void flush() override {}
  void sync_vocab() override {}  // pass1_chunk updates the caller's vocabulary directly

  void begin_pass2(const Pass2Setup& setup, const std::vector<ColumnVocab>& vocab) override {
    p2_ = setup;
    final_vocab_ = &vocab;
    for (int j = 0; j < kNumSparse; ++j) {
      fastmod_[j] = FastMod(setup.modulus[j]);
      index_ids_[j] = vocab[j].index_ids().data();
    }
    make_log_table(setup);
  }

  void pass2_chunk(const InputChunk& chunk, bool indices, const PieceSink& sink) override {
    RowTransform rows_fn = row_transform(p2_);
    using Sparse = RowTransform::Sparse;
    rows_fn.mods = fastmod_;
    rows_fn.vocab = final_vocab_;
    if (indices) {
      if (p2_.want_rows)
        throw Error(Errc::internal, "criteo-preprocess on cpu: index rows are no decoded rows");
      rows_fn.sparse = Sparse::indices;
      rows_fn.ids = index_ids_;
    } else {
      // Every column flat (the common small modulus): a table indexed by value per column.
      rows_fn.sparse = Sparse::flat;
      for (int j = 0; j < kNumSparse; ++j) {
        rows_fn.ids[j] = (*final_vocab_)[j].flat_ids();
        if (!rows_fn.ids[j]) rows_fn.sparse = Sparse::lookup;
      }
    }
    const size_t count = split_chunk(chunk, pieces_, kPass2PieceRows);
    transform_pieces(
        count, workers(chunk), sink,
        [&](Piece& p) {
          decode_piece(p, p2_.stop_at_error);
          transform_piece(p, kernels_, rows_fn);
        },
        p2_.want_rows);
  }

 private:
  // Neg2Zero + Logarithm of the common small values through a table.
  void make_log_table(const Pass2Setup& setup) {
    log_table_.clear();
    if (setup.apply_log && !setup.int_dense) {
      log_table_.resize(kLogTableSize);
      for (int32_t x = 0; x < kLogTableSize; ++x) log_table_[x] = dense_log(x, setup.log_offset);
    }
  }

  // The dense part of pass 2's work for `setup` (after make_log_table); the caller sets the rest.
  RowTransform row_transform(const Pass2Setup& setup) const {
    using Dense = RowTransform::Dense;
    RowTransform t;
    t.dense = setup.int_dense ? Dense::integer : setup.apply_log ? Dense::log : Dense::plain;
    t.log_offset = setup.log_offset;
    t.log_table = log_table_.data();
    return t;
  }

  // `make_block` makes each piece's output block (in parallel); the blocks go to the sink in
  // order, with the pieces' counts, and with_rows their decoded rows (want_rows).
  template <typename MakeBlock>
  void transform_pieces(size_t count, unsigned threads, const PieceSink& sink, MakeBlock make_block,
                        bool with_rows = false) {
    parallel_for_ordered(
        count, threads, count, [&](size_t i) { make_block(pieces_[i]); },
        [&](size_t i) {
          const Piece& p = pieces_[i];
          PieceOutput out;
          out.result = p.result;
          out.block = RowBlock{p.labels.data(), p.dense.data(), p.sparse.data(), p.nrows};
          if (with_rows) out.rows = p.rows;
          sink(out);
        });
  }

  // Workers for a chunk: one fewer while the reader inflates the next gzip chunk, so that the
  // inflater, which the whole pass waits for, keeps a core to itself (gzip 1.50x -> 1.42x the
  // inflate time alone on 2 cores, CRITEO-RESULTS.md).
  unsigned workers(const InputChunk& chunk) const {
    return chunk.inflating_ahead && threads_ > 1 ? threads_ - 1 : threads_;
  }

  unsigned threads_;
  const RowKernels& kernels_ = active_row_kernels();
  Pass1Setup p1_;
  Pass2Setup p2_;
  std::vector<ColumnVocab>* vocab_ = nullptr;
  const std::vector<ColumnVocab>* final_vocab_ = nullptr;
  std::array<FastMod, kNumSparse> fastmod_{};
  std::array<const int32_t*, kNumSparse> index_ids_{};
  std::vector<Piece> pieces_;
  std::vector<float> log_table_;
  RowTransform single_fn_;  // a single pass's dense transform (its IDs: ids_from_columns)
};

}  // namespace

void PreprocessBackend::pass2_kept_day(size_t day, const PieceSink&) {
  throw Error(Errc::internal, "pass 2: day " + std::to_string(day) + " was not kept in pass 1");
}

std::unique_ptr<PreprocessBackend> make_preprocess_backend_cpu(unsigned threads) {
  return std::make_unique<PreprocessBackendCpu>(threads);
}

}  // namespace dlprep::tabular
