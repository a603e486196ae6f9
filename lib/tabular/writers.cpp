#include "tabular/writers.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/float16.hpp"
#include "tabular/npy_format.hpp"

namespace dlprep::tabular {
namespace fs = std::filesystem;
namespace {

ByteSpan as_bytes(const void* p, size_t n) { return {static_cast<const uint8_t*>(p), n}; }

void check_count(uint64_t written, std::optional<uint64_t> expected, const std::string& stem) {
  if (expected && written != *expected) {
    throw Error(Errc::corrupt_data, stem + ": the input changed during the run (" +
                                        std::to_string(*expected) + " rows counted first, " +
                                        std::to_string(written) + " read later)");
  }
}

class NpyWriter final : public DayWriter {
 public:
  NpyWriter(const fs::path& dir, const std::string& stem, std::optional<uint64_t> rows)
      : stem_(stem),
        expected_(rows),
        dense_(dir / (stem + "_dense.npy")),
        sparse_(dir / (stem + "_sparse.npy")),
        labels_(dir / (stem + "_labels.npy")) {
    // An unknown count is written as 0 and completed at commit.
    put_headers(rows.value_or(0),
                [](AtomicFile& f, const std::string& h) { f.write(as_bytes(h.data(), h.size())); });
  }
  void write(const RowBlock& b) override {
    dense_.write(as_bytes(b.dense, b.rows * kNumDense * 4));
    sparse_.write(as_bytes(b.sparse, b.rows * kNumSparse * 4));
    labels_.write(as_bytes(b.labels, b.rows * 4));
    written_ += b.rows;
  }

 private:
  void finish_files() override {
    check_count(written_, expected_, stem_);
    if (!expected_) {
      const size_t placeholder = npy_header("<i4", 0, 1).size();
      put_headers(written_, [&](AtomicFile& f, const std::string& h) {
        if (h.size() != placeholder)
          throw Error(Errc::internal, stem_ + ": the .npy header changed size");
        f.write_at(0, as_bytes(h.data(), h.size()));
      });
    }
    dense_.close();
    sparse_.close();
    labels_.close();
  }
  void publish_files() override {
    dense_.commit();
    sparse_.commit();
    labels_.commit();
  }

  template <class Put>
  void put_headers(uint64_t rows, Put&& put) {
    put(dense_, npy_header("<f4", rows, kNumDense));
    put(sparse_, npy_header("<i4", rows, kNumSparse));
    put(labels_, npy_header("<i4", rows, 1));
  }

  std::string stem_;
  std::optional<uint64_t> expected_;
  uint64_t written_ = 0;
  AtomicFile dense_, sparse_, labels_;
};

// DLRM/MLPerf-v1: int32 x 40 per row, no header.
class DlrmWriter final : public DayWriter {
 public:
  DlrmWriter(const fs::path& dir, const std::string& stem, std::optional<uint64_t> rows)
      : stem_(stem), expected_(rows), file_(dir / (stem + ".bin")) {}
  void write(const RowBlock& b) override {
    buf_.resize(b.rows * kNumFields);
    for (size_t r = 0; r < b.rows; ++r) {
      uint32_t* out = buf_.data() + r * kNumFields;
      out[0] = static_cast<uint32_t>(b.labels[r]);
      std::memcpy(out + 1, b.dense + r * kNumDense, kNumDense * 4);
      std::memcpy(out + 1 + kNumDense, b.sparse + r * kNumSparse, kNumSparse * 4);
    }
    file_.write(as_bytes(buf_.data(), buf_.size() * 4));
    written_ += b.rows;
  }

 private:
  void finish_files() override {
    check_count(written_, expected_, stem_);
    file_.close();
  }
  void publish_files() override { file_.commit(); }

