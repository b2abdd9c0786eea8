// rerace/sim/sync.h: synchronization primitives written against the Scheduler.
//
// Each operation that another thread could observe is a scheduling point, so the strategy
// decides the order of every visible operation, and a report names it. Objects are bound to
// one Scheduler at construction, register a name for reports, and must be used from inside
// its logical threads (Fiber only), except the `Unsafe*` accessors.
//
//   Shared<T>     a shared variable: every Read and Write is a named point.
//   Mutex         non-recursive; locking a held mutex blocks; unlocking by a non-owner is a
//                 failure. Deadlocks are detected by the scheduler.
//   CondVar       wait / notify_one / notify_all; no spurious wake-ups; FIFO wake order.
//   ThreadLocal<T> one value per logical thread; not a scheduling point.
//   Promise<T> / Future<T>  one-shot value; Get blocks until set.
//
// Virtual time moves with Scheduler::SleepFor and Advance; blocking operations carry time
// from the waker to the woken thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rerace/sim/scheduler.h"

namespace rerace::sim {

template <typename T>
class Shared {
 public:
  Shared(Scheduler& s, std::string name, T init = T{})
      : s_(s), id_(s.RegisterObject(std::move(name))), value_(std::move(init)) {}

  // Fiber only. A read point, then the value as it is when this thread is picked.
  T Read(const char* label = "read") {
    s_.Point({Access::kRead, id_, label});
    return value_;
  }
  // Fiber only. A read point, then `f(value)` on the value in place (no copy): for reads of
  // containers, where a copy would allocate on every step.
  template <typename F>
  auto ReadWith(F&& f, const char* label = "read") {
    s_.Point({Access::kRead, id_, label});
    return f(static_cast<const T&>(value_));
  }
  // Fiber only. A write point, then the write.
  void Write(T v, const char* label = "write") {
    s_.Point({Access::kWrite, id_, label});
    value_ = std::move(v);
  }
  // Fiber only. A write point, then `f(value)` in place (read-modify-write as one step: use it
  // only where the real program's operation is atomic).
  template <typename F>
  void Update(F&& f, const char* label = "update") {
    s_.Point({Access::kWrite, id_, label});
    f(value_);
  }
  // No scheduling point: for setup, assertions after the run, and the model's own bookkeeping.
  T& UnsafeRef() { return value_; }
  uint32_t id() const { return id_; }

 private:
  Scheduler& s_;
  uint32_t id_;
  T value_;
};

class Mutex {
 public:
  Mutex(Scheduler& s, std::string name) : s_(s), id_(s.RegisterObject(std::move(name))) {}
  void Lock(const char* label = "lock");
  void Unlock(const char* label = "unlock");
  bool TryLock(const char* label = "try_lock");
  ThreadId owner() const { return owner_; }
  uint32_t id() const { return id_; }

 private:
  friend class CondVar;
  Scheduler& s_;
  uint32_t id_;
  ThreadId owner_ = kNoThread;
  Nanos release_clock_ = 0;  // clock of the last unlock: a lock happens after it
  std::vector<ThreadId> waiters_;
};

// RAII lock for sim::Mutex.
class LockGuard {
 public:
  explicit LockGuard(Mutex& m, const char* label = "lock") : m_(m) { m_.Lock(label); }
  ~LockGuard() { m_.Unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Mutex& m_;
};

class CondVar {
 public:
  CondVar(Scheduler& s, std::string name) : s_(s), id_(s.RegisterObject(std::move(name))) {}
  // Fiber only. REQUIRES: the caller holds `m`. Releases it, waits for a notify, reacquires.
  void Wait(Mutex& m, const char* label = "wait");
  void NotifyOne(const char* label = "notify_one");
  void NotifyAll(const char* label = "notify_all");

 private:
  Scheduler& s_;
  uint32_t id_;
  std::deque<ThreadId> waiters_;
  std::vector<bool> notified_;  // by thread id
};

template <typename T>
class ThreadLocal {
 public:
  ThreadLocal(Scheduler& s, T init = T{}) : s_(s), init_(std::move(init)) {}
  // Fiber only. This logical thread's value.
  T& Get() {
    const ThreadId t = s_.CurrentThread();
    if (values_.size() <= t) values_.resize(t + 1, init_);
    return values_[t];
  }
  // The value of thread `t` (for checks after the run).
  const T& Of(ThreadId t) const { return t < values_.size() ? values_[t] : init_; }

 private:
  Scheduler& s_;
  T init_;
  std::vector<T> values_;
};

namespace detail {
// Shared state of a promise/future pair.
template <typename T>
struct FutureState {
  FutureState(Scheduler& sched, std::string name)
      : s(sched), id(sched.RegisterObject(std::move(name))) {}
  Scheduler& s;
  uint32_t id;
  std::optional<T> value;
  Nanos set_clock = 0;  // the setter's clock when it fulfilled the promise
  std::vector<ThreadId> waiters;
};
}  // namespace detail

template <typename T>
class Future {
 public:
  // Fiber only. Blocks until the promise is fulfilled, then returns the value.
  const T& Get(const char* label = "future.get") {
    auto& st = *state_;
    st.s.Point({Access::kFutureGet, st.id, label});
    while (!st.value.has_value()) {
      st.waiters.push_back(st.s.CurrentThread());
      st.s.Block(st.id, "a future to be fulfilled");
      if (st.s.tearing_down()) break;
    }
    RERACE_ASSERT(st.value.has_value(), "future woken without a value: " + st.s.ObjectName(st.id));
    st.s.AdvanceTo(st.set_clock);
    return *st.value;
  }
  bool Ready() const { return state_->value.has_value(); }

 private:
  template <typename>
  friend class Promise;
  explicit Future(std::shared_ptr<detail::FutureState<T>> st) : state_(std::move(st)) {}
  std::shared_ptr<detail::FutureState<T>> state_;
};

template <typename T>
class Promise {
 public:
  Promise(Scheduler& s, std::string name)
      : state_(std::make_shared<detail::FutureState<T>>(s, std::move(name))) {}
  Future<T> GetFuture() { return Future<T>(state_); }
  // Fiber only. Fulfilling twice is a failure of the calling thread.
  void SetValue(T v, const char* label = "promise.set") {
    auto& st = *state_;
    st.s.Point({Access::kFutureSet, st.id, label});
    Check(!st.value.has_value(), "promise fulfilled twice: " + st.s.ObjectName(st.id));
    st.value = std::move(v);
    st.set_clock = st.s.Now();
    for (ThreadId t : st.waiters) st.s.Wake(t);
    st.waiters.clear();
  }

 private:
  std::shared_ptr<detail::FutureState<T>> state_;
};

}  // namespace rerace::sim
