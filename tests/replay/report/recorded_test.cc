// Every recording in traces/samples/ replayed in its recorded order (issue 15, "every recording
// followed"): the model follows it to its end (left_recording 0) and every worker raises what it
// raised on the GPU (same type, message and place), or nothing where it raised nothing. The
// files are listed when the test runs: a sample added later is checked without a code change.
#include "rerace/replay/report/recorded.h"

#include <gtest/gtest.h>
#include <cstdio>
#include <unistd.h>
#include <set>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

std::vector<std::string> SampleFiles() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(testing::SamplePath("")).parent_path();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".rrt") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The value of `flag` on a recorded command line ("--fix X" or "--fix=X"), or "".
std::string FlagValue(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].rfind(flag + "=", 0) == 0) return argv[i].substr(flag.size() + 1);
  }
  return "";
}

// The model's --fix for what the recorded program ran: the native workload's --fix, or the
// named fix a patched Triton program's --variant applied (the CLI refuses a patched recording
// without one). A fix the model has under another name maps to it; prewarm is in the
// recording itself (the serial calls were recorded), so it replays with none.
std::string FixFor(const traces::Trace& t, const Program& p) {
  const std::vector<std::string>& argv = t.header.command_line;
  std::string fix = FlagValue(argv, "--fix");
  if (fix.empty() && !PatchedParts(p).empty()) fix = FlagValue(argv, "--variant");
  static const std::map<std::string, std::string> kModelFix = {
      {"prewarm", "none"},
      {"tls-state", "local=nargs,restore_copies"},  // nargs and restore_copies thread-local
      {"lock-key-event", "lock-key-future"},        // a lock and a per-key event / future
  };
  if (auto it = kModelFix.find(fix); it != kModelFix.end()) fix = it->second;
  return fix.empty() ? "none" : fix;
}

class EveryRecording : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryRecording, FollowsItToTheEndAndReproducesItsFailures) {
  const std::string path = testing::SamplePath(GetParam());
  auto t = traces::ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  if (t->header.recorder_version.rfind("rerace-synth", 0) == 0)
    GTEST_SKIP() << "synthetic, not recorded: no recorded run to reproduce";
  auto p = BuildProgram(*t, path);
  ASSERT_TRUE(p.ok()) << p.error().message;
  if (p->calls.empty()) GTEST_SKIP() << "no tuner in it: nothing for a tuner model to replay";
  if (auto cls = UnknownTunerClass(*p))
    GTEST_SKIP() << "its tuner class '" << *cls << "' is no tuner rerace models";
  ReplayOptions o;
  const std::string fix = FixFor(*t, *p);
  auto parsed = ParseFix(fix);
  ASSERT_TRUE(parsed.ok()) << fix << ": " << parsed.error().message;
  o.fix = *parsed;
  Replayer rep(*p, o);
  const ReplayResult r = rep.RunRecorded();
  ASSERT_FALSE(RunError(r).has_value()) << RunError(r)->message;
  const RecordedComparison c = CompareRecorded(r, *p);
  EXPECT_EQ(r.left_recording, 0u) << "--fix " << fix;
  EXPECT_TRUE(c.matches()) << "--fix " << fix << "\n" << FormatRecordedComparison(c);
  EXPECT_EQ(c.workers.size(), WorkerThreads(*p));
}

