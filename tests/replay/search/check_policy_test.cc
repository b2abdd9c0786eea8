// The check policy (check.h): which bound, budgets and sampled portfolio `rerace check` runs.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "rerace/replay/search/check.h"
#include "rerace/replay/model/program.h"
#include "rerace/testing/programs.h"
#include "rerace/traces/synth.h"

namespace rerace::replay {
namespace {

using rerace::testing::SynthesizedProgram;
using rerace::testing::WithFix;

TEST(CheckPolicy, PlansPerEngineAndWhatTheUserGave) {
  struct Case {
    const char* what;
    const char* engine;
    CheckRequest request;
    bool automatic;
    uint32_t bound;
    bool naive;
    uint64_t max_runs;
    uint64_t sampled_runs;
  };
  auto probe = [](const char* engine) { return std::string(engine) == "python" ? kProbeRunsPython : 0; };
  CheckRequest bound2;
  bound2.bound = 2;
  bound2.naive = true;
  bound2.max_runs = 500;
  CheckRequest given;
  given.runs = 7;
  given.runs_given = true;
  given.max_runs = 50;
  given.max_runs_given = true;
  CheckRequest big_given;
  big_given.max_runs = 90'000;
  big_given.max_runs_given = true;
  CheckRequest small_default;  // a default below the automatic budget keeps the default
  small_default.max_runs = 10;
  const Case cases[] = {
      {"model, nothing given", "model", CheckRequest{}, true, kAutoBound, false, kAutoMaxRuns, 3000},
      {"python, nothing given", "python", CheckRequest{}, true, kAutoBound, false,
       kAutoMaxRunsPython, kSampledRunsPython},
      {"python, runs and max-runs given", "python", given, true, kAutoBound, false, 50, 7},
      {"model, runs and max-runs given", "model", given, true, kAutoBound, false, 50, 7},
      {"model, max-runs above the automatic budget", "model", big_given, true, kAutoBound, false,
       90'000, 3000},
      {"model, a smaller default", "model", small_default, true, kAutoBound, false, 10, 3000},
      {"a bound: that bound only", "python", bound2, false, 2, true, 500, 0},
      {"a bound: that bound only", "model", bound2, false, 2, true, 500, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.what) + " (" + c.engine + ")");
    const CheckPlan p = PlanCheck(c.request, c.engine);
    EXPECT_EQ(p.automatic, c.automatic);
    EXPECT_EQ(p.bound, c.bound);
    EXPECT_EQ(p.naive, c.naive);
    EXPECT_EQ(p.max_runs, c.max_runs);
    EXPECT_EQ(p.sampled_runs, c.sampled_runs);
    EXPECT_EQ(p.probe_runs, probe(c.engine));  // the real code samples first, the model does not
    EXPECT_EQ(p.seed, c.request.seed);
  }
}

TEST(CheckPolicy, SampledPortfolioTakesRandomThenPctDepthTwoThenThree) {
  const char* want[] = {"random(seed=10)", "pct(seed=11, depth=2, steps=40)",
                        "pct(seed=12, depth=3, steps=40)", "random(seed=13)"};
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(SampledStrategy(i, 10, 40)->Name(), want[i]) << i;
}

// An automatic check (no bound) whose budgets the user gave: DPOR's `max_runs`, then `runs`
// sampled schedules.
CheckRequest AutomaticWithBudgets(uint64_t runs, uint64_t max_runs) {
  CheckRequest r;
  r.runs = runs;
  r.runs_given = true;
  r.max_runs = max_runs;
  r.max_runs_given = true;
  return r;
}

TEST(CheckPolicy, AutomaticFailsInDporWithoutASeedAndHoldsOverBothSearches) {
  const Program p = SynthesizedProgram(traces::Scenario{}, "check-policy");
  CheckRequest r = AutomaticWithBudgets(12, 40);
  // No fix: DPOR at bound 1 finds the race; its schedule has no seed.
  const CheckOutcome none = CheckFix(p, WithFix("none"), PlanCheck(r, "model"));
  EXPECT_FALSE(none.verdict.holds);
  ASSERT_TRUE(none.verdict.counterexample.has_value());
  EXPECT_EQ(none.verdict.counterexample->strategy, "DPOR");
  EXPECT_FALSE(none.seed.has_value());
  EXPECT_EQ(none.verdict.explored, none.systematic.verdict.explored);
  // A fix that holds: the sampled schedules run after DPOR's, and both count.
  const CheckOutcome lock = CheckFix(p, WithFix("lock-run"), PlanCheck(r, "model"));
  EXPECT_TRUE(lock.verdict.holds);
  EXPECT_GT(lock.systematic.verdict.explored, 0u);
  EXPECT_LE(lock.systematic.verdict.explored, 40u);
  EXPECT_EQ(lock.verdict.explored, lock.systematic.verdict.explored + 12);
  // With a bound, nothing is sampled.
  r.bound = 1;
  const CheckOutcome bounded = CheckFix(p, WithFix("lock-run"), PlanCheck(r, "model"));
  EXPECT_EQ(bounded.verdict.explored, bounded.systematic.verdict.explored);
}

// The probe (the real code's plan samples a few schedules before the systematic search): a
// failure found there is the counterexample, with its seed; a fix that holds there still needs
// the systematic search, and the probe's schedules count in what was explored.
TEST(CheckPolicy, AProbeBeforeTheSearchGivesASeededCounterexampleOrCountsItsRuns) {
  const Program p = SynthesizedProgram(traces::Scenario{}, "check-policy-probe");
  CheckRequest r;
  r.bound = 1;
  r.max_runs = 40;
  CheckPlan plan = PlanCheck(r, "model");
  plan.probe_runs = 6;
  const CheckOutcome none = CheckFix(p, WithFix("none"), plan);
  ASSERT_FALSE(none.verdict.holds);
  ASSERT_TRUE(none.seed.has_value());
  EXPECT_GE(*none.seed, plan.seed);
  EXPECT_LT(*none.seed, plan.seed + 6);
  EXPECT_EQ(none.verdict.explored, none.probed);
  EXPECT_EQ(none.systematic.verdict.explored, 0u);  // the search never ran
  EXPECT_NE(none.verdict.counterexample->strategy.find("seed="), std::string::npos);
  const CheckOutcome lock = CheckFix(p, WithFix("lock-run"), plan);
  EXPECT_TRUE(lock.verdict.holds);
  EXPECT_EQ(lock.probed, 6u);
  EXPECT_GT(lock.systematic.verdict.explored, 0u);
  EXPECT_EQ(lock.verdict.explored, lock.systematic.verdict.explored + 6);
}

// Progress (`check` on a terminal): each phase is named as it runs and its line counts against
// that phase's own budget. A probe's line once read "sampled at bound 2: 1 of at most 0
// schedules", the later portfolio's budget, which a bounded check does not run.
TEST(CheckPolicy, ProgressNamesEachPhaseAgainstItsOwnBudget) {
  const Program p = SynthesizedProgram(traces::Scenario{}, "check-policy-progress");
  CheckRequest r = AutomaticWithBudgets(5, 40);
  CheckPlan plan = PlanCheck(r, "model");  // automatic: DPOR, then the sampled portfolio
  plan.probe_runs = 3;
  std::vector<std::pair<std::string, uint64_t>> seen;
  const CheckOutcome lock = CheckFix(p, WithFix("lock-run"), plan, [&](uint64_t runs, const char* phase) {
    seen.emplace_back(phase, runs);
  });
  ASSERT_TRUE(lock.verdict.holds);
  const uint64_t searched = lock.systematic.verdict.explored;
  ASSERT_EQ(seen.size(), 3 + searched + 5);
  for (size_t i = 0; i < seen.size(); ++i) {
    const char* want = i < 3 ? "probe" : i < 3 + searched ? "DPOR" : "sampled";
    const uint64_t n = i < 3 ? i + 1 : i < 3 + searched ? i - 3 + 1 : i - 3 - searched + 1;
    EXPECT_EQ(seen[i].first, want) << i;
    EXPECT_EQ(seen[i].second, n) << i;
  }
  EXPECT_EQ(CheckProgressLine("t.rrt", 2, "probe", plan, 0.4),
            "t.rrt: sampling before the search: 2 of 3 schedules (0 s)");
  EXPECT_EQ(CheckProgressLine("t.rrt", 7, "DPOR", plan, 2.6),
            "t.rrt: DPOR at bound " + std::to_string(plan.bound) + ": 7 of at most 40 schedules (3 s)");
  EXPECT_EQ(CheckProgressLine("t.rrt", 4, "sampled", plan, 1),
            "t.rrt: sampling after the search: 4 of 5 schedules (1 s)");
  r.bound = 2;
  r.naive = true;
  const CheckPlan bounded = PlanCheck(r, "python");
  EXPECT_EQ(CheckProgressLine("t.rrt", 1, "probe", bounded, 0),
            "t.rrt: sampling before the search: 1 of " + std::to_string(bounded.probe_runs) +
                " schedules (0 s)");
  EXPECT_EQ(CheckProgressLine("t.rrt", 9, "bounded DFS", bounded, 0),
            "t.rrt: bounded DFS at bound 2: 9 of at most 40 schedules (0 s)");
}

}  // namespace
}  // namespace rerace::replay
