// The batch-decoder benchmark (batch_bench.hpp). Order of work, per batch size: build the batch
// (the distinct files repeated), then for each layout decode it once on the device and compare
// every image's tensor with the CPU decoder's tensor of the same file (so nothing is timed before
// it is known to be right), then time; for the headline layout also stream it through a pipeline
// from pinned and from pageable host memory. The copy ceilings and the batch-1 latency come
// first, from the same decoder.
#include "l3/batch_bench.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "l3/batch_output.hpp"

namespace dlprep::l3 {
namespace {

constexpr uint8_t kPoison = 0xCD;

DecodeOptions options_for(OutputLayout layout) {
  DecodeOptions o;
  o.layout = layout;
  if (layout != OutputLayout::nhwc_u8) {  // ImageNet's normalisation, as a trainer would ask
    o.mean = {123.675f, 116.28f, 103.53f, 127.5f};
    o.std = {58.395f, 57.12f, 57.375f, 64.0f};
  }
  return o;
}

std::string describe(size_t batch, OutputLayout layout) {
  return "batch " + std::to_string(batch) + ", " + std::string(output_layout_name(layout));
}

// The reference tensor of the distinct files in one layout, with its plan (image i's window at
// plan.images[i].dst).
struct Reference {
  BatchPlan plan;
  Bytes tensor;
};

// Compares the device tensor of a batch (image i is distinct file i mod D) with the reference.
void verify(const BatchPlan& plan, const Bytes& got, const Reference& ref,
            const std::string& what) {
  const size_t distinct = ref.plan.images.size();
  const uint32_t size = element_bytes(plan.layout);
  for (size_t i = 0; i < plan.images.size(); ++i) {
    const BatchImage& b = plan.images[i];
    const BatchImage& r = ref.plan.images[i % distinct];
    const size_t bytes = b.out_elements() * size;
    if (b.out_elements() != r.out_elements() ||
        std::memcmp(got.data() + b.dst, ref.tensor.data() + r.dst, bytes) != 0) {
      size_t k = 0;
      while (k < bytes && got[b.dst + k] == ref.tensor[r.dst + k]) ++k;
      throw Error(Errc::mismatch, what + ": image " + std::to_string(i) + " differs from the cpu " +
                                      "decoder's tensor at byte " + std::to_string(k) + " of " +
                                      std::to_string(bytes));
    }
  }
}

double gb_s(uint64_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

}  // namespace

BatchBenchReport run_batch_bench(BatchDecoder& decoder, std::span<const ByteSpan> files,
                                 const BatchBenchParams& params) {
  if (files.empty()) throw Error(Errc::invalid_argument, "l3 batch bench: no files");
  if (params.batch_sizes.empty() || params.layouts.empty())
    throw Error(Errc::invalid_argument, "l3 batch bench: no batch sizes or no layouts");
  for (size_t b : params.batch_sizes)
    if (b == 0) throw Error(Errc::invalid_argument, "l3 batch bench: batch size 0");
  BatchBenchReport report;
  report.device = decoder.device_description();
  report.backend = std::string(decoder.device_name());
  report.pipeline_depth = params.pipeline_depth;
  const auto cpu = make_batch_decoder_cpu(params.cpu_threads);

  // The distinct files, their compression ratio, and the reference tensors of every layout.
  std::vector<Reference> refs;
  for (OutputLayout layout : params.layouts) {
    Reference ref;
    ref.tensor = cpu->decode(files, &ref.plan, options_for(layout));
    refs.push_back(std::move(ref));
  }
  report.distinct_images = static_cast<unsigned>(files.size());
  report.distinct_file_bytes = refs[0].plan.input_bytes;
  report.distinct_pixel_bytes = refs[0].plan.pixel_bytes;
  report.ratio = static_cast<double>(report.distinct_file_bytes) /
                 static_cast<double>(std::max<uint64_t>(report.distinct_pixel_bytes, 1));

  // The ceilings.
  report.copy = decoder.measure_copy_bandwidth(params.copy_bytes, params.timing);
  report.ceiling_gb_s = report.ratio > 0 ? report.copy.h2d_pinned_gb_s / report.ratio : 0;

  // Batch-1 latency of the first image, headline layout.
  {
    const std::vector<ByteSpan> one = {files[0]};
    const BatchPlan plan = plan_batch(one, options_for(params.layouts[0]));
    auto in = decoder.allocate(MemoryKind::device, plan.input_bytes);
    auto pinned = decoder.allocate(MemoryKind::pinned_host, plan.input_bytes);
    auto out = decoder.allocate(MemoryKind::device, plan.output_bytes);
    decoder.upload(plan, one, *in);
    decoder.copy_in(*pinned, 0, files[0].data(), files[0].size());
    Bytes host(plan.output_bytes, kPoison);
    decoder.decode(plan, one, host.data());
    verify(plan, host, refs[0], "latency, " + describe(1, params.layouts[0]));
    report.latency_kernel = measure_self_timed(params.timing, [&](bool) {
      decoder.decode_device(plan, *in, *out);
      return decoder.last_timings().decode_ms / 1e3;
    });
    const auto pipeline = decoder.make_pipeline({1, false});
    report.latency_pinned = measure(params.timing, [&] {
      pipeline->submit(plan, *pinned, *out);
      (void)pipeline->wait();
    });
    report.latency_host = measure(params.timing, [&] { decoder.decode(plan, one, host.data()); });
  }

  for (size_t batch : params.batch_sizes) {
    std::vector<ByteSpan> in(batch);
    for (size_t i = 0; i < batch; ++i) in[i] = files[i % files.size()];
    for (size_t l = 0; l < params.layouts.size(); ++l) {
      const OutputLayout layout = params.layouts[l];
      const std::string what = describe(batch, layout);
      BatchBenchRow row;
      row.batch = batch;
      row.layout = layout;
      const BatchPlan plan = plan_batch(in, options_for(layout));
      row.input_bytes = plan.input_bytes;
      row.pixel_bytes = plan.pixel_bytes;
      row.output_bytes = plan.output_bytes;

      // Device-resident: checked once (poisoned output), then timed.
      auto device_in = decoder.allocate(MemoryKind::device, plan.input_bytes);
      auto device_out = decoder.allocate(MemoryKind::device, plan.output_bytes);
      decoder.upload(plan, in, *device_in);
      {
        Bytes got(plan.output_bytes, kPoison);
        decoder.copy_in(*device_out, 0, got.data(), got.size());
        decoder.decode_device(plan, *device_in, *device_out);
        decoder.copy_out(got.data(), *device_out, 0, got.size());
        verify(plan, got, refs[l], what + ", device-resident");
      }
      row.verified = true;
      row.resident = measure_self_timed(params.timing, [&](bool) {
        decoder.decode_device(plan, *device_in, *device_out);
        return decoder.last_timings().decode_ms / 1e3;
      });
      row.resident_images_per_s = row.resident.median_rate(static_cast<double>(batch));
      row.resident_gb_s = gb_s(plan.pixel_bytes, row.resident.median_s);
      device_in.reset();

      if (l == 0) {
        // End to end through the pipeline: `depth` output tensors in turn, the same input.
        const unsigned depth = params.pipeline_depth;
        const auto pipeline = decoder.make_pipeline({depth, false});
        auto pinned_in = decoder.allocate(MemoryKind::pinned_host, plan.input_bytes);
        decoder.upload(plan, in, *pinned_in);
        std::vector<std::unique_ptr<BatchBuffer>> outs;
        outs.push_back(std::move(device_out));
        while (outs.size() < depth)
          outs.push_back(decoder.allocate(MemoryKind::device, plan.output_bytes));
        const size_t batches = std::max<size_t>(4, (params.pipeline_images + batch - 1) / batch);
        row.pipeline_batches = batches;
        // The pipeline's own output, checked before it is timed.
        for (size_t k = 0; k < 2; ++k) {
          Bytes got(plan.output_bytes, kPoison);
          decoder.copy_in(*outs[k % depth], 0, got.data(), got.size());
          if (k == 0)
            pipeline->submit(plan, *pinned_in, *outs[0]);
          else
            pipeline->submit(plan, in, *outs[k % depth]);
          (void)pipeline->wait();
          decoder.copy_out(got.data(), *outs[k % depth], 0, got.size());
          verify(plan, got, refs[0],
                 what + (k == 0 ? ", pipeline from pinned memory"
                                : ", pipeline from pageable memory"));
        }
        std::vector<double> h2d_ms, kernel_ms;
        auto stream = [&](bool pinned) {
          h2d_ms.clear();
          kernel_ms.clear();
          const Stopwatch clock;
          auto collect = [&] {
            const BatchResult r = pipeline->wait();
            h2d_ms.push_back(r.timings.h2d_ms);
            kernel_ms.push_back(r.timings.decode_ms);
          };
          for (size_t k = 0; k < batches; ++k) {
            if (pipeline->in_flight() == depth) collect();
            if (pinned)
              pipeline->submit(plan, *pinned_in, *outs[k % depth]);
            else
              pipeline->submit(plan, in, *outs[k % depth]);
          }
          while (pipeline->in_flight() > 0) collect();
          return clock.seconds();
        };
        const TimingParams runs = {1, params.pipeline_repeats, 0};
        row.pinned = measure_self_timed(runs, [&](bool) { return stream(true); });
        row.pinned_h2d_ms = median(h2d_ms);
        row.pinned_kernel_ms = median(kernel_ms);
        row.pinned_images_per_s = row.pinned.median_rate(static_cast<double>(batch * batches));
        row.pinned_gb_s = gb_s(plan.pixel_bytes * batches, row.pinned.median_s);
        row.pageable = measure_self_timed(runs, [&](bool) { return stream(false); });
        row.pageable_images_per_s = row.pageable.median_rate(static_cast<double>(batch * batches));
        row.pageable_gb_s = gb_s(plan.pixel_bytes * batches, row.pageable.median_s);
      }
      report.rows.push_back(std::move(row));
    }
  }
  return report;
}

}  // namespace dlprep::l3