INSTANTIATE_TEST_SUITE_P(Samples, EveryRecording, ::testing::ValuesIn(SampleFiles()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param.substr(0, i.param.size() - 4);
                           std::replace_if(n.begin(), n.end(),
                                           [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

// The in-place kernel's unpatched step on an H100 (traces/samples/restore/, xz): Triton 3.6's
// autotuner, and 3.8's and 3.9's over 3.6's compiler (their models: the metadata names the
// installed 3.6). The recorded order reproduces every worker's exception, and on 3.6 the wrong
// restores the GPU read back in 4 threads' `y` (docs/FIDELITY.md, "A restore that matters").
TEST(RecordedComparison, TheRestoreRecordingsReproduceTheirWorkers) {
  if (std::system("xz --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "xz is not installed";
  const std::pair<const char*, const char*> cases[] = {
      {"3.6", "triton"}, {"3.8", "triton-3.8"}, {"3.9", "triton-3.9"}};
  for (const auto& [release, model] : cases) {
    SCOPED_TRACE(release);
    const std::string xz = testing::SamplePath(std::string("restore/restore-") + release + "-none-h100.rrt.xz");
    const std::string path = ::testing::TempDir() + "/restore-" + release + "-" +
                             std::to_string(getpid()) + ".rrt";
    ASSERT_EQ(std::system(("xz -dc '" + xz + "' > '" + path + "'").c_str()), 0) << xz;
    auto t = traces::ReadTrace(path);
    ASSERT_TRUE(t.ok()) << t.error().message;
    auto p = BuildProgram(*t, path);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ReplayOptions o;
    o.model = model;
    Replayer rep(*p, o);
    const ReplayResult r = rep.RunRecorded();
    const RecordedComparison c = CompareRecorded(r, *p);
    EXPECT_EQ(r.left_recording, 0u);
    EXPECT_TRUE(c.matches()) << FormatRecordedComparison(c);
    EXPECT_EQ(c.workers.size(), 8u);
    if (std::string(release) == "3.6") {
      std::set<uint32_t> wrong;
      for (const Finding& f : r.findings)
        if (f.code == "wrong-restore") wrong.insert(f.thread);
      EXPECT_EQ(wrong.size(), 4u);
    }
    std::remove(path.c_str());
  }
}

// The steps of the program's own synchronization and of shared tuner state, recorded on an H100
// with the present probe (traces/samples/sync/, xz; docs/FIDELITY.md). The serial prewarm's and
// the main thread's warm-up's waits order the calls as recorded, and both steps replay, in their
// recorded order, to what their workers did (no failure); the copies' recording says the 8
// copies share one cache dict and write one restore_copies, and random schedules of it fail, as 7
// of its 8 workers did on the GPU.
Program LoadXzSample(const std::string& name) {
  const std::string xz = testing::SamplePath("sync/" + name + ".rrt.xz");
  const std::string path = ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid()) + ".rrt";
  EXPECT_EQ(std::system(("xz -dc '" + xz + "' > '" + path + "'").c_str()), 0) << xz;
  auto t = traces::ReadTrace(path);
  std::remove(path.c_str());
  EXPECT_TRUE(t.ok()) << t.error().message;
  if (!t.ok()) return Program{};
  auto p = BuildProgram(*t, path);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? std::move(*p) : Program{};
}

TEST(RecordedComparison, TheGpuSyncAndCopiesRecordingsReplayAsTheyRan) {
  if (std::system("xz --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "xz is not installed";
  for (const char* name : {"triton-prewarm-sync-h100", "triton-warmup-sync-h100"}) {
    SCOPED_TRACE(name);
    const Program p = LoadXzSample(name);
    ASSERT_FALSE(p.threads.empty());
    EXPECT_TRUE(p.sync_recorded);
    EXPECT_FALSE(p.sync_overflowed);
    size_t ordered = 0;
    for (const auto& after : p.call_after)
      if (!after.empty()) ++ordered;
    EXPECT_GE(ordered, 8u);  // the barrier's 8 cached calls at least
    Replayer rep(p, ReplayOptions{});
    const ReplayResult r = rep.RunRecorded();
    const RecordedComparison c = CompareRecorded(r, p);
    EXPECT_TRUE(c.matches()) << FormatRecordedComparison(c);
    EXPECT_TRUE(r.findings.empty());
  }
  const Program copies = LoadXzSample("triton-copies-h100");
  ASSERT_FALSE(copies.threads.empty());
  EXPECT_TRUE(copies.identity_recorded);
  std::set<uint64_t> cache_homes, hooks_homes;
  for (const auto& [tuner, home] : copies.cache_home) cache_homes.insert(home);
  for (const auto& [tuner, home] : copies.hooks_home) hooks_homes.insert(home);
  EXPECT_EQ(cache_homes.size(), 1u);
  EXPECT_EQ(hooks_homes.size(), 1u);
  EXPECT_GE(copies.cache_home.size() + 1, 8u);
  const std::vector<std::string> lines = SharingLines(copies);
  ASSERT_FALSE(lines.empty());
  int failing = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Replayer rep(copies, ReplayOptions{});
    sim::RandomWalk w(seed);
    if (!rep.Run(w).findings.empty()) ++failing;
  }
  EXPECT_GT(failing, 0);
}

TEST(RecordedComparison, SeesTheSamplesFolder) {
  // The recordings of issues 6, 7, 10 and 14 at least.
  EXPECT_GE(SampleFiles().size(), 18u);
}

TEST(RecordedComparison, StatesTheMatchInWorkers) {
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  Replayer rep(p, ReplayOptions{});
  const ReplayResult r = rep.RunRecorded();
  const RecordedComparison c = CompareRecorded(r, p);
  EXPECT_EQ(FormatRecordedComparison(c),
            "recorded comparison: reproduces the recorded failures: 7 of 7 workers, same type, "
            "message and place; the other 1 worker ok in both\n");
  const std::string json = RecordedComparisonJson(c);
  EXPECT_NE(json.find("\"matches\":true,\"workers\":8,\"matching\":8,\"recorded_failed\":7,"
                      "\"reproduced\":7"),
            std::string::npos)
      << json;
}

TEST(RecordedComparison, NamesTheWorkersThatDifferUnderTheWrongFix) {
  // tls-state's recording (nargs and restore_copies thread-local, all 8 ok) replayed as if only
  // nargs were thread-local: the model leaves the recording and raises where the GPU did not.
  const Program p = testing::LoadSample("triton-tls-state-patched-h200.rrt");
  ReplayOptions o;
  o.fix = *ParseFix("tls-nargs");
  Replayer rep(p, o);
  const RecordedComparison c = CompareRecorded(rep.RunRecorded(), p);
  EXPECT_FALSE(c.matches());
  EXPECT_GT(c.left_recording, 0u);
  EXPECT_EQ(c.recorded_failed, 0u);
  EXPECT_LT(c.matching, 8u);
  const std::string text = FormatRecordedComparison(c);
  EXPECT_NE(text.find("recorded comparison: differs from the recording:"), std::string::npos);
  EXPECT_NE(text.find("(threads): recorded nothing; replayed KeyError: 'y_ptr'"), std::string::npos)
      << text;
}

// A recorded program of one worker that raised, and a replay that raised `f`.
std::pair<Program, ReplayResult> OneWorker(const Finding& f) {
  Program p;
  ThreadProgram t;
  t.name = "w0";
  Op call;
  call.kind = Op::Kind::kTunerCall;
  t.ops.push_back(call);
  t.failures.push_back({0, "KeyError", "'y_ptr'", "triton/runtime/autotuner.py:74 _post_hook"});
  p.threads.push_back(t);
  ThreadProgram main_thread;  // launches only: not a worker, not compared
  main_thread.name = "MainThread";
  main_thread.ops.push_back(Op{});  // a launch
  p.threads.push_back(main_thread);
  ReplayResult r;
  r.findings.push_back(f);
  return {p, r};
}

TEST(RecordedComparison, TellsTypeMessageAndPlaceApart) {
  Finding same;
  same.code = "in-param-not-in-cache";
  same.thread_name = "w0";
  same.type = "KeyError";
  same.message = "'y_ptr'";
  same.where = "triton/runtime/autotuner.py:74 in _post_hook";
  {
    auto [p, r] = OneWorker(same);
    const RecordedComparison c = CompareRecorded(r, p);
    EXPECT_TRUE(c.matches());
    EXPECT_EQ(c.workers.size(), 1u);  // the main thread is not a worker
  }
  struct Case {
    Finding f;
    std::vector<std::string> differs;
  };
  Finding type = same, message = same, place = same, other = same, silent = same;
  type.type = "TypeError";
  message.message = "'x_ptr'";
  place.where = "triton/runtime/autotuner.py:216 in run";
  other.thread = 2;  // a thread the model added (a prewarm or owner thread): not recorded
  other.thread_name = "w1";
  silent.silent = true;
  for (const Case& k : {Case{type, {"type"}}, Case{message, {"message"}}, Case{place, {"place"}},
                        Case{other, {"threads"}}, Case{silent, {"threads"}}}) {
    auto [p, r] = OneWorker(k.f);
    const RecordedComparison c = CompareRecorded(r, p);
    EXPECT_FALSE(c.matches());
    ASSERT_EQ(c.workers.size(), 1u);
    EXPECT_EQ(c.workers[0].differs, k.differs) << FormatRecordedComparison(c);
  }
  auto [p, r] = OneWorker(other);
  const RecordedComparison c = CompareRecorded(r, p);
  ASSERT_EQ(c.extra.size(), 1u);  // w1 raised; the recording has no such thread
  EXPECT_NE(FormatRecordedComparison(c).find("differs: thread not in the recording w1 (threads)"),
            std::string::npos);
  auto [p2, left] = OneWorker(same);
  left.left_recording = 3;
  EXPECT_FALSE(CompareRecorded(left, p2).matches());
}

TEST(RecordedComparison, HoldsThreadsOfOneNameEachAgainstItsOwnRun) {
  // A Python program's threads are often all named after the process ("python3"): each is
  // compared with its own recorded run, by thread, not pooled under the name.
  Finding raised;
  raised.thread = 0;
  raised.thread_name = "python3";
  raised.type = "KeyError";
  raised.message = "'y_ptr'";
  raised.where = "triton/runtime/autotuner.py:74 in _post_hook";
  auto [p, r] = OneWorker(raised);
  p.threads[0].name = "python3";
  ThreadProgram ok = p.threads[0];  // a second worker of that name that raised nothing
  ok.failures.clear();
  p.threads.push_back(ok);
  {
    const RecordedComparison c = CompareRecorded(r, p);
    EXPECT_TRUE(c.matches()) << FormatRecordedComparison(c);
    ASSERT_EQ(c.workers.size(), 2u);
    EXPECT_EQ(c.workers[0].thread, "python3 (thread 0)");
    EXPECT_EQ(c.workers[1].thread, "python3 (thread 2)");
  }
  // The same failure replayed in the other thread of that name: both differ.
  r.findings[0].thread = 2;
  const RecordedComparison c = CompareRecorded(r, p);
  EXPECT_FALSE(c.matches());
  EXPECT_EQ(c.matching, 0u);
  EXPECT_EQ(c.reproduced, 0u);
}

}  // namespace
}  // namespace rerace::replay
