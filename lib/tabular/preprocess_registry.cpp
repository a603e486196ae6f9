// The one list of criteo-preprocess backends, and the only file in lib/tabular that knows whether
// the CUDA backend was built (DLPREP_TABULAR_WITH_CUDA, set on this file alone by
// lib/tabular/CMakeLists.txt). The CUDA backend (libdlprep_cuda) sees only plain data: this file
// turns ColumnVocab into value/count/ID arrays and back, and words a malformed row's message with
// the CPU parser from the line's text, so that every message is the CPU's to the byte.
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "tabular/preprocess_backend.hpp"

#if DLPREP_TABULAR_WITH_CUDA
#include "core/device_info.hpp"
#include "tabular/preprocess_cuda.hpp"
#endif

namespace dlprep::tabular {
namespace {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  if (name == "fpga") return Device::fpga;
  if (name == "auto") return Device::auto_select;
  throw Error(Errc::invalid_argument,
              "DLPREP_FORCE_DEVICE: unknown device '" + name + "' (cpu, cuda, fpga, auto)");
}

#if DLPREP_TABULAR_WITH_CUDA
// The message of a line the device found malformed, from the CPU parser. A line the CPU accepts
// means the two parsers disagree: a bug, reported as such rather than silently.
std::string describe_bad_line(std::string_view line) {
  std::string text(line);
  if (text.empty() || text.back() != '\n') text += '\n';
  size_t n = text.size();
  text.append(kTsvReadPadding, '\0');
  std::vector<uint32_t> rows;
  TsvPieceResult r = decode_tsv(text.data(), text.data() + n, true, rows);
  if (r.first_bad_line != 0)
    throw Error(Errc::internal,
                "criteo-preprocess on cuda: the device rejected a row that the "
                "CPU parser accepts");
  return r.first_problem;
}

class PreprocessBackendCuda final : public PreprocessBackend {
 public:
  PreprocessBackendCuda() : impl_(cuda::CriteoPreprocessorCuda::default_chunk_bytes()) {}

  std::string_view device_name() const override { return "cuda"; }
  size_t default_chunk_bytes() const override {
    return cuda::CriteoPreprocessorCuda::default_chunk_bytes();
  }
  bool host_decode_cache() const override { return false; }
  bool single_pass() const override { return true; }
  HostBuffer allocate_host(size_t bytes) override {
    return HostBuffer(cuda::criteo_alloc_pinned(bytes), bytes, &cuda::criteo_free_pinned);
  }

  void begin_pass1(const Pass1Setup& setup, std::vector<ColumnVocab>& vocab) override {
    vocab_ = &vocab;
    modulus_ = setup.modulus;
    cuda::CriteoPass1Setup s;
    s.modulus = setup.modulus;
    s.build_vocab = setup.build_vocab;
    s.stop_at_error = setup.stop_at_error;
    s.want_rows = setup.want_rows;
    s.keep_rows = setup.keep_rows;
    s.assign_ids = setup.assign_ids;
    s.id_base = setup.id_base;
    s.int_dense = setup.transform.int_dense;
    s.apply_log = setup.transform.apply_log;
    s.log_offset = setup.transform.log_offset;
    for (int j = 0; j < kNumSparse; ++j) {
      if (setup.build_vocab && j < static_cast<int>(vocab.size())) {
        s.seed_values[j] = &vocab[j].values();
        s.seed_counts[j] = &vocab[j].counts();
      } else {
        s.seed_values[j] = &empty_values_;
        s.seed_counts[j] = &empty_counts_;
      }
    }
    impl_.begin_pass1(s);
  }
  void pass1_chunk(size_t day, const InputChunk& chunk, const PieceSink& sink,
                   const IndexRowsSink&) override {
    auto adapt = [sink](const cuda::CriteoChunkResult& r) { sink(to_piece(r)); };
    if (!chunk.text.empty())
      impl_.pass1_text(day, chunk.text.data(), chunk.text.size(), adapt);
    else
      impl_.pass1_rows(day, chunk.rows.data(), chunk.rows.size() / kNumFields, adapt, chunk.stable);
  }
  void flush() override { impl_.flush(); }
  void sync_vocab() override {
    std::array<std::vector<uint32_t>, kNumSparse> values;
    std::array<std::vector<uint64_t>, kNumSparse> counts;
    impl_.read_vocab(values, counts);
    std::vector<ColumnVocab>& vocab = *vocab_;
    MemoryGuard* guard = vocab.empty() ? nullptr : vocab.front().guard();
    vocab.clear();
    for (int j = 0; j < kNumSparse; ++j) {
      vocab.emplace_back(modulus_[j], guard);
      vocab.back().assign(std::move(values[j]), std::move(counts[j]));
    }
  }
  bool kept_day(size_t day) const override { return impl_.kept_day(day); }

