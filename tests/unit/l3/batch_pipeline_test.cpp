// The device-resident API and the pipeline, on the CPU backend (whose "device" is host memory):
// the contract and the bookkeeping that the CUDA backend shares (SlotRing) are tested here,
// without a GPU; tests/cuda/l3_decode_cuda_test.cpp runs the same calls on the CUDA backend.
#include "l3/batch_pipeline.hpp"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "l3/batch_decode.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace dlprep::l3 {
namespace {

using testing::Content;
using testing::make_image;

std::vector<Bytes> some_files(uint32_t seed, size_t count) {
  std::vector<Bytes> files;
  for (size_t i = 0; i < count; ++i)
    files.push_back(encode(make_image(20 + 7 * static_cast<uint32_t>(i), 13, 3, Content::mixed,
                                      seed + static_cast<uint32_t>(i)),
                           {8, 1}));
  return files;
}
std::vector<ByteSpan> spans(const std::vector<Bytes>& files) {
  return {files.begin(), files.end()};
}

// Runs `body` in a forked child under a 20 s alarm (a hang fails instead of stalling the suite)
// and returns the child's exit status: body's result, or -1 when a signal ended it.
template <typename Body>
int exit_status_in_child(Body&& body) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    alarm(20);
    _exit(body());
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_CASE("SlotRing hands out slots in turn and retires batches in order") {
  SlotRing ring(3);
  CHECK(ring.empty());
  CHECK_THROWS_AS(ring.front(), Error);
  CHECK_THROWS_AS(ring.pop(), Error);
  for (uint64_t t = 0; t < 3; ++t) {
    const SlotRing::Entry e = ring.push();
    CHECK(e.ticket == t);
    CHECK(e.slot == t);
  }
  CHECK(ring.full());
  CHECK(ring.in_flight() == 3);
  try {
    (void)ring.push();
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::invalid_argument);
  }
  CHECK(ring.front().ticket == 0);
  ring.pop();
  const SlotRing::Entry e = ring.push();  // ticket 3 reuses slot 0, the one just retired
  CHECK(e.ticket == 3);
  CHECK(e.slot == 0);
  CHECK(ring.front().slot == 1);
  for (int i = 0; i < 3; ++i) ring.pop();
  CHECK(ring.empty());
  CHECK_THROWS_AS(SlotRing(0), Error);
  CHECK_THROWS_AS(SlotRing(SlotRing::kMaxDepth + 1), Error);
}

TEST_CASE("decode_device on device buffers equals decode into host memory") {
  const std::vector<Bytes> files = some_files(1, 4);
  const auto cpu = make_batch_decoder_cpu(2);
  DecodeOptions o;
  o.layout = OutputLayout::nchw_f32;
  o.mean = {1, 2, 3, 4};
  BatchPlan plan;
  const Bytes want = cpu->decode(spans(files), &plan, o);
  auto in = cpu->allocate(MemoryKind::device, plan.input_bytes);
  auto out = cpu->allocate(MemoryKind::device, plan.output_bytes);
  CHECK(in->kind() == MemoryKind::device);
  CHECK(in->size() == plan.input_bytes);
  cpu->upload(plan, spans(files), *in);
  cpu->decode_device(plan, *in, *out);
  Bytes got(plan.output_bytes);
  cpu->copy_out(got.data(), *out, 0, got.size());
  CHECK(got == want);
  CHECK(cpu->last_timings().decode_ms >= 0);

  // Wrong kinds, short buffers and ranges are the caller's errors.
  auto pinned = cpu->allocate(MemoryKind::pinned_host, plan.output_bytes);
  auto small = cpu->allocate(MemoryKind::device, plan.output_bytes - 1);
  CHECK_THROWS_AS(cpu->decode_device(plan, *in, *pinned), Error);
  CHECK_THROWS_AS(cpu->decode_device(plan, *in, *small), Error);
  CHECK_THROWS_AS(cpu->copy_out(got.data(), *out, 1, out->size()), Error);
  CHECK_THROWS_AS(cpu->copy_in(*out, out->size() + 1, got.data(), 0), Error);
  std::vector<ByteSpan> fewer = spans(files);
  fewer.pop_back();
  CHECK_THROWS_AS(cpu->upload(plan, fewer, *in), Error);
}

