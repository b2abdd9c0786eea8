// Patch reach (issue 29, "the phantom patch"): for every callable a patch replaced in
// Triton's Autotuner, the real-code engine says through which calls it was entered; one no
// call entered is the finding `patch-not-reached`, and `check` never says "holds" for it.
// Three patches of tests/data/patches, through the command line on the H200 recording: one
// that works, one bypassed as the incident's engineer suspected (a subclass calls a reference
// to the original `run` taken before the patch), one applied to a class object the tuners do
// not use (the module reloaded after the patch). Runs the real Triton of the venv under
// RERACE_PY_ROOT (tools/scripts/python-envs.sh) and skips, saying which, without it. And the
// reach the probe records on the GPU (`rerace record --probe triton`), said by replay's first
// lines for either engine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rerace/testing/cli.h"
#include "rerace/testing/rewrite.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace {

using rerace::testing::CliRun;
using rerace::testing::Has;
using rerace::testing::Rerace;
using rerace::testing::SampleTrace;
using rerace::testing::Source;

// `rerace ARGS` with environment variable `name` set to `value` (unset again after).
CliRun ReraceWithEnv(const char* name, const std::string& value, const std::string& args) {
  setenv(name, value.c_str(), 1);
  CliRun r = Rerace(args);
  unsetenv(name);
  return r;
}

struct Case {
  const char* name;
  const char* command;  // "replay" or "check" with its options
  const char* patch;    // under tests/data/patches
  int exit_code;
  std::vector<std::string> has;
  std::vector<std::string> lacks;
};

class PatchReach : public ::testing::TestWithParam<Case> {};

TEST_P(PatchReach, SaysWhetherEachReplacementWasOnThePath) {
  const Case& c = GetParam();
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0)
    GTEST_SKIP() << exe << " is missing (tools/scripts/python-envs.sh makes it)";
  const CliRun r = Rerace(std::string(c.command) + " " + SampleTrace("triton-none-h200.rrt") +
                          " --engine python --python-exe " + exe + " --patch " +
                          Source(std::string("tests/data/patches/") + c.patch));
  SCOPED_TRACE(c.name);
  EXPECT_EQ(r.code, c.exit_code) << r.out;
  for (const std::string& s : c.has) EXPECT_TRUE(Has(r.out, s)) << "missing: " << s << "\n" << r.out;
  for (const std::string& s : c.lacks) EXPECT_FALSE(Has(r.out, s)) << "unexpected: " << s << "\n" << r.out;
}

