// The C interface (dlprep_l3.h) over lib/l3: argument checks, then the C++ call inside one
// catch that turns every exception into a status and the thread's message.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi/dlprep_l3.h"
#include "core/error.hpp"
#include "core/image.hpp"
#include "l3/batch_decode.hpp"
#include "l3/l3.hpp"

struct dlprep_l3_decoder {
  // Shared with the pipelines made from it, which may outlive this object.
  std::shared_ptr<dlprep::l3::BatchDecoder> decoder;
  // Depth 1, for the synchronous device decodes (made at the first): its pinned staging takes
  // the files to the device in one copy.
  std::unique_ptr<dlprep::l3::BatchPipeline> pipeline;
  pid_t pipeline_owner = 0;  // the process that made it: a forked child makes its own
  std::string device;
};

struct dlprep_l3_plan {
  // Shared with the pipelines' batches in flight, which need it until they are waited for.
  std::shared_ptr<const dlprep::l3::BatchPlan> plan;
};

struct dlprep_l3_tensor {
  std::unique_ptr<dlprep::l3::BatchBuffer> buffer;
  int gpu = -1;  // the CUDA device ordinal of its memory
};

struct dlprep_l3_pipeline {
  struct Batch {
    uint64_t ticket;
    std::shared_ptr<const dlprep::l3::BatchPlan> plan;
    std::unique_ptr<dlprep::l3::BatchBuffer> out;  // lent memory
  };
  // In this order, so that the pipeline (whose destructor finishes the batches in flight) goes
  // first, then what those batches use.
  std::shared_ptr<dlprep::l3::BatchDecoder> decoder;
  std::deque<Batch> in_flight;  // as the pipeline's, oldest first
  uint64_t submitted = 0;       // tickets handed out (the pipeline's own count)
  std::unique_ptr<dlprep::l3::BatchPipeline> pipeline;
};

