// sim/src/fiber.h: the one wrapper around Boost.Context (private to sim).
//
// A Fiber runs an entry function on its own stack, switching to and from the scheduler's
// context. Nothing escapes a switch: an exception leaving the entry is caught on the fiber's
// stack and kept for the scheduler (TakeException). Under AddressSanitizer every switch is
// annotated (__sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber), as Debian's
// Boost.Context has only its fcontext backend.
//
// Stacks come from a StackPool, which keeps released stacks for the next fiber: a fuzz
// campaign of thousands of runs maps its stacks once. Each stack has a guard page below it.
//
// Threads: a Fiber, and the StackPool it uses, belong to one OS thread.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <vector>

#include "rerace/sim/stack_pool.h"

namespace rerace::sim::detail {

using rerace::sim::StackPool;


class Fiber {
 public:
  using Entry = void (*)(void* arg);
  // The fiber does not start until the first Resume().
  Fiber(StackPool& pool, Entry entry, void* arg);
  // Unwinds the fiber's stack (running destructors) if it has not finished.
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Must be called from outside this fiber. Runs it until it suspends or finishes.
  void Resume();
  // Must be called from inside this fiber. Returns to whoever called Resume().
  void Suspend();
  bool finished() const;
  // The exception that escaped the entry function, if any.
  std::exception_ptr TakeException();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rerace::sim::detail