const Case kCases[] = {
    // A certificate over sub-programs never certifies more than it searched: a patch that
    // serializes two threads and lets a third through holds in every 2-thread sub-program, but
    // the verdict still FAILS (the whole step's search finds it), and a 3-thread certificate
    // finds it in a sub-program, which its hint replays with --only.
    {"a lock for two threads: a 2-thread certificate does not make it hold",
     "check --threads 2 --runs 0", "lock_two_of_three.py", 1,
     {"FAILS: counterexample found after"},
     {"holds for every interleaving", "(DPOR over threads "}},
    {"a lock for two threads: a 3-thread certificate fails it in a sub-program",
     "check --threads 3 --runs 0", "lock_two_of_three.py", 1,
     {"FAILS: counterexample found after", "(DPOR over threads ", " --only "},
     {"holds"}},
    {"a lock that works is entered by every call", "replay --seed 3", "reach_works.py", 0,
     {"patch reach: your Autotuner.run replacement (reach_works.py:10) was entered by 8 of 8 "
      "threads' calls\n",
      "ok: no failure in this schedule"},
     {"patch-not-reached"}},
    {"a subclass calling the saved original bypasses the lock", "replay --seed 3",
     "reach_bypassed.py", 1,
     {"FAILED: patch-not-reached at step",
      "(none: the patch never ran): your Autotuner.run replacement (reach_bypassed.py:20) was "
      "entered by 0 of 8 threads' calls\n",
      "  TeamAutotuner.run (reach_bypassed.py:14) reached Autotuner.run "
      "(triton/runtime/autotuner.py:",
      ") without it\n",
      // The stock race the lock was meant to stop, still there: the patch never ran.
      "KeyError: 'y_ptr'",
      // The class the patch put in Autotuner's place runs its own run: that replacement was
      // on every call's path (it is how the lock was bypassed).
      "patch reach: your Autotuner.run replacement (reach_bypassed.py:13) was entered by 8 of 8 "
      "threads' calls\n"},
     {}},
    {"a patch on a class object the reloaded module replaced", "replay --seed 3",
     "reach_reloaded.py", 1,
     {"triton.runtime.autotuner.Autotuner rebound to another class object",
      "FAILED: patch-not-reached at step",
      "your Autotuner.run replacement (reach_reloaded.py:13) was entered by 0 of 8 threads' calls",
      "reached Autotuner.run (triton/runtime/autotuner.py:"},
     {"patch reach: "}},
    {"check fails a bypassed patch with its own words, never holds", "check --bound 1 --max-runs 3",
     "reach_bypassed.py", 1,
     {"FAILS: the patch never ran (patch-not-reached): your Autotuner.run replacement "
      "(reach_bypassed.py:20) was entered by 0 of 8 threads' calls"},
     {"holds", "inconclusive"}},
    // A part of a patch that ran which no call reaches (nor what it replaced) is not "the patch
    // never ran": the lock's verdict stands, and a line says the part is unused here.
    {"a part of a patch the recording never uses", "check --bound 1", "reach_unused_part.py", 0,
     {"verdict: patch reach_unused_part.py (sha256 ", "holds",
      "patch reach (in the first schedule checked): your Autotuner.run replacement "
      "(reach_unused_part.py:14) was entered by 8 of 8 threads' calls\n",
      "patch reach (in the first schedule checked): your Autotuner.warmup replacement "
      "(reach_unused_part.py:19) was entered by 0 "
      "of 8 threads' calls; no call reached what it replaced either (Autotuner.warmup "
      "(triton/runtime/autotuner.py:",
      "this recording does not use it (the rest of the patch ran)\n"},
     {"patch-not-reached"}},
    // A property a subclass hides is bypassed by every call, though no call is made: the
    // patch's other property ran, and this one still fails the check.
    {"a thread-local property a subclass's own attribute hides", "replay --seed 3",
     "reach_hidden_property.py", 1,
     {"FAILED: patch-not-reached at step",
      "your Autotuner.nargs property (reach_hidden_property.py:13) was entered by 0 of 8 "
      "threads' calls\n",
      "  the replayed tuner's class TeamAutotuner resolves nargs to TeamAutotuner.nargs, a "
      "plain attribute (reach_hidden_property.py)\n",
      "patch reach: your Autotuner.restore_copies property (reach_hidden_property.py:21) was "
      "entered by 8 of 8 threads' calls\n"},
     {"does not use it"}},
    // A budget too small to finish is inconclusive (exit 3), as before: reach changes nothing.
    {"check of a reached patch keeps its verdict", "check --bound 1 --max-runs 2",
     "reach_works.py", 3,
     {"verdict: inconclusive",
      // Under check the reach is that of one schedule, and says so.
      "\npatch reach (in the first schedule checked): your Autotuner.run replacement "
      "(reach_works.py:10) was entered by 8 of 8 threads' calls\n"},
     {"patch-not-reached"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, PatchReach, ::testing::ValuesIn(kCases));

// check --junit with the real code and a user's patch: the case names the patch file by its name
// (its content hash in a property, so an edit keeps the case's history), and carries what ran (the engine, its Python and Triton, the patch's replacement) and
// where the patch was entered, as the text's notes and lines say them.
TEST(PatchReachJunit, TheCaseNamesThePatchTheEngineAndTheReach) {
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0)
    GTEST_SKIP() << exe << " is missing (tools/scripts/python-envs.sh makes it)";
  const std::string xml_path = ::testing::TempDir() + "/patch-reach-junit.xml";
  const CliRun r = Rerace("check " + SampleTrace("triton-none-h200.rrt") + " --bound 1 --engine python --python-exe " +
                          exe + " --patch " + Source("tests/data/patches/reach_works.py") + " --junit " + xml_path);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(xml_path);
  const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string& s :
       {std::string("name=\"patch reach_works.py\""), std::string("<property name=\"sha256 reach_works.py\" value=\""),
        std::string("<property name=\"engine\" value=\"python\"/>"),
        std::string("<system-out>verdict: patch reach_works.py (sha256 "),
        std::string("engine: the real tuner code: Python "), std::string(", Triton "),
        std::string("patch reach (in the first schedule checked): your Autotuner.run replacement "
                    "(reach_works.py:10) was entered by 8 of 8 threads' calls\n")})
    EXPECT_TRUE(Has(xml, s)) << "missing: " << s << "\n" << xml;
}

