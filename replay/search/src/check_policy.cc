// replay/search/src/check_policy.cc: what `rerace check` explores (the check policy of check.h).
#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "rerace/replay/search/check.h"

namespace rerace::replay {

CheckPlan PlanCheck(const CheckRequest& request, std::string_view engine) {
  const bool python = engine == "python";
  CheckPlan plan;
  plan.seed = request.seed;
  plan.probe_runs = python ? kProbeRunsPython : 0;
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
  Replayer rep(program, options);
  return CheckFix(rep, plan, progress);
}

CheckOutcome CheckFix(Replayer& rep, const CheckPlan& plan, const CheckProgress& progress) {
  CheckOutcome out;
  out.plan = plan;
  std::set<std::string> probe_others;
  if (plan.probe_runs > 0) {
    Verdict probe = SampleSchedules(rep, plan.probe_runs, plan.seed, progress, "probe");
    out.probed = probe.explored;
    probe_others = probe.others;
    if (!probe.holds) {
      // The cost of a failing fix is its failure: CheckFix's own runs price it.
      out.verdict = CheckFix(rep, 0, plan.seed);
      out.verdict.holds = false;
      out.verdict.explored = probe.explored;
      out.verdict.pct_steps = probe.pct_steps;
      out.verdict.counterexample = std::move(probe.counterexample);
      out.verdict.counterexample_seed = probe.counterexample_seed;
      out.verdict.races = std::move(probe.races);
      out.seed = out.verdict.counterexample_seed;
      return out;
    }
  }
  out.systematic =
      CheckFixBounded(rep, plan.bound, plan.max_runs, plan.naive, progress, plan.jobs);
  out.verdict = out.systematic.verdict;
  out.verdict.explored += out.probed;
  out.verdict.others.insert(probe_others.begin(), probe_others.end());
  if (!plan.automatic || !out.verdict.holds) return out;
  // DPOR found nothing within its bound: the sampled schedules reach deeper preemptions.
  out.verdict = CheckFix(rep, plan.sampled_runs, plan.seed + plan.probe_runs, progress);
  out.verdict.explored += out.systematic.verdict.explored + out.probed;
  std::vector<sim::Race> all = out.systematic.verdict.races;
  MergeRaces(all, out.verdict.races);
  out.verdict.races = std::move(all);
  out.verdict.reach = out.systematic.verdict.reach;
  out.verdict.others.insert(out.systematic.verdict.others.begin(), out.systematic.verdict.others.end());
  out.verdict.others.insert(probe_others.begin(), probe_others.end());
  if (!out.verdict.holds) out.seed = out.verdict.counterexample_seed;
  return out;
}

std::string CheckProgressLine(std::string_view trace, uint64_t runs, std::string_view phase,
                              const CheckPlan& plan, double seconds) {
  if (phase == "probe")
    return fmt::format("{}: sampling before the search: {} of {} schedules ({:.0f} s)", trace,
                       runs, plan.probe_runs, seconds);
  if (phase == "certificate")
    return fmt::format("{}: certificate over sub-programs: {} runs ({:.0f} s)", trace, runs, seconds);
  if (phase == "sampled")
    return fmt::format("{}: sampling after the search: {} of {} schedules ({:.0f} s)", trace, runs,
                       plan.sampled_runs, seconds);
  return fmt::format("{}: {} at bound {}: {} of at most {} schedules ({:.0f} s)", trace, phase,
                     plan.bound, runs, plan.max_runs, seconds);
}

}  // namespace rerace::replay
