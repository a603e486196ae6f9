// The C interface (lib/capi, dlprep_l3.h) over the CUDA backend, on the emulated GPU of
// tests/cuda/emulation: the paths only a CUDA decoder takes run in CI, where there is no GPU.
// Lent device memory checked and decoded into, new tensors, pipelines into both, the wait for a
// caller's stream, and what is refused. The emulated device runs queued work only when the host
// waits, so a decode that did not wait for the caller's stream loses to the caller's later write.
// Tensors are read back with cudaMemcpy and compared with the CPU batch decoder's.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "capi/dlprep_l3.h"
#include "l3/batch_decode.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace {

using dlprep::Bytes;
using dlprep::l3::testing::Content;
using dlprep::l3::testing::make_image;

std::string last_error() { return dlprep_l3_last_error(); }

// A batch of three images, centre-cropped to 32x24 (nhwc-u8), planned through the C interface,
// and its tensor from the C++ CPU batch decoder.
struct Batch {
  explicit Batch(uint32_t seed) {
    std::vector<dlprep::ByteSpan> spans;
    for (uint32_t i = 0; i < 3; ++i)
      files.push_back(dlprep::l3::encode(make_image(40 + 9 * i, 30 + 5 * seed, 1 + (seed + i) % 4,
                                                    Content::mixed, seed * 10 + i)));
    for (const Bytes& f : files) {
      pointers.push_back(f.data());
      sizes.push_back(f.size());
      spans.emplace_back(f);
    }
    dlprep_l3_batch_options options;
    dlprep_l3_batch_options_init(&options);
    options.crop = "center";
    options.crop_width = 32;
    options.crop_height = 24;
    REQUIRE(dlprep_l3_plan_create(pointers.data(), sizes.data(), files.size(), &options, &plan) ==
            DLPREP_OK);
    dlprep::l3::DecodeOptions cpp;
    cpp.crop = dlprep::l3::CropMode::center;
    cpp.crop_width = 32;
    cpp.crop_height = 24;
    expected = dlprep::l3::make_batch_decoder_cpu()->decode(spans, nullptr, cpp);
  }
  ~Batch() { dlprep_l3_plan_destroy(plan); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  std::vector<Bytes> files;
  std::vector<const void*> pointers;
  std::vector<size_t> sizes;
  dlprep_l3_plan* plan = nullptr;
  Bytes expected;
};

Bytes read_back(const void* device, size_t bytes) {
  Bytes host(bytes);
  REQUIRE(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}

void* device_bytes(size_t bytes, uint8_t fill) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, bytes) == cudaSuccess);
  const Bytes host(bytes, fill);
  REQUIRE(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
  // From pageable memory the copy may land after cudaMemcpy returns: wait for it.
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  return p;
}

dlprep_l3_decoder* cuda_decoder() {
  dlprep_l3_decoder* decoder = nullptr;
  REQUIRE(dlprep_l3_decoder_create("cuda", 1, &decoder) == DLPREP_OK);
  REQUIRE(std::string(dlprep_l3_decoder_device(decoder)) == "cuda");
  return decoder;
}

// Holds a stream for a while, so that work queued after it runs late (on a GPU too).
void CUDART_CB hold_stream(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

}  // namespace

