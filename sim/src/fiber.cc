// sim/src/fiber.cc: Boost.Context lives here and nowhere else.
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>

#include "rerace/base/result.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RERACE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RERACE_ASAN 1
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RERACE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RERACE_TSAN 1
#endif

#ifdef RERACE_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef RERACE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ctx = boost::context;

namespace rerace::sim {

namespace {
size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}
#if defined(RERACE_SANITIZED) || defined(RERACE_ASAN)
constexpr size_t kDefaultStack = 2u << 20;
#else
constexpr size_t kDefaultStack = 256u << 10;
#endif
}  // namespace

StackPool::StackPool(size_t size) {
  const size_t page = PageSize();
  size_t s = size == 0 ? kDefaultStack : size;
  size_ = (s + page - 1) / page * page;
}

StackPool::~StackPool() {
  for (void* bottom : all_) {
#ifdef RERACE_ASAN
    // ASan (clang 14) keeps a region's shadow across munmap: the next mmap at this address (a
    // later Scheduler's own pool) would inherit the poison left by frames that never ran their
    // epilogues, and a fresh fiber's first frames read as stack-use-after-scope (make fuzz,
    // replay_fuzz, one input in a few thousand, depending on which inputs ran before).
    __asan_unpoison_memory_region(bottom, size_);
#endif
    munmap(static_cast<char*>(bottom) - PageSize(), size_ + PageSize());
  }
}

void* StackPool::Allocate() {
  if (!free_.empty()) {
    void* b = free_.back();
    free_.pop_back();
#ifdef RERACE_ASAN
    // A frame's prologue marks only its redzones and relies on its variables' shadow being
    // clean; frames left on a stack without their epilogue (a fiber's entry frames, which never
    // return, and frames unwound across a switch) leave poison behind. A reused stack starts
    // clean, or the next fiber's variables read as stack-buffer-overflow where an old frame had
    // its redzones (seen with fuzz --jobs --races, where worker threads reuse stacks).
    __asan_unpoison_memory_region(b, size_);
#endif
    return b;
  }
  const size_t page = PageSize();
  void* base = mmap(nullptr, size_ + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  if (base == MAP_FAILED) {
    std::fprintf(stderr, "rerace: cannot map a fiber stack of %zu bytes\n", size_);
    throw std::bad_alloc();
  }
  mprotect(base, page, PROT_NONE);  // guard page below the stack
  void* bottom = static_cast<char*>(base) + page;
#ifdef RERACE_ASAN
  __asan_unpoison_memory_region(bottom, size_);  // see ~StackPool: the shadow outlives munmap
#endif
  all_.push_back(bottom);
  return bottom;
}

void StackPool::Release(void* bottom) { free_.push_back(bottom); }

}  // namespace rerace::sim

namespace rerace::sim::detail {

namespace {
// Boost.Context stack allocator drawing from a StackPool.
class PoolAllocator {
 public:
  PoolAllocator(StackPool& pool, const void** bottom_out) : pool_(&pool), out_(bottom_out) {}
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    void* bottom = pool_->Allocate();
    *out_ = bottom;
    // Stack colouring: stacks are a whole number of pages apart, so without an offset every
    // fiber's hot top-of-stack lines fall in the same L1 cache sets. Offsets of 0..15 cache
    // line pairs, by stack address, spread them.
    const size_t colour = ((reinterpret_cast<uintptr_t>(bottom) / pool_->stack_size()) % 16) * 128;
    sc.size = pool_->stack_size() - colour;
    sc.sp = static_cast<char*>(bottom) + sc.size;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    pool_->Release(static_cast<char*>(sc.sp) - sc.size);
  }

 private:
  StackPool* pool_;
  const void** out_;
};
}  // namespace

