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

#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/race_detector.h"
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
struct RandomOp {
  int var;
  bool write;
  bool locked;
};
using RandomProgram = std::vector<std::vector<RandomOp>>;

RandomProgram MakeRandomProgram(uint64_t seed, int threads, bool locks) {
  RandomProgram prog(static_cast<size_t>(threads));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545F4914F6CDD1Dull;
  };
  for (auto& ops : prog)
    for (int i = 0; i < 2; ++i)
      ops.push_back({static_cast<int>(next() % 2), next() % 2 == 0, locks && next() % 2 == 0});
  return prog;
}

std::pair<std::set<std::string>, ExploreResult> Outcomes(const RandomProgram& prog, Explorer::Mode mode,
                                                          uint32_t bound = 100) {
  std::set<std::string> seen;
  Explorer e(mode, bound, 1'000'000);
  const ExploreResult result = e.Explore([&](Strategy& st) {
    Scheduler s(st);
    std::vector<std::unique_ptr<Shared<int>>> vars;
    vars.push_back(std::make_unique<Shared<int>>(s, "a", 0));
    vars.push_back(std::make_unique<Shared<int>>(s, "b", 0));
    Mutex m(s, "m");
    std::vector<std::string> reads(prog.size());
    for (size_t t = 0; t < prog.size(); ++t)
      s.Spawn("t", [&, t] {
        for (size_t i = 0; i < prog[t].size(); ++i) {
          const RandomOp& op = prog[t][i];
          if (op.locked) m.Lock();
          Shared<int>& v = *vars[static_cast<size_t>(op.var)];
          if (op.write) v.Write(static_cast<int>(t * 10 + i + 1));
          else reads[t] += std::to_string(v.Read()) + ",";
          if (op.locked) m.Unlock();
        }
      });
    s.Run();
    std::string out;
    for (const auto& rd : reads) out += rd + "|";
    out += std::to_string(vars[0]->UnsafeRef()) + "," + std::to_string(vars[1]->UnsafeRef());
    seen.insert(out);
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

// Merges every point whose label starts with "in-step" into the step before it.
class MergeInStep final : public StepMerge {
 public:
  bool InStep(ThreadId, const SchedulingPoint& p) override {
    return std::string_view(p.label).starts_with("in-step");
  }
};

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

// Spawns `prog`'s threads on `s`, each operation on `a` or `b` (under `mu` when locked), each
// access labelled label(thread, index) (MergeInStep merges those that start with "in-step").
void SpawnProgram(Scheduler& s, const RandomProgram& prog, Shared<int>& a, Shared<int>& b,
                  Mutex& mu, const std::function<const char*(size_t, size_t)>& label) {
  // `label` by value: the threads run after this returns (the caller's temporary is gone).
  for (size_t t = 0; t < prog.size(); ++t)
    s.Spawn("t", [&s, &prog, &a, &b, &mu, label, t] {
      for (size_t i = 0; i < prog[t].size(); ++i) {
        const RandomOp& op = prog[t][i];
        if (op.locked) mu.Lock();
        Shared<int>& v = op.var == 0 ? a : b;
        if (op.write) v.Write(static_cast<int>(t * 10 + i + 1), label(t, i));
        else (void)v.Read(label(t, i));
        if (op.locked) mu.Unlock();
      }
    });
}

// Wraps a strategy and holds it to its promises (Strategy::Promised, what lets the real-code
// engine's thread pass points without a round trip): after each pick of thread p at step s,
// the next Promised(s + 1, p) picks must be p for as long as the runnable threads are the same
// (the engine spends a promise only on plain points, which change no other thread).
class PromiseAudit final : public Strategy {
 public:
  explicit PromiseAudit(Strategy& inner) : inner_(inner) {}
  ThreadId Pick(const Choice& c) override {
    const bool holds = std::equal(c.runnable.begin(), c.runnable.end(), runnable_.begin(),
                                  runnable_.end());
    const ThreadId pick = inner_.Pick(c);
    if (left_ > 0 && holds && pick != owner_) ++broken;
    if (left_ > 0 && holds && pick == owner_) {
      ++kept;
      --left_;
    } else {
      owner_ = pick;
      runnable_.assign(c.runnable.begin(), c.runnable.end());
      left_ = inner_.Promised(c.step + 1, pick);
      if (left_ > 0 && left_ != UINT64_MAX) ++bounded;
    }
    return pick;
  }
  std::optional<std::string> AtEnd(uint64_t steps) override { return inner_.AtEnd(steps); }
  void OnInStep(uint64_t step, ThreadId t, const SchedulingPoint& p) override {
    inner_.OnInStep(step, t, p);
  }
  std::string Name() const override { return inner_.Name(); }
  uint64_t broken = 0;   // promised picks that went to another thread
  uint64_t kept = 0;     // promised picks made as promised
  uint64_t bounded = 0;  // promises of a known length (a prefix or a schedule ending)

 private:
  Strategy& inner_;
  ThreadId owner_ = kNoThread;
  std::vector<ThreadId> runnable_;  // when the promise was made
  uint64_t left_ = 0;
};

// The explorer's runs (a fixed prefix, then no preemption) and a saved schedule's replay keep
// every promise they make, on random programs with locks and with merged steps, naive (bound 1)
// and DPOR (bounded and not); and they promise something (the engine's round trips depend on it).
TEST(Explore, PromisedPicksAreThePicksMade) {
  uint64_t kept = 0, bounded = 0, replay_kept = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed)
    for (auto mode : {Explorer::Mode::kNaive, Explorer::Mode::kDpor})
      for (uint32_t bound : {1u, 100u}) {
        if (mode == Explorer::Mode::kNaive && bound > 1) continue;  // too many runs unbounded
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", bound " << bound << ", "
                                          << (mode == Explorer::Mode::kDpor ? "dpor" : "naive"));
        const RandomProgram prog = MakeRandomProgram(seed, 2 + seed % 2, seed % 3 == 0);
        MergeInStep m;
        Explorer e(mode, bound, 100000);
        Schedule last;
        uint64_t broken = 0;
        // One run of the program under `audit`.
        auto run = [&](PromiseAudit& audit) {
          Scheduler::Options o;
          o.merge = &m;
          Scheduler s(audit, o);
          Shared<int> a(s, "a", 0), b(s, "b", 0);
          Mutex mu(s, "m");
          SpawnProgram(s, prog, a, b, mu, [seed](size_t t, size_t i) {
            return (seed + t + i) % 4 == 0 ? "in-step" : "point";
          });
          return s.Run();
        };
        const ExploreResult r = e.Explore([&](Strategy& st) {
          PromiseAudit audit(st);
          last = run(audit).schedule;
          broken += audit.broken;
          kept += audit.kept;
          bounded += audit.bounded;
          return false;
        });
        EXPECT_TRUE(r.exhausted);
        EXPECT_EQ(broken, 0u);
        ScheduleReplay again(last);
        PromiseAudit audit(again);
        EXPECT_FALSE(run(audit).failed());
        EXPECT_EQ(audit.broken, 0u);
        replay_kept += audit.kept;
      }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(bounded, 0u);
  EXPECT_GT(replay_kept, 0u);
}

// As the real-code engine spends promises: after each pick that was not spent, the running
// thread gets Scheduler::Promised() as its credit (its "g", sent once what the picked operation
// does is done); each plain access while credit is left spends one and must be picked for that
// thread; a lock or unlock waits for its turn (its pick brings a new credit).
class CreditAudit final : public Strategy {
 public:
  explicit CreditAudit(Strategy& inner) : inner_(inner) {}
  ThreadId Pick(const Choice& c) override {
    const ThreadId pick = inner_.Pick(c);
    if (spend_) {
      broken += pick != owner_;
      ++kept;
    } else {
      turn_ = true;  // a "g" to `pick`: its credit is read at its next operation
    }
    spend_ = false;
    owner_ = pick;
    return pick;
  }
  uint64_t Promised(uint64_t step, ThreadId t) const override { return inner_.Promised(step, t); }
  std::string Name() const override { return inner_.Name(); }
  // On the running thread, before its access (plain) or its lock operation (not plain).
  void Before(const Scheduler& s, bool plain) {
    if (turn_) {
      turn_ = false;
      credit_ = s.Promised();
    }
    if (!plain || credit_ == 0) return;  // waits for its turn
    --credit_;
    spend_ = true;
  }
  uint64_t broken = 0, kept = 0;

 private:
  Strategy& inner_;
  ThreadId owner_ = kNoThread;
  uint64_t credit_ = 0;
  bool turn_ = false;
  bool spend_ = false;
};

// PCT's promise spent as the engine spends it, on random programs whose unlocks wake threads
// PCT may rank higher than the thread that woke them.
TEST(Pct, CreditsSpentAsTheEngineSpendsThemArePicksMade) {
  uint64_t spent = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed)
    for (uint32_t depth : {1u, 2u, 3u}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", depth " << depth);
      const RandomProgram prog = MakeRandomProgram(seed, 3, true);
      Pct pct(seed, depth, 8);
      CreditAudit audit(pct);
      Scheduler s(audit);
      Shared<int> a(s, "a", 0), b(s, "b", 0);
      Mutex mu(s, "m");
      for (size_t t = 0; t < prog.size(); ++t)
        s.Spawn("t", [&, t] {
          for (const RandomOp& op : prog[t]) {
            if (op.locked) {
              audit.Before(s, false);
              mu.Lock();
            }
            audit.Before(s, true);
            Shared<int>& v = op.var == 0 ? a : b;
            if (op.write) v.Write(static_cast<int>(t + 1));
            else (void)v.Read();
            if (op.locked) {
              audit.Before(s, false);
              mu.Unlock();
            }
            audit.Before(s, true);
            s.Point({Access::kYield, 0, "after"});
          }
        });
      (void)s.Run();
      EXPECT_EQ(audit.broken, 0u);
      spent += audit.kept;
    }
  EXPECT_GT(spent, 0u);
}

