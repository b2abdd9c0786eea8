// The program's own synchronization, recorded and replayed (issue 52), on this CPU: for each
// primitive the probe records, a step whose two calls of one cold tuner are ordered by that
// primitive alone (tests/python/sync_step.py, the real Triton Autotuner under the probe), its
// marks turned into a trace through the recorder. With the recorded edge the replay may only
// run the calls one after the other: the check holds (the second call finds the key tuned);
// the same marks without the rerace:sync ones run them as concurrent, and the check FAILS.
#include <gtest/gtest.h>

#include <string>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/search/check.h"
#include "rerace/testing/programs.h"
#include "../samples.h"
#include "probe_steps.h"

namespace rerace::replay {
namespace {

using testing::ReadRecorded;
using testing::RunStep;
using testing::Step;
using testing::VenvPython;
using testing::WithoutSyncMarks;

class SyncPath : public ::testing::TestWithParam<const char*> {};

TEST_P(SyncPath, TheRecordedEdgeIsTheOnlyOrderAndTheReplayKeepsIt) {
  std::string why;
  const Step step = RunStep("sync_step.py", GetParam(), &why);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_TRUE(step.errors.empty()) << step.errors.front();
  const Step bare = WithoutSyncMarks(step);
  ASSERT_LT(bare.marks.size(), step.marks.size());

  auto with = ReadRecorded(step, std::string("sync-") + GetParam());
  auto without = ReadRecorded(bare, std::string("nosync-") + GetParam());
  ASSERT_TRUE(with.ok()) << with.error().message;
  ASSERT_TRUE(without.ok()) << without.error().message;
  ASSERT_EQ(with->calls.size(), 2u);
  EXPECT_TRUE(with->sync_recorded);
  EXPECT_FALSE(without->sync_recorded);
  // The second call follows the first.
  ASSERT_EQ(with->call_after.size(), 2u);
  EXPECT_EQ(with->call_after[1], (std::vector<uint32_t>{0}));
  EXPECT_TRUE(without->call_after.empty());

  const BoundedVerdict held = CheckFixBounded(*with, rerace::testing::WithFix("none"), 2, 20000, false);
  EXPECT_TRUE(held.verdict.holds);
  EXPECT_TRUE(held.Complete());
  const BoundedVerdict failed =
      CheckFixBounded(*without, rerace::testing::WithFix("none"), 2, 20000, false);
  EXPECT_FALSE(failed.verdict.holds);
  // Same seed, same report, with the order.
  Replayer rep(*with, rerace::testing::WithFix("none"));
  sim::RandomWalk a(5), b(5);
  EXPECT_EQ(FormatReport(rep.Run(a), *with, ""), FormatReport(rep.Run(b), *with, ""));

  // The real code, replayed: the same answers.
  const ReplayOptions real = testing::EngineOptions(VenvPython(), "", "none");
  const BoundedVerdict real_held = CheckFixBounded(*with, real, 16, 2000, false);
  EXPECT_TRUE(real_held.verdict.holds);
  EXPECT_TRUE(real_held.Complete()) << "exhausted " << real_held.exhausted << " naive " << real_held.naive << " cut " << real_held.cut << " explored " << real_held.verdict.explored;
  const BoundedVerdict real_failed = CheckFixBounded(*without, real, 2, 2000, false);
  EXPECT_FALSE(real_failed.verdict.holds);
}

// The brief's prewarm step (each of 8 threads calls once in turn, ordered by Events, then a
// barrier and 8 concurrent cached calls: all ok on the H200) recorded with the synchronization
// marks: the real code holds with no flag, and no schedule of the model tunes concurrently;
// without the marks the serial calls replay as concurrent and both fail, as the recording made
// before them (triton-prewarm-patched-h200.rrt) does.
TEST(SyncPathPrewarm, WithTheRecordedOrderTheRealCodeHoldsAndNoScheduleTunesConcurrently) {
  std::string why;
  const Step step = RunStep("sync_step.py", "prewarm", &why);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_TRUE(step.errors.empty()) << step.errors.front();
  auto with = ReadRecorded(step, "prewarm");
  auto without = ReadRecorded(WithoutSyncMarks(step), "prewarm-bare");
  ASSERT_TRUE(with.ok()) << with.error().message;
  ASSERT_TRUE(without.ok()) << without.error().message;
  ASSERT_EQ(with->calls.size(), 16u);
  EXPECT_GE(with->sync_orders.at("Event"), 7u);
  EXPECT_GE(with->sync_orders.at("Barrier"), 1u);
  // The model: with the order no schedule tunes concurrently (the model's own verdict on the
  // cached calls, nargs-none, is its verdict on `--fix prewarm`: docs/FIDELITY.md); without it
  // the first calls race as tunings.
  const auto none = rerace::testing::WithFix("none");
  auto tuning_race = [](const ReplayResult& r) {
    for (const Finding& f : r.findings)
      if (f.code == "in-param-not-in-cache" || f.code == "wrong-restore" ||
          f.code == "missed-restore")
        return true;
    return false;
  };
  Replayer ordered(*with, none), unordered(*without, none);
  int raced_with = 0, raced_without = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    sim::RandomWalk a(seed), b(seed);
    raced_with += tuning_race(ordered.Run(a));
    raced_without += tuning_race(unordered.Run(b));
  }
  EXPECT_EQ(raced_with, 0);
  EXPECT_GT(raced_without, 0);
  const ReplayOptions real = testing::EngineOptions(VenvPython(), "", "none");
  EXPECT_TRUE(CheckFixBounded(*with, real, 1, 300, false).verdict.holds);
  EXPECT_FALSE(CheckFixBounded(*without, real, 1, 300, false).verdict.holds);
}

// The recording made before the probe recorded synchronization holds with the order its
// timing shows (--order-from-timing), under the real code too.
TEST(SyncPathPrewarm, TheOldRecordingHoldsUnderTheRealCodeWithTheOrderFromItsTiming) {
  if (VenvPython().empty()) GTEST_SKIP() << RERACE_PY_ROOT << "/venv/bin/python is missing";
  Program p = testing::LoadSample("triton-prewarm-patched-h200.rrt");
  EXPECT_FALSE(p.sync_recorded);
  ASSERT_GT(OrderFromTiming(p), 0u);
  const BoundedVerdict v =
      CheckFixBounded(p, testing::EngineOptions(VenvPython(), "", "none"), 1, 300, false);
  EXPECT_TRUE(v.verdict.holds);
}

// Marks written by hand: what orders calls and what does not.
Step Marks(std::vector<std::pair<std::string, std::string>> marks) {
  Step s;
  s.marks = std::move(marks);
  return s;
}

std::string Begin(const char* tuner) {
  return std::string("rerace:tuner kind=call-begin tuner=") + tuner +
         " class=triton.runtime.autotuner.Autotuner kernel=k key=(1,) configs=a|b args=x|y "
         "restore=1";
}
std::string End(const char* tuner) {
  return std::string("rerace:tuner kind=call-end tuner=") + tuner +
         " class=triton.runtime.autotuner.Autotuner kernel=k key=(1,) config=0";
}

TEST(SyncOrder, MarksInsideACallAndUnknownPrimitivesOrderNothing) {
  // A's release is made inside its tuner call (a patch's own Event, re-executed by the
  // replay); a Semaphore is not a primitive the probe pairs.
  const Step step = Marks({{"A", Begin("0x10")},
                           {"A", "rerace:sync kind=release what=Event obj=0x1 seq=0"},
                           {"A", End("0x10")},
                           {"A", "rerace:sync kind=release what=Semaphore obj=0x2 seq=0"},
                           {"B", "rerace:sync kind=acquire what=Event obj=0x1 seq=0"},
                           {"B", "rerace:sync kind=acquire what=Semaphore obj=0x2 seq=0"},
                           {"B", Begin("0x10")},
                           {"B", End("0x10")}});
  auto p = ReadRecorded(step, "in-call");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(p->sync_recorded);
  EXPECT_TRUE(p->call_after.empty());
  EXPECT_TRUE(p->sync_orders.empty());
}

TEST(SyncOrder, AnOrderPassesThroughAThreadWithoutCallsAndAQueuePairsByItem) {
  // A calls, then puts item 0; M gets item 0 and sets E; B waits for E, then calls. B's call
  // follows A's through M. C gets item 1, put by M before anything: C's call follows nothing.
  const Step step = Marks({{"M", "rerace:sync kind=release what=Queue obj=0x5 seq=1"},
                           {"A", Begin("0x10")},
                           {"A", End("0x10")},
                           {"A", "rerace:sync kind=release what=Queue obj=0x5 seq=0"},
                           {"M", "rerace:sync kind=acquire what=Queue obj=0x5 seq=0"},
                           {"M", "rerace:sync kind=release what=Event obj=0x1 seq=0"},
                           {"C", "rerace:sync kind=acquire what=Queue obj=0x5 seq=1"},
                           {"C", Begin("0x10")},
                           {"C", End("0x10")},
                           {"B", "rerace:sync kind=acquire what=Event obj=0x1 seq=0"},
                           {"B", Begin("0x10")},
                           {"B", End("0x10")},
                           {"B", "rerace:sync kind=overflow what=Event obj=0x0 seq=3"}});
  auto p = ReadRecorded(step, "chain");
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->calls.size(), 3u);
  ASSERT_EQ(p->call_after.size(), 3u);
  EXPECT_TRUE(p->call_after[0].empty());  // A's
  EXPECT_TRUE(p->call_after[1].empty());  // C's
  EXPECT_EQ(p->call_after[2], (std::vector<uint32_t>{0}));  // B's follows A's
  EXPECT_TRUE(p->sync_overflowed);
  EXPECT_EQ(p->sync_orders.at("Event"), 1u);
  EXPECT_EQ(p->sync_orders.at("Queue"), 1u);
}

INSTANTIATE_TEST_SUITE_P(EveryPrimitive, SyncPath,
                         ::testing::Values("event", "start", "join", "queue", "future", "submit",
                                           "barrier"));

}  // namespace
}  // namespace rerace::replay
