#include "rerace/sim/explore.h"

#include <gtest/gtest.h>

#include <memory>

#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/sync.h"

namespace rerace::sim {
namespace {

using Build = std::function<void(Scheduler&)>;

ExploreResult Explore(Explorer::Mode mode, uint32_t bound, const Build& build,
                      uint64_t max_runs = 100000) {
  Explorer e(mode, bound, max_runs);
  return e.Explore([&](Strategy& s) {
    Scheduler sched(s);
    build(sched);
    return sched.Run().failed();
  });
}

// Two threads of three steps that touch nothing shared.
void Independent(Scheduler& s) {
  for (int t = 0; t < 2; ++t)
    s.Spawn("t", [&s] {
      for (int i = 0; i < 2; ++i) s.Point({Access::kYield, 0, "local"});
    });
}

// Two threads that each write one shared variable once.
void TwoWrites(Scheduler& s) {
  auto x = std::make_shared<Shared<int>>(s, "x", 0);
  for (int t = 0; t < 2; ++t) s.Spawn("w", [x, t] { x->Write(t, "write x"); });
}

TEST(Explore, NaiveRunsEveryInterleavingOfIndependentSteps) {
  // Interleavings of 3 + 3 steps: C(6,3) = 20; with 1 preemption at most, fewer.
  const ExploreResult all = Explore(Explorer::Mode::kNaive, 100, Independent);
  EXPECT_TRUE(all.exhausted);
  EXPECT_EQ(all.runs, 20u);
  const ExploreResult one = Explore(Explorer::Mode::kNaive, 0, Independent);
  EXPECT_EQ(one.runs, 2u);  // no preemption: thread 0 first, or thread 1 first
}

TEST(Explore, DporRunsIndependentStepsOnce) {
  const ExploreResult r = Explore(Explorer::Mode::kDpor, 100, Independent);
  EXPECT_TRUE(r.exhausted);
  EXPECT_EQ(r.runs, 1u);
}

TEST(Explore, DporReversesEachRace) {
  const ExploreResult naive = Explore(Explorer::Mode::kNaive, 100, TwoWrites);
  const ExploreResult dpor = Explore(Explorer::Mode::kDpor, 100, TwoWrites);
  EXPECT_EQ(naive.runs, 6u);  // C(4,2)
  EXPECT_GE(dpor.runs, 2u);   // both orders of the two writes
  EXPECT_LT(dpor.runs, naive.runs);
}

TEST(Explore, BothFindEveryClassicBugAtBoundTwoAndDporRunsFewer) {
  for (const ClassicBug& bug : ClassicBugs()) {
    SCOPED_TRACE(std::string(bug.name));
    const ExploreResult naive = Explore(Explorer::Mode::kNaive, 2, bug.build);
    const ExploreResult dpor = Explore(Explorer::Mode::kDpor, 2, bug.build);
    EXPECT_TRUE(naive.failed);
    EXPECT_TRUE(dpor.failed);
    EXPECT_LE(dpor.runs, naive.runs);
    std::printf("%-16s naive %llu runs, dpor %llu runs\n", std::string(bug.name).c_str(),
                static_cast<unsigned long long>(naive.runs), static_cast<unsigned long long>(dpor.runs));
    // The failing schedule replays to the failure.
    ScheduleReplay replay(dpor.failing);
    Scheduler s(replay);
    bug.build(s);
    EXPECT_TRUE(s.Run().failed());
  }
}

TEST(Explore, ACorrectProgramIsExhaustedWithoutFailure) {
  auto locked = [](Scheduler& s) {
    auto m = std::make_shared<Mutex>(s, "m");
    auto x = std::make_shared<Shared<int>>(s, "x", 0);
    for (int t = 0; t < 2; ++t)
      s.Spawn("w", [m, x] {
        LockGuard g(*m);
        x->Write(x->Read() + 1);
      });
  };
  const ExploreResult r = Explore(Explorer::Mode::kDpor, 2, locked);
  EXPECT_FALSE(r.failed);
  EXPECT_TRUE(r.exhausted);
  const ExploreResult n = Explore(Explorer::Mode::kNaive, 2, locked);
  EXPECT_TRUE(n.exhausted);
  EXPECT_LT(r.runs, n.runs);
}

}  // namespace
}  // namespace rerace::sim