namespace {

using dlprep::ByteSpan;
using dlprep::Errc;
using dlprep::Error;

thread_local std::string t_last_error;

dlprep_status status_of(Errc code) {
  switch (code) {
    case Errc::invalid_argument:
      return DLPREP_INVALID_ARGUMENT;
    case Errc::io:
      return DLPREP_IO;
    case Errc::corrupt_data:
      return DLPREP_CORRUPT_DATA;
    case Errc::unsupported:
      return DLPREP_UNSUPPORTED;
    case Errc::limit_exceeded:
      return DLPREP_LIMIT_EXCEEDED;
    case Errc::device_unavailable:
      return DLPREP_DEVICE_UNAVAILABLE;
    case Errc::device_failure:
      return DLPREP_DEVICE_FAILURE;
    default:
      return DLPREP_INTERNAL;
  }
}

// Runs `body`; any exception becomes the status and the thread's message.
template <typename Body>
dlprep_status guarded(Body&& body) noexcept {
  try {
    body();
    return DLPREP_OK;
  } catch (const Error& e) {
    t_last_error = e.what();
    return status_of(e.code());
  } catch (const std::bad_alloc&) {
    t_last_error = "out of host memory";
    return DLPREP_INTERNAL;
  } catch (const std::exception& e) {
    t_last_error = std::string("internal error: ") + e.what();
    return DLPREP_INTERNAL;
  } catch (...) {
    t_last_error = "internal error";
    return DLPREP_INTERNAL;
  }
}

void require(bool condition, const char* message) {
  if (!condition) throw Error(Errc::invalid_argument, message);
}

// 0 means 1; more than the CLI's -j takes is refused (each is a thread started per call).
unsigned thread_count(unsigned threads) {
  constexpr unsigned kMaxThreads = 4096;
  if (threads > kMaxThreads)
    throw Error(Errc::invalid_argument, "threads: " + std::to_string(threads) + " is more than " +
                                            std::to_string(kMaxThreads));
  return threads == 0 ? 1 : threads;
}

// An output of `out_size` bytes at `out` for `needed` bytes of the `what` ("image", "batch").
void require_output(const void* out, size_t out_size, uint64_t needed, const char* what) {
  require(out != nullptr || needed == 0, "the output is a null pointer");
  if (out_size < needed)
    throw Error(Errc::invalid_argument, "the output holds " + std::to_string(out_size) +
                                            " bytes; the " + what + " needs " +
                                            std::to_string(needed));
}

ByteSpan file_span(const void* file, size_t size) {
  require(file != nullptr || size == 0, "the file is a null pointer");
  return {static_cast<const uint8_t*>(file), size};
}

std::vector<ByteSpan> file_spans(const void* const* files, const size_t* sizes, size_t count) {
  require(count == 0 || (files != nullptr && sizes != nullptr),
          "the files or their sizes are a null pointer");
  std::vector<ByteSpan> spans(count);
  for (size_t i = 0; i < count; ++i) {
    require(files[i] != nullptr || sizes[i] == 0, "a file of the batch is a null pointer");
    spans[i] = {static_cast<const uint8_t*>(files[i]), sizes[i]};
  }
  return spans;
}

// Rows of `row_bytes` bytes, `row_stride` apart (0: back to back): the bytes they span.
size_t strided_bytes(uint32_t height, size_t row_bytes, size_t& row_stride) {
  if (row_stride == 0) row_stride = row_bytes;
  require(row_stride >= row_bytes, "the row stride is smaller than a row");
  if (height == 0) return 0;
  size_t total = 0;
  if (__builtin_mul_overflow(size_t{height} - 1, row_stride, &total) ||
      __builtin_add_overflow(total, row_bytes, &total))
    throw Error(Errc::limit_exceeded, "the image's rows overflow the address space");
  return total;
}

dlprep::l3::CropMode parse_crop(const char* name) {
  if (name == nullptr || std::strcmp(name, "none") == 0) return dlprep::l3::CropMode::none;
  if (std::strcmp(name, "center") == 0) return dlprep::l3::CropMode::center;
  if (std::strcmp(name, "random") == 0) return dlprep::l3::CropMode::random;
  throw Error(Errc::invalid_argument,
              std::string("unknown crop '") + name + "' (none, center, random)");
}

dlprep::l3::DecodeOptions decode_options(const dlprep_l3_batch_options* options) {
  dlprep::l3::DecodeOptions out;
  if (options == nullptr) return out;
  if (options->layout != nullptr) out.layout = dlprep::l3::parse_output_layout(options->layout);
  for (int c = 0; c < 4; ++c) {
    out.mean[c] = options->mean[c];
    out.std[c] = options->std[c];
  }
  out.crop = parse_crop(options->crop);
  out.crop_width = options->crop_width;
  out.crop_height = options->crop_height;
  out.seed = options->seed;
  return out;
}

// Memory the caller lends for a batch's tensor: `out_size` bytes at `out`, device memory of the
// decoder's backend (checked there), enough for the plan.
std::unique_ptr<dlprep::l3::BatchBuffer> lent_output(dlprep::l3::BatchDecoder& backend,
                                                     const dlprep::l3::BatchPlan& plan, void* out,
                                                     size_t out_size) {
  require(out != nullptr, "the output is a null pointer");  // (lent memory, even for 0 bytes)
  require_output(out, out_size, plan.output_bytes, "batch");
  // The bytes the decode writes: the checks look at their ends.
  return backend.wrap(dlprep::l3::MemoryKind::device, out, plan.output_bytes);
}

// Waits for every batch in flight, dropping their failures; stops when a wait retires nothing
// (another GPU is current).
void drain(dlprep::l3::BatchPipeline& pipeline) noexcept {
  for (size_t left = pipeline.in_flight(); left > 0; left = pipeline.in_flight()) {
    try {
      (void)pipeline.wait();
    } catch (...) {
      if (pipeline.in_flight() == left) return;
    }
  }
}

// A new tensor of `bytes` (0 = 1) in the decoder's device memory.
std::unique_ptr<dlprep_l3_tensor> new_device_tensor(dlprep_l3_decoder& decoder, uint64_t bytes) {
  auto made = std::make_unique<dlprep_l3_tensor>();
  made->buffer =
      decoder.decoder->allocate(dlprep::l3::MemoryKind::device, std::max<uint64_t>(bytes, 1));
  made->gpu = decoder.decoder->gpu_ordinal();
  return made;
}

// Decodes the files into `out`, device memory of the decoder's backend, through the decoder's
// own pipeline; returns once the tensor is complete.
void decode_on_device(dlprep_l3_decoder& decoder, const dlprep::l3::BatchPlan& plan,
                      const std::vector<ByteSpan>& files, dlprep::l3::BatchBuffer& out,
                      uintptr_t after_stream) {
  if (decoder.pipeline && decoder.pipeline_owner != getpid())
    (void)decoder.pipeline.release();  // the parent's: its threads and streams are not here
  if (!decoder.pipeline) {
    decoder.pipeline = decoder.decoder->make_pipeline({.depth = 1});
    decoder.pipeline_owner = getpid();
  }
  dlprep::l3::BatchPipeline& pipeline = *decoder.pipeline;
  pipeline.order_after_stream(after_stream);
  try {
    (void)pipeline.submit_kept(plan, files, out);  // the files outlive the call
  } catch (...) {
    drain(pipeline);  // a batch that could not be queued still holds its ticket
    throw;
  }
  (void)pipeline.wait();
}

// dlprep_l3_pipeline_submit(_kept): `kept` when the caller keeps the files until the wait.
dlprep_status submit_batch(dlprep_l3_pipeline* pipeline, const dlprep_l3_plan* plan,
                           const void* const* files, const size_t* sizes, size_t count, void* out,
                           size_t out_size, uintptr_t after_stream, uint64_t* ticket,
                           bool kept) noexcept {
  return guarded([&] {
    require(pipeline != nullptr && plan != nullptr && ticket != nullptr,
            "the pipeline, the plan or the ticket is a null pointer");
    dlprep::l3::BatchPipeline& p = *pipeline->pipeline;
    const std::vector<ByteSpan> spans = file_spans(files, sizes, count);
    dlprep_l3_pipeline::Batch batch{pipeline->submitted, plan->plan,
                                    lent_output(*pipeline->decoder, *plan->plan, out, out_size)};
    const size_t before = p.in_flight();
    p.order_after_stream(after_stream);
    try {
      // Its ticket: both count the same submits.
      (void)(kept ? p.submit_kept(*batch.plan, spans, *batch.out)
                  : p.submit(*batch.plan, spans, *batch.out));
    } catch (...) {
      // A batch that took its ticket but could not be queued is still in flight: its wait
      // reports it, as the pipeline's tickets retire in order.
      if (p.in_flight() > before) {
        *ticket = batch.ticket;
        pipeline->in_flight.push_back(std::move(batch));
        ++pipeline->submitted;
      }
      throw;
    }
    *ticket = batch.ticket;
    pipeline->in_flight.push_back(std::move(batch));
    ++pipeline->submitted;
  });
}

}  // namespace

