// The nvJPEG baseline of the batch benchmark (batch_bench.hpp, run_nvjpeg_bench): adapts
// cuda::NvjpegBatchDecoder (cuda/l3/jpeg_nvjpeg.hpp, no CUDA types). Built only with nvJPEG
// (lib/l3/CMakeLists.txt chooses the file); batch_decode_registry.cpp is its only caller.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/device_memory.hpp"
#include "core/error.hpp"
#include "l3/batch_bench.hpp"
#include "l3/batch_decode_backends.hpp"
#include "l3/jpeg_nvjpeg.hpp"

namespace dlprep::l3 {
namespace {

// PSNR in dB of an 8-bit RGB image against the original pixels (99 when identical).
double psnr_db(const uint8_t* got, const Image& original) {
  const size_t n = original.size_bytes();
  double sum = 0;
  for (size_t k = 0; k < n; ++k) {
    const double d = double(got[k]) - double(original.data()[k]);
    sum += d * d;
  }
  if (sum == 0) return 99;
  return 10 * std::log10(255.0 * 255.0 * double(n) / sum);
}

std::vector<JpegBenchRow> run_one(cuda::NvjpegBatchDecoder& decoder,
                                  std::span<const ByteSpan> jpegs, std::span<const Image> originals,
                                  const BatchBenchParams& params) {
  std::vector<int> widths(jpegs.size());
  for (size_t i = 0; i < jpegs.size(); ++i) {
    int w = 0, h = 0, c = 0;
    decoder.image_info(jpegs[i].data(), jpegs[i].size(), &w, &h, &c);
    const Image& o = originals[i];
    if (w != int(o.width()) || h != int(o.height()) || c != 3 || o.channels() != 3)
      throw Error(Errc::mismatch, "nvjpeg: jpeg " + std::to_string(i) + " is " + std::to_string(w) +
                                      "x" + std::to_string(h) + "x" + std::to_string(c) +
                                      ", its original " + std::to_string(o.width()) + "x" +
                                      std::to_string(o.height()) + "x" +
                                      std::to_string(o.channels()) + " (expected RGB, same size)");
    widths[i] = w;
  }
  std::vector<JpegBenchRow> rows;
  for (size_t batch : params.batch_sizes) {
    std::vector<const uint8_t*> data(batch);
    std::vector<size_t> sizes(batch);
    std::vector<uint64_t> offsets(batch);
    std::vector<int> batch_widths(batch);
    uint64_t total = 0;
    for (size_t i = 0; i < batch; ++i) {
      const size_t d = i % jpegs.size();
      data[i] = jpegs[d].data();
      sizes[i] = jpegs[d].size();
      offsets[i] = total;
      batch_widths[i] = widths[d];
      total += originals[d].size_bytes();
    }
    cuda::Allocation out(cuda::Allocation::Kind::device, total);
    // Checked once before it is timed: every distinct image against its original.
    (void)decoder.decode(data.data(), sizes.data(), batch, out.data(), offsets.data(),
                         batch_widths.data());
    JpegBenchRow row;
    row.decoder = decoder.name();
    row.batch = batch;
    row.pixel_bytes = total;
    row.min_psnr_db = 99;
    Bytes host;
    for (size_t i = 0; i < std::min(batch, jpegs.size()); ++i) {
      host.resize(originals[i].size_bytes());
      cuda::copy_to_host(host.data(), out.data() + offsets[i], host.size());
      row.min_psnr_db = std::min(row.min_psnr_db, psnr_db(host.data(), originals[i]));
    }
    if (row.min_psnr_db < 30)
      throw Error(Errc::mismatch, row.decoder + ": batch " + std::to_string(batch) +
                                      ": decoded pictures differ from their originals (PSNR " +
                                      std::to_string(row.min_psnr_db) + " dB < 30)");
    row.time = measure_self_timed(params.timing, [&](bool) {
      return decoder.decode(data.data(), sizes.data(), batch, out.data(), offsets.data(),
                            batch_widths.data()) /
             1e3;
    });
    row.images_per_s = row.time.median_rate(double(batch));
    row.gb_s = row.time.median_s > 0 ? double(total) / row.time.median_s / 1e9 : 0;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

std::vector<JpegBenchRow> run_nvjpeg_bench_cuda(std::span<const ByteSpan> jpegs,
                                                std::span<const Image> originals,
                                                const BatchBenchParams& params, std::string* note) {
  if (jpegs.empty() || jpegs.size() != originals.size())
    throw Error(Errc::invalid_argument, "nvjpeg bench: " + std::to_string(jpegs.size()) +
                                            " jpegs for " + std::to_string(originals.size()) +
                                            " images (expected one each, in the same order)");
  std::vector<JpegBenchRow> rows;
  for (bool hardware : {true, false}) {
    try {
      cuda::NvjpegBatchDecoder decoder(hardware);
      for (JpegBenchRow& row : run_one(decoder, jpegs, originals, params))
        rows.push_back(std::move(row));
    } catch (const Error& e) {
      // The hardware engine may be absent or refuse a file: said, and the default backend runs.
      if (!hardware || e.code() == Errc::mismatch) throw;
      if (note != nullptr) *note += std::string(note->empty() ? "" : "; ") + e.what();
    }
  }
  return rows;
}

}  // namespace dlprep::l3
