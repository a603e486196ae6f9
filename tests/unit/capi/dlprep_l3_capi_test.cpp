// The C interface through the shared library itself (linked as a program would): it must give
// the C++ library's bytes, turn every failure into a status and a message, and check the
// arguments a C caller can get wrong (null pointers, short buffers, strides).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi/dlprep_l3.h"
#include "l3/batch_decode.hpp"
#include "l3/l3.hpp"
#include "test_images.hpp"

namespace {

using dlprep::Bytes;
using dlprep::Image;
using dlprep::l3::testing::Content;
using dlprep::l3::testing::make_image;

Bytes encoded(uint32_t w, uint32_t h, uint32_t c, uint32_t seed = 1) {
  return dlprep::l3::encode(make_image(w, h, c, Content::mixed, seed));
}

std::string last_error() { return dlprep_l3_last_error(); }

// Damages every patch in the second half of an L3 file (the last channels'), which any crop
// window reads: the headers, checked when a plan is made, stay valid.
void damage_second_half(Bytes& file) {
  for (size_t i = file.size() / 2; i < file.size(); ++i) file[i] ^= 0x55;
}

}  // namespace

TEST_CASE("the loaded library reports the API version of its header") {
  CHECK(dlprep_l3_api_version() == DLPREP_L3_API_VERSION);
}

TEST_CASE("inspect reports the header, and a damaged header as corrupt data with its reason") {
  const Bytes file = encoded(70, 33, 3);
  dlprep_l3_info info{};
  REQUIRE(dlprep_l3_inspect(file.data(), file.size(), &info) == DLPREP_OK);
  CHECK(info.width == 70);
  CHECK(info.height == 33);
  CHECK(info.channels == 3);
  CHECK(info.patch == 32);
  CHECK(info.file_bytes == file.size());

  CHECK(dlprep_l3_inspect(file.data(), 10, &info) == DLPREP_CORRUPT_DATA);
  CHECK(last_error().find("l3:") != std::string::npos);
  CHECK(dlprep_l3_inspect(nullptr, 5, &info) == DLPREP_INVALID_ARGUMENT);
  CHECK(last_error() == "the file is a null pointer");
  CHECK(dlprep_l3_inspect(file.data(), file.size(), nullptr) == DLPREP_INVALID_ARGUMENT);
}

TEST_CASE("decode gives the C++ decoder's pixels, with rows back to back or strided") {
  for (uint32_t c = 1; c <= 4; ++c) {
    CAPTURE(c);
    const Image image = make_image(45, 19, c, Content::mixed, c);
    const Bytes file = dlprep::l3::encode(image);
    std::vector<uint8_t> out(image.size_bytes());
    REQUIRE(dlprep_l3_decode(file.data(), file.size(), out.data(), out.size(), 0, 2) == DLPREP_OK);
    CHECK(std::memcmp(out.data(), image.data(), out.size()) == 0);

    // Rows 7 bytes apart more than they need, the last one without its padding.
    const size_t stride = image.row_bytes() + 7;
    std::vector<uint8_t> strided((image.height() - 1) * stride + image.row_bytes(), 0xAB);
    REQUIRE(dlprep_l3_decode(file.data(), file.size(), strided.data(), strided.size(), stride, 1) ==
            DLPREP_OK);
    for (uint32_t y = 0; y < image.height(); ++y) {
      CHECK(std::memcmp(strided.data() + y * stride, image.row(y), image.row_bytes()) == 0);
      if (y + 1 < image.height()) CHECK(strided[y * stride + image.row_bytes()] == 0xAB);
    }
    CHECK(dlprep_l3_decode(file.data(), file.size(), strided.data(), strided.size() - 1, stride,
                           1) == DLPREP_INVALID_ARGUMENT);
    CHECK(last_error().find("the image needs") != std::string::npos);
  }
}