extern "C" {

int dlprep_l3_api_version(void) { return DLPREP_L3_API_VERSION; }

const char* dlprep_l3_last_error(void) { return t_last_error.c_str(); }

dlprep_status dlprep_l3_inspect(const void* file, size_t size, dlprep_l3_info* info) {
  return guarded([&] {
    require(info != nullptr, "the info is a null pointer");
    const dlprep::l3::FileInfo parsed = dlprep::l3::inspect(file_span(file, size));
    *info = {parsed.shape.width, parsed.shape.height, parsed.shape.channels, parsed.patch,
             parsed.file_bytes};
  });
}

dlprep_status dlprep_l3_decode(const void* file, size_t size, void* out, size_t out_size,
                               size_t row_stride, unsigned threads) {
  return guarded([&] {
    const ByteSpan bytes = file_span(file, size);
    const dlprep::ImageShape shape = dlprep::l3::inspect(bytes).shape;
    const size_t needed =
        strided_bytes(shape.height, size_t{shape.width} * shape.channels, row_stride);
    require_output(out, out_size, needed, "image");
    dlprep::l3::decode_into(bytes, static_cast<uint8_t*>(out), row_stride, thread_count(threads));
  });
}

dlprep_status dlprep_l3_encode(const void* pixels, uint32_t width, uint32_t height,
                               uint32_t channels, size_t row_stride, uint32_t patch,
                               unsigned threads, void** out, size_t* out_size) {
  return guarded([&] {
    require(out != nullptr && out_size != nullptr, "the output is a null pointer");
    *out = nullptr;
    *out_size = 0;
    dlprep::Image image(width, height, channels);  // checks the shape against the limits
    strided_bytes(height, image.row_bytes(), row_stride);
    require(pixels != nullptr || image.empty(), "the pixels are a null pointer");
    for (uint32_t y = 0; y < height; ++y)
      std::memcpy(image.row(y), static_cast<const uint8_t*>(pixels) + y * row_stride,
                  image.row_bytes());
    const dlprep::Bytes encoded =
        dlprep::l3::encode(image, {.patch = patch, .threads = thread_count(threads)});
    void* copy = std::malloc(encoded.size());
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, encoded.data(), encoded.size());
    *out = copy;
    *out_size = encoded.size();
  });
}

void dlprep_l3_free(void* bytes) { std::free(bytes); }