// PCT's promise (the highest-priority thread runs until a change point lowers it), on every
// classic bug and random programs with locks, over seeds and depths.
TEST(Pct, PromisedPicksAreThePicksMade) {
  uint64_t kept = 0, bounded = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed)
    for (uint32_t depth : {1u, 2u, 3u}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", depth " << depth);
      for (const ClassicBug& bug : ClassicBugs()) {
        Pct pct(seed, depth, 12);
        PromiseAudit audit(pct);
        Scheduler s(audit);
        bug.build(s);
        (void)s.Run();
        EXPECT_EQ(audit.broken, 0u) << bug.name;
        kept += audit.kept;
        bounded += audit.bounded;
      }
      const RandomProgram prog = MakeRandomProgram(seed, 3, true);
      Pct pct(seed, depth, 8);
      PromiseAudit audit(pct);
      Scheduler s(audit);
      Shared<int> a(s, "a", 0), b(s, "b", 0);
      Mutex mu(s, "m");
      SpawnProgram(s, prog, a, b, mu, [](size_t, size_t) { return "point"; });
      (void)s.Run();
      EXPECT_EQ(audit.broken, 0u);
      kept += audit.kept;
      bounded += audit.bounded;
    }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(bounded, 0u);  // change points ahead: promises of a known length
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
