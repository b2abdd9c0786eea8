// replay/src/check_policy.cc: what `rerace check` explores (the check policy of check.h).
#include <algorithm>
#include <memory>

#include "rerace/replay/check.h"

namespace rerace::replay {

CheckPlan PlanCheck(const CheckRequest& request, std::string_view engine) {
  const bool python = engine == "python";
  CheckPlan plan;
  plan.seed = request.seed;
  if (request.bound) {
    plan.automatic = false;
    plan.bound = *request.bound;
    plan.naive = request.naive;
    plan.max_runs = request.max_runs;
    return plan;
  }
  plan.automatic = true;
  plan.bound = kAutoBound;
  plan.naive = false;
  plan.max_runs = request.max_runs_given
                      ? request.max_runs
                      : std::min(request.max_runs, python ? kAutoMaxRunsPython : kAutoMaxRuns);
  plan.sampled_runs = python && !request.runs_given ? kSampledRunsPython : request.runs;
  return plan;
}

std::unique_ptr<sim::Strategy> SampledStrategy(uint64_t i, uint64_t seed, uint64_t pct_steps) {
  const uint64_t s = seed + i;
  switch (i % 3) {
    case 0: return std::make_unique<sim::RandomWalk>(s);
    case 1: return std::make_unique<sim::Pct>(s, 2, pct_steps);
    default: return std::make_unique<sim::Pct>(s, 3, pct_steps);
  }
}

CheckOutcome CheckFix(const Program& program, const ReplayOptions& options, const CheckPlan& plan,
                      const CheckProgress& progress) {
  CheckOutcome out;
  out.plan = plan;
  out.systematic = CheckFixBounded(program, options, plan.bound, plan.max_runs, plan.naive, progress);
  out.verdict = out.systematic.verdict;
  if (!plan.automatic || !out.verdict.holds) return out;
  // DPOR found nothing within its bound: the sampled schedules reach deeper preemptions.
  out.verdict = CheckFix(program, options, plan.sampled_runs, plan.seed, progress);
  out.verdict.explored += out.systematic.verdict.explored;
  std::vector<sim::Race> all = out.systematic.verdict.races;
  MergeRaces(all, out.verdict.races);
  out.verdict.races = std::move(all);
  out.verdict.reach = out.systematic.verdict.reach;
  if (!out.verdict.holds) out.seed = out.verdict.counterexample_seed;
  return out;
}

}  // namespace rerace::replay
