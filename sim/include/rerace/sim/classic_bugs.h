// rerace/sim/classic_bugs.h: a corpus of small, classic concurrency bugs written against the
// sim API.
//
// They calibrate the strategies (tests assert that PCT finds each within a stated number of
// runs, and that round-robin misses the ones it should), drive the scheduler benchmarks, and
// back `rerace classic`, which shows a race found and then replayed from its schedule.
//
//   for (const ClassicBug& bug : ClassicBugs()) {
//     sim::RandomWalk s(seed);
//     sim::Scheduler sched(s);
//     bug.build(sched);
//     sim::RunResult r = sched.Run();
//   }
//
// `build` spawns the bug's threads on a fresh Scheduler (before Run); their state is owned by
// the threads' closures. Each bug has a `depth` in the sense of the PCT paper: the number of
// ordering constraints between steps that the failure needs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rerace/sim/scheduler.h"

namespace rerace::sim {

struct ClassicBug {
  std::string_view name;
  std::string_view description;
  uint32_t depth;
  FailureKind kind;  // how the bug shows when it is hit
  void (*build)(Scheduler&);
};

const std::vector<ClassicBug>& ClassicBugs();
// nullptr if no bug has that name.
const ClassicBug* FindClassicBug(std::string_view name);

}  // namespace rerace::sim
