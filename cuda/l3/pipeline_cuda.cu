// The overlapped batch pipeline of the CUDA backend (issue 4, DLBooster's dispatcher): `depth`
// slots, each with its own stream (optionally at the lowest priority), pinned staging buffer,
// device input and work-list buffers, status array and events. Batch t uses slot t mod depth
// (l3::SlotRing), so while the kernel of batch i runs on one stream the copy of batch i+1 runs on
// another: the copy engine and the SMs work at the same time. A slot is reused only after wait()
// retired its previous batch, which is what makes reusing its buffers safe without more events.
//
// Per batch, on the slot's stream: [e0] H2D of the input (from the staging buffer, or straight
// from the caller's pinned buffer) and of the packed work list, a wait for the events that
// order_after() recorded on the caller's streams [e1] kernel [e2] the failure flag back to
// pinned memory [e3]. wait() synchronises on e3 only.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "l3/batch_pipeline.hpp"
#include "l3/batch_plan.hpp"
#include "l3/decode_cuda.hpp"
#include "l3/decode_kernel.hpp"

namespace dlprep::cuda {

using namespace l3_detail;

namespace {

// Copies the batch's files, back to back (plan.images[i].src), into the pinned staging `dst`: in
// pieces of kStagePiece bytes on up to kStageThreads threads for a large batch. One thread's
// memcpy bound the pipeline from host bytes: on the H200 session (2026-11-29) 64 FHD files (136
// MB) a batch went at 11 GB/s of pixels from Python, against 150 GB/s from pinned input.
constexpr size_t kStagePiece = size_t{1} << 20;
constexpr unsigned kStageThreads = 8;

void stage_files(const l3::BatchPlan& plan, const uint8_t* const* files, uint8_t* dst) {
  const size_t pieces = (plan.input_bytes + kStagePiece - 1) / kStagePiece;
  const unsigned threads =
      static_cast<unsigned>(std::min<size_t>(pieces, std::min(hardware_threads(), kStageThreads)));
  // One path for every batch (a batch of one piece runs on the calling thread).
  const auto& images = plan.images;  // back to back in plan order: src ascending
  parallel_for(pieces, threads, [&](size_t piece) {
    const uint64_t lo = piece * kStagePiece,
                   hi = std::min<uint64_t>(lo + kStagePiece, plan.input_bytes);
    // From the last image that starts at or before the piece (not a scan of every image per
    // piece: thousands of small files make thousands of pieces).
    const auto after =
        std::upper_bound(images.begin(), images.end(), lo,
                         [](uint64_t at, const l3::BatchImage& image) { return at < image.src; });
    const size_t start = static_cast<size_t>(after - images.begin());
    for (size_t i = start == 0 ? 0 : start - 1; i < images.size() && images[i].src < hi; ++i) {
      const uint64_t begin = std::max(lo, images[i].src);
      const uint64_t end = std::min(hi, images[i].src + images[i].file_bytes);
      if (begin < end) std::memcpy(dst + begin, files[i] + (begin - images[i].src), end - begin);
    }
  });
}

struct Slot {
  explicit Slot(bool low_priority) : stream(low_priority) {}
  Stream stream;
  PinnedArray<uint8_t> staging;  // [files | work list | flag]
  DeviceArray<uint8_t> device;   // [files | work list]
  DeviceArray<uint8_t> status;
  DeviceArray<uint32_t> failed;
  Event events[4];
  const l3::BatchPlan* plan = nullptr;
  uint32_t* flag = nullptr;  // in `staging`
};

}  // namespace

struct L3Pipeline::Impl {
  Impl(unsigned depth, bool low_priority) : ring(depth) {
    for (unsigned i = 0; i < depth; ++i) slots.push_back(std::make_unique<Slot>(low_priority));
  }
  l3::SlotRing ring;
  std::vector<std::unique_ptr<Slot>> slots;
  // Recorded on callers' streams by order_after(); the next submit's kernel waits for the first
  // `pending`. Events, not the streams: a caller may destroy its stream once it was recorded.
  std::vector<std::unique_ptr<Event>> callers;
  size_t pending = 0;