TEST_CASE("decode refuses a short output, a short stride and a damaged patch") {
  const Image image = make_image(64, 64, 3, Content::mixed);
  Bytes file = dlprep::l3::encode(image);
  std::vector<uint8_t> out(image.size_bytes());
  CHECK(dlprep_l3_decode(file.data(), file.size(), out.data(), out.size() - 1, 0, 1) ==
        DLPREP_INVALID_ARGUMENT);
  CHECK(dlprep_l3_decode(file.data(), file.size(), out.data(), out.size(), 10, 1) ==
        DLPREP_INVALID_ARGUMENT);
  CHECK(last_error() == "the row stride is smaller than a row");
  CHECK(dlprep_l3_decode(file.data(), file.size(), nullptr, 0, 0, 1) == DLPREP_INVALID_ARGUMENT);
  CHECK(dlprep_l3_decode(file.data(), file.size(), out.data(), out.size(), 0, 4097) ==
        DLPREP_INVALID_ARGUMENT);
  CHECK(last_error() == "threads: 4097 is more than 4096");
  file[file.size() - 3] ^= 0x40;  // in the last patch's codes
  CHECK(dlprep_l3_decode(file.data(), file.size(), out.data(), out.size(), 0, 1) ==
        DLPREP_CORRUPT_DATA);
  CHECK(last_error().find("checksum mismatch") != std::string::npos);
}

TEST_CASE("encode writes the C++ encoder's bytes, from strided rows too") {
  const Image image = make_image(33, 21, 4, Content::mixed);
  const Bytes expected = dlprep::l3::encode(image, {.patch = 16});
  void* out = nullptr;
  size_t size = 0;
  REQUIRE(dlprep_l3_encode(image.data(), 33, 21, 4, 0, 16, 1, &out, &size) == DLPREP_OK);
  REQUIRE(size == expected.size());
  CHECK(std::memcmp(out, expected.data(), size) == 0);
  dlprep_l3_free(out);

  const size_t stride = image.row_bytes() + 5;
  std::vector<uint8_t> strided(image.height() * stride, 0xEE);
  for (uint32_t y = 0; y < image.height(); ++y)
    std::memcpy(strided.data() + y * stride, image.row(y), image.row_bytes());
  REQUIRE(dlprep_l3_encode(strided.data(), 33, 21, 4, stride, 16, 2, &out, &size) == DLPREP_OK);
  CHECK(std::memcmp(out, expected.data(), size) == 0);
  dlprep_l3_free(out);
  dlprep_l3_free(nullptr);

  CHECK(dlprep_l3_encode(image.data(), 33, 21, 5, 0, 0, 1, &out, &size) == DLPREP_UNSUPPORTED);
  CHECK(last_error() == "5 channels (1 to 4 supported)");
  CHECK(out == nullptr);
  CHECK(dlprep_l3_encode(image.data(), 33, 21, 4, 0, 12, 1, &out, &size) ==
        DLPREP_INVALID_ARGUMENT);
  CHECK(dlprep_l3_encode(nullptr, 33, 21, 4, 0, 0, 1, &out, &size) == DLPREP_INVALID_ARGUMENT);
  CHECK(dlprep_l3_encode(image.data(), 33, 21, 4, 0, 0, 1, nullptr, &size) ==
        DLPREP_INVALID_ARGUMENT);
}

TEST_CASE("a failure's message belongs to the thread that failed") {
  const Bytes file = encoded(16, 16, 1);
  dlprep_l3_info info{};
  REQUIRE(dlprep_l3_inspect(file.data(), 3, &info) == DLPREP_CORRUPT_DATA);
  const std::string mine = last_error();
  std::string theirs = "unset";
  std::thread([&] {
    theirs = dlprep_l3_last_error();
    dlprep_l3_inspect(nullptr, 1, &info);
  }).join();
  CHECK(theirs.empty());
  CHECK(last_error() == mine);
}