namespace {
// A context that is not running: where it continues, and its stack (for the sanitizer).
struct Slot {
  ctx::fiber cont;  // empty while the context runs, and once a fiber has finished
  const void* bottom = nullptr;
  size_t size = 0;
  void* tsan = nullptr;  // ThreadSanitizer's fiber for this context (RERACE_TSAN only)
};

// Sanitizer annotations. `fake` holds ASan's fake stack of the context that switches out;
// nullptr when that context ends for good.
void StartSwitch([[maybe_unused]] void** fake, [[maybe_unused]] const void* bottom,
                 [[maybe_unused]] size_t size) {
#ifdef RERACE_ASAN
  __sanitizer_start_switch_fiber(fake, bottom, size);
#endif
}
void FinishSwitch([[maybe_unused]] void* fake, [[maybe_unused]] const void** bottom,
                  [[maybe_unused]] size_t* size) {
#ifdef RERACE_ASAN
  __sanitizer_finish_switch_fiber(fake, bottom, size);
#endif
}

// ThreadSanitizer's annotations: each fiber is a TSan fiber of its own, the host is the OS
// thread's own; TSan is told just before every jump. A switch synchronises (flags 0): what one
// context did before it happens before what the next does after, as on one thread. TSan keeps
// a shadow call stack per fiber, which only stays balanced if no frame is entered on one side
// of a switch and left on the other: this file is built without TSan's function entry/exit
// hooks (sim/CMakeLists.txt), so the frames of the switch itself (Boost.Context's included)
// are on no shadow stack. Memory accesses here are still checked.
void* TsanCreate() {
#ifdef RERACE_TSAN
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}
void TsanDestroy([[maybe_unused]] void* fiber) {
#ifdef RERACE_TSAN
  if (fiber != nullptr) __tsan_destroy_fiber(fiber);
#endif
}
// The host's TSan fiber is the OS thread's current one, learned while the host runs.
void TsanLearnHost([[maybe_unused]] Slot& host) {
#ifdef RERACE_TSAN
  host.tsan = __tsan_get_current_fiber();
#endif
}
void TsanSwitch([[maybe_unused]] const Slot& target) {
#ifdef RERACE_TSAN
  __tsan_switch_to_fiber(target.tsan, 0);
#endif
}
}  // namespace

struct Switchboard::Impl {
  Slot host;                // the OS thread's own stack, while a fiber runs
  Fiber* running = nullptr; // nullptr: the host
  Slot* from = nullptr;     // the context switching out: receives its continuation on arrival

  // The first thing a context does when it is switched to: keep the continuation of the
  // context that switched out (and the host's stack bounds, when that was the host).
  void Arrive(ctx::fiber&& back, void* fake) {
    const void* bottom = nullptr;
    size_t size = 0;
    FinishSwitch(fake, &bottom, &size);
    from->cont = std::move(back);
    if (from == &host) {
      host.bottom = bottom;
      host.size = size;
    }
  }
};

struct Fiber::Impl {
  Switchboard::Impl* board = nullptr;
  Slot slot;
  Entry entry;
  void* arg = nullptr;
  bool started = false;  // its entry has run: it switches back to the host when unwound
  bool done = false;
  std::exception_ptr exception;
};

Switchboard::Switchboard() : impl_(std::make_unique<Impl>()) {}

Switchboard::~Switchboard() = default;

Fiber* Switchboard::running() const { return impl_->running; }

