// tests/sim/explore_workers_test.cc: the explorer's many-worker search (Explorer::Explore(jobs,
// run, settle)): with one worker it is the one-worker search run for run; with more it reaches
// every outcome the naive search reaches, finds every classic bug, keeps its budget, gives the
// same result each time, and hands a run's exception to the caller.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "explore_programs.h"
#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/explore.h"
#include "rerace/sim/sync.h"

namespace rerace::sim {
namespace {

using testing::MakeRandomProgram;
using testing::RandomProgram;

std::string RunOnce(const RandomProgram& prog, Strategy& st) { return testing::RunRandomProgram(prog, st); }

struct Searched {
  std::set<std::string> outcomes;
  ExploreResult result;
  std::vector<std::string> order;  // each run's outcome, in settle order
};

// jobs 0: the one-worker search, Explore(run).
Searched Search(const RandomProgram& prog, Explorer::Mode mode, uint32_t bound, unsigned jobs,
                uint64_t max_runs = 1'000'000) {
  Searched out;
  Explorer e(mode, bound, max_runs);
  if (jobs == 0) {
    out.result = e.Explore([&](Strategy& st) {
      out.order.push_back(RunOnce(prog, st));
      out.outcomes.insert(out.order.back());
      return false;
    });
    return out;
  }
  std::vector<std::string> slot(jobs);
  out.result = e.Explore(
      jobs, [&](unsigned w, Strategy& st) { slot[w] = RunOnce(prog, st); },
      [&](unsigned w) {
        out.order.push_back(slot[w]);
        out.outcomes.insert(slot[w]);
        return false;
      });
  return out;
}

struct Shape {
  int threads;
  bool locks;
};
constexpr Shape kShapes[] = {{3, false}, {2, true}, {3, true}};

TEST(ExploreWorkers, OneWorkerIsTheOneWorkerSearchRunForRun) {
  for (uint64_t seed = 1; seed <= 30; ++seed)
    for (const Shape& shape : kShapes)
      for (auto mode : {Explorer::Mode::kDpor, Explorer::Mode::kNaive})
        for (uint32_t bound : {0u, 1u, 2u, 100u}) {
          if (mode == Explorer::Mode::kNaive && shape.threads == 3 && shape.locks) continue;  // too long
          SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << shape.threads << " threads, locks "
                                            << shape.locks << ", bound " << bound << ", naive "
                                            << (mode == Explorer::Mode::kNaive));
          const RandomProgram prog = MakeRandomProgram(seed, shape.threads, shape.locks);
          const Searched one = Search(prog, mode, bound, 0);
          const Searched tree = Search(prog, mode, bound, 1);
          EXPECT_EQ(tree.result.runs, one.result.runs);
          EXPECT_EQ(tree.result.pruned, one.result.pruned);
          EXPECT_EQ(tree.result.cut, one.result.cut);
          EXPECT_EQ(tree.result.exhausted, one.result.exhausted);
          EXPECT_EQ(tree.order, one.order);  // the same runs in the same order
        }
}

TEST(ExploreWorkers, ManyWorkersReachEveryOutcomeOfEveryInterleaving) {
  uint64_t more = 0, searches = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed)
    for (const Shape& shape : kShapes) {
      const RandomProgram prog = MakeRandomProgram(seed, shape.threads, shape.locks);
      const Searched every = Search(prog, Explorer::Mode::kDpor, 100, 0);  // unbounded: every outcome
      ASSERT_TRUE(every.result.exhausted);
      for (unsigned jobs : {2u, 3u, 5u}) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << shape.threads << " threads, locks "
                                          << shape.locks << ", jobs " << jobs);
        const Searched many = Search(prog, Explorer::Mode::kDpor, 100, jobs);
        EXPECT_TRUE(many.result.exhausted);
        EXPECT_EQ(many.result.cut, 0u);
        EXPECT_EQ(many.outcomes, every.outcomes);
        EXPECT_EQ(many.result.runs, many.order.size());  // every run started was settled
        more += many.result.runs > every.result.runs;
        ++searches;
        // Under a bound, a search that cut no race is still the unbounded one's.
        for (uint32_t bound : {0u, 1u, 2u}) {
          const Searched b = Search(prog, Explorer::Mode::kDpor, bound, jobs);
          EXPECT_TRUE(b.result.exhausted);
          if (b.result.cut == 0) {
            EXPECT_EQ(b.outcomes, every.outcomes) << "bound " << bound;
          }
        }
      }
    }
  std::printf("%llu of %llu many-worker searches ran more schedules than one worker's\n",
              static_cast<unsigned long long>(more), static_cast<unsigned long long>(searches));
}

