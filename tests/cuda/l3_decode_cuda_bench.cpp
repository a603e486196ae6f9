// A first timing harness for the CUDA batch decoder (issue 4), for the first session that has a
// GPU: per batch size, the H2D, kernel and D2H times from CUDA events and the wall time of a
// whole decode() (pageable host memory, no overlap yet), medians of repeated runs after warm-up.
// Checks the CUDA tensor against the CPU decoder before timing anything. Exits 77 without a GPU.
//
//   l3_decode_cuda_bench [file.l3 ...]   real photos encoded with `dlprep l3 encode`; without
//                                        files: 8 synthetic 1920x1080 RGB "mixed" images
// The full benchmark (pinned staging, overlap, nvJPEG and PNG baselines, the H2D ceiling) is
// `dlprep l3 bench --device cuda`: tests/bench/l3_cuda_bench.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/device_info.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "l3/batch_decode.hpp"
#include "l3/decode_cuda.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace {

using namespace dlprep;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run(int argc, char** argv) {
  std::vector<Bytes> distinct;
  std::string source;
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) distinct.push_back(read_file(argv[i]));
    source = std::to_string(distinct.size()) + " files from the command line";
  } else {
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    for (uint32_t seed = 1; seed <= 8; ++seed)
      distinct.push_back(l3::encode(
          l3::testing::make_image(1920, 1080, 3, l3::testing::Content::mixed, seed), {0, threads}));
    source = "8 synthetic 1920x1080x3 mixed images (not photos: compression differs)";
  }
  std::printf("l3 cuda decode bench: %s, cuda runtime %s\n", source.c_str(),
              cuda::runtime_version().c_str());

  cuda::L3BatchDecoder gpu;
  const auto cpu = l3::make_batch_decoder_cpu(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("%6s %9s %9s %6s %8s %9s %8s %9s %10s %10s %10s\n", "batch", "in_MB", "out_MB",
              "ratio", "h2d_ms", "kernel_ms", "d2h_ms", "wall_ms", "kern_GB/s", "kern_img/s",
              "wall_img/s");
  for (size_t batch : {1, 16, 64, 256}) {
    std::vector<ByteSpan> files;
    std::vector<const uint8_t*> data;
    for (size_t i = 0; i < batch; ++i) {
      files.emplace_back(distinct[i % distinct.size()]);
      data.push_back(files.back().data());
    }
    const l3::BatchPlan plan = l3::plan_batch(files);
    std::vector<uint8_t> out(plan.output_bytes), want(plan.output_bytes);
    // Correctness before any timing.
    gpu.decode(plan, data.data(), out.data());
    cpu->decode(plan, files, want.data());
    if (out != want) {
      std::fprintf(stderr, "FAIL: batch %zu: the cuda tensor differs from the cpu decoder's\n",
                   batch);
      return 1;
    }
    const int runs = batch >= 64 ? 5 : 20;
    std::vector<double> h2d, kernel, d2h, wall;
    for (int r = 0; r < runs + 2; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      gpu.decode(plan, data.data(), out.data());
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r < 2) continue;  // warm-up
      const cuda::L3DecodeTimings t = gpu.last_timings();
      h2d.push_back(t.h2d_ms);
      kernel.push_back(t.decode_ms);
      d2h.push_back(t.d2h_ms);
      wall.push_back(ms);
    }
    const double k = median(kernel), w = median(wall);
    std::printf("%6zu %9.1f %9.1f %6.2f %8.3f %9.3f %8.3f %9.3f %10.1f %10.0f %10.0f\n", batch,
                plan.input_bytes / 1e6, plan.output_bytes / 1e6,
                double(plan.output_bytes) / double(plan.input_bytes), median(h2d), k, median(d2h),
                w, plan.output_bytes / (k * 1e6), batch / (k / 1e3), batch / (w / 1e3));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string reason = dlprep::cuda::unavailable_reason();
  if (!reason.empty()) {
    std::printf("skipped: %s\n", reason.c_str());
    return 77;
  }
  try {
    return run(argc, argv);
  } catch (const dlprep::Error& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
}
