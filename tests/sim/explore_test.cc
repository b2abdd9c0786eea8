// tests/sim/explore_test.cc: the explorer's searches, naive and DPOR: each interleaving
// class run once, every classic bug found, every outcome of the naive search reached, and what
// a preemption bound cuts. Merged steps: merged_steps_test.cc; promises: promise_test.cc.
#include "rerace/sim/explore.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "explore_programs.h"
#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/sync.h"

namespace rerace::sim {
namespace {

using testing::MakeRandomProgram;
using testing::RandomOp;
using testing::RandomProgram;

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

namespace rerace::sim {
namespace {

// k threads each write their own variable, then one shared variable: the distinct
// interleavings (Mazurkiewicz traces) are the k! orders of the shared writes.
void OwnThenShared(Scheduler& s, int k) {
  auto shared = std::make_shared<Shared<int>>(s, "shared", 0);
  std::vector<std::shared_ptr<Shared<int>>> own;
  for (int t = 0; t < k; ++t) own.push_back(std::make_shared<Shared<int>>(s, "own", 0));
  for (int t = 0; t < k; ++t)
    s.Spawn("t", [shared, mine = own[static_cast<size_t>(t)], t] {
      mine->Write(t, "own");
      shared->Write(t, "shared");
    });
}

TEST(Explore, DporRunsOncePerOrderOfTheConflictingWrites) {
  for (int k : {2, 3, 4, 5}) {
    SCOPED_TRACE(k);
    uint64_t factorial = 1;
    for (int i = 2; i <= k; ++i) factorial *= static_cast<uint64_t>(i);
    const ExploreResult d =
        Explore(Explorer::Mode::kDpor, 100, [k](Scheduler& s) { OwnThenShared(s, k); });
    EXPECT_TRUE(d.exhausted);
    EXPECT_EQ(d.runs, factorial);  // one run per trace: no trace missed, none run twice
    if (k > 3) continue;           // the naive search grows too fast (k = 4: 369,600 runs)
    const ExploreResult n =
        Explore(Explorer::Mode::kNaive, 100, [k](Scheduler& s) { OwnThenShared(s, k); });
    EXPECT_TRUE(n.exhausted);
    EXPECT_EQ(n.runs, k == 2 ? 20u : 1680u);  // (3k)! / (3!)^k: every interleaving of 3 steps each
  }
}

// Random programs (three threads of two reads or writes of two variables; or two threads of
// two, some under a lock): without a bound, DPOR must reach every outcome (the values each read
// saw, and the final values) that the naive search reaches, in fewer runs.

std::pair<std::set<std::string>, ExploreResult> Outcomes(const RandomProgram& prog, Explorer::Mode mode,
                                                          uint32_t bound = 100) {
  std::set<std::string> seen;
  Explorer e(mode, bound, 1'000'000);
  const ExploreResult result = e.Explore([&](Strategy& st) {
    seen.insert(testing::RunRandomProgram(prog, st));
    return false;
  });
  return {seen, result};
}

TEST(Explore, DporReachesEveryOutcomeTheNaiveSearchReaches) {
  const uint64_t seeds = std::getenv("RERACE_EXPLORE_SEEDS") ? std::stoull(std::getenv("RERACE_EXPLORE_SEEDS")) : 40;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    for (auto [threads, locks] : {std::pair<int, bool>{3, false}, {2, true}}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << threads << " threads, locks " << locks);
      const RandomProgram prog = MakeRandomProgram(seed, threads, locks);
      const auto [naive, n] = Outcomes(prog, Explorer::Mode::kNaive);
      const auto [dpor, d] = Outcomes(prog, Explorer::Mode::kDpor);
      ASSERT_TRUE(n.exhausted);
      EXPECT_TRUE(d.exhausted);
      EXPECT_EQ(dpor, naive);
      EXPECT_LE(d.runs, n.runs);
    }
  }
}

// Under a preemption bound DPOR can miss outcomes that the bounded naive search reaches (a race
// whose reversal costs more preemptions than the bound is not reversed), and it says so: a
// search that misses one counted a cut race. A search the bound cut nothing from is the
// unbounded search, and reaches every outcome of every interleaving. Both kinds occur here, so
// neither half of the test is empty.
TEST(Explore, BoundedDporCountsTheRacesTheBoundCutAndWithoutCutsReachesEveryOutcome) {
  int uncut = 0, cut = 0, missed = 0;
  int missed_at[3] = {0, 0, 0}, programs = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    for (auto [threads, locks] : {std::pair<int, bool>{3, false}, {2, true}}) {
      const RandomProgram prog = MakeRandomProgram(seed, threads, locks);
      const auto [every, all] = Outcomes(prog, Explorer::Mode::kNaive);
      ASSERT_TRUE(all.exhausted);
      for (uint32_t bound : {0u, 1u, 2u}) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << threads << " threads, locks "
                                          << locks << ", bound " << bound);
        const auto [naive, n] = Outcomes(prog, Explorer::Mode::kNaive, bound);
        const auto [dpor, d] = Outcomes(prog, Explorer::Mode::kDpor, bound);
        ASSERT_TRUE(n.exhausted);
        ASSERT_TRUE(d.exhausted);
        EXPECT_EQ(n.cut, 0u);  // the naive search counts nothing: its bound is its definition
        const bool misses = !std::includes(dpor.begin(), dpor.end(), naive.begin(), naive.end());
        if (misses) ++missed, ++missed_at[bound];
        if (bound == 0) ++programs;
        if (d.cut == 0) {
          ++uncut;
          EXPECT_EQ(dpor, every);
        } else {
          ++cut;
        }
        EXPECT_TRUE(!misses || d.cut > 0);
      }
    }
  }
  std::printf("bounded DPOR missed an outcome of the bounded naive search in %d, %d and %d of %d "
              "programs at bounds 0, 1 and 2; %d searches had no race reversal cut, %d had some\n",
              missed_at[0], missed_at[1], missed_at[2], programs, uncut, cut);
  EXPECT_GT(uncut, 0);
  EXPECT_GT(cut, 0);
  EXPECT_GT(missed, 0);
}

// A bounded search that cut nothing is the unbounded search, run for run, with three threads
// and a lock too (programs whose naive reference search is too long for the test above).
TEST(Explore, BoundedDporThatCutNothingIsTheUnboundedSearchWithLocksAndThreeThreads) {
  int uncut = 0, cut = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const RandomProgram prog = MakeRandomProgram(seed, 3, true);
    const auto [every, u] = Outcomes(prog, Explorer::Mode::kDpor);
    ASSERT_TRUE(u.exhausted);
    ASSERT_EQ(u.cut, 0u);
    for (uint32_t bound : {0u, 1u, 2u}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", bound " << bound);
      const auto [dpor, d] = Outcomes(prog, Explorer::Mode::kDpor, bound);
      ASSERT_TRUE(d.exhausted);
      if (d.cut > 0) {
        ++cut;
        continue;
      }
      ++uncut;
      EXPECT_EQ(d.runs, u.runs);
      EXPECT_EQ(dpor, every);
    }
  }
  EXPECT_GT(uncut, 0);
  EXPECT_GT(cut, 0);
}


}  // namespace
}  // namespace rerace::sim