  std::string stem_;
  std::optional<uint64_t> expected_;
  uint64_t written_ = 0;
  AtomicFile file_;
  std::vector<uint32_t> buf_;
};

// NVIDIA split layout: one file per column group, no headers, NVIDIA's types (writers.hpp).
class SplitWriter final : public DayWriter {
 public:
  SplitWriter(const fs::path& dir, const std::string& stem, std::optional<uint64_t> rows,
              std::span<const uint64_t> table_sizes)
      : stem_(stem), expected_(rows) {
    if (table_sizes.size() != kNumSparse)
      throw Error(Errc::internal, stem + ": the split layout needs every column's table size");
    fs::path d = dir / stem;
    label_ = std::make_unique<AtomicFile>(d / "label.bin");
    numerical_ = std::make_unique<AtomicFile>(d / "numerical.bin");
    for (int j = 0; j < kNumSparse; ++j) {
      cat_.push_back(std::make_unique<AtomicFile>(d / ("cat_" + std::to_string(j) + ".bin")));
      id_bytes_[static_cast<size_t>(j)] =
          static_cast<size_t>(split_id_bytes(table_sizes[static_cast<size_t>(j)]));
    }
  }
  void write(const RowBlock& b) override {
    labels_.resize(b.rows);
    for (size_t r = 0; r < b.rows; ++r) labels_[r] = b.labels[r] != 0 ? 1 : 0;  // NumPy's bool
    label_->write(as_bytes(labels_.data(), b.rows));
    half_.resize(b.rows * kNumDense);
    floats_to_halves(b.dense, half_.data(), half_.size());
    numerical_->write(as_bytes(half_.data(), half_.size() * 2));
    // Every column's IDs gathered tile by tile, so that a tile's rows stay in cache while their 26
    // columns are read (a column at a time over the whole block wrote 12% slower at 1M rows). IDs
    // are below the column's table size, so narrowing keeps every value; the bytes are in the
    // host's order, little-endian like every output here.
    constexpr size_t kTileRows = 1024;
    for (size_t j = 0; j < kNumSparse; ++j) columns_[j].resize(b.rows * id_bytes_[j]);
    for (size_t r0 = 0; r0 < b.rows; r0 += kTileRows) {
      const size_t r1 = std::min(b.rows, r0 + kTileRows);
      for (size_t j = 0; j < kNumSparse; ++j) {
        const int32_t* id = b.sparse + j;
        uint8_t* out = columns_[j].data();
        switch (id_bytes_[j]) {
          case 1:
            for (size_t r = r0; r < r1; ++r) out[r] = static_cast<uint8_t>(id[r * kNumSparse]);
            break;
          case 2:
            for (size_t r = r0; r < r1; ++r) {
              const auto v = static_cast<int16_t>(id[r * kNumSparse]);
              std::memcpy(out + 2 * r, &v, 2);
            }
            break;
          default:
            for (size_t r = r0; r < r1; ++r) std::memcpy(out + 4 * r, &id[r * kNumSparse], 4);
        }
      }
    }
    for (size_t j = 0; j < kNumSparse; ++j)
      cat_[j]->write(as_bytes(columns_[j].data(), columns_[j].size()));
    written_ += b.rows;
  }

 private:
  void finish_files() override {
    check_count(written_, expected_, stem_);
    label_->close();
    numerical_->close();
    for (auto& f : cat_) f->close();
  }
  void publish_files() override {
    label_->commit();
    numerical_->commit();
    for (auto& f : cat_) f->commit();
  }

  std::string stem_;
  std::optional<uint64_t> expected_;
  uint64_t written_ = 0;
  std::unique_ptr<AtomicFile> label_, numerical_;
  std::vector<std::unique_ptr<AtomicFile>> cat_;
  std::array<size_t, kNumSparse> id_bytes_{};
  std::vector<uint8_t> labels_;
  std::vector<uint16_t> half_;
  std::array<std::vector<uint8_t>, kNumSparse> columns_;
};

class SplitDayWriter final : public DayWriter {
 public:
  SplitDayWriter(std::unique_ptr<DayWriter> a, std::unique_ptr<DayWriter> b, uint64_t first_rows)
      : a_(std::move(a)), b_(std::move(b)), left_(first_rows) {}
  void write(const RowBlock& block) override {
    RowBlock x = block;
    size_t to_a = static_cast<size_t>(std::min<uint64_t>(left_, x.rows));
    if (to_a > 0) {
      RowBlock head = x;
      head.rows = to_a;
      a_->write(head);
      left_ -= to_a;
    }
    if (to_a < x.rows) {
      x.labels += to_a;
      x.dense += to_a * kNumDense;
      x.sparse += to_a * kNumSparse;
      x.rows -= to_a;
      b_->write(x);
    }
  }