TEST_CASE("a pipeline returns batches in order, reports a damaged one and goes on") {
  const auto cpu = make_batch_decoder_cpu(2);
  std::vector<std::vector<Bytes>> batches = {some_files(10, 3), some_files(20, 2),
                                             some_files(30, 5), some_files(40, 1)};
  batches[2][1].back() ^= 0x20;  // the last patch of the last channel of image 1 of batch 2
  std::vector<BatchPlan> plans;
  std::vector<Bytes> want;
  for (const auto& batch : batches) {
    plans.push_back(plan_batch(spans(batch)));
    want.push_back(Bytes(plans.back().output_bytes));
    try {
      cpu->decode(plans.back(), spans(batch), want.back().data());
    } catch (const Error&) {
    }
  }
  PipelineOptions options;
  options.depth = 2;
  options.low_priority = true;
  const auto pipeline = cpu->make_pipeline(options);
  CHECK(pipeline->depth() == 2);
  CHECK_THROWS_AS(pipeline->wait(), Error);  // nothing in flight
  std::vector<std::unique_ptr<BatchBuffer>> outs;
  for (const BatchPlan& plan : plans)
    outs.push_back(cpu->allocate(MemoryKind::device, plan.output_bytes));
  // Pinned input for batch 3, files for the others.
  auto pinned = cpu->allocate(MemoryKind::pinned_host, plans[3].input_bytes);
  for (size_t i = 0; i < batches[3].size(); ++i)
    cpu->copy_in(*pinned, plans[3].images[i].src, batches[3][i].data(), batches[3][i].size());

  CHECK(pipeline->submit(plans[0], spans(batches[0]), *outs[0]) == 0);
  CHECK(pipeline->submit(plans[1], spans(batches[1]), *outs[1]) == 1);
  CHECK(pipeline->in_flight() == 2);
  try {
    (void)pipeline->submit(plans[2], spans(batches[2]), *outs[2]);
    FAIL("a third batch was accepted at depth 2");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::invalid_argument);
  }
  CHECK(pipeline->wait().ticket == 0);
  CHECK(pipeline->submit(plans[2], spans(batches[2]), *outs[2]) == 2);
  CHECK(pipeline->wait().ticket == 1);
  CHECK(pipeline->submit(plans[3], *pinned, *outs[3]) == 3);
  try {
    (void)pipeline->wait();
    FAIL("the damaged batch was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Errc::corrupt_data);
    CHECK(std::string(e.what()) == "image 1: l3: patch 7 of channel 2: checksum mismatch");
  }
  const BatchResult last = pipeline->wait();
  CHECK(last.ticket == 3);
  CHECK(last.timings.decode_ms >= 0);
  CHECK(pipeline->in_flight() == 0);
  for (size_t b : {0, 1, 3}) {
    Bytes got(plans[b].output_bytes);
    cpu->copy_out(got.data(), *outs[b], 0, got.size());
    CHECK(got == want[b]);
  }
  // A pinned input where device memory is expected, and the reverse.
  CHECK_THROWS_AS(pipeline->submit(plans[3], *outs[3], *outs[3]), Error);
  CHECK_THROWS_AS(pipeline->submit(plans[3], *pinned, *pinned), Error);
  CHECK(pipeline->in_flight() == 0);
}

