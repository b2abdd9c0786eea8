#include "rerace/sim/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rerace/sim/strategy.h"
#include "rerace/sim/sync.h"
#include "rerace/testing/sim_run.h"

namespace rerace::sim {
namespace {

using rerace::testing::Program;
using rerace::testing::RunRandom;
using rerace::testing::RunSchedule;
using rerace::testing::RunWith;

// Three threads append their id to a shared log, `n` times each.
Program Appenders(std::shared_ptr<std::vector<int>> log, int n) {
  return [log, n](Scheduler& s) {
    for (int t = 0; t < 3; ++t) {
      s.Spawn("appender", [&s, log, n, t] {
        for (int i = 0; i < n; ++i) {
          s.Point({Access::kWrite, 0, "append"});
          log->push_back(t);
        }
      });
    }
  };
}

TEST(Scheduler, RunsEveryThreadToTheEnd) {
  auto log = std::make_shared<std::vector<int>>();
  RunResult r = RunRandom(1, Appenders(log, 5));
  EXPECT_FALSE(r.failed()) << r.Report();
  EXPECT_EQ(log->size(), 15u);
  ASSERT_EQ(r.threads.size(), 3u);
  for (const auto& t : r.threads) {
    EXPECT_TRUE(t.finished);
    EXPECT_EQ(t.steps, 6u);  // start + 5 points
  }
  EXPECT_EQ(r.steps, 18u);
  EXPECT_EQ(r.schedule.steps(), 18u);
}

// A thread that goes on after a (silent) failure reports its steps up to the failure once the
// world keeps its history there; another thread's kept history stops where it was then.
TEST(Scheduler, KeptHistoryIsTheStepsUpToThatMoment) {
  uint64_t kept_at = 0;
  RunResult r = RunRandom(3, [&kept_at](Scheduler& s) {
    s.Spawn("victim", [&s, &kept_at] {
      for (int i = 0; i < 40; ++i) {
        s.Point({Access::kWrite, 0, "victim step"});
        if (i == 10) {
          kept_at = s.step();
          s.KeepHistory(0);
          s.KeepHistory(1);
          s.KeepHistory(0);  // the first call counts
        }
      }
    });
    s.Spawn("other", [&s] {
      for (int i = 0; i < 40; ++i) s.Point({Access::kWrite, 0, "other step"});
    });
  });
  ASSERT_FALSE(r.failed()) << r.Report();
  ASSERT_EQ(r.threads.size(), 2u);
  for (const auto& t : r.threads) {
    ASSERT_FALSE(t.last_steps.empty());
    EXPECT_LE(t.last_steps.back().step, kept_at) << t.name;
  }
  // The victim's last kept step is the one that kept it: its start and 11 points, of the 41
  // steps it took.
  EXPECT_EQ(r.threads[0].last_steps.back().step, kept_at);
  EXPECT_EQ(r.threads[0].last_steps.size(), 12u);
  EXPECT_EQ(r.threads[0].steps, 41u);
}

TEST(Scheduler, SameSeedGivesSameScheduleOverAThousandSeeds) {
  int distinct = 0;
  std::string previous;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    auto log1 = std::make_shared<std::vector<int>>();
    auto log2 = std::make_shared<std::vector<int>>();
    RunResult a = RunRandom(seed, Appenders(log1, 4));
    RunResult b = RunRandom(seed, Appenders(log2, 4));
    ASSERT_EQ(a.schedule, b.schedule) << "seed " << seed;
    ASSERT_EQ(*log1, *log2) << "seed " << seed;
    ASSERT_EQ(a.Report(), b.Report()) << "seed " << seed;
    if (a.schedule.Encode() != previous) ++distinct;
    previous = a.schedule.Encode();
  }
  EXPECT_GT(distinct, 900);  // seeds do change the interleaving
}

TEST(Scheduler, SavedScheduleReplaysWithoutTheSeed) {
  auto log1 = std::make_shared<std::vector<int>>();
  RunResult a = RunRandom(42, Appenders(log1, 6));
  auto parsed = Schedule::Parse(a.schedule.Encode());
  ASSERT_TRUE(parsed.ok());
  auto log2 = std::make_shared<std::vector<int>>();
  RunResult b = RunSchedule(*parsed, Appenders(log2, 6));
  EXPECT_FALSE(b.failed()) << b.Report();
  EXPECT_EQ(*log1, *log2);
  EXPECT_EQ(a.schedule, b.schedule);
}

TEST(Scheduler, ScheduleForAnotherProgramIsReportedAsDivergence) {
  auto log = std::make_shared<std::vector<int>>();
  RunResult a = RunRandom(3, Appenders(log, 2));
  // Too short: the program still has runnable threads when the schedule ends.
  Schedule shorter;
  for (size_t i = 0; i + 1 < a.schedule.Expand().size(); ++i) shorter.Append(a.schedule.Expand()[i]);
  RunResult b = RunSchedule(shorter, Appenders(log, 2));
  ASSERT_TRUE(b.failed());
  EXPECT_EQ(b.failure->kind, FailureKind::kDivergence);
  EXPECT_EQ(b.failure->step, a.steps - 1);
  EXPECT_NE(b.failure->message.find("the schedule ends at step"), std::string::npos);

  // Too long: the program ends first.
  Schedule longer = a.schedule;
  longer.Append(0);
  RunResult c = RunSchedule(longer, Appenders(log, 2));
  ASSERT_TRUE(c.failed());
  EXPECT_EQ(c.failure->kind, FailureKind::kDivergence);
  EXPECT_NE(c.failure->message.find("the program ended after"), std::string::npos);

  // Names a thread that has finished.
  Schedule wrong;
  for (int i = 0; i < 3; ++i) wrong.Append(0);  // thread 0: start, 2 points: finished
  wrong.Append(0);
  RunResult d = RunSchedule(wrong, Appenders(log, 2));
  ASSERT_TRUE(d.failed());
  EXPECT_EQ(d.failure->step, 3u);
  EXPECT_NE(d.failure->message.find("names thread 0 at step 3, but it has finished"),
            std::string::npos)
      << d.failure->message;

  Schedule unknown;
  unknown.Append(9);
  RunResult e = RunSchedule(unknown, Appenders(log, 2));
  ASSERT_TRUE(e.failed());
  EXPECT_NE(e.failure->message.find("only 3 threads"), std::string::npos);
}

TEST(Scheduler, ExceptionEndsTheRunWithThreadAndStep) {
  RoundRobin rr;
  RunResult r = RunWith(rr, [](Scheduler& s) {
    s.Spawn("quiet", [&s] {
      for (int i = 0; i < 10; ++i) s.Point({Access::kYield, 0, "spin"});
    });
    s.Spawn("thrower", [&s] {
      s.Point({Access::kYield, 0, "before"});
      throw std::runtime_error("boom");
    });
  });
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failure->kind, FailureKind::kException);
  EXPECT_EQ(r.failure->thread, 1u);
  EXPECT_EQ(r.failure->message, "boom");
  EXPECT_EQ(r.failure->step, 3u);  // quiet start, thrower start, quiet, thrower throws
  EXPECT_EQ(r.failure->where.file, "before");
  EXPECT_FALSE(r.threads[0].finished);
}

