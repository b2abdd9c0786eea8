// sim/src/sync.cc: Mutex and CondVar.
#include "rerace/sim/sync.h"

#include <fmt/format.h>

#include <algorithm>

namespace rerace::sim {

void Mutex::Lock(const char* label) {
  const ThreadId self = s_.CurrentThread();
  // Every attempt is a visible step on the mutex (so that exploration sees a blocked attempt
  // conflict with the holder's acquire); a held mutex blocks the thread until an unlock,
  // then it tries again. Re-locking a mutex one holds blocks forever, as a non-recursive lock
  // does: the scheduler reports the deadlock naming the holder (this thread).
  for (;;) {
    s_.Point({Access::kLock, id_, label});
    if (owner_ == kNoThread || s_.tearing_down()) break;
    waiters_.push_back(self);
    s_.Block(id_, "to lock", owner_);
    if (s_.tearing_down()) return;
  }
  owner_ = self;
  if (!s_.tearing_down()) s_.AdvanceTo(release_clock_);
}

bool Mutex::TryLock(const char* label) {
  s_.Point({Access::kLock, id_, label});
  if (owner_ != kNoThread) return false;
  owner_ = s_.CurrentThread();
  s_.AdvanceTo(release_clock_);
  return true;
}

void Mutex::Unlock(const char* label) {
  const ThreadId self = s_.CurrentThread();
  if (s_.tearing_down()) {
    if (owner_ == self) owner_ = kNoThread;
    return;
  }
  s_.Point({Access::kUnlock, id_, label});
  Check(owner_ == self, fmt::format("thread {} unlocks mutex {} held by {}", self,
                                    s_.ObjectName(id_),
                                    owner_ == kNoThread ? std::string("nobody")
                                                        : fmt::format("thread {}", owner_)));
  owner_ = kNoThread;
  release_clock_ = s_.Now();
  for (ThreadId t : waiters_) s_.Wake(t);
  waiters_.clear();
}

void CondVar::Wait(Mutex& m, const char* label) {
  const ThreadId self = s_.CurrentThread();
  s_.Point({Access::kWait, id_, label});
  Check(m.owner_ == self, fmt::format("thread {} waits on {} without holding mutex {}", self,
                                      s_.ObjectName(id_), s_.ObjectName(m.id_)));
  // Release the mutex and enqueue as one step, so that no notify can fall in between.
  m.owner_ = kNoThread;
  m.release_clock_ = s_.Now();
  for (ThreadId t : m.waiters_) s_.Wake(t);
  m.waiters_.clear();
  if (notified_.size() <= self) notified_.resize(self + 1, false);
  notified_[self] = false;
  waiters_.push_back(self);
  while (!notified_[self] && !s_.tearing_down()) s_.Block(id_, "for a notify on");
  m.Lock("reacquire after wait");
}

void CondVar::NotifyOne(const char* label) {
  s_.Point({Access::kNotify, id_, label});
  if (waiters_.empty()) return;
  const ThreadId t = waiters_.front();
  waiters_.pop_front();
  notified_[t] = true;
  s_.Wake(t);
}

void CondVar::NotifyAll(const char* label) {
  s_.Point({Access::kNotify, id_, label});
  for (ThreadId t : waiters_) {
    notified_[t] = true;
    s_.Wake(t);
  }
  waiters_.clear();
}

}  // namespace rerace::sim
