// rerace/replay/search/campaign.h: a fuzzing campaign over one trace, on one or many worker threads.
//
// Run i of a campaign replays the program under the strategy seeded with
// `first_seed + offset + i * stride` (`offset`/`stride`: `--shard K/N`). The runs are cut into
// chunks of consecutive i; each worker thread claims the next chunk, runs it on a Replayer of
// its own (its own scheduler, fiber stacks and tuner world; the Program and the options are
// only read), and keeps what it found. The merge gives exactly what one thread gives for the
// same runs:
//
//   - per distinct failure ("code at where"), the seed one job keeps: the lowest seed whose run
//     fails FIRST with it, else the lowest seed whose run has it at all (docs/MODEL.md), found
//     as a minimum, which does not depend on which thread ran which seed;
//   - its shrunk run (ShrinkTo, deterministic given the seed's run), made after the merge,
//     once per failure kept there, the failures shared out over the jobs (a seed kept by a job
//     and beaten by another job's, or by a later seed of its own, is not shrunk);
//   - with `races`, the distinct races and the runs' findings in run order (chunks merged in
//     order; MergeRaces keeps first occurrences, so merging chunk by chunk is merging run by run);
//   - a run that ends in a RunError: the one of the lowest run index, as one job stops at it.
//
// With a time budget (`seconds` > 0) the set of runs depends on the clock, as it does for one
// job; what is reported is still exactly one job's report over the runs that ran. NB: the
// shrinking follows the budget's runs.
//
// Thread safety: RunCampaign is called from one thread; the Replayer passed in runs on that
// thread (worker 0); the other workers build their own from its program() and options().
// With the python engine each worker's Replayer starts its own Python process (one per job,
// started from the worker's thread); every run forks from its process's pristine state, so a
// seed's run does not depend on which job ran it. An engine that cannot start makes the
// campaign's error (the first such worker's).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/search/shrink.h"
#include "rerace/sim/strategy.h"

namespace rerace::replay {

struct CampaignOptions {
  sim::StrategySpec strategy;
  uint64_t first_seed = 1;
  uint64_t offset = 0;  // --shard K/N: K
  uint64_t stride = 1;  // --shard K/N: N
  uint64_t runs = 1000;
  double seconds = 0;   // > 0: a time budget instead of `runs` (at least one run); the runs
                        // take 80% of it, shrinking what they found the rest (fuzz --time)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();  // it counts from
  std::string target;   // --failure KIND[@WHERE]; empty: any finding
  bool races = false;   // collect the runs' races and findings
  unsigned jobs = 1;    // worker threads (1: this thread only)
  // python engine: each run in the engine's long-lived process (Replayer::RunInProcess), where
  // it can, but with `races`; a failing run (Hits) is run again in a fresh fork (Run) and that
  // run is the one counted and reported, so nothing found only in-process is reported.
  bool in_process = false;
};

// One distinct failure as one job keeps it.
struct CampaignFailure {
  std::string signature;  // "code at where"
  uint64_t seed = 0;
  bool first = true;      // the first finding of its seed's run
  Finding finding;        // as that run found it
  Shrunk shrunk;          // that run shrunk towards it (ShrinkTo)
};

struct CampaignResult {
  uint64_t runs = 0, failing = 0;
  std::vector<CampaignFailure> failures;  // by signature
  std::vector<sim::Race> races;           // with `races`: distinct, in run order
  std::vector<Finding> findings;          // with `races`: every run's findings, in run order
  // A run that ended in a RunError (the lowest run index): the campaign stopped there.
  std::optional<Error> error;
  uint64_t error_seed = 0;
  // in_process: the runs made in the long-lived process; of those with a finding, the ones
  // whose fresh fork found the same (confirmed) and the ones whose fork found otherwise
  // (unconfirmed: the fork's run counted instead; the reset missed some state).
  uint64_t in_process = 0, confirmed = 0, unconfirmed = 0;
};

struct CampaignProgress {
  uint64_t runs = 0, failing = 0, distinct = 0;
  uint64_t planned = 0;  // CampaignOptions::runs (0 with a time budget)
};

// `progress`, when set, is called now and then on this thread.
[[nodiscard]] Result<CampaignResult> RunCampaign(
    Replayer& replayer, const CampaignOptions& options,
    const std::function<void(const CampaignProgress&)>& progress = {});

// The cores this process may run on (sched_getaffinity; hardware_concurrency otherwise; >= 1).
unsigned AvailableCores();

}  // namespace rerace::replay
