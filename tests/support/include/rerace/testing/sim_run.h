// Test helpers for driving the scheduler: one run of a program under a strategy.
#pragma once

#include <functional>
#include <memory>

#include "rerace/sim/scheduler.h"
#include "rerace/sim/strategy.h"

namespace rerace::testing {

// A program builder: spawns threads on a fresh scheduler before Run().
using Program = std::function<void(sim::Scheduler&)>;

inline sim::RunResult RunWith(sim::Strategy& strategy, const Program& program,
                              uint64_t max_steps = 100'000) {
  sim::Scheduler::Options opts;
  opts.max_steps = max_steps;
  sim::Scheduler sched(strategy, opts);
  program(sched);
  return sched.Run();
}

inline sim::RunResult RunRandom(uint64_t seed, const Program& program) {
  sim::RandomWalk s(seed);
  return RunWith(s, program);
}

inline sim::RunResult RunSchedule(const sim::Schedule& schedule, const Program& program) {
  sim::ScheduleReplay s(schedule);
  return RunWith(s, program);
}

}  // namespace rerace::testing