TEST_CASE("a cuda decoder decodes through the C interface as the CPU does, wherever the tensor") {
  dlprep_l3_decoder* decoder = cuda_decoder();
  const Batch batch(1);
  const size_t bytes = batch.expected.size();

  Bytes host(bytes);
  REQUIRE(dlprep_l3_decode_batch(decoder, batch.plan, batch.pointers.data(), batch.sizes.data(), 3,
                                 host.data(), host.size()) == DLPREP_OK);
  CHECK(host == batch.expected);

  dlprep_l3_tensor* tensor = nullptr;
  REQUIRE(dlprep_l3_decode_batch_device(decoder, batch.plan, batch.pointers.data(),
                                        batch.sizes.data(), 3, &tensor) == DLPREP_OK);
  CHECK(read_back(dlprep_l3_tensor_data(tensor), bytes) == batch.expected);
  CHECK(dlprep_l3_tensor_gpu(tensor) == 0);  // the current GPU's, the emulated one

  // Device memory the caller lends, at an offset, after the legacy default stream (handle 1).
  auto* lent = static_cast<uint8_t*>(device_bytes(bytes + 64, 0xEE));
  REQUIRE(dlprep_l3_decode_batch_into_device(decoder, batch.plan, batch.pointers.data(),
                                             batch.sizes.data(), 3, lent + 64, bytes,
                                             1) == DLPREP_OK);
  CHECK(read_back(lent + 64, bytes) == batch.expected);
  CHECK(read_back(lent, 64) == Bytes(64, 0xEE));

  // Host memory lent as device memory, and device memory too short at its end, are refused.
  CHECK(dlprep_l3_decode_batch_into_device(decoder, batch.plan, batch.pointers.data(),
                                           batch.sizes.data(), 3, host.data(), bytes,
                                           0) == DLPREP_INVALID_ARGUMENT);
  CHECK(last_error().rfind("the memory lent is ", 0) == 0);
  CHECK(dlprep_l3_decode_batch_into_device(decoder, batch.plan, batch.pointers.data(),
                                           batch.sizes.data(), 3, lent + 65, bytes,
                                           0) == DLPREP_INVALID_ARGUMENT);

  // A damaged file fails the device decode; the decoder's next batch still decodes.
  Bytes damaged = batch.files[2];
  for (size_t i = damaged.size() / 2; i < damaged.size(); ++i) damaged[i] ^= 0x55;
  const void* with_damage[] = {batch.pointers[0], batch.pointers[1], damaged.data()};
  CHECK(dlprep_l3_decode_batch_into_device(decoder, batch.plan, with_damage, batch.sizes.data(), 3,
                                           lent, bytes, 0) == DLPREP_CORRUPT_DATA);
  CHECK(last_error().rfind("image 2: l3: ", 0) == 0);
  REQUIRE(dlprep_l3_decode_batch_into_device(decoder, batch.plan, batch.pointers.data(),
                                             batch.sizes.data(), 3, lent, bytes, 0) == DLPREP_OK);
  CHECK(read_back(lent, bytes) == batch.expected);

  dlprep_l3_decoder_destroy(decoder);
  CHECK(read_back(dlprep_l3_tensor_data(tensor), bytes) == batch.expected);  // it outlives it
  dlprep_l3_tensor_destroy(tensor);
  CHECK(cudaFree(lent) == cudaSuccess);
}

TEST_CASE("a decode into lent memory waits for the work queued on the caller's stream") {
  dlprep_l3_decoder* decoder = cuda_decoder();
  dlprep_l3_pipeline* pipeline = nullptr;
  REQUIRE(dlprep_l3_pipeline_create(decoder, 2, &pipeline) == DLPREP_OK);
  const Batch batch(2);
  const size_t bytes = batch.expected.size();
  void* lent = device_bytes(bytes, 0);
  // The decoder's own decode, a pipelined batch, and one whose caller destroys its stream once
  // the batch is submitted (the wait is for an event recorded then, not for the stream).
  for (const std::string how : {"decode", "pipeline", "pipeline, stream destroyed"}) {
    CAPTURE(how);
    cudaStream_t caller = nullptr;
    REQUIRE(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking) == cudaSuccess);
    // The caller's last use of the memory, still queued: its write must come before the decode's.
    REQUIRE(cudaLaunchHostFunc(caller, hold_stream, nullptr) == cudaSuccess);
    REQUIRE(cudaMemsetAsync(lent, 0x5A, bytes, caller) == cudaSuccess);
    const auto stream = reinterpret_cast<uintptr_t>(caller);
    if (how == "decode") {
      REQUIRE(dlprep_l3_decode_batch_into_device(decoder, batch.plan, batch.pointers.data(),
                                                 batch.sizes.data(), 3, lent, bytes,
                                                 stream) == DLPREP_OK);
    } else {
      uint64_t ticket = 0;
      REQUIRE(dlprep_l3_pipeline_submit(pipeline, batch.plan, batch.pointers.data(),
                                        batch.sizes.data(), 3, lent, bytes, stream,
                                        &ticket) == DLPREP_OK);
      if (how != "pipeline") {
        REQUIRE(cudaStreamDestroy(caller) == cudaSuccess);  // (CUDA finishes its work first)
        caller = nullptr;
      }
      REQUIRE(dlprep_l3_pipeline_wait(pipeline, &ticket) == DLPREP_OK);
    }
    if (caller != nullptr) {  // its write, had the decode not waited, would land now
      REQUIRE(cudaStreamSynchronize(caller) == cudaSuccess);
      REQUIRE(cudaStreamDestroy(caller) == cudaSuccess);
    }
    CHECK(read_back(lent, bytes) == batch.expected);
  }
  dlprep_l3_pipeline_destroy(pipeline);
  dlprep_l3_decoder_destroy(decoder);
  CHECK(cudaFree(lent) == cudaSuccess);
}

