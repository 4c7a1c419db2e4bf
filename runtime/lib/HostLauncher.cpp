//===- HostLauncher.cpp - Blocks in turn, threads as fibers ---------------===//
//
// A block runs in phases. In each phase every runnable fiber is resumed once,
// in a shuffled order, and runs until it exits or waits. Then the waits that
// are complete are released: a warp whose live lanes all wait at a warp
// collective, else the whole block when every live thread waits at
// `__syncthreads`. If neither applies while threads still wait, the barriers
// cannot all be reached and the launch fails instead of hanging.
//
// Fibers switch with Boost.Context's fcontext primitives (a few nanoseconds,
// no system call). When AddressSanitizer is in the process, every switch is
// announced to it so that it knows which stack is current.
//
//===----------------------------------------------------------------------===//

#include "HostLauncher.h"

#include <boost/context/detail/fcontext.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

// AddressSanitizer's and ThreadSanitizer's fiber interfaces; null unless
// that sanitizer is in the process.
extern "C" {
void __sanitizer_start_switch_fiber(void **fakeStackSave, const void *bottom,
                                    size_t size) __attribute__((weak));
void __sanitizer_finish_switch_fiber(void *fakeStackSave,
                                     const void **bottomOld, size_t *sizeOld)
    __attribute__((weak));
void *__tsan_get_current_fiber(void) __attribute__((weak));
void *__tsan_create_fiber(unsigned flags) __attribute__((weak));
void __tsan_destroy_fiber(void *fiber) __attribute__((weak));
void __tsan_switch_to_fiber(void *fiber, unsigned flags) __attribute__((weak));
}

using namespace kiln::rt;
using namespace kiln::rt::host;
namespace ctx = boost::context::detail;

