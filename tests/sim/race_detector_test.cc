#include "rerace/sim/race_detector.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/strategy.h"
#include "rerace/sim/sync.h"

namespace rerace::sim {
namespace {

std::vector<Race> RacesOf(const std::function<void(Scheduler&)>& program, uint64_t seed = 1) {
  RandomWalk rw(seed);
  RaceDetector det;
  Scheduler::Options o;
  o.races = &det;
  Scheduler s(rw, o);
  program(s);
  s.Run();
  return det.races();
}

TEST(RaceDetector, UnsynchronizedIncrementsRaceEvenWhenNothingFails) {
  // Round-robin with a whole quantum runs the lost-update program without failing, yet the
  // two workers' accesses to the counter are unordered.
  RoundRobin whole(1'000'000);
  RaceDetector det;
  Scheduler::Options o;
  o.races = &det;
  Scheduler s(whole, o);
  FindClassicBug("lost-update")->build(s);
  const RunResult r = s.Run();
  EXPECT_FALSE(r.failed());
  ASSERT_FALSE(det.races().empty());
  for (const Race& race : det.races()) {
    EXPECT_EQ(race.object_name, "counter");
    EXPECT_NE(race.first.thread, race.second.thread);
  }
}

TEST(RaceDetector, MutexOrdersTheAccesses) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const auto races = RacesOf(
        [](Scheduler& s) {
          auto m = std::make_shared<Mutex>(s, "m");
          auto x = std::make_shared<Shared<int>>(s, "x", 0);
          for (int t = 0; t < 3; ++t)
            s.Spawn("w", [m, x] {
              LockGuard g(*m);
              x->Write(x->Read() + 1);
            });
        },
        seed);
    EXPECT_TRUE(races.empty()) << "seed " << seed << ": " << races.front().object_name;
  }
}

TEST(RaceDetector, FutureSpawnAndJoinOrderTheAccesses) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const auto races = RacesOf(
        [](Scheduler& s) {
          s.Spawn("parent", [&s] {
            auto x = std::make_shared<Shared<int>>(s, "x", 0);
            auto p = std::make_shared<Promise<int>>(s, "ready");
            auto f = std::make_shared<Future<int>>(p->GetFuture());
            x->Write(1, "before spawn");
            const ThreadId c = s.Spawn("child", [x, p] {
              x->Write(x->Read() + 1, "child");
              p->SetValue(1);
            });
            f->Get();
            x->Write(x->Read() + 1, "after get");
            s.Join(c);
            x->Write(0, "after join");
          });
        },
        seed);
    EXPECT_TRUE(races.empty()) << "seed " << seed;
  }
}

TEST(RaceDetector, ReportsEachDistinctPairOnce) {
  const auto races = RacesOf([](Scheduler& s) {
    auto x = std::make_shared<Shared<int>>(s, "x", 0);
    for (int t = 0; t < 2; ++t)
      s.Spawn("w", [x] {
        for (int i = 0; i < 20; ++i) x->Write(i, "same line");
      });
  });
  ASSERT_EQ(races.size(), 1u);
  EXPECT_STREQ(races[0].first.label, "same line");
}

// SURW makes every interleaving of the threads' steps equally likely. Two threads of three
// steps each have C(6,3) = 20 interleavings: over 20,000 seeds each must appear near 1/20 of
// the time; a random walk, for contrast, is far from uniform on the same program.
TEST(Strategies, SurwSamplesInterleavingsUniformly) {
  auto program = [](Scheduler& s) {
    for (int t = 0; t < 2; ++t)
      s.Spawn("t", [&s] {
        for (int i = 0; i < 2; ++i) s.Point({Access::kYield, 0, "step"});
      });
  };
  auto spread = [&](auto make) {
    std::map<std::string, int> counts;
    for (uint64_t seed = 0; seed < 20000; ++seed) {
      auto strategy = make(seed);
      Scheduler s(*strategy);
      program(s);
      ++counts[s.Run().schedule.Encode()];
    }
    int lo = 1 << 30, hi = 0;
    for (const auto& [k, n] : counts) {
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    return std::make_tuple(counts.size(), lo, hi);
  };
  const auto [n, lo, hi] = spread([](uint64_t seed) {
    return std::make_unique<Surw>(seed, std::vector<uint64_t>{3, 3});
  });
  EXPECT_EQ(n, 20u);
  EXPECT_GT(lo, 850);   // 1000 expected each
  EXPECT_LT(hi, 1150);
  const auto [rn, rlo, rhi] = spread([](uint64_t seed) { return std::make_unique<RandomWalk>(seed); });
  EXPECT_EQ(rn, 20u);
  EXPECT_GT(rhi, 2 * rlo);  // the random walk favours some interleavings
}

TEST(Strategies, PosFindsEveryClassicBug) {
  for (const ClassicBug& bug : ClassicBugs()) {
    SCOPED_TRACE(std::string(bug.name));
    int hits = 0;
    for (uint64_t seed = 0; seed < 2000 && hits == 0; ++seed) {
      Pos pos(seed);
      Scheduler s(pos);
      bug.build(s);
      hits += s.Run().failed();
    }
    EXPECT_GT(hits, 0);
  }
}

TEST(Strategies, PortfolioRotatesByseed) {
  StrategySpec spec;
  spec.name = "portfolio";
  spec.surw_steps = {3, 3};
  std::vector<std::string> names;
  for (uint64_t seed = 0; seed < 5; ++seed) names.push_back((*MakeStrategy(spec, seed))->Name());
  EXPECT_EQ(names[0].rfind("random", 0), 0u);
  EXPECT_EQ(names[1].rfind("pct", 0), 0u);
  EXPECT_NE(names[2].find("depth=3"), std::string::npos);
  EXPECT_EQ(names[3].rfind("pos", 0), 0u);
  EXPECT_EQ(names[4].rfind("surw", 0), 0u);
}

}  // namespace
// A PCT depth is a request for memory (d-1 change points up front): 4294967295 used to
// allocate 6 GB. Out of range is a usage error.
TEST(Strategies, PctDepthOutOfRangeIsAUsageError) {
  StrategySpec spec;
  spec.name = "pct";
  for (uint32_t d : {0u, kMaxPctDepth + 1, 4294967295u}) {
    SCOPED_TRACE(d);
    spec.pct_depth = d;
    auto s = MakeStrategy(spec, 1);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().exit_code, 64);
    EXPECT_NE(s.error().message.find("expected 1..1000"), std::string::npos) << s.error().message;
  }
  spec.pct_depth = kMaxPctDepth;
  EXPECT_TRUE(MakeStrategy(spec, 1).ok());
}

}  // namespace rerace::sim