  void begin_pass2(const Pass2Setup& setup, const std::vector<ColumnVocab>& vocab) override {
    cuda::CriteoPass2Setup s;
    s.modulus = setup.modulus;
    s.stop_at_error = setup.stop_at_error;
    s.want_rows = setup.want_rows;
    s.int_dense = setup.int_dense;
    s.apply_log = setup.apply_log;
    s.log_offset = setup.log_offset;
    for (int j = 0; j < kNumSparse; ++j) {
      s.values[j] = &vocab[j].values();
      s.ids[j] = &vocab[j].index_ids();
      s.oov[j] = vocab[j].oov_id();
    }
    impl_.begin_pass2(s);
  }
  void pass2_chunk(const InputChunk& chunk, bool sparse_are_indices,
                   const PieceSink& sink) override {
    if (sparse_are_indices)
      throw Error(Errc::internal, "criteo-preprocess on cuda: no host decode cache");
    auto adapt = [sink](const cuda::CriteoChunkResult& r) { sink(to_piece(r)); };
    if (!chunk.text.empty())
      impl_.pass2_text(chunk.text.data(), chunk.text.size(), adapt);
    else
      impl_.pass2_rows(chunk.rows.data(), chunk.rows.size() / kNumFields, adapt, chunk.stable);
  }
  void pass2_kept_day(size_t day, const PieceSink& sink) override {
    impl_.pass2_kept_day(day, [sink](const cuda::CriteoChunkResult& r) { sink(to_piece(r)); });
  }

  void reset_timings() override { impl_.reset_timings(); }
  BackendTimings timings() const override {
    cuda::CriteoCudaTimings t = impl_.timings();
    BackendTimings b;
    b.h2d_seconds = t.h2d_ms / 1000;
    b.kernel_seconds = t.kernel_ms / 1000;
    b.d2h_seconds = t.d2h_ms / 1000;
    b.alloc_seconds = t.alloc_ms / 1000;
    b.allocations = t.allocations;
    b.wait_seconds = t.wait_ms / 1000;
    b.setup_seconds = t.setup_ms / 1000;
    b.chunks = t.chunks;
    b.kept_rows = t.kept_rows;
    b.log_values_on_host = t.log_values_on_host;
    return b;
  }

 private:
  static PieceOutput to_piece(const cuda::CriteoChunkResult& r) {
    PieceOutput p;
    p.result.lines = r.lines;
    p.result.rows = r.rows;
    p.result.bad_rows = r.bad_rows;
    p.result.first_bad_line = r.first_bad_line;
    if (r.first_bad_line >= 0) p.result.first_problem = describe_bad_line(r.first_bad_text);
    p.rows = r.decoded;
    p.block = RowBlock{r.labels, r.dense, r.sparse, r.rows};
    return p;
  }

  cuda::CriteoPreprocessorCuda impl_;
  std::vector<ColumnVocab>* vocab_ = nullptr;
  std::array<uint32_t, kNumSparse> modulus_{};
  const std::vector<uint32_t> empty_values_;
  const std::vector<uint64_t> empty_counts_;
};
#endif

}  // namespace

std::string criteo_cuda_unavailable_reason() {
#if DLPREP_TABULAR_WITH_CUDA
  return cuda::unavailable_reason();
#else
  return "CUDA was not built in (configure with nvcc present or -DDLPREP_WITH_CUDA=ON)";
#endif
}

std::unique_ptr<PreprocessBackend> make_preprocess_backend(Device device, unsigned cpu_threads) {
  const char* forced = std::getenv("DLPREP_FORCE_DEVICE");
  const bool by_variable = forced != nullptr && *forced;
  if (by_variable) device = parse_device(forced);
  switch (device) {
    case Device::cpu:
      return make_preprocess_backend_cpu(cpu_threads);
    case Device::fpga:
      // The FPGA backend is a separate issue; this is its hook.
      throw Error(Errc::device_unavailable,
                  std::string(by_variable ? "DLPREP_FORCE_DEVICE=fpga" : "--device fpga") +
                      ": this build has no FPGA backend for criteo-preprocess");
    case Device::cuda:
    case Device::auto_select:
      break;
  }
  const std::string reason = criteo_cuda_unavailable_reason();
  if (!reason.empty()) {
    if (device == Device::auto_select) return make_preprocess_backend_cpu(cpu_threads);
    throw Error(
        Errc::device_unavailable,
        std::string(by_variable ? "DLPREP_FORCE_DEVICE=cuda" : "--device cuda") + ": " + reason);
  }
#if DLPREP_TABULAR_WITH_CUDA
  return std::make_unique<PreprocessBackendCuda>();
#else
  return make_preprocess_backend_cpu(cpu_threads);  // unreachable: the reason is never empty
#endif
}

}  // namespace dlprep::tabular