  // Fills the slot's staging (the files when `files` is given, then the work list) and queues
  // the batch. `pinned_in` is the caller's pinned input when `files` is null.
  uint64_t submit(const l3::BatchPlan& plan, const uint8_t* const* files, const uint8_t* pinned_in,
                  uint8_t* device_out) {
    const size_t input = files != nullptr ? align16(plan.input_bytes) : 0;
    const WorkLayout layout = work_layout(plan);
    const l3::SlotRing::Entry e = ring.push();  // throws when full, before touching a slot
    const size_t waits = std::exchange(pending, 0);  // this batch's, whether it is queued or not
    Slot& slot = *slots[e.slot];
    try {
      uint8_t* const host = slot.staging.reserve(input + layout.bytes + 16);
      if (files != nullptr) stage_files(plan, files, host);
      pack_work(plan, host + input);
      slot.flag = reinterpret_cast<uint32_t*>(host + input + layout.bytes);
      *slot.flag = 0;
      // The device buffer mirrors the staging layout: [files | work list].
      const size_t device_input = align16(plan.input_bytes);
      uint8_t* const device = slot.device.reserve(device_input + layout.bytes);
      uint8_t* const status = slot.status.reserve(plan.tasks.size());
      uint32_t* const failed = slot.failed.reserve(1);
      cudaStream_t s = slot.stream.get();
      slot.events[0].record(s);
      if (files != nullptr) {  // one copy: files and work list are contiguous in staging
        DLPREP_CUDA_CHECK(
            cudaMemcpyAsync(device, host, input + layout.bytes, cudaMemcpyHostToDevice, s));
      } else {
        if (plan.input_bytes != 0)
          DLPREP_CUDA_CHECK(
              cudaMemcpyAsync(device, pinned_in, plan.input_bytes, cudaMemcpyHostToDevice, s));
        DLPREP_CUDA_CHECK(
            cudaMemcpyAsync(device + device_input, host, layout.bytes, cudaMemcpyHostToDevice, s));
      }
      // The output may still be in use on the callers' streams; the copies above need not wait.
      // (An event recorded again later leaves this wait as it was.)
      for (size_t i = 0; i < waits; ++i)
        DLPREP_CUDA_CHECK(cudaStreamWaitEvent(s, callers[i]->get(), 0));
      launch_decode(plan, device, device + device_input, device_out, status, failed, s,
                    slot.events[1].get());
      slot.events[2].record(s);
      DLPREP_CUDA_CHECK(
          cudaMemcpyAsync(slot.flag, failed, sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
      slot.events[3].record(s);
      slot.plan = &plan;
    } catch (...) {
      // The ticket stays in the ring (tickets retire in order): wait() will report that this
      // batch could not be queued. Drain the stream so that the slot's buffers are free again.
      slot.plan = nullptr;
      (void)cudaStreamSynchronize(slot.stream.get());
      throw;
    }
    return e.ticket;
  }

  uint64_t wait(L3DecodeTimings* timings) {
    const l3::SlotRing::Entry e = ring.front();  // throws when nothing is in flight
    Slot& slot = *slots[e.slot];
    const l3::BatchPlan* plan = slot.plan;
    slot.plan = nullptr;
    ring.pop();  // retired whatever happens below: the pipeline stays usable after an error
    if (plan == nullptr)
      throw Error(Errc::device_failure,
                  "l3 cuda pipeline: batch " + std::to_string(e.ticket) + " could not be queued");
    slot.events[3].synchronize();
    if (*slot.flag != 0) throw_first_failure(*plan, slot.status.get(), slot.stream.get());
    if (timings != nullptr)
      *timings = {slot.events[1].since(slot.events[0]), slot.events[2].since(slot.events[1]),
                  slot.events[3].since(slot.events[2])};
    return e.ticket;
  }
};

L3Pipeline::L3Pipeline(unsigned depth, bool low_priority)
    : impl_(std::make_unique<Impl>(depth, low_priority)) {}
L3Pipeline::~L3Pipeline() {
  // Batches still in flight write into device memory the caller may free right after: finish
  // them first (errors ignored: a destructor does not throw).
  if (impl_)
    for (const auto& slot : impl_->slots) (void)cudaStreamSynchronize(slot->stream.get());
}

unsigned L3Pipeline::depth() const { return impl_->ring.depth(); }
size_t L3Pipeline::in_flight() const { return impl_->ring.in_flight(); }

uint64_t L3Pipeline::submit(const l3::BatchPlan& plan, const uint8_t* const* files,
                            uint8_t* device_out) {
  return impl_->submit(plan, files, nullptr, device_out);
}

uint64_t L3Pipeline::submit_pinned(const l3::BatchPlan& plan, const uint8_t* pinned_in,
                                   uint8_t* device_out) {
  return impl_->submit(plan, nullptr, pinned_in, device_out);
}

void L3Pipeline::order_after(std::uintptr_t stream) {
  if (stream == 0) return;
  Impl& m = *impl_;
  const bool made = m.pending == m.callers.size();
  if (made) m.callers.push_back(std::make_unique<Event>(false));
  try {
    m.callers[m.pending]->record(reinterpret_cast<cudaStream_t>(stream));
  } catch (const Error& e) {
    if (made) m.callers.pop_back();
    throw Error(Errc::device_failure, "l3 pipeline: cannot wait for the caller's stream " +
                                          std::to_string(stream) + " (a live stream of this " +
                                          "GPU?): " + e.what());
  }
  ++m.pending;
}

uint64_t L3Pipeline::wait(L3DecodeTimings* timings) { return impl_->wait(timings); }

}  // namespace dlprep::cuda