// The H200 recording as the probe records the incident: every call's detail says the team's
// lock on Autotuner.run was not on its stack, CachedAutotuner.run having called Triton's run.
TEST(RecordedPatchReach, ReplaySaysWhatTheProbeSawOnTheGpu) {
  const std::string out = ::testing::TempDir() + "/reach-recorded-" + std::to_string(getpid()) + ".rrt";
  const std::string reach =
      R"j("reach":{"Autotuner.run":{"by":"CachedAutotuner.run (cache.py:360)","module":"fix",)j"
      R"j("on_stack":false,"patch":"fix.py:7","qualname":"run"}})j";
  rerace::testing::RewriteSample("triton-none-h200.rrt", out, [&](std::string d) {
    return d.empty() ? "{" + reach + "}" : d.substr(0, d.size() - 1) + "," + reach + "}";
  });
  const CliRun r = Rerace("replay " + out + " --seed 1");
  EXPECT_TRUE(Has(r.out, "recorded patch reach: your Autotuner.run replacement (fix.py:7) was on "
                         "the stack of 0 of 8 recorded calls: CachedAutotuner.run (cache.py:360) "
                         "reached Autotuner.run without it\n"))
      << r.out;
  const CliRun shown = Rerace("show " + out);
  // (show wraps its lines at 160 columns.)
  EXPECT_TRUE(Has(shown.out, "      patch reach: your Autotuner.run replacement (fix.py:7) was on the "
                             "stack of 0 of 8 recorded calls: CachedAutotuner.run (cache.py:360)"))
      << shown.out;
  EXPECT_TRUE(Has(shown.out, "reached Autotuner.run\n          without it\n")) << shown.out;
  const CliRun stock = Rerace("replay " + SampleTrace("triton-none-h200.rrt") + " --seed 1");
  EXPECT_FALSE(Has(stock.out, "recorded patch reach")) << stock.out;
  std::filesystem::remove(out);
}

