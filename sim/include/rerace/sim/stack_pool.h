// rerace/sim/stack_pool.h: fiber stacks kept for reuse across runs.
//
// A fuzz campaign runs thousands of schedules; each run's fibers take their stacks from a
// pool that keeps released stacks, so stacks are mapped once. Each stack has a guard page
// below it. Pass one pool to many Schedulers (one at a time); it must outlive them.
// Thread-compatible: one OS thread at a time.
#pragma once

#include <cstddef>
#include <vector>

namespace rerace::sim {

class StackPool {
 public:
  // size 0: the default (256 KiB, or 2 MiB under sanitizers, whose frames are larger).
  explicit StackPool(size_t size = 0);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  size_t stack_size() const { return size_; }
  // Returns the lowest usable address of a stack of stack_size() bytes.
  void* Allocate();
  void Release(void* bottom);

 private:
  size_t size_;
  std::vector<void*> free_;
  std::vector<void*> all_;
};

}  // namespace rerace::sim
