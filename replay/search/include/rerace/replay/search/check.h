// rerace/replay/search/check.h: a fix's verdict, and its cost.
//
// CheckFix explores schedules of the programs under a fix, with a portfolio of strategies
// (random walk, PCT depth 2, PCT depth 3, in turn, each run its own seed, PCT's k measured by
// one round-robin run), and stops at the first failing schedule: the counterexample (with
// options.target, the first schedule with a finding of that kind). Not exhaustive: "holds"
// means "held in every schedule explored"; CheckFixBounded below explores systematically.
// The cost is the simulated step time under the timed strategy (the thread earliest in
// virtual time runs), with the fix and without, and of the recorded order.
//
// The check policy (PlanCheck, then CheckFix with the plan) is what `rerace check` runs: with
// a bound, that bound systematically; without one, DPOR at kAutoBound within a budget and,
// when the fix held there, the sampled portfolio after it. Example:
//
//   const CheckPlan plan = PlanCheck(CheckRequest{}, options.engine);
//   const CheckOutcome out = CheckFix(program, options, plan);
//   if (!out.verdict.holds) ... out.verdict.counterexample ...
//
// Deterministic: same program, options, runs and seed, same verdict. Single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"

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
  // python engine: the first schedule's patch reach lines (ReplayResult::notes), so that a
  // verdict says the patch it checked was on the path; a patch no call entered fails instead.
  std::vector<std::string> reach;
  // With options.target (--failure KIND): the findings of other kinds the runs had, which the
  // verdict does not count ("code at where", sorted): a "holds" against one kind says them.
  std::set<std::string> others;
  // Notes a run's findings that options.target does not count into `others`.
  void NoteOthers(const ReplayResult& r, const std::string& target);
};

// One run without preemption (round-robin, whole quantum): its step count is PCT's k, its
// per-thread steps SURW's weights.
struct StepShape {
  uint64_t steps = 1;
  std::vector<uint64_t> per_thread;
};
StepShape MeasureShape(Replayer& replayer);

// Called after each schedule a check runs, with the schedules run so far in this phase and
// the phase: "probe" (the sampled schedules before the systematic search), "DPOR" or "bounded
// DFS" (the search), "sampled" (the portfolio after it); for a progress line
// (CheckProgressLine). On the caller's thread.
using CheckProgress = std::function<void(uint64_t runs, const char* phase)>;

Verdict CheckFix(const Program& program, const ReplayOptions& options, uint64_t runs,
                 uint64_t seed, const CheckProgress& progress = {});
// The same on `replayer`'s program and options, its runs on `replayer` (for the real code, its
// engine: one Python process for every phase of a check, not one each).
Verdict CheckFix(Replayer& replayer, uint64_t runs, uint64_t seed, const CheckProgress& progress = {});
// CheckFix's schedules without its cost (the verdict's makespans and cost stay empty).
// `phase` is what `progress` is told.
Verdict SampleSchedules(Replayer& replayer, uint64_t runs, uint64_t seed,
                        const CheckProgress& progress = {}, const char* phase = "sampled");

// The cost part of a verdict alone (makespans, cost, duplicate tuning), as CheckFix prices it.
// The real-code engine's fixes are priced by the model of the same fix (cost.priced_by
// "model"), or not at all (cost.unpriced says why): its own virtual GPU runs only the recorded
// kernels, no calibrated CPU or GPU.
Verdict PriceFix(const Program& program, const ReplayOptions& options);

// Systematic: DPOR at a preemption bound (or, with naive, a plain depth-first search of every
// schedule with at most `bound` preemptions), up to `max_runs`. `exhausted` says whether the
// search finished within the budget. DPOR under a bound does not reach every interleaving
// within it (sim/explore.h): `cut` counts the races whose reversal the bound refused; an
// exhausted DPOR search with none cut covered every interleaving (`Complete`).
struct BoundedVerdict {
  Verdict verdict;
  bool exhausted = false;
  bool naive = false;
  uint32_t bound = 0;
  uint64_t pruned = 0;  // DPOR: choices pruned by source sets and sleep sets
  uint64_t cut = 0;     // DPOR: races the bound kept from being reversed
  bool Complete() const { return exhausted && !naive && cut == 0; }
};
// `jobs` > 1 with the real code (options.engine "python"): the search runs on that many engines
// at once, in batches (sim::Explorer's many-worker search: deterministic for a given number; its
// counts can differ from one engine's, never what a search that cut no race covers). The model's
// search runs on one replayer whatever `jobs` says (its runs are shorter than a batch's
// bookkeeping).
BoundedVerdict CheckFixBounded(const Program& program, const ReplayOptions& options,
                               uint32_t bound, uint64_t max_runs, bool naive,
                               const CheckProgress& progress = {}, unsigned jobs = 1);