// The cpu pipeline decodes on a worker thread while the caller goes on, so these hold only if
// submit() copies the files it is given and the destructor finishes what is in flight.
TEST_CASE("the cpu pipeline takes its own copy of the files and finishes its batches") {
  const auto cpu = make_batch_decoder_cpu(2);
  std::vector<std::vector<Bytes>> batches;
  std::vector<BatchPlan> plans;
  std::vector<Bytes> want;
  for (uint32_t b = 0; b < 6; ++b) {
    batches.push_back(some_files(100 + 10 * b, 4));
    plans.push_back(plan_batch(spans(batches.back())));
    want.push_back(cpu->decode(spans(batches.back())));
  }
  std::vector<std::unique_ptr<BatchBuffer>> outs;
  for (const BatchPlan& plan : plans)
    outs.push_back(cpu->allocate(MemoryKind::device, plan.output_bytes));
  auto output = [&](size_t b) {
    Bytes got(plans[b].output_bytes);
    cpu->copy_out(got.data(), *outs[b], 0, got.size());
    return got;
  };
  SUBCASE("files overwritten and freed as soon as submit returns") {
    const auto pipeline = cpu->make_pipeline({.depth = 3});
    for (size_t b = 0; b < batches.size(); ++b) {
      if (pipeline->in_flight() == 3) CHECK(output(pipeline->wait().ticket) == want[b - 3]);
      CHECK(pipeline->submit(plans[b], spans(batches[b]), *outs[b]) == b);
      for (Bytes& file : batches[b]) std::fill(file.begin(), file.end(), uint8_t{0x5A});
      batches[b].clear();
      batches[b].shrink_to_fit();
    }
    while (pipeline->in_flight() > 0) {
      const uint64_t ticket = pipeline->wait().ticket;
      CHECK(output(ticket) == want[ticket]);
    }
  }
  SUBCASE("files kept by the caller are decoded where they are, in order, damage reported") {
    const auto pipeline = cpu->make_pipeline({.depth = 2});
    batches[4][2][batches[4][2].size() / 2] ^= 0x10;
    for (size_t b = 0; b < batches.size(); ++b) {
      if (pipeline->in_flight() == 2) CHECK(output(pipeline->wait().ticket) == want[b - 2]);
      CHECK(pipeline->submit_kept(plans[b], spans(batches[b]), *outs[b]) == b);
    }
    CHECK_THROWS_AS(pipeline->wait(), Error);  // batch 4
    CHECK(output(pipeline->wait().ticket) == want[5]);
    CHECK_THROWS_AS(pipeline->submit_kept(plans[0], spans(batches[1]), *outs[0]), Error);
  }
  SUBCASE("destroyed with batches in flight: they are complete") {
    {
      const auto pipeline = cpu->make_pipeline({.depth = 4});
      for (size_t b = 0; b < 4; ++b) (void)pipeline->submit(plans[b], spans(batches[b]), *outs[b]);
    }
    for (size_t b = 0; b < 4; ++b) CHECK(output(b) == want[b]);
  }
  SUBCASE("a forked child leaves an idle pipeline of its parent's") {
    // The worker waits for work when the child is made: the child must not wait for it to
    // leave that wait (glibc's condition variable would, forever).
    auto pipeline = cpu->make_pipeline({.depth = 1});
    (void)pipeline->submit(plans[0], spans(batches[0]), *outs[0]);
    CHECK(output(pipeline->wait().ticket) == want[0]);
    CHECK(exit_status_in_child([&] {
            int code = 0;
            try {
              (void)pipeline->submit(plans[1], spans(batches[1]), *outs[1]);
              code = 4;
            } catch (const Error& e) {
              if (std::string(e.what()).find("another process") == std::string::npos) code = 5;
            }
            pipeline.reset();
            return code;
          }) == 0);
    CHECK(pipeline->submit(plans[1], spans(batches[1]), *outs[1]) == 1);
    CHECK(output(pipeline->wait().ticket) == want[1]);
  }
  SUBCASE("a forked child waits for nothing of its parent's") {
    auto pipeline = cpu->make_pipeline({.depth = 2});
    (void)pipeline->submit(plans[0], spans(batches[0]), *outs[0]);
    (void)pipeline->submit(plans[1], spans(batches[1]), *outs[1]);
    // The parent's worker is not in the child: a wait must not block for it (unless the batch
    // was done before the fork), and the pipeline must go without joining it.
    CHECK(exit_status_in_child([&] {
            int code = 0;
            try {
              while (pipeline->in_flight() > 0) (void)pipeline->wait();
            } catch (const Error& e) {
              code = std::string(e.what()).find("another process") != std::string::npos ? 0 : 3;
            }
            try {
              (void)pipeline->submit(plans[2], spans(batches[2]), *outs[2]);
              code = 4;
            } catch (const Error&) {
            }
            pipeline.reset();
            return code;
          }) == 0);
    CHECK(output(pipeline->wait().ticket) == want[0]);
    CHECK(output(pipeline->wait().ticket) == want[1]);
  }
}

TEST_CASE("the cpu backend describes itself and measures memcpy as its copy ceiling") {
  const auto cpu = make_batch_decoder_cpu(2);
  CHECK(cpu->device_description().starts_with("cpu, 2 threads, "));
  TimingParams params;
  params.warmup = 0;
  params.repeats = 2;
  const CopyBandwidth bw = cpu->measure_copy_bandwidth(1 << 20, params);
  CHECK(bw.bytes == (1u << 20));
  CHECK(bw.h2d_pinned_gb_s > 0);
  CHECK(bw.d2d_gb_s == bw.h2d_pinned_gb_s);
}

}  // namespace
}  // namespace dlprep::l3
