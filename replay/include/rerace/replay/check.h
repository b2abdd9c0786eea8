// rerace/replay/check.h: a fix's verdict, and its cost.
//
// CheckFix explores schedules of the programs under a fix, with a portfolio of strategies
// (random walk, PCT depth 2, PCT depth 3, in turn, each run its own seed, PCT's k measured by
// one round-robin run), and stops at the first failing schedule: the counterexample (with
// options.target, the first schedule with a finding of that kind). Not exhaustive: "holds"
// means "held in every schedule explored"; CheckFixBounded below explores systematically. The cost is the simulated step time under the timed strategy (the
// thread earliest in virtual time runs), with the fix and without, and of the recorded order.
//
// Deterministic: same program, options, runs and seed, same verdict. Single-threaded.
#pragma once

#include <cstdint>
#include <optional>

#include "rerace/replay/replay.h"

namespace rerace::replay {

struct Verdict {
  bool holds = true;
  uint64_t explored = 0;
  uint64_t pct_steps = 0;             // k used for PCT
  std::optional<ReplayResult> counterexample;
  uint64_t counterexample_seed = 0;
  Nanos makespan_fix = 0;
  std::string fix_timed_failure;      // the timed run under the fix failed: its code
  Nanos makespan_none = 0;
  std::string none_timed_failure;     // the timed run without a fix failed: its code
  Nanos makespan_recorded = 0;
  std::vector<DuplicateTuning> duplicates_fix;  // under the fix, timed strategy
  FixCost cost;                       // the fix's step time against the baseline (cost.h)
  std::vector<sim::Race> races;       // with options.detect_races: every distinct race of the
                                      // schedules explored
};

// One run without preemption (round-robin, whole quantum): its step count is PCT's k, its
// per-thread steps SURW's weights.
struct StepShape {
  uint64_t steps = 1;
  std::vector<uint64_t> per_thread;
};
StepShape MeasureShape(Replayer& replayer);

Verdict CheckFix(const Program& program, const ReplayOptions& options, uint64_t runs,
                 uint64_t seed);

// Systematic: every schedule with at most `bound` preemptions that DPOR (or, with naive, a
// plain depth-first search) distinguishes, up to `max_runs`. `exhausted` says whether the
// search finished within the budget.
struct BoundedVerdict {
  Verdict verdict;
  bool exhausted = false;
  bool naive = false;
  uint32_t bound = 0;
  uint64_t pruned = 0;  // DPOR: choices pruned by source sets and sleep sets
};
BoundedVerdict CheckFixBounded(const Program& program, const ReplayOptions& options,
                               uint32_t bound, uint64_t max_runs, bool naive);

}  // namespace rerace::replay
