// Issue 26: the real-code engine's logical threads as greenlets (the default where the greenlet
// package imports, CPython 3.12+: no kernel in a hand-over) against OS threads handing a baton
// over (RERACE_ENGINE_THREADS=os, the engine as it was): the same report and schedule, seed for
// seed, on every bundled Triton recording, with shipped fixes (their thread-local storage and
// controlled locks and events), in both interpreter modes; and user patches that keep their
// state by thread identity (threading.get_ident, a threading.local subclass with an __init__,
// threading.current_thread) hold with both, as they do only if each logical thread is a thread
// of its own to the program (replay/engine/python/rerace_real/logical.py).
//
// Needs build/py/venv312 with greenlet (tools/scripts/python-envs.sh); skips and says so without.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/search/shrink.h"
#include "rerace/sim/explore.h"
#include "rerace/sim/strategy.h"
#include "../samples.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay {
namespace {

std::string Venv312() { return std::string(RERACE_PY_ROOT) + "/venv312/bin/python"; }

struct Reports {
  std::string text;     // every run's report and schedule
  std::string threads;  // what the engine said its logical threads are
  std::string error;    // the engine did not start
};

// `seeds` random-walk runs of `p` with `fix` (and `patch`) in `mode`, logical threads `threads`.
Reports RunWith(const Program& p, const std::string& fix, const std::string& patch,
                const std::string& mode, const std::string& threads, uint64_t seeds) {
  Reports out;
  ReplayOptions o = testing::EngineOptions(Venv312(), mode, fix);
  if (!patch.empty()) o.patches = {patch};
  setenv("RERACE_ENGINE_THREADS", threads.c_str(), 1);
  Replayer rep(p, o);
  auto info = rep.StartEngine();
  unsetenv("RERACE_ENGINE_THREADS");
  if (!info.ok()) {
    out.error = info.error().message;
    return out;
  }
  out.threads = info->find("\"threads\": \"greenlet\"") != std::string::npos ? "greenlet" : "os";
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    sim::RandomWalk w(seed);
    const ReplayResult r = rep.Run(w);
    out.text += FormatReport(r, p, "") + r.run.schedule.Encode() + "\n";
  }
  return out;
}

// Why the engine cannot run greenlets here (no venv312, or no greenlet in it), or "". An
// engine that has greenlets and fails to start with them is a test failure, not a skip.
std::string GreenletsSkip() {
  if (std::string(RERACE_PY_ROOT).empty() || access(Venv312().c_str(), X_OK) != 0)
    return Venv312() + " is missing (tools/scripts/python-envs.sh makes it)";
  unsetenv("PYTHONPATH");
  const std::string probe = Venv312() + " -c 'import greenlet' 2>/dev/null";
  if (std::system(probe.c_str()) != 0)
    return Venv312() + " cannot import greenlet (tools/scripts/python-envs.sh installs it)";
  return "";
}