TEST(Scheduler, CheckFailureNamesTheSourceLine) {
  RoundRobin rr;
  int line = 0;
  RunResult r = RunWith(rr, [&line](Scheduler& s) {
    s.Spawn("checker", [&line] {
      line = __LINE__ + 1;
      Check(1 + 1 == 3, "arithmetic is broken");
    });
  });
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failure->kind, FailureKind::kCheck);
  EXPECT_EQ(r.failure->where.file, "scheduler_test.cc");
  EXPECT_EQ(r.failure->where.line, static_cast<uint32_t>(line));
  EXPECT_NE(r.Report().find("CheckFailed: arithmetic is broken"), std::string::npos);
}

TEST(Scheduler, ModelErrorsReportTheirOwnTypeAndLocation) {
  RoundRobin rr;
  RunResult r = RunWith(rr, [](Scheduler& s) {
    s.Spawn("tuner", [] {
      throw ThreadError("KeyError", "'y_ptr'", {"triton/runtime/autotuner.py", 74, "restore"});
    });
  });
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failure->type, "KeyError");
  EXPECT_EQ(r.failure->where.ToString(), "triton/runtime/autotuner.py:74 in restore");
}

TEST(Scheduler, DestructorsOnUnfinishedFibersRunAfterAFailure) {
  auto destroyed = std::make_shared<int>(0);
  struct Tracker {
    std::shared_ptr<int> n;
    ~Tracker() { ++*n; }
  };
  {
    RoundRobin rr;
    Scheduler sched(rr);
    sched.Spawn("waiter", [&sched, destroyed] {
      Tracker t{destroyed};
      for (;;) sched.Point({Access::kYield, 0, "spin"});
    });
    sched.Spawn("failer", [] { Check(false, "stop"); });
    RunResult r = sched.Run();
    ASSERT_TRUE(r.failed());
    EXPECT_EQ(*destroyed, 0);
  }
  EXPECT_EQ(*destroyed, 1);  // the waiter's stack was unwound when the scheduler went away
}

// The strategy runs on the stack of the thread that reached its point (fiber to fiber): what
// it throws must come out of Run() on the caller's stack, never into the logical thread.
TEST(Scheduler, AStrategyThatThrowsFailsRunNotTheThread) {
  struct Throwing final : Strategy {
    int picks = 0;
    ThreadId Pick(const Choice& c) override {
      if (++picks == 3) throw std::runtime_error("strategy broke");
      return c.runnable.front();
    }
    std::string Name() const override { return "throwing"; }
  } strategy;
  auto caught_in_thread = std::make_shared<bool>(false);
  auto unwound = std::make_shared<int>(0);
  struct Tracker {
    std::shared_ptr<int> n;
    ~Tracker() { ++*n; }
  };
  {
    Scheduler sched(strategy);
    sched.Spawn("t", [&sched, caught_in_thread, unwound] {
      Tracker tracker{unwound};
      try {
        for (int i = 0; i < 10; ++i) sched.Point({Access::kYield, 0, "p"});
      } catch (const std::runtime_error&) {
        *caught_in_thread = true;
      }
    });
    EXPECT_THROW(sched.Run(), std::runtime_error);
    EXPECT_EQ(*unwound, 0);
  }
  EXPECT_FALSE(*caught_in_thread);
  EXPECT_EQ(*unwound, 1);  // the thread, suspended at its point, was unwound on teardown
}