TEST_CASE("a batch decodes into the tensor of the C++ batch decoder, windows included") {
  const std::vector<Bytes> files = {encoded(64, 40, 3, 1), encoded(50, 70, 3, 2),
                                    encoded(90, 33, 3, 3)};
  std::vector<const void*> pointers;
  std::vector<size_t> sizes;
  std::vector<dlprep::ByteSpan> spans;
  for (const Bytes& f : files) {
    pointers.push_back(f.data());
    sizes.push_back(f.size());
    spans.emplace_back(f);
  }
  dlprep_l3_batch_options options;
  dlprep_l3_batch_options_init(&options);
  CHECK(std::string(options.layout) == "nhwc-u8");
  CHECK(options.std[3] == 1.0f);
  options.layout = "nchw-f16";
  options.crop = "random";
  options.crop_width = 30;
  options.crop_height = 32;
  options.seed = 9;
  options.mean[0] = 100;
  options.std[1] = 3;

  dlprep_l3_plan* plan = nullptr;
  REQUIRE(dlprep_l3_plan_create(pointers.data(), sizes.data(), 3, &options, &plan) == DLPREP_OK);
  CHECK(dlprep_l3_plan_count(plan) == 3);
  CHECK(dlprep_l3_plan_element_bytes(plan) == 2);
  CHECK(dlprep_l3_plan_output_bytes(plan) == 3 * 30 * 32 * 3 * 2);
  dlprep_l3_window window{};
  REQUIRE(dlprep_l3_plan_window(plan, 2, &window) == DLPREP_OK);
  CHECK(window.width == 30);
  CHECK(window.height == 32);
  CHECK(window.channels == 3);
  CHECK(window.offset_bytes == 2 * 30 * 32 * 3 * 2);
  CHECK(window.crop_x <= 90 - 30);
  CHECK(window.crop_y <= 1);
  CHECK(dlprep_l3_plan_window(plan, 3, &window) == DLPREP_INVALID_ARGUMENT);

  dlprep::l3::DecodeOptions cpp;
  cpp.layout = dlprep::l3::OutputLayout::nchw_f16;
  cpp.crop = dlprep::l3::CropMode::random;
  cpp.crop_width = 30;
  cpp.crop_height = 32;
  cpp.seed = 9;
  cpp.mean[0] = 100;
  cpp.std[1] = 3;
  const Bytes expected = dlprep::l3::make_batch_decoder_cpu()->decode(spans, nullptr, cpp);

  dlprep_l3_decoder* decoder = nullptr;
  REQUIRE(dlprep_l3_decoder_create("cpu", 2, &decoder) == DLPREP_OK);
  CHECK(std::string(dlprep_l3_decoder_device(decoder)) == "cpu");
  std::vector<uint8_t> out(dlprep_l3_plan_output_bytes(plan));
  REQUIRE(dlprep_l3_decode_batch(decoder, plan, pointers.data(), sizes.data(), 3, out.data(),
                                 out.size()) == DLPREP_OK);
  CHECK(out == std::vector<uint8_t>(expected.begin(), expected.end()));
  CHECK(dlprep_l3_decode_batch(decoder, plan, pointers.data(), sizes.data(), 3, out.data(),
                               out.size() - 1) == DLPREP_INVALID_ARGUMENT);
  CHECK(dlprep_l3_decode_batch(decoder, plan, pointers.data(), sizes.data(), 2, out.data(),
                               out.size()) == DLPREP_INVALID_ARGUMENT);
  CHECK(last_error().find("the plan is for another batch") != std::string::npos);

  // The device-resident path: the CPU backend's "device" memory is host memory.
  dlprep_l3_tensor* tensor = nullptr;
  REQUIRE(dlprep_l3_decode_batch_device(decoder, plan, pointers.data(), sizes.data(), 3, &tensor) ==
          DLPREP_OK);
  REQUIRE(dlprep_l3_tensor_bytes(tensor) == out.size());
  CHECK(std::memcmp(dlprep_l3_tensor_data(tensor), expected.data(), out.size()) == 0);
  CHECK(dlprep_l3_tensor_gpu(tensor) == -1);  // no GPU's memory
  CHECK(dlprep_l3_tensor_gpu(nullptr) == -1);
  // Into memory the caller lends (the cpu backend's device memory is the host's).
  std::vector<uint8_t> lent(out.size() + 3, 0x5A);
  REQUIRE(dlprep_l3_decode_batch_into_device(decoder, plan, pointers.data(), sizes.data(), 3,
                                             lent.data() + 3, out.size(), 0) == DLPREP_OK);
  CHECK(std::memcmp(lent.data() + 3, expected.data(), out.size()) == 0);
  CHECK(lent[2] == 0x5A);
  CHECK(dlprep_l3_decode_batch_into_device(decoder, plan, pointers.data(), sizes.data(), 3,
                                           lent.data(), out.size() - 1,
                                           0) == DLPREP_INVALID_ARGUMENT);
  CHECK(dlprep_l3_decode_batch_into_device(decoder, plan, pointers.data(), sizes.data(), 3, nullptr,
                                           out.size(), 0) == DLPREP_INVALID_ARGUMENT);
  // A damaged file fails the device decode, and the decoder's next batch still decodes.
  Bytes damaged = files[1];
  damage_second_half(damaged);
  const void* with_damage[] = {pointers[0], damaged.data(), pointers[2]};
  CHECK(dlprep_l3_decode_batch_into_device(decoder, plan, with_damage, sizes.data(), 3,
                                           lent.data() + 3, out.size(), 0) == DLPREP_CORRUPT_DATA);
  CHECK(last_error().rfind("image 1: l3: ", 0) == 0);
  std::fill(lent.begin(), lent.end(), 0x5A);
  REQUIRE(dlprep_l3_decode_batch_into_device(decoder, plan, pointers.data(), sizes.data(), 3,
                                             lent.data() + 3, out.size(), 1) == DLPREP_OK);
  CHECK(std::memcmp(lent.data() + 3, expected.data(), out.size()) == 0);
  // A forked child decodes with the decoder its parent used (the decoder's own pipeline, whose
  // worker thread stayed in the parent, is the child's to replace) and destroys it.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    alarm(20);  // a hang fails the test instead of stalling it
    std::fill(lent.begin(), lent.end(), 0x5A);
    const bool decoded =
        dlprep_l3_decode_batch_into_device(decoder, plan, pointers.data(), sizes.data(), 3,
                                           lent.data() + 3, out.size(), 0) == DLPREP_OK &&
        std::memcmp(lent.data() + 3, expected.data(), out.size()) == 0;
    dlprep_l3_decoder_destroy(decoder);
    _exit(decoded ? 0 : 3);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  dlprep_l3_decoder_destroy(decoder);  // a tensor outlives its decoder
  CHECK(std::memcmp(dlprep_l3_tensor_data(tensor), expected.data(), out.size()) == 0);
  dlprep_l3_tensor_destroy(tensor);
  dlprep_l3_plan_destroy(plan);
}

