// sim/src/race_detector.cc: vector clocks over scheduling points.
#include "rerace/sim/race_detector.h"

#include <algorithm>

namespace rerace::sim {

RaceDetector::Clock& RaceDetector::Of(ThreadId t) {
  if (threads_.size() <= t) threads_.resize(t + 1);
  Clock& c = threads_[t];
  if (c.size() <= t) c.resize(t + 1, 0);
  return c;
}

void RaceDetector::Join(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

// Did the access at clock `a` by thread `at` happen before a thread whose clock is `b`?
bool RaceDetector::Before(const Clock& a, ThreadId at, const Clock& b) {
  const uint32_t va = at < a.size() ? a[at] : 0;
  const uint32_t vb = at < b.size() ? b[at] : 0;
  return va <= vb;
}

void RaceDetector::OnSpawn(ThreadId parent, ThreadId child, uint32_t child_object) {
  thread_of_[child_object] = child;
  Clock& c = Of(child);
  if (parent != kNoThread) Join(c, Of(parent));
  c[child] += 1;
  if (parent != kNoThread) Of(parent)[parent] += 1;
}

void RaceDetector::OnFinish(ThreadId thread) {
  for (const auto& [obj, t] : thread_of_)
    if (t == thread) sync_[obj] = Of(thread);
}

void RaceDetector::Report(uint32_t object, const RaceAccess& a, const RaceAccess& b) {
  if (!seen_.insert({object, a.label, b.label}).second) return;
  races_.push_back({object, "", a, b});
}

void RaceDetector::OnStep(uint64_t step, ThreadId t, const SchedulingPoint& p) {
  Clock& c = Of(t);
  c[t] += 1;
  const RaceAccess me{t, step, p.access, p.label};
  switch (p.access) {
    case Access::kLock:
    case Access::kWake:
    case Access::kFutureGet:
    case Access::kJoin:
      if (auto it = sync_.find(p.object); it != sync_.end()) Join(c, it->second);
      break;
    case Access::kUnlock:
    case Access::kNotify:
    case Access::kFutureSet:
    case Access::kWait:
      Join(sync_[p.object], c);
      break;
    case Access::kRead: {
      Shadow& s = shadow_[p.object];
      if (s.has_write && s.write.thread != t && !Before(s.write_clock, s.write.thread, c))
        Report(p.object, s.write, me);
      if (s.reads.size() <= t) {
        s.reads.resize(t + 1);
        s.read_clocks.resize(t + 1);
      }
      s.reads[t] = me;
      s.read_clocks[t] = c;
      break;
    }
    case Access::kWrite: {
      Shadow& s = shadow_[p.object];
      if (s.has_write && s.write.thread != t && !Before(s.write_clock, s.write.thread, c))
        Report(p.object, s.write, me);
      for (size_t r = 0; r < s.reads.size(); ++r) {
        if (r == t || s.read_clocks[r].empty()) continue;
        if (!Before(s.read_clocks[r], static_cast<ThreadId>(r), c)) Report(p.object, s.reads[r], me);
      }
      s.write = me;
      s.has_write = true;
      s.write_clock = c;
      break;
    }
    default:
      break;
  }
}

void RaceDetector::NameObjects(const Scheduler& s) {
  for (Race& r : races_) r.object_name = s.ObjectName(r.object);
}

}  // namespace rerace::sim