 private:
  void finish_files() override {
    a_->finish();
    b_->finish();
  }
  void publish_files() override {
    a_->commit();
    b_->commit();
  }

  std::unique_ptr<DayWriter> a_, b_;
  uint64_t left_;
};

}  // namespace

std::vector<fs::path> output_files(OutputFormat format, const fs::path& out_dir,
                                   const std::string& stem) {
  switch (format) {
    case OutputFormat::npy:
      return {out_dir / (stem + "_dense.npy"), out_dir / (stem + "_sparse.npy"),
              out_dir / (stem + "_labels.npy")};
    case OutputFormat::dlrm:
      return {out_dir / (stem + ".bin")};
    case OutputFormat::split: {
      std::vector<fs::path> v{out_dir / stem / "label.bin", out_dir / stem / "numerical.bin"};
      for (int j = 0; j < kNumSparse; ++j)
        v.push_back(out_dir / stem / ("cat_" + std::to_string(j) + ".bin"));
      return v;
    }
    case OutputFormat::none:
      break;
  }
  return {};
}

int split_id_bytes(uint64_t table_size) {
  return table_size < INT8_MAX ? 1 : table_size < INT16_MAX ? 2 : 4;
}

std::unique_ptr<DayWriter> open_day_writer(OutputFormat format, const fs::path& out_dir,
                                           const std::string& stem, std::optional<uint64_t> rows,
                                           std::span<const uint64_t> table_sizes) {
  switch (format) {
    case OutputFormat::npy:
      return std::make_unique<NpyWriter>(out_dir, stem, rows);
    case OutputFormat::dlrm:
      return std::make_unique<DlrmWriter>(out_dir, stem, rows);
    case OutputFormat::split:
      return std::make_unique<SplitWriter>(out_dir, stem, rows, table_sizes);
    case OutputFormat::none:
      break;
  }
  throw Error(Errc::internal, "no writer for output format none");
}

void write_table_sizes(OutputFormat format, const fs::path& out_dir,
                       std::span<const uint64_t> sizes) {
  std::string file;
  if (format == OutputFormat::dlrm) {
    // DLRM's loaders read them from PREFIX_fea_count.npz ("counts", int32 per column); the day
    // files are day_N.bin, so PREFIX is OUTDIR/day.
    std::vector<int32_t> counts;
    for (uint64_t n : sizes) counts.push_back(static_cast<int32_t>(n));
    std::string npy = npy_header("<i4", counts.size(), 0);
    npy.append(reinterpret_cast<const char*>(counts.data()), counts.size() * sizeof(int32_t));
    file = npz_archive({{"counts", npy}});
    write_file_if_changed(out_dir / "day_fea_count.npz", as_bytes(file.data(), file.size()));
  } else if (format == OutputFormat::split) {
    // NVIDIA's split_dataset.py takes the values in the file's order (so not a sorted json), and
    // its loaders derive each cat_J.bin's type from them, as split_id_bytes() did.
    nlohmann::ordered_json table;
    for (size_t j = 0; j < sizes.size(); ++j) table["cat_" + std::to_string(j)] = sizes[j];
    file = table.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    write_file_if_changed(out_dir / "model_size.json", as_bytes(file.data(), file.size()));
  }
}

std::unique_ptr<DayWriter> split_writer(std::unique_ptr<DayWriter> first,
                                        std::unique_ptr<DayWriter> second, uint64_t first_rows) {
  return std::make_unique<SplitDayWriter>(std::move(first), std::move(second), first_rows);
}

}  // namespace dlprep::tabular
