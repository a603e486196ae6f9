// The CPU emulation of the CUDA execution model (cuda_emulation.hpp): every CUDA thread of a
// block is a fiber (ucontext) on the calling thread; a scheduler runs each runnable fiber until it
// waits at a barrier or returns, then releases the barriers that all their members reached.
#include "cuda_emulation.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "asan.hpp"

namespace emu {
namespace {

constexpr unsigned kWarp = 32;
constexpr uint8_t kSharedGarbage = 0xA5;
constexpr size_t kStackBytes = size_t{256} << 10;  // room for ASan's larger frames

enum class State { runnable, at_block_barrier, at_warp_barrier, done };

struct Fiber {
  ucontext_t context;
  void* stack = nullptr;
  State state = State::runnable;
  bool released_ok = true;  // whether the barrier it waited at was complete
  void* fake_stack = nullptr;
  unsigned linear = 0;
  dim3 thread_idx;
};

/// Stacks kept from launch to launch (launches are serialised).
class StackPool {
 public:
  void* get(size_t i) {
    while (stacks_.size() <= i) {
      void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
      if (p == MAP_FAILED) throw std::runtime_error("emu: cannot map a fiber stack");
      stacks_.push_back(p);
    }
    return stacks_[i];
  }

 private:
  std::vector<void*> stacks_;
};

struct Launch {
  dim3 grid, block;
  unsigned threads = 0, warps = 0;
  uint64_t blocks = 0, block_linear = 0;
  dim3 block_idx;
  std::unique_ptr<uint8_t[]> shared;  // exactly the bytes asked for, so that ASan bounds it
  size_t shared_bytes = 0;
  std::vector<Fiber> fibers;
  unsigned cursor = 0;   // the scheduler's pass: position of the next fiber to look at
  bool reverse = false;  // the order of the threads: descending
  bool greedy = false;   // each pick starts from the first thread: a warp runs on while it can
  std::vector<uint64_t> slots;  // a shuffle value per thread
  const std::function<void()>* kernel = nullptr;
  ucontext_t scheduler;
  void* scheduler_fake = nullptr;  // ASan's fake stack of the scheduler while a fiber runs
  const void* scheduler_stack = nullptr;
  size_t scheduler_stack_size = 0;
  std::string error;