namespace {

// Batch b of the pipeline test: two images whose sizes change with b, a crop to 24x20.
struct PipelineBatch {
  std::vector<Bytes> files;
  std::vector<const void*> pointers;
  std::vector<size_t> sizes;
  dlprep_l3_plan* plan = nullptr;
  Bytes expected;  // the C++ batch decoder's tensor
};

PipelineBatch pipeline_batch(uint32_t b) {
  PipelineBatch batch;
  std::vector<dlprep::ByteSpan> spans;
  for (uint32_t i = 0; i < 2; ++i) {
    batch.files.push_back(encoded(30 + 7 * b + i, 24 + 5 * i, 1 + (b + i) % 4, 40 + b));
    spans.emplace_back(batch.files.back());
  }
  for (const Bytes& f : batch.files) {
    batch.pointers.push_back(f.data());
    batch.sizes.push_back(f.size());
  }
  dlprep_l3_batch_options options;
  dlprep_l3_batch_options_init(&options);
  options.crop = "center";
  options.crop_width = 24;
  options.crop_height = 20;
  REQUIRE(dlprep_l3_plan_create(batch.pointers.data(), batch.sizes.data(), 2, &options,
                                &batch.plan) == DLPREP_OK);
  dlprep::l3::DecodeOptions cpp;
  cpp.crop = dlprep::l3::CropMode::center;
  cpp.crop_width = 24;
  cpp.crop_height = 20;
  batch.expected = dlprep::l3::make_batch_decoder_cpu()->decode(spans, nullptr, cpp);
  return batch;
}

}  // namespace

