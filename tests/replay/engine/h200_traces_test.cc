// The traces recorded on the H200 (traces/samples/triton-*-h200.rrt, see the README there)
// replay on a CPU as the GPU ran them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "rerace/replay/search/check.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/search/shrink.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

Program Load(const std::string& name) { return testing::LoadSample(name); }

// Thread names whose recorded run raised KeyError: 'y_ptr'.
std::set<std::string> RecordedKeyErrors(const Program& p) {
  std::set<std::string> out;
  for (const ThreadProgram& t : p.threads)
    for (const RecordedFailure& f : t.failures)
      if (f.type == "KeyError" && f.message == "'y_ptr'") {
        EXPECT_EQ(f.where, "triton/runtime/autotuner.py:74 _post_hook");
        out.insert(t.name);
      }
  return out;
}

std::set<std::string> ReplayedKeyErrors(const ReplayResult& r) {
  std::set<std::string> out;
  for (const Finding& f : r.findings)
    if (f.code == "in-param-not-in-cache") out.insert(f.thread_name);
  return out;
}

ReplayOptions Fixed(const std::string& fix) {
  ReplayOptions o;
  o.fix = *ParseFix(fix);
  return o;
}

TEST(H200Traces, RecordedOrderRaisesKeyErrorInTheSameThreads) {
  for (const char* name : {"triton-none-h200.rrt", "triton-tls-nargs-h200.rrt"}) {
    SCOPED_TRACE(name);
    const Program p = Load(name);
    const std::set<std::string> recorded = RecordedKeyErrors(p);
    ASSERT_EQ(recorded.size(), 7u);  // 7 of 8 threads, as in every H200 trial
    Replayer rep(p, Fixed("none"));
    const ReplayResult r = rep.RunRecorded();
    EXPECT_EQ(ReplayedKeyErrors(r), recorded);
    EXPECT_EQ(r.left_recording, 0u);
    // Deterministic: the same report twice.
    EXPECT_EQ(FormatJson(rep.RunRecorded(), p), FormatJson(r, p));
  }
}

TEST(H200Traces, LockRunTraceReplaysWithItsOwnLocksAndNoFailure) {
  const Program p = Load("triton-lock-run-h200.rrt");
  EXPECT_TRUE(RecordedKeyErrors(p).empty());
  int locks = 0;
  for (const ThreadProgram& t : p.threads)
    for (const Op& op : t.ops) locks += op.kind == Op::Kind::kLockAcquire;
  EXPECT_EQ(locks, 8);  // every worker took the lock around Autotuner.run
  Replayer rep(p, Fixed("none"));
  const ReplayResult r = rep.RunRecorded();
  EXPECT_FALSE(r.failed()) << FormatReport(r, p, "");
  EXPECT_EQ(r.left_recording, 0u);
  // The recorded lock is a real lock in the model: no schedule fails.
  const Verdict v = CheckFix(p, Fixed("none"), 150, 1);
  EXPECT_TRUE(v.holds);
}

TEST(H200Traces, CheckGivesTheVerdictsTheH200Gave) {
  const Program p = Load("triton-none-h200.rrt");
  const Verdict none = CheckFix(p, Fixed("none"), 150, 1);
  EXPECT_FALSE(none.holds);
  const Verdict tls = CheckFix(p, Fixed("tls-nargs"), 150, 1);
  EXPECT_FALSE(tls.holds);  // the H200: 10 of 10 trials failed with thread-local nargs
  const Verdict lock = CheckFix(p, Fixed("lock-run"), 300, 1);
  EXPECT_TRUE(lock.holds);  // the H200: 0 of 5
  EXPECT_EQ(lock.explored, 300u);
}

}  // namespace
}  // namespace rerace::replay

namespace rerace::replay {
namespace {

TEST(H200Traces, RacesAreFoundUnpatchedAndNotUnderTheLock) {
  const Program p = Load("triton-none-h200.rrt");
  ReplayOptions none = Fixed("none");
  none.detect_races = true;
  Replayer a(p, none);
  sim::RandomWalk rw(3);
  const ReplayResult r = a.Run(rw);
  ASSERT_FALSE(r.races.empty());
  bool restore = false;
  for (const auto& race : r.races) restore |= race.object_name.find("restore_copies") != std::string::npos;
  EXPECT_TRUE(restore);
  EXPECT_NE(FormatRaces(r.races, r.findings).find("involved in: in-param-not-in-cache"), std::string::npos);
  ReplayOptions locked = Fixed("lock-run");
  locked.detect_races = true;
  Replayer b(p, locked);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    sim::RandomWalk w(seed);
    EXPECT_TRUE(b.Run(w).races.empty()) << seed;
  }
}

TEST(H200Traces, ShrinkingKeepsTheFailureWithFewerPreemptions) {
  const Program p = Load("triton-none-h200.rrt");
  Replayer rep(p, Fixed("tls-nargs"));
  sim::RandomWalk rw(1);
  const ReplayResult r = rep.Run(rw);
  ASSERT_TRUE(r.failed());
  const Shrunk s = ShrinkFailure(rep, r);
  EXPECT_EQ(s.result.findings.front().code, r.findings.front().code);
  EXPECT_EQ(s.result.findings.front().where, r.findings.front().where);
  EXPECT_LT(s.preemptions_after, s.preemptions_before);
  // The shrunk schedule replays to the same failure without its seed.
  sim::ScheduleReplay again(s.result.run.schedule);
  EXPECT_EQ(rep.Run(again).findings.front().code, r.findings.front().code);
}

// A time budget stops shrinking where it is (fuzz --time counts shrinking against its budget):
// the failure keeps its seed's run, and the shrink says it was stopped.
TEST(H200Traces, ShrinkingStopsWhenAskedAndKeepsTheRun) {
  const Program p = Load("triton-none-h200.rrt");
  Replayer rep(p, Fixed("tls-nargs"));
  sim::RandomWalk rw(1);
  const ReplayResult r = rep.Run(rw);
  ASSERT_TRUE(r.failed());
  int asked = 0;
  const Shrunk s = ShrinkTo(rep, r, r.findings.front(), [&] { return ++asked > 3; });
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.tries, 3u);
  EXPECT_EQ(s.result.run.schedule.Encode(), r.run.schedule.Encode());
  const Shrunk whole = ShrinkTo(rep, r, r.findings.front(), [] { return false; });
  EXPECT_FALSE(whole.stopped);
  EXPECT_LT(whole.preemptions_after, whole.preemptions_before);
}

}  // namespace
}  // namespace rerace::replay