void dlprep_l3_batch_options_init(dlprep_l3_batch_options* options) {
  if (options == nullptr) return;
  *options = {};
  options->layout = "nhwc-u8";
  options->crop = "none";
  for (float& s : options->std) s = 1;
}

dlprep_status dlprep_l3_decoder_create(const char* device, unsigned cpu_threads,
                                       dlprep_l3_decoder** decoder) {
  return guarded([&] {
    require(decoder != nullptr, "the decoder is a null pointer");
    *decoder = nullptr;
    auto made = std::make_unique<dlprep_l3_decoder>();
    made->decoder = dlprep::l3::make_batch_decoder(
        dlprep::l3::parse_decode_device(device == nullptr ? "auto" : device),
        thread_count(cpu_threads));
    made->device = std::string(made->decoder->device_name());
    *decoder = made.release();
  });
}

void dlprep_l3_decoder_destroy(dlprep_l3_decoder* decoder) {
  if (decoder == nullptr) return;
  if (decoder->pipeline && decoder->pipeline_owner != getpid())
    (void)decoder->pipeline.release();  // the parent's (decode_on_device)
  delete decoder;
}

const char* dlprep_l3_decoder_device(const dlprep_l3_decoder* decoder) {
  return decoder == nullptr ? "" : decoder->device.c_str();
}

dlprep_status dlprep_l3_plan_create(const void* const* files, const size_t* sizes, size_t count,
                                    const dlprep_l3_batch_options* options, dlprep_l3_plan** plan) {
  return guarded([&] {
    require(plan != nullptr, "the plan is a null pointer");
    *plan = nullptr;
    const std::vector<ByteSpan> spans = file_spans(files, sizes, count);
    auto made = std::make_unique<dlprep_l3_plan>();
    made->plan = std::make_shared<const dlprep::l3::BatchPlan>(
        dlprep::l3::plan_batch(spans, decode_options(options)));
    *plan = made.release();
  });
}

void dlprep_l3_plan_destroy(dlprep_l3_plan* plan) { delete plan; }

size_t dlprep_l3_plan_count(const dlprep_l3_plan* plan) {
  return plan == nullptr ? 0 : plan->plan->images.size();
}

uint64_t dlprep_l3_plan_output_bytes(const dlprep_l3_plan* plan) {
  return plan == nullptr ? 0 : plan->plan->output_bytes;
}

uint32_t dlprep_l3_plan_element_bytes(const dlprep_l3_plan* plan) {
  if (plan == nullptr) return 0;
  switch (plan->plan->layout) {
    case dlprep::l3::OutputLayout::nchw_f32:
      return 4;
    case dlprep::l3::OutputLayout::nchw_f16:
      return 2;
    default:
      return 1;
  }
}

dlprep_status dlprep_l3_plan_window(const dlprep_l3_plan* plan, size_t index,
                                    dlprep_l3_window* window) {
  return guarded([&] {
    require(plan != nullptr && window != nullptr, "the plan or the window is a null pointer");
    require(index < plan->plan->images.size(), "the image index is outside the batch");
    const dlprep::l3::BatchImage& image = plan->plan->images[index];
    *window = {image.out_width, image.out_height, image.channels,
               image.crop_x,    image.crop_y,     image.dst};
  });
}

dlprep_status dlprep_l3_decode_batch(dlprep_l3_decoder* decoder, const dlprep_l3_plan* plan,
                                     const void* const* files, const size_t* sizes, size_t count,
                                     void* out, size_t out_size) {
  return guarded([&] {
    require(decoder != nullptr && plan != nullptr, "the decoder or the plan is a null pointer");
    const std::vector<ByteSpan> spans = file_spans(files, sizes, count);
    require_output(out, out_size, plan->plan->output_bytes, "batch");
    decoder->decoder->decode(*plan->plan, spans, static_cast<uint8_t*>(out));
  });
}

dlprep_status dlprep_l3_decode_batch_device(dlprep_l3_decoder* decoder, const dlprep_l3_plan* plan,
                                            const void* const* files, const size_t* sizes,
                                            size_t count, dlprep_l3_tensor** tensor) {
  return guarded([&] {
    require(decoder != nullptr && plan != nullptr && tensor != nullptr,
            "the decoder, the plan or the tensor is a null pointer");
    *tensor = nullptr;
    auto made = new_device_tensor(*decoder, plan->plan->output_bytes);
    decode_on_device(*decoder, *plan->plan, file_spans(files, sizes, count), *made->buffer, 0);
    *tensor = made.release();
  });
}