namespace {

/// Where an emulated thread stands.
enum class FiberState : uint8_t { Runnable, AtBlock, AtWarp, Yielded, Done };

struct Scheduler;

/// One emulated thread.
struct Fiber {
  ctx::fcontext_t context = nullptr;
  kiln_host_thread thread{};
  FiberState state = FiberState::Runnable;
  Scheduler *scheduler = nullptr;
  char *stackLow = nullptr;
  size_t stackSize = 0;
  void *fakeStack = nullptr;
  /// ThreadSanitizer's fiber, which keeps this thread's call stack apart.
  void *tsanFiber = nullptr;
};

/// The state of the block being run.
struct Scheduler {
  /// Where a waiting or exiting fiber returns to.
  ctx::fcontext_t back = nullptr;
  Fiber *current = nullptr;
  const Launch *launch = nullptr;
  /// The scheduler's own stack, for AddressSanitizer.
  const void *stackLow = nullptr;
  size_t stackSize = 0;
  void *fakeStack = nullptr;
  /// ThreadSanitizer's fiber of the scheduler (the calling thread's own).
  void *tsanFiber = nullptr;
};

/// Tells ThreadSanitizer, when it is in the process, that `fiber` runs
/// next; the switch synchronizes, as the fibers of a block share one OS
/// thread.
void tsanSwitch(void *fiber) {
  if (__tsan_switch_to_fiber && fiber)
    __tsan_switch_to_fiber(fiber, 0);
}

/// Creates and destroys the ThreadSanitizer fibers of one block's threads.
struct TsanFibers {
  explicit TsanFibers(std::vector<Fiber> &fibers) : fibers(fibers) {
    if (__tsan_create_fiber)
      for (Fiber &f : fibers)
        f.tsanFiber = __tsan_create_fiber(0);
  }
  ~TsanFibers() {
    if (__tsan_destroy_fiber)
      for (Fiber &f : fibers)
        if (f.tsanFiber)
          __tsan_destroy_fiber(f.tsanFiber);
  }
  std::vector<Fiber> &fibers;
};

void startSwitch(void **fakeStack, const void *low, size_t size) {
  if (__sanitizer_start_switch_fiber)
    __sanitizer_start_switch_fiber(fakeStack, low, size);
}

void finishSwitch(void *fakeStack, const void **lowOld, size_t *sizeOld) {
  if (__sanitizer_finish_switch_fiber)
    __sanitizer_finish_switch_fiber(fakeStack, lowOld, sizeOld);
}

/// Leaves the running fiber for the scheduler; returns when resumed.
void suspend(Fiber *fiber) {
  Scheduler *s = fiber->scheduler;
  startSwitch(&fiber->fakeStack, s->stackLow, s->stackSize);
  tsanSwitch(s->tsanFiber);
  ctx::transfer_t t = ctx::jump_fcontext(s->back, nullptr);
  finishSwitch(fiber->fakeStack, &s->stackLow, &s->stackSize);
  s->back = t.fctx;
}

/// `kiln_host_thread::wait`.
void waitFor(void *scheduler, int scope) {
  Fiber *fiber = static_cast<Scheduler *>(scheduler)->current;
  fiber->state = scope == KILN_HOST_WAIT_WARP    ? FiberState::AtWarp
                 : scope == KILN_HOST_WAIT_YIELD ? FiberState::Yielded
                                                 : FiberState::AtBlock;
  suspend(fiber);
}

/// The body of every fiber: run the kernel for one thread, then leave for
/// good (the stack is reused without unwinding anything).
void fiberMain(ctx::transfer_t t) {
  Fiber *fiber = static_cast<Fiber *>(t.data);
  Scheduler *s = fiber->scheduler;
  finishSwitch(nullptr, &s->stackLow, &s->stackSize);
  s->back = t.fctx;
  s->launch->entry(s->launch->args, &fiber->thread);
  fiber->state = FiberState::Done;
  startSwitch(nullptr, s->stackLow, s->stackSize);
  tsanSwitch(s->tsanFiber);
  ctx::jump_fcontext(s->back, nullptr);
  __builtin_unreachable();
}

/// Runs `fiber` until it waits or exits.
void resume(Scheduler &s, Fiber &fiber) {
  s.current = &fiber;
  fiber.state = FiberState::Runnable;
  startSwitch(&s.fakeStack, fiber.stackLow, fiber.stackSize);
  tsanSwitch(fiber.tsanFiber);
  ctx::transfer_t t = ctx::jump_fcontext(fiber.context, &fiber);
  finishSwitch(s.fakeStack, nullptr, nullptr);
  fiber.context = t.fctx;
}

/// SplitMix64: a small, well-mixed generator for the shuffles.
uint64_t nextRandom(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string dim3Text(const kiln_host_dim3 &d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " +
         std::to_string(d.z) + ")";
}

size_t pageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

} // namespace

Launcher::Launcher(size_t stackBytes) {
  size_t page = pageSize();
  this->stackBytes = (stackBytes + page - 1) / page * page;
}

Launcher::~Launcher() {
  if (stacks)
    munmap(stacks, mappedBytes);
}

Status Launcher::reserveStacks(size_t count) {
  if (count <= stackCount)
    return Status::ok();
  if (stacks)
    munmap(stacks, mappedBytes);
  stacks = nullptr;
  stackCount = 0;
  size_t page = pageSize();
  size_t bytes = count * (stackBytes + page);
  // Untouched stack pages cost no memory; each stack has a guard page below
  // it, so a kernel that overflows its stack faults instead of corrupting
  // its neighbour.
  void *mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED)
    return Status::error(StatusCode::Internal,
                         "cannot map " + std::to_string(bytes) +
                             " bytes of fiber stacks for the host backend");
  for (size_t i = 0; i < count; ++i)
    mprotect(static_cast<char *>(mapping) + i * (stackBytes + page), page,
             PROT_NONE);
  stacks = mapping;
  stackCount = count;
  mappedBytes = bytes;
  return Status::ok();
}