class EngineThreads : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineThreads, GreenletsGiveTheOsThreadsReports) {
  if (const std::string skip = GreenletsSkip(); !skip.empty()) GTEST_SKIP() << skip;
  const std::string name = GetParam();
  const Program p = testing::LoadSample(name);
  std::vector<std::string> fixes = {"none"};
  if (PatchedParts(p).empty()) {
    fixes = {"none", "tls-state", "lock-key-event"};
    if (name == "triton-none-h200.rrt") fixes = {"none", "lock-run", "tls-nargs", "tls-state",
                                                  "lock-key-event", "prewarm"};
  }
  for (const std::string& fix : fixes) {
    for (const char* mode : {"gil", "free-threaded"}) {
      SCOPED_TRACE(name + " " + fix + " " + mode);
      const Reports os = RunWith(p, fix, "", mode, "os", 2);
      const Reports gl = RunWith(p, fix, "", mode, "greenlet", 2);
      ASSERT_EQ(os.error, gl.error);
      if (!os.error.empty()) continue;  // the same refusal with both
      EXPECT_EQ(os.threads, "os");
      EXPECT_EQ(gl.threads, "greenlet");
      EXPECT_EQ(os.text, gl.text);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, EngineThreads, ::testing::ValuesIn(testing::TritonSampleNames()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param.substr(0, i.param.size() - 4);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// State kept by thread identity: these patches are tls-state written two other ways, so they
// hold (no finding in any run) exactly when every logical thread is its own thread to the
// program; and the reports are the same with greenlets and OS threads.
TEST(EngineThreadsIdentity, PatchesKeyedByThreadHoldWithGreenletsAndOsThreads) {
  if (const std::string skip = GreenletsSkip(); !skip.empty()) GTEST_SKIP() << skip;
  const std::string src = std::getenv("RERACE_SOURCE") ? std::getenv("RERACE_SOURCE") : ".";
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  for (const char* patch : {"state_by_thread_ident.py", "state_by_local_subclass.py"}) {
    for (const char* mode : {"gil", "free-threaded"}) {
      SCOPED_TRACE(std::string(patch) + " " + mode);
      const std::string path = src + "/tests/data/patches/" + patch;
      const Reports os = RunWith(p, "none", path, mode, "os", 6);
      const Reports gl = RunWith(p, "none", path, mode, "greenlet", 6);
      ASSERT_TRUE(os.error.empty()) << os.error;
      ASSERT_TRUE(gl.error.empty()) << gl.error;
      EXPECT_EQ(gl.threads, "greenlet");
      EXPECT_EQ(os.text, gl.text);
      EXPECT_EQ(gl.text.find("FAILED"), std::string::npos) << gl.text;
      EXPECT_EQ(gl.text.find("also:"), std::string::npos) << gl.text;
    }
  }
}

// Asking for the thread between two accesses (threading.get_ident, a builtin C call with OS
// threads; threading.current_thread) in watched code: the same steps, so the same reports and
// schedules, with greenlets as with OS threads (the C call logical.get_ident stands for is told
// to the GIL tracer at the caller's site).
TEST(EngineThreadsIdentity, IdentityCallsAreTheSameHandOverPlaces) {
  if (const std::string skip = GreenletsSkip(); !skip.empty()) GTEST_SKIP() << skip;
  const std::string src = std::getenv("RERACE_SOURCE") ? std::getenv("RERACE_SOURCE") : ".";
  const std::string path = src + "/tests/data/patches/identity_between_accesses.py";
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  for (const char* mode : {"gil", "free-threaded"}) {
    SCOPED_TRACE(mode);
    const Reports os = RunWith(p, "none", path, mode, "os", 4);
    const Reports gl = RunWith(p, "none", path, mode, "greenlet", 4);
    ASSERT_TRUE(os.error.empty()) << os.error;
    ASSERT_TRUE(gl.error.empty()) << gl.error;
    EXPECT_EQ(gl.threads, "greenlet");
    EXPECT_EQ(os.text, gl.text);
  }
}

// The Python threads pass the points their strategy has already picked without a round trip,
// switching among themselves by the plan sent with a turn (python_engine.cc, control.py), and
// count their steps themselves: the same reports and schedules as when every point waits for
// its turn (RERACE_ENGINE_PLANS=0), for a systematic search's runs (a fixed prefix, then no
// preemption), random walks (every pick planned until a lock operation or a thread's end),
// PCT's runs (until a change point), saved schedules replayed and shrinking's runs, failing
// and not, greenlets and OS threads, both modes.
TEST(EnginePlans, PlannedPointsGiveTheReportsOfPointsThatWait) {
  if (const std::string skip = GreenletsSkip(); !skip.empty()) GTEST_SKIP() << skip;
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  auto reports = [&](const std::string& fix, const char* mode, const char* threads,
                     const char* plans) {
    std::string text;
    ReplayOptions o = testing::EngineOptions(Venv312(), mode, fix);
    setenv("RERACE_ENGINE_THREADS", threads, 1);
    setenv("RERACE_ENGINE_PLANS", plans, 1);
    Replayer rep(p, o);
    std::vector<sim::Schedule> schedules;
    sim::Explorer e(sim::Explorer::Mode::kDpor, 1, 12);
    e.Explore([&](sim::Strategy& s) {
      const ReplayResult r = rep.Run(s);
      text += FormatReport(r, p, "") + r.run.schedule.Encode() + "\n";
      schedules.push_back(r.run.schedule);
      return false;
    });
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      sim::RandomWalk w(seed);
      const ReplayResult walk = rep.Run(w);
      text += FormatReport(walk, p, "") + walk.run.schedule.Encode() + "\n";
      schedules.push_back(walk.run.schedule);
      if (!walk.findings.empty()) {
        const Shrunk s = ShrinkTo(rep, walk, walk.findings.front());
        text += FormatReport(s.result, p, "") + s.result.run.schedule.Encode() + "\n";
      }
      sim::Pct pct(seed, 3, 150);  // promises until its next change point
      const ReplayResult r = rep.Run(pct);
      text += FormatReport(r, p, "") + r.run.schedule.Encode() + "\n";
    }
    for (const sim::Schedule& s : schedules) {
      sim::ScheduleReplay again(s);
      const ReplayResult r = rep.Run(again);
      text += FormatReport(r, p, "") + r.run.schedule.Encode() + "\n";
    }
    unsetenv("RERACE_ENGINE_THREADS");
    unsetenv("RERACE_ENGINE_PLANS");
    return text;
  };
  for (const std::string fix : {"none", "lock-key-event"})
    for (const char* mode : {"gil", "free-threaded"})
      for (const char* threads : {"greenlet", "os"}) {
        SCOPED_TRACE(fix + " " + mode + " " + threads);
        const std::string waits = reports(fix, mode, threads, "0");
        const std::string planned = reports(fix, mode, threads, "1");
        // The stock code fails in some of these runs: its reports cite steps (the words'
        // "last written by thread T at step S", counted by the Python side).
        if (fix == "none") {
          EXPECT_NE(waits.find("FAILED"), std::string::npos);
        }
        EXPECT_EQ(planned, waits);
      }
}

}  // namespace
}  // namespace rerace::replay
