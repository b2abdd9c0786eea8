// The native training step recorded on the H200 (traces/samples/native-*-h200.rrt, see the
// README there; tools/scripts/h200-native-check.sh made them) replays on a CPU as the GPU ran
// it, and `check` on the unpatched trace gives the verdicts the real runs gave.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "rerace/replay/search/check.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

Program Load(const std::string& name) { return testing::LoadSample(name); }

ReplayOptions Fixed(const std::string& fix) {
  ReplayOptions o;
  o.fix = *ParseFix(fix);
  return o;
}

// (thread name, type, message, where) of every failure.
using Failures = std::set<std::tuple<std::string, std::string, std::string, std::string>>;

Failures Recorded(const Program& p) {
  Failures out;
  for (const ThreadProgram& t : p.threads)
    for (const RecordedFailure& f : t.failures) out.insert({t.name, f.type, f.message, f.where});
  return out;
}

Failures Replayed(const ReplayResult& r) {
  Failures out;
  for (const Finding& f : r.findings)
    if (!f.silent) out.insert({f.thread_name, f.type, f.message, f.where});
  return out;
}

TEST(NativeTraces, RecordedOrderRaisesTheRecordedErrorsInTheSameThreads) {
  struct Case {
    const char* trace;
    const char* fix;  // the fix the recorded program ran with
    size_t failures;  // workers that threw in the real run
    const char* message_start;
  };
  for (const Case& c :
       {Case{"native-none-h200.rrt", "none", 7, "In-parameter input 0 is not in the cache"},
        Case{"native-none-2-h200.rrt", "none", 7, "In-parameter input 0 is not in the cache"},
        Case{"native-tls-nargs-h200.rrt", "tls-nargs", 7, "In-parameter input 0 is not in the cache"},
        Case{"native-lock-key-future-h200.rrt", "lock-key-future", 1, "nargs is null while benchmarking"},
        // Two processes as torchrun starts them (RANK 0 and 1), each recorded into its own file.
        Case{"native-rank0-h200.rrt", "none", 3, "In-parameter input 0 is not in the cache"},
        Case{"native-rank1-h200.rrt", "none", 3, "In-parameter input 0 is not in the cache"}}) {
    SCOPED_TRACE(c.trace);
    const Program p = Load(c.trace);
    const Failures recorded = Recorded(p);
    ASSERT_EQ(recorded.size(), c.failures);
    for (const auto& f : recorded) {
      EXPECT_EQ(std::get<1>(f), "rerace::kernels::TunerError");
      EXPECT_EQ(std::get<2>(f).rfind(c.message_start, 0), 0u) << std::get<2>(f);
    }
    Replayer rep(p, Fixed(c.fix));
    EXPECT_EQ(rep.ModelName(), "native");
    const ReplayResult r = rep.RunRecorded();
    EXPECT_EQ(Replayed(r), recorded) << FormatReport(r, p, "");
    EXPECT_EQ(r.left_recording, 0u);
    EXPECT_EQ(FormatJson(rep.RunRecorded(), p), FormatJson(r, p));  // deterministic
  }
}

TEST(NativeTraces, EachRankWroteItsOwnTrace) {
  for (int rank : {0, 1}) {
    const std::string path = testing::SamplePath("native-rank" + std::to_string(rank) + "-h200.rrt");
    auto t = traces::ReadTrace(path);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->header.rank, rank);
    EXPECT_EQ(t->threads.size(), 4u);  // its own four workers, none of the other process's
  }
}

// A seed reproduces the failure on a CPU, and the same seed gives the same report.
TEST(NativeTraces, SeedsReproduceTheFailureByteForByte) {
  const Program p = Load("native-none-h200.rrt");
  Replayer rep(p, Fixed("none"));
  int failing = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    sim::RandomWalk a(seed), b(seed);
    const ReplayResult ra = rep.Run(a);
    EXPECT_EQ(FormatJson(ra, p), FormatJson(rep.Run(b), p)) << seed;
    bool key_error = false;
    for (const Finding& f : ra.findings)
      key_error |= f.code == "in-param-not-in-cache" &&
                   f.message == "In-parameter input 0 is not in the cache";
    failing += key_error;
  }
  EXPECT_GE(failing, 15);  // the race is shallow: most seeds hit it
}