// Issue 29 (2): a tuner class the recording names that subclasses Triton's Autotuner (a
// team's, a library's) replays through its real class when its module imports here, and is
// refused in one line naming the class and the module otherwise. The H200 recording, its
// tuner class renamed to rerace_team_tuner.TeamAutotuner: a subclass whose run calls a
// reference to Autotuner.run taken at import, as the incident's CachedAutotuner was suspected
// of, so a team's lock patched onto Autotuner.run afterwards is never on the path.
TEST(RecordedTunerClass, ReplaysThroughItsRealClassOrIsRefusedInOneLine) {
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0)
    GTEST_SKIP() << exe << " is missing (tools/scripts/python-envs.sh makes it)";
  const std::string dir = ::testing::TempDir() + "/reach-class-" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/lib");
  std::ofstream(dir + "/lib/rerace_team_tuner.py")
      << "from triton.runtime.autotuner import Autotuner\n"
         "_orig_run = Autotuner.run\n"
         "class TeamAutotuner(Autotuner):\n"
         "    def run(self, *args, **kwargs):\n"
         "        self.team_calls = getattr(self, 'team_calls', 0) + 1\n"
         "        return _orig_run(self, *args, **kwargs)\n";
  const std::string trace = dir + "/team.rrt";
  rerace::testing::RewriteSample(
      "triton-none-h200.rrt", trace, [](std::string d) { return d; },
      [](std::string s) {
        return s == "triton.runtime.autotuner.Autotuner" ? "rerace_team_tuner.TeamAutotuner" : s;
      });
  const std::string replay = "replay " + trace + " --engine python --python-exe " + exe + " --seed 3";
  // Installed (on PYTHONPATH): its class builds the tuner, and its own run is on the path.
  const CliRun real = ReraceWithEnv("PYTHONPATH", dir + "/lib",
                                  replay + " --patch " + Source("tests/data/patches/reach_works.py"));
  EXPECT_EQ(real.code, 1) << real.out;
  EXPECT_TRUE(Has(real.out, "; class rerace_team_tuner.TeamAutotuner (rerace_team_tuner.py)")) << real.out;
  EXPECT_TRUE(Has(real.out, "FAILED: patch-not-reached")) << real.out;
  EXPECT_TRUE(Has(real.out, "  TeamAutotuner.run (rerace_team_tuner.py:6) reached Autotuner.run "
                            "(triton/runtime/autotuner.py:"))
      << real.out;
  EXPECT_TRUE(Has(real.out, "KeyError: 'y_ptr'")) << real.out;  // it inherits the race
  // Not installed: one line naming the class and its module, exit 65.
  const CliRun refused = Rerace(replay);
  EXPECT_EQ(refused.code, 65) << refused.out;
  EXPECT_TRUE(Has(refused.out, "tuner class rerace_team_tuner.TeamAutotuner is not imported: module "
                               "rerace_team_tuner: "))
      << refused.out;
  std::filesystem::remove_all(dir);
}

// A tuner class whose package's __init__ needs a module this Python lacks (FLA's with torch
// installed but not einops): its module is imported alone, its packages bare, and the first
// lines say so; the class replays.
TEST(RecordedTunerClass, ImportsItsModuleAloneWhenItsPackageLacksADependency) {
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0)
    GTEST_SKIP() << exe << " is missing (tools/scripts/python-envs.sh makes it)";
  const std::string dir = ::testing::TempDir() + "/reach-alone-" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/lib/rerace_dep_pkg");
  std::ofstream(dir + "/lib/rerace_dep_pkg/__init__.py") << "import rerace_no_such_dependency\n";
  std::ofstream(dir + "/lib/rerace_dep_pkg/tuner.py")
      << "from triton.runtime.autotuner import Autotuner\nclass Sub(Autotuner):\n    pass\n";
  const std::string trace = dir + "/alone.rrt";
  rerace::testing::RewriteSample(
      "triton-none-h200.rrt", trace, [](std::string d) { return d; },
      [](std::string s) {
        return s == "triton.runtime.autotuner.Autotuner" ? "rerace_dep_pkg.tuner.Sub" : s;
      });
  const CliRun r = ReraceWithEnv("PYTHONPATH", dir + "/lib",
                                 "replay " + trace + " --engine python --python-exe " + exe + " --seed 3");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "; class rerace_dep_pkg.tuner.Sub (")) << r.out;
  EXPECT_FALSE(Has(r.out, "fake torch")) << r.out;  // torch is not what its package lacks
  EXPECT_TRUE(Has(r.out, "\nNB: rerace_dep_pkg.tuner imported alone, its packages' __init__ not run: "
                         "they import rerace_no_such_dependency, which this Python does not have\n"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "KeyError: 'y_ptr'")) << r.out;
  std::filesystem::remove_all(dir);
}

