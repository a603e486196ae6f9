// The CPU emulation of the CUDA execution model (cuda_emulation.hpp): every CUDA thread of a
// block is a fiber on the calling thread; a scheduler runs each runnable fiber until it waits at
// a barrier or returns, then releases the barriers that all their members reached.
//
// A fiber gets a stack (a runner: a fiber context) only when it starts, and a runner whose thread
// returns goes straight on with the next thread that has not started, without a switch: a kernel
// without barriers costs a function call per thread, one with them a stack per thread that waits.
#include "cuda_emulation.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "asan.hpp"
#include "fiber_context.hpp"

namespace emu {
namespace {

constexpr unsigned kWarp = 32;
constexpr uint8_t kSharedGarbage = 0xA5;
constexpr size_t kStackBytes = size_t{256} << 10;  // room for ASan's larger frames

enum class State { runnable, at_block_barrier, at_warp_barrier, done };
enum class WarpOp : uint8_t { shuffle, ballot, match_any };

struct Fiber;

// A stack and a context that run threads one after another (runner_main).
struct Runner {
  FiberContext context;
  void* stack = nullptr;
  void* fake_stack = nullptr;  // ASan's, while it is switched out
  Fiber* fiber = nullptr;      // the thread it runs; null: idle (or, when resumed, told to end)
};

struct Fiber {
  Runner* runner = nullptr;  // null until it starts
  State state = State::runnable;
  // At a warp built-in: which, its mask (lanes of the warp), what the thread gives (and, for a
  // shuffle, the lane it reads) and, once it opens, what it returns.
  WarpOp op = WarpOp::shuffle;
  unsigned mask = 0;
  uint64_t value = 0, result = 0;
  int src_lane = 0;
  bool released_ok = true;  // whether the barrier it waited at was complete
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
  unsigned threads = 0;
  uint64_t blocks = 0, block_linear = 0;
  dim3 block_idx;
  std::unique_ptr<uint8_t[]> shared;  // exactly the bytes asked for, so that ASan bounds it
  size_t shared_bytes = 0;
  std::vector<Fiber> fibers;
  std::vector<std::unique_ptr<Runner>> runners;
  std::vector<Runner*> idle;
  unsigned cursor = 0;            // the scheduler's pass: position of the next fiber to look at
  unsigned first_live = 0;        // position of the first fiber that has not returned
  unsigned at_warp_barriers = 0;  // fibers waiting at warp built-ins
  bool reverse = false;           // the order of the threads: descending
  bool greedy = false;  // each pick starts from the first thread: a warp runs on while it can
  const std::function<void()>* kernel = nullptr;
  FiberContext scheduler;
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

void runner_main();

// Switches from `from` (a runner, or the scheduler when null) to `to` (likewise); `leaving`: for
// good (ASan then drops the runner's fake stack).
void switch_to(Launch& l, Runner* from, Runner* to, bool leaving = false) {
  FiberContext& from_context = from ? from->context : l.scheduler;
  FiberContext& to_context = to ? to->context : l.scheduler;
#if defined(DLPREP_EMU_ASAN)
  __sanitizer_start_switch_fiber(leaving ? nullptr : (from ? &from->fake_stack : &l.scheduler_fake),
                                 to ? to->stack : l.scheduler_stack,
                                 to ? kStackBytes : l.scheduler_stack_size);
#else
  (void)leaving;
#endif
  switch_fiber_context(from_context, to_context);
#if defined(DLPREP_EMU_ASAN)
  __sanitizer_finish_switch_fiber(from ? from->fake_stack : l.scheduler_fake, nullptr, nullptr);
#endif
}

// A runner for a thread that starts: an idle one, or a new one.
Runner* take_runner(Launch& l) {
  if (!l.idle.empty()) {
    Runner* r = l.idle.back();
    l.idle.pop_back();
    return r;
  }
  auto r = std::make_unique<Runner>();
  r->stack = stack_pool.get(l.runners.size());
  DLPREP_EMU_UNPOISON(r->stack, kStackBytes);  // frames an earlier launch left behind
  make_fiber_context(r->context, r->stack, kStackBytes, runner_main);
  l.runners.push_back(std::move(r));
  return l.runners.back().get();
}

// Hands the host thread from `from` (a runner, or the scheduler when null) to fiber `next` (the
// scheduler when null), starting it on a runner if it has not started.
void resume(Launch& l, Runner* from, Fiber* next) {
  Runner* to = nullptr;
  if (next != nullptr) {
    if (next->runner == nullptr) {
      next->runner = take_runner(l);
      next->runner->fiber = next;
    }
    to = next->runner;
  }
  current_fiber = next;
  if (to != from) switch_to(l, from, to);
}

// The next fiber to run in the block's order, or null when the pass is over.
Fiber* next_runnable(Launch& l) {
  while (l.first_live < l.threads &&
         l.fibers[l.reverse ? l.threads - 1 - l.first_live : l.first_live].state == State::done)
    ++l.first_live;
  if (l.greedy || l.cursor < l.first_live) l.cursor = l.first_live;
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

// A warp built-in opens as soon as the last lane of its mask arrives, as on the GPU, where the
// other lanes of the warp (and the rest of the block) go their own way meanwhile. Opens the one
// of the lanes of `mask` in the warp at `base` if they have all reached it; reports lanes of the
// mask that have returned, or that wait with another mask or at another built-in.
void try_open(Launch& l, unsigned base, unsigned mask, WarpOp op) {
  const unsigned lanes = l.lanes_of(base / kWarp);
  bool returned = false, mismatched = false;
  for (unsigned k = 0; k < lanes; ++k) {
    if ((mask >> k & 1u) == 0) continue;
    const Fiber& other = l.fibers[base + k];
    if (other.state == State::done)
      returned = true;
    else if (other.state != State::at_warp_barrier)
      return;
    else if (other.mask != mask || other.op != op)
      mismatched = true;
  }
  if (returned) l.fail("a warp built-in while lanes of its mask had returned");
  if (mismatched) l.fail("lanes of one mask at different warp built-ins, or with different masks");
  unsigned ballot = 0;
  for (unsigned k = 0; k < lanes; ++k)
    if ((mask >> k & 1u) != 0 && l.fibers[base + k].value != 0) ballot |= 1u << k;
  for (unsigned k = 0; k < lanes; ++k) {
    Fiber& other = l.fibers[base + k];
    if ((mask >> k & 1u) == 0 || other.state != State::at_warp_barrier) continue;
    switch (op) {
      case WarpOp::shuffle: {
        const int src = other.src_lane;
        other.result = other.value;  // a lane outside the warp: the caller's own
        if (src < 0 || static_cast<unsigned>(src) >= lanes) break;
        if ((mask >> src & 1u) == 0)
          l.fail("shuffle read lane " + std::to_string(src) + ", outside its mask");
        other.result = l.fibers[base + static_cast<unsigned>(src)].value;
        break;
      }
      case WarpOp::ballot:
        other.result = ballot;
        break;
      case WarpOp::match_any:
        other.result = 0;
        for (unsigned m = 0; m < lanes; ++m)
          if ((mask >> m & 1u) != 0 && l.fibers[base + m].value == other.value)
            other.result |= 1u << m;
        break;
    }
    other.state = State::runnable;
    other.released_ok = !returned && !mismatched;
    --l.at_warp_barriers;
  }
}

// A lane that returns may leave lanes of its warp waiting for it in vain: that is reported.
void lane_returned(Launch& l, const Fiber& f) {
  if (l.at_warp_barriers == 0) return;
  const unsigned base = f.linear / kWarp * kWarp, lanes = l.lanes_of(f.linear / kWarp);
  for (unsigned k = 0; k < lanes; ++k) {
    const Fiber& waiting = l.fibers[base + k];
    if (waiting.state == State::at_warp_barrier && (waiting.mask >> (f.linear % kWarp) & 1u) != 0)
      try_open(l, base, waiting.mask, waiting.op);
  }
}

// Waits (as the current fiber) until the scheduler releases `state`'s barrier; false when it
// released it incomplete.
bool wait_at(State state) {
  Launch& l = *current_launch;
  Fiber* const self = current_fiber;
  self->state = state;
  if (state == State::at_warp_barrier) {
    ++l.at_warp_barriers;
    try_open(l, self->linear / kWarp * kWarp, self->mask, self->op);
  }
  // Self when its warp opened at once and it runs on; else back here once it is resumed.
  resume(l, self->runner, next_runnable(l));
  return self->released_ok;
}

// Runs threads until it is told to end: each to its return, then the next in the block's order
// if it has not started (on this stack), else the runner goes idle and hands over.
void runner_main() {
  Launch& l = *current_launch;
  Runner* const self = current_fiber->runner;
#if defined(DLPREP_EMU_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  while (Fiber* const f = self->fiber) {
    try {
      (*l.kernel)();
    } catch (const std::exception& e) {
      l.fail("thread " + std::to_string(f->linear) + " threw: " + e.what());
    }
    f->state = State::done;
    lane_returned(l, *f);
    Fiber* const next = next_runnable(l);
    if (next != nullptr && next->runner == nullptr) {
      next->runner = self;
      self->fiber = next;
      current_fiber = next;
      continue;
    }
    self->fiber = nullptr;
    l.idle.push_back(self);
    resume(l, self, next);  // back here when given a thread, or told to end
  }
  switch_to(l, self, nullptr, true);
  std::abort();  // never resumed again
}

void run_block(Launch& l, uint64_t linear) {
  l.block_linear = linear;
  l.block_idx.x = static_cast<unsigned>(linear % l.grid.x);
  l.block_idx.y = static_cast<unsigned>(linear / l.grid.x % l.grid.y);
  l.block_idx.z = static_cast<unsigned>(linear / l.grid.x / l.grid.y);
  if (l.shared_bytes != 0) std::memset(l.shared.get(), kSharedGarbage, l.shared_bytes);
  for (Fiber& f : l.fibers) {
    f.runner = nullptr;
    f.state = State::runnable;
    f.released_ok = true;
  }
  l.first_live = 0;
  // The order of the threads changes from block to block, so that a missing barrier shows up as
  // a thread reading what another has not written yet (or has overwritten), whichever comes
  // first: ascending, descending, and the same with each warp running on as far as it can
  // before the next starts.
  l.reverse = linear % 2 == 1;
  l.greedy = linear % 4 >= 2;
  for (;;) {
    // A pass: each runnable fiber runs until it waits or returns, then hands on to the next.
    l.cursor = 0;
    if (Fiber* const first = next_runnable(l)) resume(l, nullptr, first);
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
    l.at_warp_barriers = 0;
  }
}

// Tells every runner (all idle once the blocks are done) to end, so that none is left switched
// out mid-function.
void end_runners(Launch& l) {
  current_fiber = nullptr;
  for (const auto& r : l.runners) {
    r->fiber = nullptr;
    switch_to(l, nullptr, r.get());
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

namespace {

// Gives the caller's value to the built-in of the lanes of `mask` and waits for it to open (all
// of them there), which sets what it returns.
uint64_t warp_builtin(WarpOp op, unsigned mask, uint64_t value, int src_lane) {
  Launch& l = current();
  Fiber& self = *current_fiber;
  const unsigned lane = self.linear % kWarp, lanes = l.lanes_of(self.linear / kWarp);
  const unsigned whole = lanes == kWarp ? 0xFFFFFFFFu : (1u << lanes) - 1u;
  char text[112];
  if ((mask & ~whole) != 0) {
    std::snprintf(text, sizeof text, "warp built-in mask 0x%08x in a warp of %u lanes", mask,
                  lanes);
    l.fail(text);
  }
  if ((mask >> lane & 1u) == 0) {
    std::snprintf(text, sizeof text, "warp built-in mask 0x%08x leaves out its own lane %u", mask,
                  lane);
    l.fail(text);
  }
  self.op = op;
  self.mask = (mask & whole) | 1u << lane;
  self.value = value;
  self.src_lane = src_lane;
  wait_at(State::at_warp_barrier);
  return self.result;
}

}  // namespace

uint64_t shuffle(unsigned mask, uint64_t value, int src_lane) {
  return warp_builtin(WarpOp::shuffle, mask, value, src_lane);
}

unsigned ballot(unsigned mask, bool predicate) {
  return static_cast<unsigned>(warp_builtin(WarpOp::ballot, mask, predicate ? 1 : 0, 0));
}

unsigned match_any(unsigned mask, uint64_t value) {
  return static_cast<unsigned>(warp_builtin(WarpOp::match_any, mask, value, 0));
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
  l.blocks = blocks;
  l.shared_bytes = shared_bytes;
  if (shared_bytes != 0) l.shared = std::make_unique<uint8_t[]>(shared_bytes);
  l.kernel = &kernel;
  l.fibers.resize(threads);
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = l.fibers[t];
    f.linear = t;
    f.thread_idx.x = t % block.x;
    f.thread_idx.y = t / block.x % block.y;
    f.thread_idx.z = t / block.x / block.y;
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
  end_runners(l);
  current_launch = nullptr;
  current_fiber = nullptr;
  if (!l.error.empty()) throw std::logic_error("emu: " + l.error);
}

}  // namespace emu