Status Launcher::run(const Launch &launch) {
  const uint32_t *g = launch.grid, *b = launch.block;
  uint64_t threads = uint64_t(b[0]) * b[1] * b[2];
  if (threads == 0 || threads > kMaxThreadsPerBlock || !g[0] || !g[1] ||
      !g[2])
    return Status::error(StatusCode::InvalidArgument,
                         "kernel " + launch.name + ": block of " +
                             std::to_string(threads) +
                             " threads or empty grid (at most " +
                             std::to_string(kMaxThreadsPerBlock) +
                             " threads per block)");
  if (Status s = reserveStacks(threads); !s.isOk())
    return s;

  size_t page = pageSize();
  size_t warps = (threads + 31) / 32;
  std::vector<unsigned long long> slots(warps * 32);
  std::vector<Fiber> fibers(threads);
  std::vector<uint32_t> order;
  order.reserve(threads);
  Scheduler scheduler;
  scheduler.launch = &launch;
  if (__tsan_get_current_fiber)
    scheduler.tsanFiber = __tsan_get_current_fiber();
  uint64_t random = launch.seed;

  kiln_host_dim3 blockDim{b[0], b[1], b[2]}, gridDim{g[0], g[1], g[2]};
  for (uint32_t bz = 0; bz < g[2]; ++bz)
    for (uint32_t by = 0; by < g[1]; ++by)
      for (uint32_t bx = 0; bx < g[0]; ++bx) {
        // Each block's threads start on fresh stacks: fresh fibers for
        // ThreadSanitizer too (an exited fiber's stack is not unwound).
        TsanFibers tsanFibers(fibers);
        // Slots start as poison, like the registers of a lane that never
        // wrote one.
        std::memset(slots.data(), 0xff, slots.size() * sizeof(slots[0]));
        for (uint32_t t = 0; t < threads; ++t) {
          Fiber &f = fibers[t];
          f.scheduler = &scheduler;
          f.state = FiberState::Runnable;
          f.stackLow = static_cast<char *>(stacks) +
                       size_t(t) * (stackBytes + page) + page;
          f.stackSize = stackBytes;
          f.fakeStack = nullptr;
          f.context =
              ctx::make_fcontext(f.stackLow + stackBytes, stackBytes,
                                 fiberMain);
          kiln_host_thread &th = f.thread;
          th.threadIdx = {t % b[0], t / b[0] % b[1], t / (b[0] * b[1])};
          th.blockIdx = {bx, by, bz};
          th.blockDim = blockDim;
          th.gridDim = gridDim;
          th.lane = t % 32;
          th.warpSlots = &slots[t / 32 * 32];
          th.scheduler = &scheduler;
          th.wait = waitFor;
        }
        order.clear();
        for (uint32_t t = 0; t < threads; ++t)
          order.push_back(t);
        while (true) {
          for (size_t i = order.size(); i > 1; --i)
            std::swap(order[i - 1], order[nextRandom(random) % i]);
          for (uint32_t t : order)
            resume(scheduler, fibers[t]);
          order.clear();
          // Release every warp whose live lanes all wait at a collective.
          size_t live = 0, atBlock = 0, atWarp = 0;
          for (size_t w = 0; w < warps; ++w) {
            size_t first = w * 32, last = std::min<size_t>(first + 32, threads);
            size_t waiting = 0, lanesLive = 0;
            for (size_t t = first; t < last; ++t) {
              FiberState st = fibers[t].state;
              lanesLive += st != FiberState::Done;
              waiting += st == FiberState::AtWarp;
              atBlock += st == FiberState::AtBlock;
            }
            live += lanesLive;
            atWarp += waiting;
            if (waiting && waiting == lanesLive)
              for (size_t t = first; t < last; ++t)
                if (fibers[t].state == FiberState::AtWarp)
                  order.push_back(static_cast<uint32_t>(t));
          }
          // A spinning thread runs again after every other one has run until
          // it waits. The emulation's spin waits give up themselves when the
          // state they wait for stops changing (kiln_cuda_host_tma.h).
          for (uint32_t t = 0; t < threads; ++t)
            if (fibers[t].state == FiberState::Yielded)
              order.push_back(t);
          if (!order.empty())
            continue;
          if (live == 0)
            break;
          if (atBlock == live) {
            for (uint32_t t = 0; t < threads; ++t)
              if (fibers[t].state == FiberState::AtBlock)
                order.push_back(t);
            continue;
          }
          // The suspended fibers are abandoned; their stacks are reused.
          return Status::error(
              StatusCode::Internal,
              "kernel " + launch.name + ", block " +
                  dim3Text({bx, by, bz}) + ": threads wait at barriers " +
                  "that cannot all be reached (" + std::to_string(atBlock) +
                  " at __syncthreads, " + std::to_string(atWarp) +
                  " at a warp collective, " +
                  std::to_string(threads - live) +
                  " exited): a barrier in divergent code");
        }
      }
  return Status::ok();
}