// Issue 29 (1): FLA's real CachedAutotuner (fla-core 0.5.2 and 0.6.0, pip-installed with
// --target under RERACE_PY_ROOT) under the engine, without torch: its cache.py is imported alone
// with rerace's minimal fake torch. Its None-safe hooks raise no KeyError: the race is silent.
// A lock on Autotuner.run is on its path (its run calls super().run()).
TEST(FlaCachedAutotuner, ReplaysThroughFlasOwnCode) {
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0)
    GTEST_SKIP() << exe << " is missing (tools/scripts/python-envs.sh makes it)";
  const std::string trace = ::testing::TempDir() + "/reach-fla-" + std::to_string(getpid()) + ".rrt";
  rerace::testing::RewriteSample(
      "triton-none-h200.rrt", trace, [](std::string d) { return d; },
      [](std::string s) {
        return s == "triton.runtime.autotuner.Autotuner" ? "fla.ops.utils.cache.CachedAutotuner" : s;
      });
  for (const std::string version : {"0.5.2", "0.6.0"}) {
    SCOPED_TRACE("fla-core " + version);
    const std::string fla = std::string(RERACE_PY_ROOT) + "/fla-core-" + version;
    if (access((fla + "/fla/ops/utils/cache.py").c_str(), F_OK) != 0) {
      ADD_FAILURE() << fla << " is missing (tools/scripts/python-envs.sh makes it)";
      continue;
    }
    const CliRun r = ReraceWithEnv("PYTHONPATH", fla,
                                 "replay " + trace + " --engine python --python-exe " + exe +
                                     " --seed 3 --patch " + Source("tests/data/patches/reach_works.py"));
    EXPECT_TRUE(Has(r.out, "; class fla.ops.utils.cache.CachedAutotuner (fla/ops/utils/cache.py)")) << r.out;
    EXPECT_TRUE(Has(r.out, "NB: this Python has no torch: fla.ops.utils.cache imported with rerace's "
                           "minimal fake torch"))
        << r.out;
    EXPECT_TRUE(Has(r.out, "patch reach: your Autotuner.run replacement (reach_works.py:10) was "
                           "entered by 8 of 8 threads' calls"))
        << r.out;
    EXPECT_FALSE(Has(r.out, "KeyError")) << r.out;
    // Without the lock: the race FLA inherits from Triton's run, silent under its None-safe hooks.
    const CliRun stock = ReraceWithEnv("PYTHONPATH", fla, "replay " + trace +
                                     " --engine python --python-exe " + exe + " --seed 3");
    EXPECT_EQ(stock.code, 1) << stock.out;
    EXPECT_TRUE(Has(stock.out, "FAILED: missed-restore in thread ")) << stock.out;
    EXPECT_TRUE(Has(stock.out, "the real program raises nothing (silent corruption)")) << stock.out;
    EXPECT_FALSE(Has(stock.out, "KeyError")) << stock.out;
  }
  std::filesystem::remove(trace);
}