TEST_CASE("a pipeline decodes batches in submission order, into tensors and lent memory") {
  dlprep_l3_decoder* decoder = nullptr;
  REQUIRE(dlprep_l3_decoder_create("cpu", 2, &decoder) == DLPREP_OK);
  dlprep_l3_pipeline* pipeline = nullptr;
  CHECK(dlprep_l3_pipeline_create(decoder, 17, &pipeline) == DLPREP_INVALID_ARGUMENT);
  CHECK(last_error().find("expected 1 to 16") != std::string::npos);
  REQUIRE(dlprep_l3_pipeline_create(decoder, 0, &pipeline) == DLPREP_OK);  // 0: depth 2

  std::vector<PipelineBatch> batches;
  for (uint32_t b = 0; b < 5; ++b) batches.push_back(pipeline_batch(b));
  Bytes damaged = batches[3].files[0];  // batch 3 fails in its wait
  damage_second_half(damaged);
  batches[3].pointers[0] = damaged.data();
  std::vector<uint8_t> lent(batches[0].expected.size(), 0x5A);      // batch 0 into lent memory
  std::vector<dlprep_l3_tensor*> tensors(batches.size(), nullptr);  // the others into tensors
  for (size_t b = 1; b < batches.size(); ++b) {
    REQUIRE(dlprep_l3_tensor_create(decoder, batches[b].expected.size(), &tensors[b]) == DLPREP_OK);
    CHECK(dlprep_l3_tensor_bytes(tensors[b]) == batches[b].expected.size());
  }
  CHECK(dlprep_l3_tensor_create(nullptr, 1, &tensors[0]) == DLPREP_INVALID_ARGUMENT);
  dlprep_l3_decoder_destroy(decoder);  // the pipeline keeps what it needs

  uint64_t ticket = 99;
  CHECK(dlprep_l3_pipeline_wait(pipeline, &ticket) == DLPREP_INVALID_ARGUMENT);
  CHECK(last_error() == "nothing is in flight: submit a batch first");
  size_t next_wait = 0;
  auto wait_one = [&] {
    const dlprep_status status = dlprep_l3_pipeline_wait(pipeline, &ticket);
    CHECK(ticket == next_wait);
    if (next_wait == 3) {
      CHECK(status == DLPREP_CORRUPT_DATA);
      CHECK(last_error().rfind("image 0: l3: ", 0) == 0);
    } else {
      REQUIRE(status == DLPREP_OK);
      const void* got = next_wait == 0 ? lent.data() : dlprep_l3_tensor_data(tensors[next_wait]);
      CHECK(std::memcmp(got, batches[next_wait].expected.data(),
                        batches[next_wait].expected.size()) == 0);
    }
    ++next_wait;
  };
  for (size_t b = 0; b < batches.size(); ++b) {
    PipelineBatch& batch = batches[b];
    void* out = b == 0 ? lent.data() : dlprep_l3_tensor_data(tensors[b]);
    const size_t out_size = batch.expected.size();
    // Too little room for the batch, checked before the batch takes a ticket.
    CHECK(dlprep_l3_pipeline_submit(pipeline, batch.plan, batch.pointers.data(), batch.sizes.data(),
                                    2, out, out_size - 1, 0, &ticket) == DLPREP_INVALID_ARGUMENT);
    if (dlprep_l3_pipeline_in_flight(pipeline) == 2) {
      // A full pipeline refuses a third batch, and stays as it was.
      CHECK(dlprep_l3_pipeline_submit(pipeline, batch.plan, batch.pointers.data(),
                                      batch.sizes.data(), 2, out, out_size, 0,
                                      &ticket) == DLPREP_INVALID_ARGUMENT);
      CHECK(last_error().find("pipeline full") != std::string::npos);
      wait_one();
    }
    // Odd batches lend their files (kept until the end of the test), even ones are copied.
    const auto submit = b % 2 == 1 ? dlprep_l3_pipeline_submit_kept : dlprep_l3_pipeline_submit;
    REQUIRE(submit(pipeline, batch.plan, batch.pointers.data(), batch.sizes.data(), 2, out,
                   out_size, 0, &ticket) == DLPREP_OK);
    CHECK(ticket == b);
    // The plan may go once the batch is submitted (and the files of a copied batch).
    dlprep_l3_plan_destroy(batch.plan);
    batch.plan = nullptr;
  }
  while (dlprep_l3_pipeline_in_flight(pipeline) > 0) wait_one();
  CHECK(next_wait == batches.size());
  dlprep_l3_pipeline_destroy(pipeline);
  for (dlprep_l3_tensor* t : tensors) dlprep_l3_tensor_destroy(t);
}

