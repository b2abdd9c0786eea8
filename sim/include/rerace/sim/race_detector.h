// rerace/sim/race_detector.h: happens-before race detection over a run's scheduling points.
//
// Vector clocks, one per thread, advanced at every step. Synchronization points carry
// clocks: an unlock, a notify or a promise's set publishes the thread's clock on the object;
// a lock, a wake or a future's get joins it; a spawned thread starts from its parent's clock;
// joining a thread joins its clock. Two accesses to one shared variable, at least one a write,
// that no such chain orders are a race, reported even when nothing failed in the run: the
// variable, both accesses with thread, step and source label.
//
// Owned by the caller, handed to Scheduler::Options; called from the scheduler's thread only.
// Allocates as objects and threads appear, not per step (a step joins fixed-size clocks).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rerace/sim/scheduler.h"

namespace rerace::sim {

struct RaceAccess {
  ThreadId thread = 0;
  uint64_t step = 0;
  Access access = Access::kRead;
  const char* label = "";
};

struct Race {
  uint32_t object = 0;
  std::string object_name;
  RaceAccess first;   // the earlier access
  RaceAccess second;  // the later, unordered one
};

class RaceDetector {
 public:
  // Called by the scheduler.
  void OnSpawn(ThreadId parent, ThreadId child, uint32_t child_object);
  void OnStep(uint64_t step, ThreadId thread, const SchedulingPoint& p);
  void OnFinish(ThreadId thread);

  // Distinct races (by object and the two labels), in the order found.
  const std::vector<Race>& races() const { return races_; }
  // Fills object names (call after the run, while the scheduler is alive).
  void NameObjects(const Scheduler& s);

 private:
  using Clock = std::vector<uint32_t>;
  struct Shadow {
    RaceAccess write;
    bool has_write = false;
    Clock write_clock;             // the writer's clock at the write
    std::vector<RaceAccess> reads;  // last read per thread
    std::vector<Clock> read_clocks;
  };
  Clock& Of(ThreadId t);
  static void Join(Clock& into, const Clock& from);
  static bool Before(const Clock& a, ThreadId at, const Clock& b);
  void Report(uint32_t object, const RaceAccess& a, const RaceAccess& b);

  std::vector<Clock> threads_;
  std::map<uint32_t, Clock> sync_;          // lock / cv / future / thread objects
  std::map<uint32_t, ThreadId> thread_of_;  // thread objects
  std::map<uint32_t, Shadow> shadow_;       // shared variables
  std::set<std::tuple<uint32_t, std::string, std::string>> seen_;
  std::vector<Race> races_;
};

}  // namespace rerace::sim
