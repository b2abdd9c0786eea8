// rerace/sim/explore.h: systematic exploration up to a preemption bound.
//
// Explorer re-runs a program (stateless model checking: every run starts from the beginning,
// which costs microseconds here) and enumerates its schedules depth-first, each run following
// a prefix of choices and then running without preemption. Two modes:
//
//   kNaive  every runnable thread at every step is a choice (within the bound): every
//           interleaving with at most B preemptions is run.
//   kDpor   dynamic partial-order reduction with source sets and sleep sets (Flanagan &
//           Godefroid, POPL 2005; Abdulla, Aronis, Jonsson, Sagonas, POPL 2014). After a run,
//           happens-before is computed with vector clocks (program order, and the order of
//           dependent steps: same object, not both reads); each race (two dependent steps of
//           different threads not ordered through other steps) is reversed by scheduling, at
//           the earlier step, one thread that can start the reversal (an "initial"), unless
//           one such thread is already scheduled there. A thread whose next step was explored
//           from an earlier node, and that nothing has conflicted with since, sleeps.
//           Interleavings that only reorder independent steps are not re-run.
//
// NB: DPOR under a preemption bound does not reach every interleaving with at most B
// preemptions. Reversing a race can cost more preemptions than the bound allows, and then it is
// not run, though an equivalent interleaving within the bound may exist. Coons, Musuvathi and
// McKinley (OOPSLA 2013) show what bounded POR must add to be sound; here it multiplied the runs
// of a real recording more than 700-fold (docs/PERFORMANCE.md), so it is not done. Instead the
// search counts the races whose reversal the bound refused (`cut`). With none refused, the
// bounded search is the unbounded one, which reaches every outcome (tests/sim/explore_test.cc
// checks both on random programs); with some, a verdict says it covered the search's
// schedules, not every interleaving within the bound.
//
// Single-threaded; `run` must build a fresh program each time and return whether it failed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "rerace/sim/schedule.h"
#include "rerace/sim/strategy.h"

namespace rerace::sim {

struct ExploreResult {
  uint64_t runs = 0;
  bool failed = false;
  Schedule failing;          // when failed
  bool exhausted = false;    // every choice within the bound was tried
  bool budget_hit = false;   // stopped at max_runs
  // DPOR: races whose reversal an already scheduled choice covered (source sets), and choices
  // skipped because the thread was asleep there (sleep sets).
  uint64_t pruned = 0;
  // DPOR: races it found whose reversal the preemption bound refused (each race once per run
  // that found it). 0 with `exhausted`: the search was the unbounded one, every interleaving.
  uint64_t cut = 0;
};

class Explorer {
 public:
  enum class Mode { kNaive, kDpor };
  Explorer(Mode mode, uint32_t preemption_bound, uint64_t max_runs)
      : mode_(mode), bound_(preemption_bound), max_runs_(max_runs) {}

  // `run(strategy)` runs the program once under `strategy`; returns true when it failed.
  ExploreResult Explore(const std::function<bool(Strategy&)>& run);

 private:
  Mode mode_;
  uint32_t bound_;
  uint64_t max_runs_;
};

}  // namespace rerace::sim