TEST_CASE("planning names the bad image and the bad option") {
  const Bytes good = encoded(32, 32, 3);
  Bytes bad = good;
  bad.resize(bad.size() - 1);
  const void* pointers[] = {good.data(), bad.data()};
  const size_t sizes[] = {good.size(), bad.size()};
  dlprep_l3_plan* plan = nullptr;
  CHECK(dlprep_l3_plan_create(pointers, sizes, 2, nullptr, &plan) == DLPREP_CORRUPT_DATA);
  CHECK(plan == nullptr);
  CHECK(last_error().rfind("image 1: ", 0) == 0);

  dlprep_l3_batch_options options;
  dlprep_l3_batch_options_init(&options);
  options.layout = "nhwc-f64";
  CHECK(dlprep_l3_plan_create(pointers, sizes, 1, &options, &plan) == DLPREP_INVALID_ARGUMENT);
  options.layout = "nhwc-u8";
  options.crop = "corner";
  CHECK(dlprep_l3_plan_create(pointers, sizes, 1, &options, &plan) == DLPREP_INVALID_ARGUMENT);
  CHECK(last_error() == "unknown crop 'corner' (none, center, random)");
  options.crop = "center";
  options.crop_width = options.crop_height = 33;
  CHECK(dlprep_l3_plan_create(pointers, sizes, 1, &options, &plan) == DLPREP_INVALID_ARGUMENT);
  CHECK(last_error().rfind("image 0: ", 0) == 0);
  CHECK(dlprep_l3_plan_create(nullptr, sizes, 1, nullptr, &plan) == DLPREP_INVALID_ARGUMENT);
  const void* holes[] = {nullptr};
  CHECK(dlprep_l3_plan_create(holes, sizes, 1, nullptr, &plan) == DLPREP_INVALID_ARGUMENT);
}

TEST_CASE("a decoder on an unknown or missing device is refused with the reason") {
  dlprep_l3_decoder* decoder = nullptr;
  CHECK(dlprep_l3_decoder_create("tpu", 1, &decoder) == DLPREP_INVALID_ARGUMENT);
  CHECK(decoder == nullptr);
  if (!dlprep::l3::cuda_unavailable_reason().empty()) {
    CHECK(dlprep_l3_decoder_create("cuda", 1, &decoder) == DLPREP_DEVICE_UNAVAILABLE);
    CHECK(last_error() == "l3 batch decode on cuda: " + dlprep::l3::cuda_unavailable_reason());
  }
  CHECK(dlprep_l3_decoder_create("auto", 0, &decoder) == DLPREP_OK);
  dlprep_l3_decoder_destroy(decoder);
  CHECK(std::string(dlprep_l3_decoder_device(nullptr)).empty());
}
