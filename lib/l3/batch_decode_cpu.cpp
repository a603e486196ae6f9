// The CPU backend of the batch decoder: the reference the CUDA backend (cuda/l3/decode_cuda.cu)
// must equal bit for bit, and the fallback. It consumes the plan exactly as the GPU does: one
// work item per listed patch (all its channels), the per-patch checks of the spec (steps 8-9) in
// the order check_patch() in decode_cpu.cpp makes them, a status byte per task, and the first
// failure in plan order reported; then the pixels through batch_output.hpp, the same per-element
// code the kernel runs. The "device" of this backend is host memory, so the device-resident API
// and the pipeline run here too, and the tests cover their bookkeeping.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/timing.hpp"
#include "l3/batch_decode.hpp"
#include "l3/batch_output.hpp"
#include "l3/batch_pipeline.hpp"
#include "l3/format.hpp"
#include "l3/kernels.hpp"
#include "l3/l3.hpp"

namespace dlprep::l3 {
namespace {

using detail::kReadSlack;
using detail::kRowSlackAfter;
using detail::kRowSlackBefore;

constexpr size_t kPlaneStride = kRowSlackBefore + kMaxPatch + kRowSlackAfter;
constexpr size_t kPlaneBytes = kPlaneStride * (kMaxPatch + 1);

class HostBuffer final : public BatchBuffer {
 public:
  static std::unique_ptr<BatchBuffer> make(MemoryKind kind, size_t bytes) {
    std::unique_ptr<uint8_t[]> memory(new uint8_t[std::max<size_t>(bytes, 1)]);
    return std::unique_ptr<BatchBuffer>(new HostBuffer(std::move(memory), bytes, kind));
  }