void Switchboard::SwitchTo(Fiber* to) {
  Impl& b = *impl_;
  if (to == b.running) return;
  RERACE_ASSERT(to == nullptr || !to->impl_->done, "switching to a finished fiber");
  Slot& target = to == nullptr ? b.host : to->impl_->slot;
  [[maybe_unused]] const Slot& self = b.running == nullptr ? b.host : b.running->impl_->slot;
  if (b.running == nullptr) TsanLearnHost(b.host);
  b.from = b.running == nullptr ? &b.host : &b.running->impl_->slot;
  b.running = to;
  void* fake = nullptr;
  StartSwitch(&fake, target.bottom, target.size);
  TsanSwitch(target);
  ctx::fiber back;
  try {
    back = std::move(target.cont).resume();
  } catch (const ctx::detail::forced_unwind&) {
    // This fiber is being destroyed unfinished (~Fiber): Boost.Context unwinds its stack.
    FinishSwitch(fake, nullptr, nullptr);
    throw;
  }
  b.Arrive(std::move(back), fake);
#ifdef RERACE_ASAN
  // Back on this fiber's stack: below this frame nothing is live, but the shadow there can
  // still hold the redzones of frames that ran deeper earlier and were not unwound by their
  // epilogues, and the next calls from here (the scheduler's step: the race detector, the
  // strategy) would read as stack-buffer-overflow, or stop ASan itself while it describes the
  // address (the CHECK at asan_thread.cpp:371 in `make test-sanitize`, Campaign's multi-job
  // race comparison: 7 of 20 runs at f5b5994, 0 of 30 with this). The 256 KiB below the frame
  // are cleared (a step's deepest path is far less); the host's stack is left as it is.
  if (&self != &b.host && self.bottom != nullptr) {
    char here = 0;
    const char* sp = &here - 512;
    const char* low = std::max(static_cast<const char*>(self.bottom), sp - (256 << 10));
    if (sp > low) __asan_unpoison_memory_region(low, static_cast<size_t>(sp - low));
  }
#endif
}

Fiber::Fiber(Switchboard& board, StackPool& pool, Entry entry, void* arg)
    : impl_(std::make_unique<Impl>()) {
  Impl* im = impl_.get();
  im->board = board.impl_.get();
  im->entry = entry;
  im->arg = arg;
  im->slot.size = pool.stack_size();
  im->slot.tsan = TsanCreate();
  PoolAllocator alloc(pool, &im->slot.bottom);
  im->slot.cont = ctx::fiber(std::allocator_arg, alloc, [im](ctx::fiber&& back) -> ctx::fiber {
    Switchboard::Impl& b = *im->board;
    b.Arrive(std::move(back), nullptr);
    im->started = true;
    try {
      im->entry.run(im->arg);
    } catch (const ctx::detail::forced_unwind&) {
      // Destruction of an unfinished fiber: let Boost.Context finish the unwinding, which
      // returns to the host that destroys it.
      im->done = true;
      StartSwitch(nullptr, b.host.bottom, b.host.size);
      TsanSwitch(b.host);
      throw;
    } catch (...) {
      im->exception = std::current_exception();
    }
    im->done = true;
    Fiber* next = im->entry.then(im->arg);
    RERACE_ASSERT(next == nullptr || !next->impl_->done, "a finished fiber continues in a finished fiber");
    Slot& target = next == nullptr ? b.host : next->impl_->slot;
    b.from = &im->slot;  // receives nothing: the stack goes back to the pool on the way out
    b.running = next;
    StartSwitch(nullptr, target.bottom, target.size);
    TsanSwitch(target);
    return std::move(target.cont);
  });
}

Fiber::~Fiber() {
  Impl& im = *impl_;
  if (im.slot.cont) {  // started and not finished, or never started
    Switchboard::Impl& b = *im.board;
    RERACE_ASSERT(b.running == nullptr, "a fiber must be destroyed from the host");
    TsanLearnHost(b.host);
    void* fake = nullptr;
    b.running = this;
    StartSwitch(&fake, im.slot.bottom, im.slot.size);
    // One never started is unwound by Boost.Context alone (its entry never runs, nor switches
    // back): TSan stays on the host.
    if (im.started) TsanSwitch(im.slot);
    im.slot.cont = ctx::fiber();  // resumes the fiber with forced_unwind; it returns here
    FinishSwitch(fake, nullptr, nullptr);
    b.running = nullptr;
  }
  TsanDestroy(im.slot.tsan);
}

bool Fiber::finished() const { return impl_->done; }

std::exception_ptr Fiber::TakeException() { return std::exchange(impl_->exception, nullptr); }

}  // namespace rerace::sim::detail