TEST_CASE("a cuda pipeline decodes batches in order into tensors, and drops a damaged one") {
  dlprep_l3_decoder* decoder = cuda_decoder();
  dlprep_l3_pipeline* pipeline = nullptr;
  REQUIRE(dlprep_l3_pipeline_create(decoder, 3, &pipeline) == DLPREP_OK);
  std::vector<std::unique_ptr<Batch>> batches;
  std::vector<dlprep_l3_tensor*> tensors;
  for (uint32_t b = 0; b < 6; ++b) {
    batches.push_back(std::make_unique<Batch>(b + 3));
    tensors.push_back(nullptr);
    REQUIRE(dlprep_l3_tensor_create(decoder, batches.back()->expected.size(), &tensors.back()) ==
            DLPREP_OK);
  }
  dlprep_l3_decoder_destroy(decoder);  // the pipeline and the tensors keep the backend
  Bytes damaged = batches[4]->files[0];
  for (size_t i = damaged.size() / 2; i < damaged.size(); ++i) damaged[i] ^= 0x55;
  batches[4]->pointers[0] = damaged.data();

  uint64_t ticket = 0;
  size_t next_wait = 0;
  auto wait_one = [&] {
    const dlprep_status status = dlprep_l3_pipeline_wait(pipeline, &ticket);
    CHECK(ticket == next_wait);
    if (next_wait == 4) {
      CHECK(status == DLPREP_CORRUPT_DATA);
      CHECK(last_error().rfind("image 0: l3: ", 0) == 0);
    } else {
      REQUIRE(status == DLPREP_OK);
      const Batch& batch = *batches[next_wait];
      CHECK(read_back(dlprep_l3_tensor_data(tensors[next_wait]), batch.expected.size()) ==
            batch.expected);
    }
    ++next_wait;
  };
  for (size_t b = 0; b < batches.size(); ++b) {
    if (dlprep_l3_pipeline_in_flight(pipeline) == 3) wait_one();
    const Batch& batch = *batches[b];
    REQUIRE(dlprep_l3_pipeline_submit(pipeline, batch.plan, batch.pointers.data(),
                                      batch.sizes.data(), 3, dlprep_l3_tensor_data(tensors[b]),
                                      batch.expected.size(), 0, &ticket) == DLPREP_OK);
    CHECK(ticket == b);
  }
  // Host memory as the output of a batch: refused before it takes a ticket.
  Bytes host(batches[0]->expected.size());
  if (dlprep_l3_pipeline_in_flight(pipeline) == 3) wait_one();
  CHECK(dlprep_l3_pipeline_submit(pipeline, batches[0]->plan, batches[0]->pointers.data(),
                                  batches[0]->sizes.data(), 3, host.data(), host.size(), 0,
                                  &ticket) == DLPREP_INVALID_ARGUMENT);
  while (dlprep_l3_pipeline_in_flight(pipeline) > 0) wait_one();
  CHECK(next_wait == batches.size());
  dlprep_l3_pipeline_destroy(pipeline);
  for (dlprep_l3_tensor* t : tensors) dlprep_l3_tensor_destroy(t);
}