// A thread picked again at its own point goes on without a switch; the schedule, history and
// preemption count are those of any other step.
TEST(Scheduler, StayingOnTheSameThreadIsAnOrdinaryStep) {
  RoundRobin rr(/*quantum=*/4);
  RunResult r = RunWith(rr, [](Scheduler& s) {
    for (int t = 0; t < 2; ++t)
      s.Spawn("w", [&s] {
        for (int i = 0; i < 5; ++i) s.Point({Access::kYield, 0, "p"});
      });
  });
  ASSERT_FALSE(r.failed()) << r.Report();
  EXPECT_EQ(r.steps, 12u);
  EXPECT_EQ(r.schedule.Encode(), "rs1:0*4.1*4.0*2.1*2");
  EXPECT_EQ(r.preemptions, 2u);
}

TEST(Scheduler, StepBoundTurnsALivelockIntoAFailure) {
  RandomWalk rw(1);
  RunResult r = RunWith(
      rw,
      [](Scheduler& s) {
        auto flag = std::make_shared<Shared<bool>>(s, "flag", false);
        for (int i = 0; i < 2; ++i)
          s.Spawn("spinner", [flag] {
            while (!flag->Read("spin on flag")) {
            }
          });
      },
      500);
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failure->kind, FailureKind::kStepBound);
  EXPECT_EQ(r.steps, 500u);
  EXPECT_NE(r.failure->message.find("step bound of 500"), std::string::npos);
}

TEST(Scheduler, SpawnAndJoinFromInsideAThread) {
  auto order = std::make_shared<std::vector<std::string>>();
  RunResult r = RunRandom(5, [order](Scheduler& s) {
    s.Spawn("parent", [&s, order] {
      ThreadId c = s.Spawn("child", [&s, order] {
        s.SleepFor(1000);
        order->push_back("child");
      });
      s.Join(c);
      order->push_back("parent");
    });
  });
  EXPECT_FALSE(r.failed()) << r.Report();
  EXPECT_EQ(*order, (std::vector<std::string>{"child", "parent"}));
  // The join carried the child's clock to the parent.
  EXPECT_EQ(r.threads[0].clock, 1000u);
  EXPECT_EQ(r.makespan, 1000u);
}

TEST(Scheduler, TimedStrategyRunsTheEarliestThreadFirst) {
  auto order = std::make_shared<std::vector<int>>();
  for (uint64_t seed = 0; seed < 20; ++seed) {
    order->clear();
    Timed timed(seed);
    RunResult r = RunWith(timed, [order](Scheduler& s) {
      const Nanos delays[] = {300, 100, 200};
      for (int t = 0; t < 3; ++t) {
        s.Spawn("sleeper", [&s, order, t, d = delays[t]] {
          s.SleepFor(d);
          order->push_back(t);
        });
      }
    });
    EXPECT_FALSE(r.failed());
    EXPECT_EQ(*order, (std::vector<int>{1, 2, 0})) << "seed " << seed;
    EXPECT_EQ(r.makespan, 300u);
  }
}

TEST(Scheduler, CountsPreemptions) {
  RoundRobin rr(1);
  auto log = std::make_shared<std::vector<int>>();
  RunResult r = RunWith(rr, Appenders(log, 2));
  // Round-robin with quantum 1 switches at every step while others can run.
  EXPECT_EQ(r.schedule.Encode(), "rs1:0.1.2.0.1.2.0.1.2");
  EXPECT_EQ(r.preemptions, 6u);
  RoundRobin whole(1000);
  RunResult w = RunWith(whole, Appenders(log, 2));
  EXPECT_EQ(w.schedule.Encode(), "rs1:0*3.1*3.2*3");
  EXPECT_EQ(w.preemptions, 0u);
}

TEST(Scheduler, ReportListsEachThreadsLastSteps) {
  RoundRobin rr;
  RunResult r = RunWith(rr, [](Scheduler& s) {
    auto x = std::make_shared<Shared<int>>(s, "x", 0);
    s.Spawn("a", [x] { x->Write(1, "a.cc:10 set x"); });
    s.Spawn("b", [x] {
      const int v = x->Read("b.cc:20 load x");
      Check(v == 0, "x changed under b");
    });
  });
  ASSERT_TRUE(r.failed());
  const std::string report = r.Report();
  EXPECT_NE(report.find("FAILED: check in thread 1 (b) at step 3"), std::string::npos) << report;
  EXPECT_NE(report.find("write x  (a.cc:10 set x)"), std::string::npos) << report;
  EXPECT_NE(report.find("read x  (b.cc:20 load x)"), std::string::npos) << report;
  EXPECT_NE(report.find("schedule: rs1:0.1.0.1"), std::string::npos) << report;
}

}  // namespace
}  // namespace rerace::sim