// The same with `replayer` as worker 0 (its program and options).
BoundedVerdict CheckFixBounded(Replayer& replayer, uint32_t bound, uint64_t max_runs, bool naive,
                               const CheckProgress& progress = {}, unsigned jobs = 1);

// ---- the check policy ----

// Without a bound, DPOR explores at this preemption bound within kAutoMaxRuns runs
// (kAutoMaxRunsPython for the real code, which runs tens of schedules a second, not
// thousands), before the sampled schedules.
inline constexpr uint32_t kAutoBound = 1;
inline constexpr uint64_t kAutoMaxRuns = 20'000;
inline constexpr uint64_t kAutoMaxRunsPython = 200;
// The real code's sampled schedules when the runs are not given.
inline constexpr uint64_t kSampledRunsPython = 100;
// The real code: sampled schedules run before the systematic search (a quick counterexample:
// DPOR's depth-first order reaches early preemptions last, and each real-code run costs
// milliseconds). They certify nothing; a verdict of "holds" still needs the systematic search.
inline constexpr uint64_t kProbeRunsPython = 24;

// What the command line asked for; the *_given fields say whether the user gave the value
// (the engine then keeps it) or it is the command's default (the engine may lower it).
struct CheckRequest {
  std::optional<uint32_t> bound;  // none: the automatic policy
  bool naive = false;             // with a bound: plain bounded depth-first search
  uint64_t runs = 3000;           // sampled schedules after DPOR (automatic only)
  bool runs_given = false;
  uint64_t max_runs = 200'000;    // the systematic search's budget
  bool max_runs_given = false;
  uint64_t seed = 1;              // the first sampled schedule's seed
};

// What CheckFix(program, options, plan) explores.
struct CheckPlan {
  bool automatic = true;      // no bound was given
  uint32_t bound = kAutoBound;
  bool naive = false;
  uint64_t max_runs = kAutoMaxRuns;  // the systematic search's budget
  uint64_t sampled_runs = 0;         // automatic: the portfolio's schedules after DPOR; else 0
  uint64_t probe_runs = 0;           // sampled schedules before the systematic search (seeds
                                     // seed.. seed+probe_runs-1); the later sampled ones follow
  uint64_t seed = 1;
  unsigned jobs = 1;  // the systematic search's replayers at once (CheckFixBounded)
};
// `engine` is ReplayOptions::engine ("model" or "python").
CheckPlan PlanCheck(const CheckRequest& request, std::string_view engine);

// The sampled portfolio's i-th schedule (i from 0): random walk, PCT depth 2, PCT depth 3 in
// turn over `pct_steps` steps, with seed `seed + i`.
std::unique_ptr<sim::Strategy> SampledStrategy(uint64_t i, uint64_t seed, uint64_t pct_steps);

struct CheckOutcome {
  CheckPlan plan;
  BoundedVerdict systematic;  // the systematic search (its verdict, budget, pruning)
  Verdict verdict;            // over everything explored: systematic and sampled
  // The counterexample's seed: only a sampled schedule has one (DPOR's and the bounded
  // search's have none).
  std::optional<uint64_t> seed;
  uint64_t probed = 0;  // schedules of the probe that ran before the systematic search
};
CheckOutcome CheckFix(const Program& program, const ReplayOptions& options, const CheckPlan& plan,
                      const CheckProgress& progress = {});
// The same, every phase's runs on `replayer` (the probe, the search's worker 0, the sampled
// schedules): for the real code, one engine started once for the whole check.
CheckOutcome CheckFix(Replayer& replayer, const CheckPlan& plan, const CheckProgress& progress = {});

// The progress line of `runs` schedules of `phase` (CheckProgress) in a check of `trace` under
// `plan`, `seconds` after it started, without a newline: each phase counts against its own
// budget (the probe's runs, the search's --max-runs at its bound, the sampled portfolio's).
std::string CheckProgressLine(std::string_view trace, uint64_t runs, std::string_view phase,
                              const CheckPlan& plan, double seconds);

}  // namespace rerace::replay
