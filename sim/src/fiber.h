// sim/src/fiber.h: the one wrapper around Boost.Context (private to sim).
//
// A Fiber runs an entry function on its own stack. Fibers switch straight to one another
// (symmetric switching: one Boost.Context jump per transfer), or to the *host*, the stack of
// the OS thread that started them. A Switchboard knows which context runs and where each
// suspended one is; every switch goes through it: `board.SwitchTo(&fiber)` or
// `board.SwitchTo(nullptr)` (the host), from whatever runs now.
//
// Nothing escapes a switch: an exception leaving the entry's `run` is caught on the fiber's
// stack and kept (TakeException); then `then`, which must not throw, says which context to
// continue in. Under
// AddressSanitizer every switch is annotated (__sanitizer_start_switch_fiber /
// __sanitizer_finish_switch_fiber), as Debian's Boost.Context has only its fcontext backend;
// the host's stack bounds are learned on each switch that leaves it. Under ThreadSanitizer
// each fiber is a TSan fiber (__tsan_create_fiber), every switch is announced
// (__tsan_switch_to_fiber, synchronising) and fiber.cc is built without TSan's function
// entry/exit hooks, so that no shadow call stack is entered on one fiber and left on another.
//
// Stacks come from a StackPool, which keeps released stacks for the next fiber: a fuzz
// campaign of thousands of runs maps its stacks once. Each stack has a guard page below it.
// A finished fiber's stack goes back to the pool during the switch that leaves it.
//
// Threads: a Switchboard, its Fibers and the StackPool they use belong to one OS thread.
// Ownership: the Switchboard must outlive its Fibers.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>

#include "rerace/sim/stack_pool.h"

namespace rerace::sim::detail {

using rerace::sim::StackPool;

class Fiber;

class Switchboard {
 public:
  Switchboard();
  ~Switchboard();
  Switchboard(const Switchboard&) = delete;
  Switchboard& operator=(const Switchboard&) = delete;

  // Suspends the running context (a fiber of this board, or the host) and continues `to`
  // (nullptr: the host) where it was suspended, or at its entry the first time. Returns when
  // some context switches back to the caller. Switching to the running context returns at
  // once. REQUIRES: `to` is not finished.
  void SwitchTo(Fiber* to);
  // The fiber running now, or nullptr while the host runs.
  Fiber* running() const;

 private:
  friend class Fiber;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Fiber {
 public:
  // Both run on the fiber's stack: `run` first (what it throws is kept), then `then`, which
  // returns the context to continue in (nullptr: the host), the fiber being finished. `then`
  // must not throw.
  struct Entry {
    void (*run)(void* arg);
    Fiber* (*then)(void* arg);
  };
  // The fiber does not start until something switches to it.
  Fiber(Switchboard& board, StackPool& pool, Entry entry, void* arg);
  // Unwinds the fiber's stack (running destructors) if it started and has not finished, by
  // Boost.Context's forced unwind; the scheduler finishes its fibers itself first, so this is
  // a fallback. Must be called from the host.
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  bool finished() const;
  // The exception that escaped `run`, if any.
  std::exception_ptr TakeException();

 private:
  friend class Switchboard;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rerace::sim::detail