  unsigned lanes_of(unsigned warp) const { return std::min(kWarp, threads - warp * kWarp); }
  void fail(const std::string& what) {
    if (error.empty())
      error =
          "block " + std::to_string(block_linear) + " of " + std::to_string(blocks) + ": " + what;
  }
};

Launch* current_launch = nullptr;
Fiber* current_fiber = nullptr;
std::mutex launch_mutex;
StackPool stack_pool;

// Switches from `from` (a fiber, or the scheduler when null) to `to` (likewise).
void switch_to(Launch& l, Fiber* from, Fiber* to) {
  ucontext_t* const from_context = from ? &from->context : &l.scheduler;
  ucontext_t* const to_context = to ? &to->context : &l.scheduler;
#if defined(DLPREP_EMU_ASAN)
  const bool leaving = from && from->state == State::done;  // for good: its fake stack goes
  __sanitizer_start_switch_fiber(leaving ? nullptr : (from ? &from->fake_stack : &l.scheduler_fake),
                                 to ? to->stack : l.scheduler_stack,
                                 to ? kStackBytes : l.scheduler_stack_size);
#endif
  current_fiber = to;
  swapcontext(from_context, to_context);
#if defined(DLPREP_EMU_ASAN)
  __sanitizer_finish_switch_fiber(from ? from->fake_stack : l.scheduler_fake, nullptr, nullptr);
#endif
}

// The next fiber to run in the block's order, or null when the pass is over.
Fiber* next_runnable(Launch& l) {
  if (l.greedy) l.cursor = 0;
  while (l.cursor < l.threads) {
    const unsigned i = l.cursor++;
    Fiber& f = l.fibers[l.reverse ? l.threads - 1 - i : i];
    if (f.state == State::runnable) return &f;
  }
  return nullptr;
}

// Releases the fibers of threads [first, first + count) waiting in `state` when every unfinished
// one waits there. Returns whether it released any; reports a release with finished members.
bool release_group(Launch& l, unsigned first, unsigned count, State state, const char* what) {
  unsigned waiting = 0, done = 0;
  for (unsigned t = first; t < first + count; ++t) {
    waiting += l.fibers[t].state == state;
    done += l.fibers[t].state == State::done;
  }
  if (waiting == 0 || waiting + done != count) return false;
  if (done != 0)
    l.fail(std::string(what) + " while " + std::to_string(done) + " of its " +
           std::to_string(count) + " threads had returned");
  for (unsigned t = first; t < first + count; ++t)
    if (l.fibers[t].state == state) {
      l.fibers[t].state = State::runnable;
      l.fibers[t].released_ok = done == 0;
    }
  return true;
}

// A warp's exchange opens as soon as its last lane arrives (or returns), as on the GPU, where
// a warp goes on without waiting for the rest of the block.
void release_warp_of(Launch& l, const Fiber& f) {
  const unsigned warp = f.linear / kWarp;
  release_group(l, warp * kWarp, l.lanes_of(warp), State::at_warp_barrier, "a shuffle");
}

// Waits (as the current fiber) until the scheduler releases `state`'s barrier; false when it
// released it incomplete.
bool wait_at(State state) {
  Launch& l = *current_launch;
  Fiber* const self = current_fiber;
  self->state = state;
  if (state == State::at_warp_barrier) release_warp_of(l, *self);
  Fiber* const next = next_runnable(l);
  if (next != self) switch_to(l, self, next);  // self: its warp opened and it runs on
  return self->released_ok;
}

void fiber_main() {
  Launch& l = *current_launch;
  Fiber* const self = current_fiber;
#if defined(DLPREP_EMU_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  try {
    (*l.kernel)();
  } catch (const std::exception& e) {
    l.fail("thread " + std::to_string(self->linear) + " threw: " + e.what());
  }
  self->state = State::done;
  release_warp_of(l, *self);
  switch_to(l, self, next_runnable(l));  // never comes back: the next block makes a new context
  std::abort();
}

void start_fiber(Fiber& f) {
  f.state = State::runnable;
  f.released_ok = true;
  f.fake_stack = nullptr;
#if defined(DLPREP_EMU_ASAN)
  DLPREP_EMU_UNPOISON(f.stack, kStackBytes);  // frames the last block left behind
#endif
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = f.stack;
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, fiber_main, 0);
}

void run_block(Launch& l, uint64_t linear) {
  l.block_linear = linear;
  l.block_idx.x = static_cast<unsigned>(linear % l.grid.x);
  l.block_idx.y = static_cast<unsigned>(linear / l.grid.x % l.grid.y);
  l.block_idx.z = static_cast<unsigned>(linear / l.grid.x / l.grid.y);
  if (l.shared_bytes != 0) std::memset(l.shared.get(), kSharedGarbage, l.shared_bytes);
  for (Fiber& f : l.fibers) start_fiber(f);
  // The order of the threads changes from block to block, so that a missing barrier shows up as
  // a thread reading what another has not written yet (or has overwritten), whichever comes
  // first: ascending, descending, and the same with each warp running on as far as it can
  // before the next starts.
  l.reverse = linear % 2 == 1;
  l.greedy = linear % 4 >= 2;
  for (;;) {
    // A pass: each runnable fiber runs until it waits or returns, then hands on to the next.
    l.cursor = 0;
    if (Fiber* const first = next_runnable(l)) switch_to(l, nullptr, first);
    bool all_done = true, any_runnable = false;
    for (const Fiber& f : l.fibers) {
      all_done = all_done && f.state == State::done;
      any_runnable = any_runnable || f.state == State::runnable;
    }
    if (all_done) return;
    if (any_runnable) continue;  // warps released behind the pass's cursor
    if (release_group(l, 0, l.threads, State::at_block_barrier, "__syncthreads")) continue;
    // Threads wait at different barriers: let them all go on.
    l.fail("threads of the block wait at different barriers (divergent __syncthreads or shuffle)");
    for (Fiber& f : l.fibers)
      if (f.state != State::done) {
        f.state = State::runnable;
        f.released_ok = false;
      }
  }
}