 private:
  HostBuffer(std::unique_ptr<uint8_t[]> memory, size_t bytes, MemoryKind kind)
      : BatchBuffer(memory.get(), bytes, kind), memory_(std::move(memory)) {}
  std::unique_ptr<uint8_t[]> memory_;
};

void check_range(const BatchBuffer& buffer, size_t offset, size_t bytes, const char* what) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    throw Error(Errc::invalid_argument, std::string(what) + ": bytes " + std::to_string(offset) +
                                            "+" + std::to_string(bytes) + " outside a buffer of " +
                                            std::to_string(buffer.size()));
}

void check_buffers(const BatchPlan& plan, const BatchBuffer* in, const BatchBuffer& out,
                   MemoryKind in_kind) {
  if (in != nullptr && (in->kind() != in_kind || in->size() < plan.input_bytes))
    throw Error(Errc::invalid_argument,
                "l3 batch decode: the input buffer is of the wrong kind "
                "or smaller than the batch input");
  if (out.kind() != MemoryKind::device || out.size() < plan.output_bytes)
    throw Error(Errc::invalid_argument,
                "l3 batch decode: the output buffer is not device memory "
                "or smaller than the batch tensor");
}

// Steps 8 and 9 of the spec for one task; fills the view when the patch passes.
uint8_t check_task(const PatchTask& t, const uint8_t* p, const detail::Kernels& k,
                   detail::PatchView& v) {
  return detail::check_patch_bytes(p, t.bytes, t.sum, t.width, t.height, k, v);
}

// Decodes every listed patch of the plan; `files[i]` is image i's first byte. Throws the first
// failure in plan order.
void decode_plan(const BatchPlan& plan, const uint8_t* const* files, uint8_t* out,
                 unsigned threads) {
  const detail::Kernels& k = detail::active_kernels();
  std::vector<uint8_t> status(plan.tasks.size(), kPatchOk);
  parallel_for(plan.patch_first_task.size(), threads, [&](size_t b) {
    // One scratch per thread: up to 4 planes of one patch, rows with slack for borders, and a
    // padded copy for a patch too close to the end of its file for the SIMD kernels' reads.
    thread_local std::unique_ptr<uint8_t[]> scratch;
    thread_local std::unique_ptr<uint8_t[]> tail;
    if (!scratch) {
      scratch.reset(new uint8_t[4 * kPlaneBytes]());
      tail.reset(new uint8_t[patch_max_bytes(kMaxPatch, kMaxPatch) + kReadSlack]());
    }
    const size_t first = plan.patch_first_task[b];
    const PatchTask& t0 = plan.tasks[first];
    const BatchImage& image = plan.images[t0.image];
    const uint8_t* const file = files[t0.image];
    const uint8_t* planes[4] = {};
    for (uint32_t c = 0; c < t0.channels; ++c) {
      const PatchTask& t = plan.tasks[first + c];
      const uint8_t* p = file + (t.src - image.src);
      detail::PatchView view;
      const uint8_t verdict = check_task(t, p, k, view);
      if (verdict != kPatchOk) {
        status[first + c] = verdict;  // the later channels of this patch come later in plan order
        return;
      }
      const size_t end = static_cast<size_t>(t.src - image.src) + t.bytes;
      if (image.file_bytes - end < kReadSlack) {
        std::memcpy(tail.get(), p, t.bytes);
        std::memset(tail.get() + t.bytes, 0, kReadSlack);
        view.predictor_codes = tail.get() + (view.predictor_codes - p);
        view.width_codes = tail.get() + (view.width_codes - p);
        view.payload = tail.get() + (view.payload - p);
      }
      uint8_t* plane = scratch.get() + c * kPlaneBytes + kRowSlackBefore;
      k.decode_plane(view, plane, kPlaneStride);
      planes[c] = plane;
    }

    // The part of the patch inside the window (never empty: the plan lists no other patches).
    const uint32_t x_begin = std::max<uint32_t>(t0.x0, image.crop_x);
    const uint32_t x_end = std::min<uint32_t>(t0.x0 + t0.width, image.crop_x + image.out_width);
    const uint32_t y_begin = std::max<uint32_t>(t0.y0, image.crop_y);
    const uint32_t y_end = std::min<uint32_t>(t0.y0 + t0.height, image.crop_y + image.out_height);
    const size_t plane_offset = (y_begin - t0.y0) * kPlaneStride + (x_begin - t0.x0);
    uint8_t* const window = out + image.dst;
    const uint32_t channels = t0.channels;
    if (plan.layout == OutputLayout::nhwc_u8) {
      // Interleaving bytes is what store_hwc does, with the CPU's best kernel.
      const uint8_t* sub[4] = {};
      for (uint32_t c = 0; c < channels; ++c) sub[c] = planes[c] + plane_offset;
      const size_t out_stride = size_t{image.out_width} * channels;
      k.store_hwc(sub, kPlaneStride, x_end - x_begin, y_end - y_begin, channels,
                  image.subtract_green != 0,
                  window + (y_begin - image.crop_y) * out_stride +
                      size_t{x_begin - image.crop_x} * channels,
                  out_stride);
      return;
    }
    for (uint32_t y = y_begin; y < y_end; ++y) {
      const size_t row = plane_offset + (y - y_begin) * kPlaneStride;
      for (uint32_t x = x_begin; x < x_end; ++x) {
        uint8_t v[4] = {};
        for (uint32_t c = 0; c < channels; ++c) v[c] = planes[c][row + (x - x_begin)];
        add_green(v, image.subtract_green);
        for (uint32_t c = 0; c < channels; ++c)
          store_element(window, plan.layout,
                        output_element(plan.layout, image.out_width, image.out_height, channels,
                                       x - image.crop_x, y - image.crop_y, c),
                        v[c], plan.mean[c], plan.scale[c]);
      }
    }
  });
  const size_t bad = first_failed_task(status.data(), status.size());
  if (bad != status.size())
    throw Error(Errc::corrupt_data, patch_failure_message(plan.tasks[bad], status[bad]));
}

// The cpu pipeline: a worker thread decodes the batches in submission order (each on `threads`
// threads) while the caller goes on, as the CUDA pipeline's streams do: a training loop's step
// overlaps the decode of the next batches. submit() copies host files into the slot's staging
// buffer, so that they may be released when it returns, as the contract says; submit_kept()
// decodes them where they are.
class BatchPipelineCpu final : public BatchPipeline {
 public:
  BatchPipelineCpu(unsigned threads, const PipelineOptions& options)
      : threads_(threads), ring_(options.depth), slots_(options.depth) {}
  ~BatchPipelineCpu() override {
    if (!worker_) return;
    if (forked()) {  // deliberately leaked: the parent's thread and what it was waiting on
      (void)worker_.release();
      (void)sync_.release();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(sync_->mutex);
      stop_ = true;
    }
    sync_->work.notify_all();
    worker_->join();  // the worker finishes the batches in flight first
  }
  unsigned depth() const override { return ring_.depth(); }
  size_t in_flight() const override { return ring_.in_flight(); }

