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
// Explore(run) is single-threaded; `run` must build a fresh program each time and return whether
// it failed. Explore(jobs, run, settle) runs the same search on `jobs` workers at once (below).
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

  // The same search over `jobs` workers. The choices left are kept in a tree (the prefixes of
  // the runs still to come), and runs start in batches of up to `jobs`: the deepest choices
  // left, in the order the one-worker search takes them. `run(worker, strategy)` runs the
  // program once on worker `worker` (0 to jobs-1; worker 0 on the caller's thread, the others
  // on threads of their own, all of a batch's runs at once); when the batch is over,
  // `settle(worker)` is called on the caller's thread for each of its runs, in the order they
  // started, and says whether that run failed; the races each run had are then reversed as
  // Explore(run) reverses them. A choice is marked explored at its node when its run starts,
  // so no other run repeats it; a run started beside a sibling does not sleep on the sibling's
  // step (not known yet). The order differs from Explore(run)'s, and with it what sleep sets
  // and source sets prune: the run count can be higher or lower, the classes reached are not
  // fewer (a search that cut no race still reaches every interleaving: explore_workers_test).
  // Deterministic for a given `jobs` (its counts, and which failing run comes first, can differ
  // from another number's); with jobs = 1 it is Explore(run), run for run. The first failing run of a batch,
  // in start order, is `failing`; `runs` counts every run started.
  ExploreResult Explore(unsigned jobs, const std::function<void(unsigned, Strategy&)>& run,
                        const std::function<bool(unsigned)>& settle);

 private:
  Mode mode_;
  uint32_t bound_;
  uint64_t max_runs_;
};

}  // namespace rerace::sim
