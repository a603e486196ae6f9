// libFuzzer target for criteo-preprocess's CUDA backend, run on the emulated GPU of
// tests/cuda/emulation/ (the kernels' own sources, a fiber per CUDA thread), or, in a normal
// build, the function that replay_main.cpp runs over every file of corpus/criteo_tsv/: on the
// emulated GPU (fuzz_criteo_cuda_emulated_replay) and on a real one (fuzz_criteo_cuda_replay,
// skipped with exit 77 where there is none).
//
// The input is a chunk of a TSV day (a final '\n' is added when missing). It goes through both
// passes of the backend seam (preprocess_backend.hpp), as preprocess.cpp drives it but without
// files, on the CUDA backend and on the CPU backend, the reference, in these configurations:
//   A  bad rows skipped; moduli 7, 5,000 and none (flat, flat and hashed vocabulary tables);
//      rows kept on the device for pass 2; --min-freq 2, IDs from 2, OOV 1, log(x + 3);
//   B  stop at the first bad row; no modulus; pass 2 reads the text again; IDs from 0, OOV past
//      the last ID, log(x + 1);
//   C  the same bytes as binary rows (whole 160-byte rows; none: skipped), where every word is
//      valid: moduli 1,000 and none, IDs from 1, OOV 0, log(x + 1);
//   D  A's moduli and bad rows skipped, IDs from 2, log(x + 3), no threshold: the CUDA backend in
//      a single pass (Pass1Setup::assign_ids, decoded rows included), and the CPU backend in a
//      single pass too, each against the CPU in two;
//   E  C's binary rows in a single pass on CUDA and on the CPU;
//   F  A's settings with the vocabulary of the first half of the lines given (--vocab-from):
//      pass 2 alone, decoded rows included, on backends that never ran pass 1.
// The backends must agree on everything: line, row and bad-row counts, the first bad line and
// its message, the decoded rows, the vocabulary (values in first-appearance order, counts), and
// pass 2's labels, dense values (bit for bit) and IDs (and its counts, except in A, where the
// rows kept on the device come back without the bad lines that pass 1 counted). The GPU parses
// hostile text byte by byte (line ends, field counts, overlong fields): a read outside the device
// buffers is an ASan report here, a divergent barrier or warp vote an emulation error, and either
// becomes a disagreement.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tabular/preprocess_backend.hpp"