  uint64_t submit(const BatchPlan& plan, std::span<const ByteSpan> files,
                  BatchBuffer& out) override {
    check_files(plan, files, out);
    return start(plan, out, [&](Slot& slot) {
      slot.staging.resize(plan.input_bytes);  // kept from batch to batch: no allocation then
      for (size_t i = 0; i < files.size(); ++i) {
        uint8_t* at = slot.staging.data() + plan.images[i].src;
        if (!files[i].empty()) std::memcpy(at, files[i].data(), files[i].size());
        slot.bases[i] = at;
      }
    });
  }
  uint64_t submit_kept(const BatchPlan& plan, std::span<const ByteSpan> files,
                       BatchBuffer& out) override {
    check_files(plan, files, out);
    return start(plan, out, [&](Slot& slot) {
      for (size_t i = 0; i < files.size(); ++i) slot.bases[i] = files[i].data();
    });
  }
  uint64_t submit(const BatchPlan& plan, const BatchBuffer& in, BatchBuffer& out) override {
    check_buffers(plan, &in, out, MemoryKind::pinned_host);
    return start(plan, out, [&](Slot& slot) {
      for (size_t i = 0; i < plan.images.size(); ++i)
        slot.bases[i] = in.data() + plan.images[i].src;
    });
  }
  void order_after_stream(std::uintptr_t) override {}  // host memory: nothing is queued on it
  BatchResult wait() override {
    const SlotRing::Entry e = ring_.front();
    Slot& slot = slots_[e.slot];
    if (forked()) {  // alone in this process: no lock to take (the parent's may be held)
      if (!slot.done)
        throw Error(Errc::invalid_argument,
                    "l3 pipeline: made in another process (before a fork): its batches are "
                    "decoded there");
    } else {
      std::unique_lock<std::mutex> lock(sync_->mutex);
      sync_->finished.wait(lock, [&] { return slot.done; });
    }
    ring_.pop();
    if (slot.error) std::rethrow_exception(std::exchange(slot.error, nullptr));
    return {e.ticket, slot.timings};
  }

 private:
  struct Slot {
    std::vector<uint8_t> staging;       // the batch's files back to back (host files only)
    std::vector<const uint8_t*> bases;  // each image's file
    const BatchPlan* plan = nullptr;
    uint8_t* out = nullptr;
    DecodeTimings timings;
    std::exception_ptr error;
    bool done = true;  // under sync_->mutex once queued
  };

  // Claims the next slot, lets `fill` point its bases at the files, and queues it for the
  // worker; a batch that fails before it is queued is done at once with its error, which
  // wait() reports in its turn (a ticket never goes without its record).
  template <typename Fill>
  uint64_t start(const BatchPlan& plan, BatchBuffer& out, Fill&& fill) {
    if (forked())
      throw Error(Errc::invalid_argument,
                  "l3 pipeline: made in another process (before a fork): make one here");
    const SlotRing::Entry e = ring_.push();  // throws when full, before any work
    Slot& slot = slots_[e.slot];
    slot.plan = &plan;
    slot.out = out.data();
    slot.timings = {};
    slot.error = nullptr;
    try {
      slot.bases.resize(plan.images.size());
      fill(slot);
      if (!worker_) start_worker();
    } catch (...) {  // memory, or no thread to be had
      slot.error = std::current_exception();
      return e.ticket;
    }
    if (!worker_) {  // no thread to be had: decode here, as the caller would have waited anyway
      run(slot);
      return e.ticket;
    }
    try {
      std::lock_guard<std::mutex> lock(sync_->mutex);
      queue_.push_back(e.slot);
      slot.done = false;  // only once queued: a batch not queued is done, with its error
    } catch (...) {
      slot.error = std::current_exception();
      return e.ticket;
    }
    sync_->work.notify_one();
    return e.ticket;
  }
  static void check_files(const BatchPlan& plan, std::span<const ByteSpan> files,
                          const BatchBuffer& out) {
    if (files.size() != plan.images.size())
      throw Error(Errc::invalid_argument, "l3 pipeline: the plan is for another batch");
    check_buffers(plan, nullptr, out, MemoryKind::device);
    for (size_t i = 0; i < files.size(); ++i)
      if (files[i].size() != plan.images[i].file_bytes)
        throw Error(Errc::invalid_argument, "l3 pipeline: the plan is for another batch");
  }
  // A forked child has none of the parent's threads: not its worker, maybe its mutex held.
  bool forked() const { return worker_ && owner_ != getpid(); }
  void start_worker() {
    try {
      owner_ = getpid();
      worker_ = std::make_unique<std::thread>([this] { work(); });
    } catch (const std::system_error&) {  // a thread limit: the batches decode in submit()
    }
  }
  void run(Slot& slot) {
    try {
      const Stopwatch clock;
      decode_plan(*slot.plan, slot.bases.data(), slot.out, threads_);
      slot.timings.decode_ms = clock.seconds() * 1e3;
    } catch (...) {  // a damaged patch, or memory: wait() reports it
      slot.error = std::current_exception();
    }
  }
  void work() {
    std::unique_lock<std::mutex> lock(sync_->mutex);
    for (;;) {
      sync_->work.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every batch done
      Slot& slot = slots_[queue_.front()];
      queue_.pop_front();
      lock.unlock();
      run(slot);
      lock.lock();
      slot.done = true;
      sync_->finished.notify_all();
    }
  }