dlprep_status dlprep_l3_decode_batch_into_device(dlprep_l3_decoder* decoder,
                                                 const dlprep_l3_plan* plan,
                                                 const void* const* files, const size_t* sizes,
                                                 size_t count, void* out, size_t out_size,
                                                 uintptr_t after_stream) {
  return guarded([&] {
    require(decoder != nullptr && plan != nullptr, "the decoder or the plan is a null pointer");
    const auto lent = lent_output(*decoder->decoder, *plan->plan, out, out_size);
    decode_on_device(*decoder, *plan->plan, file_spans(files, sizes, count), *lent, after_stream);
  });
}

dlprep_status dlprep_l3_tensor_create(dlprep_l3_decoder* decoder, uint64_t bytes,
                                      dlprep_l3_tensor** tensor) {
  return guarded([&] {
    require(decoder != nullptr && tensor != nullptr, "the decoder or the tensor is a null pointer");
    *tensor = nullptr;
    if (bytes > SIZE_MAX)
      throw Error(Errc::limit_exceeded, "the tensor overflows the address space");
    *tensor = new_device_tensor(*decoder, bytes).release();
  });
}

void* dlprep_l3_tensor_data(const dlprep_l3_tensor* tensor) {
  return tensor == nullptr ? nullptr : tensor->buffer->data();
}

uint64_t dlprep_l3_tensor_bytes(const dlprep_l3_tensor* tensor) {
  return tensor == nullptr ? 0 : tensor->buffer->size();
}

int dlprep_l3_tensor_gpu(const dlprep_l3_tensor* tensor) {
  return tensor == nullptr ? -1 : tensor->gpu;
}

void dlprep_l3_tensor_destroy(dlprep_l3_tensor* tensor) { delete tensor; }

dlprep_status dlprep_l3_pipeline_create(dlprep_l3_decoder* decoder, unsigned depth,
                                        dlprep_l3_pipeline** pipeline) {
  return guarded([&] {
    require(decoder != nullptr && pipeline != nullptr,
            "the decoder or the pipeline is a null pointer");
    *pipeline = nullptr;
    auto made = std::make_unique<dlprep_l3_pipeline>();
    made->decoder = decoder->decoder;
    made->pipeline = decoder->decoder->make_pipeline({.depth = depth == 0 ? 2 : depth});
    *pipeline = made.release();
  });
}

void dlprep_l3_pipeline_destroy(dlprep_l3_pipeline* pipeline) {
  if (pipeline == nullptr) return;
  drain(*pipeline->pipeline);
  delete pipeline;
}

size_t dlprep_l3_pipeline_in_flight(const dlprep_l3_pipeline* pipeline) {
  return pipeline == nullptr ? 0 : pipeline->in_flight.size();
}

dlprep_status dlprep_l3_pipeline_submit(dlprep_l3_pipeline* pipeline, const dlprep_l3_plan* plan,
                                        const void* const* files, const size_t* sizes, size_t count,
                                        void* out, size_t out_size, uintptr_t after_stream,
                                        uint64_t* ticket) {
  return submit_batch(pipeline, plan, files, sizes, count, out, out_size, after_stream, ticket,
                      false);
}

dlprep_status dlprep_l3_pipeline_submit_kept(dlprep_l3_pipeline* pipeline,
                                             const dlprep_l3_plan* plan, const void* const* files,
                                             const size_t* sizes, size_t count, void* out,
                                             size_t out_size, uintptr_t after_stream,
                                             uint64_t* ticket) {
  return submit_batch(pipeline, plan, files, sizes, count, out, out_size, after_stream, ticket,
                      true);
}

dlprep_status dlprep_l3_pipeline_wait(dlprep_l3_pipeline* pipeline, uint64_t* ticket) {
  return guarded([&] {
    require(pipeline != nullptr && ticket != nullptr,
            "the pipeline or the ticket is a null pointer");
    require(!pipeline->in_flight.empty(), "nothing is in flight: submit a batch first");
    *ticket = pipeline->in_flight.front().ticket;
    dlprep::l3::BatchPipeline& p = *pipeline->pipeline;
    const size_t before = p.in_flight();
    try {
      (void)p.wait();
    } catch (...) {
      if (p.in_flight() < before) pipeline->in_flight.pop_front();  // retired: dropped
      throw;
    }
    pipeline->in_flight.pop_front();
  });
}

}  // extern "C"
