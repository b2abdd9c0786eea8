// tests/sim/merged_steps_test.cc: steps of several accesses (a StepMerge, as the real-code
// engine's steps under the GIL): DPOR and the race detector see the accesses merged into a step.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "explore_programs.h"
#include "rerace/sim/explore.h"
#include "rerace/sim/strategy.h"
#include "rerace/sim/race_detector.h"
#include "rerace/sim/sync.h"

namespace rerace::sim {
namespace {

using testing::MakeRandomProgram;
using testing::MergeInStep;
using testing::RandomOp;
using testing::RandomProgram;

// Thread 0 reads x and fails if it sees 1; thread 1 writes y at a point, then x inside the same
// step. Only the merged access conflicts with thread 0's read.
void RaceInsideAStep(Scheduler& s) {
  auto x = std::make_shared<Shared<int>>(s, "x", 0);
  auto y = std::make_shared<Shared<int>>(s, "y", 0);
  s.Spawn("reader", [x] { Check(x->Read("reader: x") == 0, "saw the merged write"); });
  s.Spawn("writer", [x, y] {
    y->Write(1, "writer: y");
    x->Write(1, "in-step: x");
  });
}

TEST(Explore, DporSeesAccessesMergedIntoAStep) {
  for (const bool merge : {false, true}) {
    SCOPED_TRACE(merge ? "merged" : "every access a step");
    MergeInStep m;
    Explorer e(Explorer::Mode::kDpor, 100, 1000);
    uint64_t steps = 0;
    const ExploreResult r = e.Explore([&](Strategy& st) {
      Scheduler::Options o;
      o.merge = merge ? &m : nullptr;
      Scheduler sched(st, o);
      RaceInsideAStep(sched);
      const RunResult run = sched.Run();
      steps = run.steps;
      return run.failed();
    });
    // The race on x is reversed whether the write is a step of its own or part of one.
    EXPECT_TRUE(r.failed);
    EXPECT_EQ(steps, merge ? 4u : 5u);  // two starts, read, write y (+ write x unmerged)
  }
}

// Steps of several accesses (a StepMerge, the real-code engine under the GIL): DPOR keeps
// sleep sets, comparing a sleeping thread's whole step (its point and what was merged into it)
// with each step taken since. On random programs whose later accesses are merged into the step
// before them at random, it must reach every outcome the naive search reaches, in no more runs.
TEST(Explore, DporWithMergedStepsReachesEveryOutcomeTheNaiveSearchReaches) {
  const uint64_t seeds = std::getenv("RERACE_EXPLORE_SEEDS") ? std::stoull(std::getenv("RERACE_EXPLORE_SEEDS")) : 60;
  uint64_t fewer = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    const int threads = 3;
    RandomProgram prog = MakeRandomProgram(seed, threads, false);
    if (seed % 2)  // three accesses a thread: more to merge
      for (auto& ops : prog) ops.push_back({static_cast<int>(seed % 4 / 2), seed % 3 == 0, false});
    std::vector<std::vector<bool>> merged(prog.size());
    uint64_t x = seed * 0xD1B54A32D192ED03ull + 7;
    for (size_t t = 0; t < prog.size(); ++t)
      for (size_t i = 0; i < prog[t].size(); ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        merged[t].push_back(i > 0 && (x >> 33) % 2 == 0);
      }
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << threads << " threads");
    auto outcomes = [&](Explorer::Mode mode) {
      std::set<std::string> seen;
      MergeInStep m;
      Explorer e(mode, 100, 1'000'000);
      const ExploreResult result = e.Explore([&](Strategy& st) {
        Scheduler::Options o;
        o.merge = &m;
        Scheduler s(st, o);
        Shared<int> a(s, "a", 0), b(s, "b", 0);
        std::vector<std::string> reads(prog.size());
        for (size_t t = 0; t < prog.size(); ++t)
          s.Spawn("t", [&, t] {
            for (size_t i = 0; i < prog[t].size(); ++i) {
              const RandomOp& op = prog[t][i];
              Shared<int>& v = op.var == 0 ? a : b;
              const char* label = merged[t][i] ? "in-step" : "point";
              if (op.write) v.Write(static_cast<int>(t * 10 + i + 1), label);
              else reads[t] += std::to_string(v.Read(label)) + ",";
            }
          });
        s.Run();
        std::string out;
        for (const auto& rd : reads) out += rd + "|";
        out += std::to_string(a.UnsafeRef()) + "," + std::to_string(b.UnsafeRef());
        seen.insert(out);
        return false;
      });
      return std::pair{seen, result};
    };
    const auto [naive, n] = outcomes(Explorer::Mode::kNaive);
    const auto [dpor, d] = outcomes(Explorer::Mode::kDpor);
    ASSERT_TRUE(n.exhausted);
    EXPECT_TRUE(d.exhausted);
    EXPECT_EQ(dpor, naive);
    EXPECT_LE(d.runs, n.runs);
    fewer += d.runs < n.runs;
  }
  EXPECT_GT(fewer, seeds / 2);  // the reduction is real, not only sound
}

TEST(RaceDetectorInSteps, ReportsARaceOnAMergedAccess) {
  MergeInStep m;
  RaceDetector races;
  RoundRobin rr;
  Scheduler::Options o;
  o.merge = &m;
  o.races = &races;
  Scheduler sched(rr, o);
  auto x = std::make_shared<Shared<int>>(sched, "x", 0);
  auto y = std::make_shared<Shared<int>>(sched, "y", 0);
  sched.Spawn("reader", [x] { (void)x->Read("reader: x"); });
  sched.Spawn("writer", [x, y] {
    y->Write(1, "writer: y");
    x->Write(1, "in-step: x");
  });
  const RunResult run = sched.Run();
  ASSERT_FALSE(run.failed());
  ASSERT_EQ(races.races().size(), 1u);
  EXPECT_EQ(std::string(races.races()[0].second.label) + " / " + races.races()[0].first.label,
            "in-step: x / reader: x");
}

}  // namespace
}  // namespace rerace::sim