  unsigned threads_;
  SlotRing ring_;
  std::vector<Slot> slots_;
  struct Sync {
    std::mutex mutex;
    std::condition_variable work;      // a batch queued, or stop_
    std::condition_variable finished;  // a batch done
  };
  // On the heap, so that a forked child can leave it: a condition variable the parent's worker
  // was waiting on cannot be destroyed there (glibc waits for that waiter to leave).
  std::unique_ptr<Sync> sync_ = std::make_unique<Sync>();
  std::deque<unsigned> queue_;        // slots queued for the worker, oldest first
  bool stop_ = false;
  pid_t owner_ = 0;  // the process whose worker_ it is
  std::unique_ptr<std::thread> worker_;
};

class BatchDecoderCpu final : public BatchDecoder {
 public:
  explicit BatchDecoderCpu(unsigned threads) : threads_(threads == 0 ? 1 : threads) {}
  std::string_view device_name() const override { return "cpu"; }
  std::string device_description() const override {
    return "cpu, " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads") + ", " +
           std::string(kernels_name()) + " kernels";
  }

  using BatchDecoder::decode;
  void decode(const BatchPlan& plan, std::span<const ByteSpan> files, uint8_t* out) override {
    if (files.size() != plan.images.size())
      throw Error(Errc::invalid_argument, "l3 batch decode: the plan is for another batch");
    std::vector<const uint8_t*> bases(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      if (files[i].size() != plan.images[i].file_bytes)
        throw Error(Errc::invalid_argument, "l3 batch decode: the plan is for another batch");
      bases[i] = files[i].data();
    }
    const Stopwatch clock;
    decode_plan(plan, bases.data(), out, threads_);
    timings_ = {};
    timings_.decode_ms = clock.seconds() * 1e3;
  }

  std::unique_ptr<BatchBuffer> allocate(MemoryKind kind, size_t bytes) override {
    return HostBuffer::make(kind, bytes);
  }
  std::unique_ptr<BatchBuffer> wrap(MemoryKind kind, void* data, size_t bytes) override {
    return BatchBuffer::borrow(static_cast<uint8_t*>(data), bytes, kind);
  }
  void copy_in(BatchBuffer& dst, size_t offset, const void* src, size_t bytes) override {
    check_range(dst, offset, bytes, "l3 batch copy");
    if (bytes != 0) std::memcpy(dst.data() + offset, src, bytes);
  }
  void copy_out(void* dst, const BatchBuffer& src, size_t offset, size_t bytes) override {
    check_range(src, offset, bytes, "l3 batch copy");
    if (bytes != 0) std::memcpy(dst, src.data() + offset, bytes);
  }
  void decode_device(const BatchPlan& plan, const BatchBuffer& in, BatchBuffer& out) override {
    check_buffers(plan, &in, out, MemoryKind::device);
    std::vector<const uint8_t*> bases(plan.images.size());
    for (size_t i = 0; i < bases.size(); ++i) bases[i] = in.data() + plan.images[i].src;
    const Stopwatch clock;
    decode_plan(plan, bases.data(), out.data(), threads_);
    timings_ = {};
    timings_.decode_ms = clock.seconds() * 1e3;
  }
  DecodeTimings last_timings() const override { return timings_; }
  std::unique_ptr<BatchPipeline> make_pipeline(const PipelineOptions& options) override {
    return std::make_unique<BatchPipelineCpu>(threads_, options);
  }
  CopyBandwidth measure_copy_bandwidth(uint64_t bytes, const TimingParams& params) override {
    // Host memory is all there is: every figure is a memcpy (the ceiling of the cpu backend).
    std::unique_ptr<uint8_t[]> a(new uint8_t[std::max<uint64_t>(bytes, 1)]());
    std::unique_ptr<uint8_t[]> b(new uint8_t[std::max<uint64_t>(bytes, 1)]());
    const TimingStats t = measure(params, [&] { std::memcpy(b.get(), a.get(), bytes); });
    CopyBandwidth bw;
    bw.bytes = bytes;
    bw.h2d_pinned_gb_s = bw.h2d_pageable_gb_s = bw.d2h_pinned_gb_s = bw.d2d_gb_s =
        t.median_rate(static_cast<double>(bytes)) / 1e9;
    return bw;
  }

 private:
  unsigned threads_;
  DecodeTimings timings_;
};

}  // namespace

std::unique_ptr<BatchDecoder> make_batch_decoder_cpu(unsigned threads) {
  return std::make_unique<BatchDecoderCpu>(threads);
}

}  // namespace dlprep::l3