Launch& current() {
  if (current_launch == nullptr || current_fiber == nullptr)
    throw std::logic_error("emu: device built-in outside a kernel");
  return *current_launch;
}

}  // namespace

const dim3& thread_idx() {
  (void)current();
  return current_fiber->thread_idx;
}
const dim3& block_idx() { return current().block_idx; }
const dim3& block_dim() { return current().block; }
const dim3& grid_dim() { return current().grid; }
void* dynamic_shared() { return current().shared.get(); }
unsigned lane_id() {
  (void)current();
  return current_fiber->linear % kWarp;
}

void sync_threads() {
  Launch& l = current();
  if (!wait_at(State::at_block_barrier))
    l.fail("__syncthreads passed while some threads of the block had returned");
}

uint64_t shuffle(unsigned mask, uint64_t value, int src_lane) {
  Launch& l = current();
  const unsigned self = current_fiber->linear;
  const unsigned warp = self / kWarp, lanes = l.lanes_of(warp);
  const unsigned whole = lanes == kWarp ? 0xFFFFFFFFu : (1u << lanes) - 1u;
  if (mask != whole) {
    char text[96];
    std::snprintf(text, sizeof text, "shuffle mask 0x%08x in a warp of %u lanes", mask, lanes);
    l.fail(text);
  }
  l.slots[self] = value;
  wait_at(State::at_warp_barrier);
  uint64_t result = value;
  if (src_lane >= 0 && static_cast<unsigned>(src_lane) < lanes) {
    const unsigned src = warp * kWarp + static_cast<unsigned>(src_lane);
    if (l.fibers[src].state == State::done)
      l.fail("shuffle read lane " + std::to_string(src_lane) + ", which had returned");
    result = l.slots[src];
  }
  // Nobody overwrites a slot before every lane has read what it needs.
  wait_at(State::at_warp_barrier);
  return result;
}

void launch(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& kernel) {
  const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > 1024)
    throw std::logic_error("emu: block of " + std::to_string(threads) + " threads");
  if (blocks == 0) throw std::logic_error("emu: empty grid");
  std::lock_guard one_at_a_time(launch_mutex);
  Launch l;
  l.grid = grid;
  l.block = block;
  l.threads = threads;
  l.warps = (threads + kWarp - 1) / kWarp;
  l.blocks = blocks;
  l.shared_bytes = shared_bytes;
  if (shared_bytes != 0) l.shared = std::make_unique<uint8_t[]>(shared_bytes);
  l.kernel = &kernel;
  l.slots.assign(threads, 0);
  l.fibers.resize(threads);
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = l.fibers[t];
    f.linear = t;
    f.thread_idx.x = t % block.x;
    f.thread_idx.y = t / block.x % block.y;
    f.thread_idx.z = t / block.x / block.y;
    f.stack = stack_pool.get(t);
  }
#if defined(DLPREP_EMU_ASAN)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* bottom = nullptr;
    pthread_attr_getstack(&attr, &bottom, &l.scheduler_stack_size);
    l.scheduler_stack = bottom;
    pthread_attr_destroy(&attr);
  }
#endif
  current_launch = &l;
  for (uint64_t b = 0; b < blocks; ++b) run_block(l, b);
  current_launch = nullptr;
  current_fiber = nullptr;
  if (!l.error.empty()) throw std::logic_error("emu: " + l.error);
}

}  // namespace emu
