// libFuzzer target for the vocab.json that --vocab-from and a resumed run read (vocab_dir.hpp:
// read_vocab_dir, apply_vocab_conventions), or, in a normal build, the function that
// replay_main.cpp runs over every file of corpus/vocab_json/.
//
// The input becomes the vocab.json of a vocabulary directory whose arrays are valid (three values
// per column, written once). Hostile input may only throw dlprep::Error. A vocabulary that reads
// back has 26 columns whose sizes its arrays give; conventions that apply are ones the pipeline
// accepts (a minimum frequency of at least 1, IDs within int32, a positive log offset, a layout).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "tabular/criteo_preprocess.hpp"
#include "tabular/memory_guard.hpp"
#include "tabular/vocab_dir.hpp"

using namespace dlprep;
using namespace dlprep::tabular;
namespace fs = std::filesystem;

namespace {

// The directory, made once per process and removed at its exit: its arrays stay, vocab.json is
// each input.
struct VocabDir {
  fs::path path = fs::temp_directory_path() / ("dlprep-fuzz-vocab-" + std::to_string(::getpid()));
  VocabDir() {
    std::vector<ColumnVocab> columns;
    const uint32_t values[] = {7, 3, 11};
    for (int j = 0; j < kNumSparse; ++j) {
      columns.emplace_back(0);
      columns.back().add(values, 3);
    }
    write_vocab_dir(path, {}, columns, PreprocessOptions(), nlohmann::json::object());
  }
  ~VocabDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& vocab_dir() {
  static const VocabDir dir;
  return dir.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path& dir = vocab_dir();
  write_file_atomic(dir / "vocab.json", ByteSpan(data, size));
  try {
    const SavedVocab v = read_vocab_dir(dir);
    if (v.columns.size() != kNumSparse) std::abort();
    for (const ColumnVocab& c : v.columns)
      if (c.size() != 3 || c.counts().size() != 3) std::abort();
  } catch (const Error&) {
  }
  // As --vocab-from and --max-memory read it: the table sizes computed from the counts first.
  try {
    (void)vocab_dir_bytes(dir);
    MemoryGuard guard(uint64_t{1} << 30);
    (void)read_vocab_dir(dir, &guard);
  } catch (const Error&) {
  }
  try {
    PreprocessOptions o;
    apply_vocab_conventions(dir, o);
    if (o.min_freq < 1 || o.id_base < 0 || o.id_base > INT32_MAX || !(o.log_offset > 0) ||
        (o.oov_id && (*o.oov_id < 0 || *o.oov_id > INT32_MAX)) ||
        o.output_format == OutputFormat::none)
      std::abort();
  } catch (const Error&) {
  }
  return 0;
}
