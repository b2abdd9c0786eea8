// The model's steps under the GIL and free-threaded (replay/model/include/rerace/replay/model/tuner_world_gil.h), on the
// brief's experiment (traces/samples/triton-none-h200.rrt, the H200's CPython 3.12): each named
// fix's outcome over the same random-walk seeds in both modes, the H200's real runs as the
// reference for the GIL (docs/FIDELITY.md), and the real-code engine (--engine python) in both
// modes as the differential reference for the fixes whose verdict the mode decides.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <ostream>
#include <string>

#include "rerace/replay/model/fix.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "../samples.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay {
namespace {

// How many of seeds 1..n fail.
uint64_t Failing(Replayer& rep, uint64_t n) {
  uint64_t failing = 0;
  for (uint64_t s = 1; s <= n; ++s) {
    sim::RandomWalk w(s);
    const ReplayResult r = rep.Run(w);
    for (const Finding& f : r.findings) EXPECT_NE(f.code, "internal") << f.words;
    failing += r.failed() ? 1u : 0u;
  }
  return failing;
}

ReplayOptions ModelOptions(const std::string& fix, const std::string& mode) {
  ReplayOptions o;
  auto f = ParseFix(fix);
  EXPECT_TRUE(f.ok()) << fix;
  o.fix = *f;
  o.python_mode = mode;
  o.python_version = "3.12";  // the H200's; the 12-02 recording predates the probe's metadata
  return o;
}

struct Case {
  const char* fix;
  bool fails_gil;   // = the H200's real runs (CPython 3.12.3 with the GIL)
  bool fails_free;  // every access a step (the native workload's parallel threads)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.fix; }

class ModelGil : public ::testing::TestWithParam<Case> {};

TEST_P(ModelGil, VerdictPerModeOnTheBriefsExperiment) {
  const Case c = GetParam();
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  constexpr uint64_t kSeeds = 40;
  Replayer gil(p, ModelOptions(c.fix, "gil"));
  Replayer free(p, ModelOptions(c.fix, "free-threaded"));
  const uint64_t g = Failing(gil, kSeeds);
  const uint64_t f = Failing(free, kSeeds);
  std::printf("%-15s gil: %llu/%llu failing, free-threaded: %llu/%llu\n", c.fix,
              static_cast<unsigned long long>(g), static_cast<unsigned long long>(kSeeds),
              static_cast<unsigned long long>(f), static_cast<unsigned long long>(kSeeds));
  EXPECT_EQ(g > 0, c.fails_gil) << c.fix << " under the GIL";
  EXPECT_EQ(f > 0, c.fails_free) << c.fix << " free-threaded";
}

INSTANTIATE_TEST_SUITE_P(NamedFixes, ModelGil,
                         ::testing::Values(Case{"none", true, true}, Case{"tls-nargs", true, true},
                                           Case{"lock-run", false, false},
                                           Case{"tls-state", false, false},
                                           Case{"lock-key-event", false, true},
                                           Case{"prewarm", false, true}),
                         [](const auto& tp) {
                           std::string n = tp.param.fix;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(ModelGilSteps, MergesStepsAndSaysWhy) {
  const Program p = testing::LoadSample("triton-prewarm-patched-h200.rrt");  // metadata: 3.12, GIL
  Replayer recorded(p, ReplayOptions{});
  ReplayOptions fo;
  fo.python_mode = "free-threaded";
  Replayer free(p, fo);
  sim::RandomWalk a(3), b(3);
  const ReplayResult g = recorded.Run(a);
  const ReplayResult f = free.Run(b);
  EXPECT_EQ(g.engine, "model, CPython 3.12 GIL steps");
  EXPECT_NE(g.steps.find("CPython 3.12 with the GIL (as recorded"), std::string::npos) << g.steps;
  EXPECT_EQ(f.engine, "model");
  EXPECT_LT(g.run.steps, f.run.steps);  // the 213-216 and 232-233 windows are one step each
  // A recording without the probe's metadata, nothing given: the H200's interpreter is assumed
  // (CPython 3.12 with the GIL, its table's windows merged), and said, with how to change it;
  // --python gil alone assumes the same version; free-threaded is every access a step.
  const Program old = testing::LoadSample("triton-none-h200.rrt");
  Replayer plain(old, ReplayOptions{});
  sim::RandomWalk c(3);
  const ReplayResult r = plain.Run(c);
  EXPECT_EQ(r.engine, "model, CPython 3.12 GIL steps");
  EXPECT_EQ(r.steps.rfind("assumed CPython 3.12 with the GIL: this recording does not say which "
                          "Python ran it; --python free-threaded",
                          0),
            0u)
      << r.steps;
  EXPECT_EQ("assumed " + plain.StepAssumption(), r.steps);
  ReplayOptions go;
  go.python_mode = "gil";
  Replayer gil_alone(old, go);
  EXPECT_NE(gil_alone.StepAssumption().find("CPython 3.12 with the GIL (--python gil)"),
            std::string::npos)
      << gil_alone.StepAssumption();
  ReplayOptions free_old;
  free_old.python_mode = "free-threaded";
  Replayer every(old, free_old);
  sim::RandomWalk e(3);
  const ReplayResult re = every.Run(e);
  EXPECT_EQ(re.engine, "model");
  EXPECT_EQ(every.StepAssumption(), "");
  EXPECT_LT(r.run.steps, re.run.steps);
  // A recording that names its interpreter assumes nothing.
  EXPECT_EQ(recorded.StepAssumption(), "");
  // A version without a table: the GIL, no window merged, and the report says so.
  ReplayOptions o310;
  o310.python_mode = "gil";
  o310.python_version = "3.10";
  Replayer v310(old, o310);
  sim::RandomWalk d(3);
  const ReplayResult r310 = v310.Run(d);
  EXPECT_NE(r310.steps.find("no table of atomic windows for 3.10"), std::string::npos) << r310.steps;
}

// The real code in both modes, for the fixes whose verdict the mode decides, per release: the
// release's model against the real code under the python engine (3.6, the H200's, in the venv
// of CPython 3.12 with its own Triton; 3.2, 3.4, 3.8 and 3.9, the releases whose model has its
// own GIL table, with that release's wheel). On 3.12 the GIL's hand-over places make prewarm and
// lock-key-event hold, and every access a step breaks them, in the model and in the real code.
// The wheels are built for CPython 3.11 (the venv), where the run-and-key window is split for
// its first 7 executions (docs/GIL.md): the 8 threads' first calls are cold, so prewarm and
// lock-key-event fail in both modes, in the real code as in the model. In every release the
// mode changes the model's steps (its table merges accesses under the GIL).
struct Release {
  const char* model;     // the C++ model
  const char* triton;    // the release the real code runs
  const char* venv;      // under the py root: venv312 (CPython 3.12, Triton 3.6.0), venv (3.11)
  const char* python;    // the venv's CPython, whose GIL table the model takes
  bool wheel;            // the release is a wheel under the py root (triton-X.Y.Z/), on PYTHONPATH
  bool fails_with_gil;   // prewarm and lock-key-event fail under the GIL too (cold calls on 3.11)
};

void PrintTo(const Release& r, std::ostream* os) { *os << r.model; }

class ReleaseGilAgainstRealCode : public ::testing::TestWithParam<Release> {};

TEST_P(ReleaseGilAgainstRealCode, PrewarmAndLockKeyEventPerMode) {
  const Release rel = GetParam();
  const std::string root = RERACE_PY_ROOT;
  const std::string python = root + "/" + rel.venv + "/bin/python";
  if (root.empty() || access(python.c_str(), X_OK) != 0)
    GTEST_SKIP() << python << " is missing (tools/scripts/python-envs.sh makes it)";
  const std::string dir = root + "/triton-" + rel.triton;
  if (rel.wheel && access((dir + "/.complete").c_str(), F_OK) != 0)
    GTEST_SKIP() << "Triton " << rel.triton << " is not installed at " << dir;
  if (rel.wheel)
    setenv("PYTHONPATH", dir.c_str(), 1);
  else
    unsetenv("PYTHONPATH");
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  constexpr uint64_t kSeeds = 8;
  for (const char* fix : {"prewarm", "lock-key-event"}) {
    for (const char* mode : {"gil", "free-threaded"}) {
      SCOPED_TRACE(std::string(rel.model) + " " + fix + " " + mode);
      Replayer engine(p, testing::EngineOptions(python, mode, fix));
      auto info = engine.StartEngine();
      ASSERT_TRUE(info.ok()) << info.error().message;
      ASSERT_NE(info->find(std::string("\"triton\": \"") + rel.triton + "\""), std::string::npos)
          << *info;
      ReplayOptions mo = ModelOptions(fix, mode);
      mo.model = rel.model;
      mo.python_version = rel.python;
      Replayer model(p, mo);
      // Under the GIL the model merges steps with its own table: fewer steps on the same seed
      // than every access a step.
      if (std::string(mode) == "gil") {
        ReplayOptions fo = mo;
        fo.python_mode = "free-threaded";
        Replayer free(p, fo);
        sim::RandomWalk a(1), b(1);
        const ReplayResult g = model.Run(a);
        const ReplayResult f = free.Run(b);
        EXPECT_EQ(g.engine, std::string("model, CPython ") + rel.python + " GIL steps") << g.steps;
        EXPECT_LT(g.run.steps, f.run.steps);
      }
      const uint64_t e = Failing(engine, kSeeds);
      const uint64_t m = Failing(model, kSeeds);
      std::printf("%-11s %-15s %-13s real code %llu/%llu failing, model %llu/%llu\n", rel.model,
                  fix, mode, static_cast<unsigned long long>(e),
                  static_cast<unsigned long long>(kSeeds), static_cast<unsigned long long>(m),
                  static_cast<unsigned long long>(kSeeds));
      EXPECT_EQ(e > 0, m > 0);
      EXPECT_EQ(e > 0, rel.fails_with_gil || std::string(mode) == "free-threaded");
    }
  }
  unsetenv("PYTHONPATH");
}

INSTANTIATE_TEST_SUITE_P(Releases, ReleaseGilAgainstRealCode,
                         ::testing::Values(Release{"triton-3.2", "3.2.0", "venv", "3.11", true, true},
                                           Release{"triton-3.4", "3.4.0", "venv", "3.11", true, true},
                                           Release{"triton", "3.6.0", "venv312", "3.12", false, false},
                                           Release{"triton-3.8", "3.8.0", "venv", "3.11", true, true},
                                           Release{"triton-3.9", "3.9.0", "venv", "3.11", true, true}),
                         [](const auto& tp) {
                           std::string n = std::string("Triton") + tp.param.triton;
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace rerace::replay