TEST(ExploreWorkers, TheSameJobsGiveTheSameSearch) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const RandomProgram prog = MakeRandomProgram(seed, 3, true);
    for (unsigned jobs : {2u, 4u}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", jobs " << jobs);
      const Searched a = Search(prog, Explorer::Mode::kDpor, 2, jobs);
      const Searched b = Search(prog, Explorer::Mode::kDpor, 2, jobs);
      EXPECT_EQ(a.order, b.order);
      EXPECT_EQ(a.result.runs, b.result.runs);
      EXPECT_EQ(a.result.pruned, b.result.pruned);
      EXPECT_EQ(a.result.cut, b.result.cut);
    }
  }
}

TEST(ExploreWorkers, ManyWorkersFindEveryClassicBugAndItsScheduleReplaysIt) {
  for (const ClassicBug& bug : ClassicBugs()) {
    for (unsigned jobs : {2u, 4u}) {
      SCOPED_TRACE(::testing::Message() << bug.name << ", jobs " << jobs);
      Explorer e(Explorer::Mode::kDpor, 2, 100000);
      std::vector<char> failed(jobs, 0);
      uint64_t settled = 0;
      const ExploreResult r = e.Explore(
          jobs,
          [&](unsigned w, Strategy& st) {
            Scheduler s(st);
            bug.build(s);
            failed[w] = s.Run().failed();
          },
          [&](unsigned w) {
            ++settled;
            return failed[w] != 0;
          });
      ASSERT_TRUE(r.failed);
      EXPECT_EQ(r.runs, settled);
      ScheduleReplay replay(r.failing);
      Scheduler s(replay);
      bug.build(s);
      EXPECT_TRUE(s.Run().failed());
    }
  }
}

TEST(ExploreWorkers, TheBudgetIsKept) {
  const RandomProgram prog = MakeRandomProgram(7, 2, true);
  const Searched full = Search(prog, Explorer::Mode::kNaive, 100, 3);
  ASSERT_TRUE(full.result.exhausted);
  ASSERT_GT(full.result.runs, 10u);
  for (uint64_t budget : {1ull, 4ull, 10ull}) {
    const Searched r = Search(prog, Explorer::Mode::kNaive, 100, 3, budget);
    EXPECT_EQ(r.result.runs, budget);
    EXPECT_TRUE(r.result.budget_hit);
    EXPECT_FALSE(r.result.exhausted);
  }
  const Searched exact = Search(prog, Explorer::Mode::kNaive, 100, 3, full.result.runs);
  EXPECT_TRUE(exact.result.exhausted);  // a budget the search needed all of is not hit
  EXPECT_FALSE(exact.result.budget_hit);
}

TEST(ExploreWorkers, ARunsExceptionReachesTheCaller) {
  const RandomProgram prog = MakeRandomProgram(3, 3, false);
  for (unsigned w_throws : {0u, 1u}) {
    Explorer e(Explorer::Mode::kNaive, 100, 1000);
    uint64_t batches = 0;
    EXPECT_THROW(e.Explore(
                     2,
                     [&](unsigned w, Strategy& st) {
                       RunOnce(prog, st);
                       if (w == w_throws && batches > 0) throw std::runtime_error("engine gone");
                     },
                     [&](unsigned w) {
                       if (w == 0) ++batches;
                       return false;
                     }),
                 std::runtime_error);
  }
}

}  // namespace
}  // namespace rerace::sim