// Issue 29 (5): a synthesized FLA step (`rerace synth --fla V`: FLA's CachedAutotuner, named by
// the probe's metadata as the probe names it) through FLA's real CachedAutotuner.run and its
// super().run(), on CI (no GPU, no torch). The unpatched step fails; a lock around
// Autotuner.run holds (it is on FLA's path: super().run() resolves the patched function); a
// patch whose lock sits where FLA's path does not pass (on a reloaded module's fresh class, or
// a subclass put in Autotuner's place, while FLA's class was defined over the old class object)
// is patch-not-reached, with the frame that went around it. The Triton trace's reloaded-module
// patch (above: not reached) is reached through FLA's class, which subclasses the patched one.
TEST(FlaSynthesizedStep, CheckThroughFlasRealRunWithAndWithoutTheLock) {
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0)
    GTEST_SKIP() << exe << " is missing (tools/scripts/python-envs.sh makes it)";
  for (const std::string version : {"0.5.2", "0.6.0"}) {
    const std::string fla = std::string(RERACE_PY_ROOT) + "/fla-core-" + version;
    if (access((fla + "/fla/ops/utils/cache.py").c_str(), F_OK) != 0)
      GTEST_SKIP() << "fla-core " << version << " is not installed at " << fla
                   << " (tools/scripts/python-envs.sh makes it)";
  }
  const std::string trace = ::testing::TempDir() + "/fla-synth-" + std::to_string(getpid()) + ".rrt";
  for (const std::string version : {"0.5.2", "0.6.0"}) {
    SCOPED_TRACE("fla-core " + version);
    const std::string fla = std::string(RERACE_PY_ROOT) + "/fla-core-" + version;
    const CliRun w = Rerace("synth -o " + trace + " --fla " + version + " --threads 3 --configs 3 --reps 1");
    ASSERT_EQ(w.code, 0) << w.out;
    const std::string check = "check " + trace + " --engine python --python-exe " + exe + " --bound 1";
    const auto patched = [&](const std::string& patch) {
      return ReraceWithEnv("PYTHONPATH", fla,
                           check + " --patch " + Source("tests/data/patches/" + patch));
    };

    const CliRun stock = ReraceWithEnv("PYTHONPATH", fla, check);
    EXPECT_EQ(stock.code, 1) << stock.out;
    EXPECT_TRUE(Has(stock.out, "tuner l2norm_fwd_kernel: built from the recording (key names N from "
                               "the probe); class fla.ops.utils.cache.CachedAutotuner "
                               "(fla/ops/utils/cache.py); its kernel not imported: defined in a script"))
        << stock.out;
    EXPECT_TRUE(Has(stock.out, "verdict: fix 'none' FAILS")) << stock.out;
    EXPECT_TRUE(Has(stock.out, "the real program raises nothing (silent corruption)")) << stock.out;

    const CliRun lock = patched("reach_works.py");
    EXPECT_EQ(lock.code, 0) << lock.out;
    EXPECT_TRUE(Has(lock.out, "verdict: patch reach_works.py (sha256 ")) << lock.out;
    EXPECT_TRUE(Has(lock.out, ") holds for every schedule of a DPOR search at bound 1 (")) << lock.out;
    EXPECT_TRUE(Has(lock.out, "patch reach (in the first schedule checked): your Autotuner.run replacement (reach_works.py:10) was "
                              "entered by 3 of 3 threads' calls"))
        << lock.out;

    struct Bypassed {
      const char* patch;
      const char* changed;  // what the patch's description says it did
      const char* replacement;
    };
    for (const Bypassed& b :
         {Bypassed{"reach_fresh_class.py",
                   "triton.runtime.autotuner.Autotuner rebound to another class object "
                   "(triton.runtime.autotuner.Autotuner); its run -> function run "
                   "(reach_fresh_class.py:17)",
                   "reach_fresh_class.py:17"},
          Bypassed{"reach_locked_subclass.py",
                   "triton.runtime.autotuner.Autotuner rebound to another class object "
                   "(rerace_patch_0_reach_locked_subclass.LockedAutotuner); its run -> function "
                   "LockedAutotuner.run (reach_locked_subclass.py:13)",
                   "reach_locked_subclass.py:13"}}) {
      SCOPED_TRACE(b.patch);
      const CliRun r = patched(b.patch);
      EXPECT_EQ(r.code, 1) << r.out;
      EXPECT_TRUE(Has(r.out, b.changed)) << r.out;
      EXPECT_TRUE(Has(r.out, std::string("FAILS: the patch never ran (patch-not-reached): your "
                                         "Autotuner.run replacement (") +
                                 b.replacement + ") was entered by 0 of 3 threads' calls"))
          << r.out;
      EXPECT_TRUE(Has(r.out, "  CachedAutotuner.run (fla/ops/utils/cache.py:378) reached "
                             "Autotuner.run (triton/runtime/autotuner.py:212) without it\n"))
          << r.out;
      EXPECT_FALSE(Has(r.out, "holds")) << r.out;
    }
    const CliRun reloaded = patched("reach_reloaded.py");
    EXPECT_EQ(reloaded.code, 0) << reloaded.out;
    EXPECT_TRUE(Has(reloaded.out, "patch reach (in the first schedule checked): your Autotuner.run replacement (reach_reloaded.py:13) "
                                  "was entered by 3 of 3 threads' calls"))
        << reloaded.out;
  }
  std::filesystem::remove(trace);
}

}  // namespace
