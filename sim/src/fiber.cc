// sim/src/fiber.cc: Boost.Context lives here and nowhere else.
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

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

#ifdef RERACE_ASAN
#include <sanitizer/common_interface_defs.h>
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
  for (void* bottom : all_) munmap(static_cast<char*>(bottom) - PageSize(), size_ + PageSize());
}

void* StackPool::Allocate() {
  if (!free_.empty()) {
    void* b = free_.back();
    free_.pop_back();
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

struct Fiber::Impl {
  ctx::fiber self;    // the fiber while it is suspended
  ctx::fiber caller;  // whoever resumed it, while it runs
  Entry entry = nullptr;
  void* arg = nullptr;
  bool done = false;
  std::exception_ptr exception;
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  const void* caller_bottom = nullptr;
  size_t caller_size = 0;

  // Sanitizer annotations. `fake` holds ASan's fake stack across a switch.
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
};

Fiber::Fiber(StackPool& pool, Entry entry, void* arg) : impl_(std::make_unique<Impl>()) {
  Impl* im = impl_.get();
  im->entry = entry;
  im->arg = arg;
  im->stack_size = pool.stack_size();
  PoolAllocator alloc(pool, &im->stack_bottom);
  im->self = ctx::fiber(std::allocator_arg, alloc, [im](ctx::fiber&& caller) -> ctx::fiber {
    im->caller = std::move(caller);
    im->FinishSwitch(nullptr, &im->caller_bottom, &im->caller_size);
    try {
      im->entry(im->arg);
    } catch (const ctx::detail::forced_unwind&) {
      // Destruction of an unfinished fiber: let Boost.Context finish the unwinding.
      im->done = true;
      im->StartSwitch(nullptr, im->caller_bottom, im->caller_size);
      throw;
    } catch (...) {
      im->exception = std::current_exception();
    }
    im->done = true;
    im->StartSwitch(nullptr, im->caller_bottom, im->caller_size);
    return std::move(im->caller);
  });
}

Fiber::~Fiber() {
  if (impl_ && impl_->self) {
    Impl* im = impl_.get();
    void* fake = nullptr;
    im->StartSwitch(&fake, im->stack_bottom, im->stack_size);
    im->self = ctx::fiber();  // resumes the fiber with forced_unwind; it returns here
    im->FinishSwitch(fake, nullptr, nullptr);
  }
}

void Fiber::Resume() {
  Impl* im = impl_.get();
  RERACE_ASSERT(!im->done && im->self, "resuming a finished fiber");
  void* fake = nullptr;
  im->StartSwitch(&fake, im->stack_bottom, im->stack_size);
  im->self = std::move(im->self).resume();
  im->FinishSwitch(fake, nullptr, nullptr);
}

void Fiber::Suspend() {
  Impl* im = impl_.get();
  void* fake = nullptr;
  struct Finish {
    Impl* im;
    void** fake;
    // Runs on the way back in, also when the way back in is a forced unwind.
    ~Finish() { im->FinishSwitch(*fake, &im->caller_bottom, &im->caller_size); }
  };
  im->StartSwitch(&fake, im->caller_bottom, im->caller_size);
  Finish finish{im, &fake};
  im->caller = std::move(im->caller).resume();
}

bool Fiber::finished() const { return impl_->done; }

std::exception_ptr Fiber::TakeException() { return std::exchange(impl_->exception, nullptr); }

}  // namespace rerace::sim::detail
