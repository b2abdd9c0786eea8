// tests/sim/promise_test.cc: strategies' promises and plans (Strategy::Promised and
// Strategy::Plan, what lets the real-code engine's threads pass points without a round trip)
// are the picks they then make: the explorer's, a saved schedule's replay, PCT's and the random
// walk's, audited pick by pick.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "explore_programs.h"
#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/explore.h"
#include "rerace/sim/strategy.h"
#include "rerace/sim/sync.h"

namespace rerace::sim {
namespace {

using testing::MakeRandomProgram;
using testing::MergeInStep;
using testing::RandomOp;
using testing::RandomProgram;

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

// A plan spent as the real-code engine spends it (python_engine.cc, control.py): after each pick
// that was not planned, the picked thread's turn comes with Scheduler::Plan, cut at the first
// thread (other than the picked one) that does not wait at a plain point; every plain point
// while the plan lasts takes its next pick, whichever thread reaches it; a merged point takes
// none; a lock operation or a thread's end ends the plan.
class PlanAudit final : public Strategy {
 public:
  enum class Op { kPoint, kInStep, kLock };
  PlanAudit(Strategy& inner, size_t threads) : inner_(inner), at_point_(threads, 1) {}
  ThreadId Pick(const Choice& c) override {
    const ThreadId pick = inner_.Pick(c);
    if (planned_) {
      broken += pick != expect_;
      ++kept;
      switched += pick != c.previous;
    } else {
      turn_ = true;  // the picked thread's "g", with a plan, before its next operation
    }
    planned_ = false;
    return pick;
  }
  std::optional<std::string> AtEnd(uint64_t steps) override { return inner_.AtEnd(steps); }
  void OnInStep(uint64_t step, ThreadId t, const SchedulingPoint& p) override {
    inner_.OnInStep(step, t, p);
  }
  uint64_t Promised(uint64_t step, ThreadId t) const override { return inner_.Promised(step, t); }
  void Plan(uint64_t step, ThreadId t, std::span<const ThreadId> runnable, bool changed,
            uint64_t max_picks, std::vector<PlannedPicks>& out) const override {
    inner_.Plan(step, t, runnable, changed, max_picks, out);
  }
  std::string Name() const override { return inner_.Name(); }
  // On thread `me`, before each of its operations.
  void Before(const Scheduler& s, ThreadId me, Op op) {
    at_point_[me] = 0;
    if (turn_) {
      turn_ = false;
      s.Plan(64, drawn_);
      plan_.clear();
      for (const PlannedPicks& r : drawn_) {
        if (r.thread != me && !at_point_[r.thread]) {
          ++cut;
          break;
        }
        plan_.push_back(r);
      }
      std::reverse(plan_.begin(), plan_.end());
    }
    if (op == Op::kLock) {
      plan_.clear();
      return;
    }
    if (op == Op::kInStep) return;
    at_point_[me] = 1;
    if (plan_.empty()) return;
    planned_ = true;
    expect_ = plan_.back().thread;
    if (--plan_.back().count == 0) plan_.pop_back();
  }
  // Thread `me` ends: the pick after it is not planned, and it waits at no point.
  void End(ThreadId me) {
    plan_.clear();
    at_point_[me] = 0;
  }
  uint64_t broken = 0;    // planned picks that went to another thread
  uint64_t kept = 0;      // planned picks made as planned
  uint64_t switched = 0;  // ...that switched threads
  uint64_t cut = 0;       // plans cut at a thread inside a lock operation

 private:
  Strategy& inner_;
  std::vector<char> at_point_;
  std::vector<PlannedPicks> drawn_, plan_;  // plan_: the next pick last
  ThreadId expect_ = kNoThread;
  bool turn_ = false;
  bool planned_ = false;
};

// One run of `prog` under `audit` (which wraps the strategy), each operation announced to it.
// Some points are merged into the step before (label "in-step"), as the engine's GIL steps are.
RunResult RunAudited(const RandomProgram& prog, uint64_t seed, PlanAudit& audit) {
  MergeInStep m;
  Scheduler::Options o;
  o.merge = &m;
  Scheduler s(audit, o);
  Shared<int> a(s, "a", 0), b(s, "b", 0);
  Mutex mu(s, "m");
  for (size_t t = 0; t < prog.size(); ++t)
    s.Spawn("t", [&, t] {
      const auto me = static_cast<ThreadId>(t);
      for (size_t i = 0; i < prog[t].size(); ++i) {
        const RandomOp& op = prog[t][i];
        const bool in_step = i > 0 && (seed + t + i) % 4 == 0;
        if (op.locked) {
          audit.Before(s, me, PlanAudit::Op::kLock);
          mu.Lock();
        }
        audit.Before(s, me, in_step ? PlanAudit::Op::kInStep : PlanAudit::Op::kPoint);
        Shared<int>& v = op.var == 0 ? a : b;
        const char* label = in_step ? "in-step" : "point";
        if (op.write) v.Write(static_cast<int>(t + 1), label);
        else (void)v.Read(label);
        if (op.locked) {
          audit.Before(s, me, PlanAudit::Op::kLock);
          mu.Unlock();
        }
      }
      audit.End(me);
    });
  return s.Run();
}

// Every strategy's plan, spent as the engine spends it, is the picks then made: random walks,
// the explorer's runs (naive and DPOR, bounded and not, with sleep sets), saved schedules
// replayed and PCT's, on random programs with locks and merged steps. The plans switch threads
// (the engine's round trips depend on it) and are cut at threads inside a lock operation.
TEST(Plan, PlannedPicksAreThePicksMade) {
  uint64_t kept = 0, switched = 0, cut = 0, explored = 0, replayed = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const RandomProgram prog =
        MakeRandomProgram(seed, static_cast<int>(2 + seed % 3), true, static_cast<int>(3 + seed % 4));
    std::vector<Schedule> schedules;
    auto audited = [&](Strategy& st) {
      PlanAudit audit(st, prog.size());
      const RunResult r = RunAudited(prog, seed, audit);
      EXPECT_EQ(audit.broken, 0u) << st.Name();
      kept += audit.kept;
      switched += audit.switched;
      cut += audit.cut;
      return r;
    };
    for (uint64_t walk = 0; walk < 5; ++walk) {
      RandomWalk w(seed * 10 + walk);
      schedules.push_back(audited(w).schedule);
      Pct pct(seed * 10 + walk, 3, 20);
      schedules.push_back(audited(pct).schedule);
    }
    if (prog.size() <= 3)
      for (auto mode : {Explorer::Mode::kNaive, Explorer::Mode::kDpor})
        for (uint32_t bound : {1u, 100u}) {
          if (mode == Explorer::Mode::kNaive && bound > 1) continue;
          const uint64_t before = kept;
          Explorer e(mode, bound, 2000);
          (void)e.Explore([&](Strategy& st) {
            schedules.push_back(audited(st).schedule);
            return false;
          });
          explored += kept - before;
        }
    for (const Schedule& sched : schedules) {
      const uint64_t before = kept;
      ScheduleReplay again(sched);
      EXPECT_FALSE(audited(again).failed());
      replayed += kept - before;
    }
  }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(switched, 0u);
  EXPECT_GT(cut, 0u);
  EXPECT_GT(explored, 0u);
  EXPECT_GT(replayed, 0u);
}

}  // namespace
}  // namespace rerace::sim