TEST(NativeTraces, PatchedRunsReplayWithoutFailure) {
  for (const auto& [trace, fix] : std::vector<std::pair<std::string, std::string>>{
           {"native-lock-run-h200.rrt", "none"},  // its recorded lock is in the program
           {"native-call-local-h200.rrt", "call-local"}}) {
    SCOPED_TRACE(trace);
    const Program p = Load(trace);
    EXPECT_TRUE(Recorded(p).empty());
    Replayer rep(p, Fixed(fix));
    const ReplayResult r = rep.RunRecorded();
    EXPECT_FALSE(r.failed()) << FormatReport(r, p, "");
    EXPECT_EQ(r.left_recording, 0u);
  }
  // Without its fix, the call-local recording's programs fail: the fix is what holds.
  const Program p = Load("native-call-local-h200.rrt");
  EXPECT_FALSE(CheckFix(p, Fixed("none"), 50, 1).holds);
}

// docs/FIDELITY.md: the real outcome of each fix over 8 runs on the H200, and rerace's verdict
// from the unpatched trace.
TEST(NativeTraces, CheckGivesTheVerdictsTheRealRunsGave) {
  const Program p = Load("native-none-h200.rrt");
  struct Case {
    const char* fix;
    bool real_failed;  // in any of the 8 runs
  };
  for (const Case& c : {Case{"none", true}, Case{"lock-run", false}, Case{"tls-nargs", true},
                        Case{"call-local", false}, Case{"lock-key-future", true},
                        Case{"per-thread-tuner", false}, Case{"prewarm", true},
                        Case{"owner-thread", false}}) {
    SCOPED_TRACE(c.fix);
    const Verdict v = CheckFix(p, Fixed(c.fix), 600, 1);
    EXPECT_EQ(!v.holds, c.real_failed);
  }
}

// The H200's real step (tools/scripts/h200-cost-check.sh, docs/gpu-logs/h200-cost-2026-12-04.log: median
// of 8 runs of rerace-train-step --threads 8 --steps 1 --fix F): lock-run 66.8 ms, call-local
// 453.5 ms. Serialized tuning (one pass, seven cache hits) is the cheaper, from the unpatched
// recording and from each fix's own; from its own recording lock-run's estimate is within 15 %
// of the real step, call-local's within 15 % of the step its recording took.
TEST(NativeTraces, LockRunCostsLessThanCallLocalAsOnTheH200) {
  const Program none = Load("native-none-cost-h200.rrt");
  const Verdict lock = CheckFix(none, Fixed("lock-run"), 10, 1);
  const Verdict local = CheckFix(none, Fixed("call-local"), 10, 1);
  ASSERT_TRUE(lock.holds);
  ASSERT_TRUE(local.holds);
  EXPECT_LT(lock.makespan_fix, local.makespan_fix);
  const Verdict own_lock = CheckFix(Load("native-lock-run-cost-h200.rrt"), Fixed("lock-run"), 10, 1);
  const Verdict own_local = CheckFix(Load("native-call-local-cost-h200.rrt"), Fixed("call-local"), 10, 1);
  ASSERT_TRUE(own_lock.holds);
  ASSERT_TRUE(own_local.holds);
  EXPECT_LT(own_lock.makespan_fix, own_local.makespan_fix);
  EXPECT_NEAR(static_cast<double>(own_lock.makespan_fix), 66.8e6, 0.15 * 66.8e6);
  // call-local's recorded trials overlapped seven others' (each repetition waits for the whole
  // device): their own time is taken out of the shared wall, and they run one at a time. That
  // recording ran 30 % slow (589.7 ms, a CUPTI buffer per thread: docs/RECORDER.md): against
  // its own step (cost_fidelity_test's OneBufferRecorder rows have recordings of the present recorder).
  EXPECT_NEAR(static_cast<double>(own_local.makespan_fix), 589.7e6, 0.15 * 589.7e6);
}

}  // namespace
}  // namespace rerace::replay