namespace {

using namespace dlprep;
using namespace dlprep::tabular;

struct Config {
  bool binary = false;  // the input is binary rows (40 words each), not text
  bool stop_at_error = false;
  bool keep_rows = false;
  bool single_pass = false;  // IDs assigned and rows transformed in pass 1 (not the reference)
  std::array<uint32_t, kNumSparse> modulus{};
  uint64_t min_freq = 1;
  int64_t id_base = 0;
  int32_t oov_id = -1;  // -1: one past the column's last ID, as preprocess.cpp's default
  double log_offset = 1;
};

struct Totals {
  uint64_t lines = 0, rows = 0, bad_rows = 0;
  int64_t first_bad_line = -1;
  std::string first_problem;
  bool operator==(const Totals&) const = default;
};

struct Outcome {
  std::string error;  // what the backend threw, if it did
  Totals pass1, pass2;
  std::vector<uint32_t> decoded;
  std::array<std::vector<uint32_t>, kNumSparse> values;
  std::array<std::vector<uint64_t>, kNumSparse> counts;
  std::vector<int32_t> labels, sparse;
  std::vector<uint32_t> dense;
  bool operator==(const Outcome&) const = default;
};

// The sink's way out at the first bad row under stop_at_error, as preprocess.cpp's error.
struct StoppedAtBadRow {};

void add_piece(Totals& t, const PieceOutput& p, bool stop_at_error) {
  if (p.result.first_bad_line >= 0 && t.first_bad_line < 0) {
    t.first_bad_line = static_cast<int64_t>(t.lines) + p.result.first_bad_line;
    t.first_problem = p.result.first_problem;
    if (stop_at_error) throw StoppedAtBadRow{};
  }
  t.lines += p.result.lines;
  t.rows += p.result.rows;
  t.bad_rows += p.result.bad_rows;
}

void add_block(Outcome& o, const RowBlock& r) {
  o.labels.insert(o.labels.end(), r.labels, r.labels + r.rows);
  o.dense.insert(o.dense.end(), r.dense, r.dense + r.rows * kNumDense);
  o.sparse.insert(o.sparse.end(), r.sparse, r.sparse + r.rows * kNumSparse);
}

// `input` in the backend's own host memory (pinned for CUDA), with the readable padding that
// InputReader guarantees after every text chunk; `chunk` points into it.
HostBuffer to_chunk(PreprocessBackend& b, const std::vector<uint8_t>& input, bool binary,
                    InputChunk& chunk) {
  HostBuffer buf = b.allocate_host(input.size() + kTsvReadPadding);
  std::memcpy(buf.data(), input.data(), input.size());
  std::memset(buf.data() + input.size(), 0, kTsvReadPadding);
  if (binary)
    chunk.rows = {reinterpret_cast<const uint32_t*>(buf.data()), input.size() / 4};
  else
    chunk.text = {reinterpret_cast<const char*>(buf.data()), input.size()};
  return buf;
}

// The IDs, as preprocess.cpp assigns them.
void finalize(std::vector<ColumnVocab>& vocab, const Config& c) {
  for (int j = 0; j < kNumSparse; ++j) {
    int64_t oov = c.oov_id;
    if (oov < 0) {
      oov = c.id_base;
      for (uint64_t n : vocab[j].counts()) oov += n >= c.min_freq ? 1 : 0;
    }
    vocab[j].finalize(c.min_freq, c.id_base, static_cast<int32_t>(oov));
  }
}

// The vocabulary --vocab-from would apply: `text` through pass 1 on the CPU, bad rows skipped.
std::vector<ColumnVocab> vocabulary_of(const std::vector<uint8_t>& text, const Config& c) {
  std::unique_ptr<PreprocessBackend> b = make_preprocess_backend_cpu(1);
  InputChunk chunk;
  const HostBuffer buf = to_chunk(*b, text, false, chunk);
  std::vector<ColumnVocab> vocab;
  for (int j = 0; j < kNumSparse; ++j) vocab.emplace_back(c.modulus[j]);
  Pass1Setup s1;
  s1.modulus = c.modulus;
  s1.stop_at_error = false;
  b->begin_pass1(s1, vocab);
  b->pass1_chunk(0, chunk, [](const PieceOutput&) {}, {});
  b->flush();
  b->sync_vocab();
  finalize(vocab, c);
  return vocab;
}

// Both passes, or a single pass, or with `given` (--vocab-from) pass 2 alone on a backend that
// never ran pass 1.
void run_passes(PreprocessBackend& b, const std::vector<uint8_t>& input, const Config& c,
                bool single, const std::vector<ColumnVocab>* given, Outcome& o) {
  InputChunk chunk;
  const HostBuffer buf = to_chunk(b, input, c.binary, chunk);
  std::vector<ColumnVocab> vocab;
  Pass2Setup s2;
  s2.modulus = c.modulus;
  s2.stop_at_error = c.stop_at_error;
  s2.log_offset = c.log_offset;
  s2.want_rows = given != nullptr;  // pass 2 alone: --emit-binary's rows come from it
  if (given != nullptr) {
    vocab = *given;
  } else {
    for (int j = 0; j < kNumSparse; ++j) vocab.emplace_back(c.modulus[j]);
    Pass1Setup s1;
    s1.modulus = c.modulus;
    s1.stop_at_error = c.stop_at_error;
    s1.want_rows = true;  // --emit-binary's decoded rows, in a single pass too
    s1.keep_rows = c.keep_rows;
    if (single) {
      s1.assign_ids = true;
      s1.id_base = static_cast<int32_t>(c.id_base);
      s1.transform = s2;
    }
    b.begin_pass1(s1, vocab);
    auto sink1 = [&](const PieceOutput& p) {
      add_piece(o.pass1, p, c.stop_at_error);
      if (p.rows != nullptr)
        o.decoded.insert(o.decoded.end(), p.rows, p.rows + p.result.rows * kNumFields);
      if (single) add_block(o, p.block);
    };
    b.pass1_chunk(0, chunk, sink1, {});
    b.flush();
    b.sync_vocab();
    finalize(vocab, c);
  }
  for (int j = 0; j < kNumSparse; ++j) {
    o.values[j] = vocab[j].values();
    o.counts[j] = vocab[j].counts();
  }
  if (single) {
    o.pass2 = o.pass1;  // what a second pass over the same bytes counts
    return;
  }

  b.begin_pass2(s2, vocab);
  auto sink2 = [&](const PieceOutput& p) {
    // Rows kept on the device come back without the bad lines between them, which pass 1
    // counted already: then only the rows are compared.
    if (c.keep_rows)
      o.pass2.rows += p.result.rows;
    else
      add_piece(o.pass2, p, c.stop_at_error);
    add_block(o, p.block);
    if (p.rows != nullptr)
      o.decoded.insert(o.decoded.end(), p.rows, p.rows + p.result.rows * kNumFields);
  };
  if (b.kept_day(0))
    b.pass2_kept_day(0, sink2);
  else
    b.pass2_chunk(chunk, false, sink2);
  b.flush();
}

// Where the CUDA backend cannot run (the real-GPU replay on a machine without one) the run is
// skipped as the CUDA tests are: exit 77 with the reason.
void skip_without_cuda() {
  static const bool checked = [] {
    const std::string why = criteo_cuda_unavailable_reason();
    if (!why.empty()) {
      std::printf("fuzz_criteo_cuda: skipped: %s\n", why.c_str());
      std::exit(77);
    }
    return true;
  }();
  (void)checked;
}

// single: the run takes one pass (Config::single_pass, not for the reference); given: the
// vocabulary of --vocab-from.
Outcome run(Device device, const std::vector<uint8_t>& input, const Config& c, bool single,
            const std::vector<ColumnVocab>* given = nullptr) {
  Outcome o;
  // A backend is not reusable after a sink threw: one per run.
  std::unique_ptr<PreprocessBackend> b =
      device == Device::cpu ? make_preprocess_backend_cpu(1) : make_preprocess_backend(device, 1);
  try {
    run_passes(*b, input, c, single && b->single_pass(), given, o);
  } catch (const StoppedAtBadRow&) {
    // Compared as it stands: the first bad line and its message, the pieces before it.
  } catch (const dlprep::Error& e) {
    o.error = e.what();
  }
  return o;
}

std::string describe(const Totals& t) {
  return std::to_string(t.lines) + " lines, " + std::to_string(t.rows) + " rows, " +
         std::to_string(t.bad_rows) + " bad, first bad line " + std::to_string(t.first_bad_line) +
         (t.first_problem.empty() ? "" : " (" + t.first_problem + ")");
}

std::string describe(const Outcome& o) {
  return "error '" + o.error + "'; pass 1: " + describe(o.pass1) + "; pass 2: " + describe(o.pass2);
}

void compare(const Outcome& reference, const Outcome& other, const char* name, const char* what) {
  if (reference == other) return;
  const auto same = [](bool equal) { return equal ? "equal" : "differ"; };
  std::fprintf(stderr,
               "fuzz_criteo_cuda: configuration %s: %s disagrees with the CPU in two passes\n"
               "  cpu:  %s\n  %s: %s\n  decoded rows %s, vocabularies %s, pass 2 arrays %s\n",
               name, what, describe(reference).c_str(), what, describe(other).c_str(),
               same(reference.decoded == other.decoded),
               same(reference.values == other.values && reference.counts == other.counts),
               same(reference.labels == other.labels && reference.dense == other.dense &&
                    reference.sparse == other.sparse));
  std::abort();
}

void check(const std::vector<uint8_t>& input, const Config& c, const char* name,
           const std::vector<ColumnVocab>* given = nullptr) {
  skip_without_cuda();
  const Outcome reference = run(Device::cpu, input, c, false, given);
  compare(reference, run(Device::cuda, input, c, c.single_pass, given), name, "cuda");
  if (c.single_pass)
    compare(reference, run(Device::cpu, input, c, true), name, "the CPU in a single pass");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> text(data, data + size);
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  Config a;
  a.keep_rows = true;
  for (int j = 0; j < kNumSparse; ++j) a.modulus[j] = j % 3 == 0 ? 7 : j % 3 == 1 ? 5000 : 0;
  a.min_freq = 2;
  a.id_base = 2;
  a.oov_id = 1;
  a.log_offset = 3;
  check(text, a, "A");
  Config b;
  b.stop_at_error = true;
  check(text, b, "B");
  Config d = a;
  d.keep_rows = false;
  d.single_pass = true;
  d.min_freq = 1;
  check(text, d, "D");
  // The vocabulary of the first half of the lines applied to all of them by pass 2 alone, as
  // --vocab-from does: values of the second half only, and rare ones, get the OOV ID.
  // (text ends with '\n', so the search finds one.)
  const auto* middle = static_cast<const uint8_t*>(
      std::memchr(text.data() + text.size() / 2, '\n', text.size() - text.size() / 2));
  Config f = d;
  f.single_pass = false;
  f.min_freq = 2;
  const std::vector<uint8_t> first_half(text.begin(), text.begin() + (middle - text.data()) + 1);
  const std::vector<ColumnVocab> given = vocabulary_of(first_half, f);
  check(text, f, "F", &given);
  // The same bytes as binary rows: every word is valid there, so extreme values reach pass 2's
  // Neg2Zero and Logarithm, whose float results must match the CPU's bit for bit.
  const std::vector<uint8_t> rows(data, data + size / kBinaryRowBytes * kBinaryRowBytes);
  if (rows.empty()) return 0;
  Config bin;
  bin.binary = true;
  for (int j = 0; j < kNumSparse; ++j) bin.modulus[j] = j % 2 == 0 ? 1000 : 0;
  bin.id_base = 1;
  bin.oov_id = 0;
  check(rows, bin, "C");
  bin.single_pass = true;
  check(rows, bin, "E");
  return 0;
}
