// tests/tools/report_engine_test.cc: what the reports say of the engine that ran (issues 26
// and 28): --engine auto names its choice and why, fuzz --jobs under the real code gives one
// job's reports, and the real code's shards merge to one run's races. The real-code cases need
// the environments under RERACE_PY_ROOT and skip without them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rerace/testing/cli.h"
#include "report_test.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace {

using rerace::testing::CliRun;
using rerace::testing::Has;
using rerace::testing::Lines;
using rerace::testing::Rerace;
using rerace::testing::SampleTrace;
using rerace::testing::Slurp;
using rerace::testing::Source;
using rerace::testing::report::Count;
using rerace::testing::report::TempDir;

// The Python of environment `venv` under RERACE_PY_ROOT (tools/scripts/python-envs.sh makes
// them), or "" when this build has none: the real-code cases skip then (Missing says why).
std::string EnvPython(const std::string& venv) {
  const std::string root = RERACE_PY_ROOT;
  const std::string python = root + "/" + venv + "/bin/python";
  return !root.empty() && access(python.c_str(), X_OK) == 0 ? python : std::string();
}

std::string Missing(const std::string& venv) {
  return std::string(RERACE_PY_ROOT) + "/" + venv +
         "/bin/python is missing (tools/scripts/python-envs.sh)";
}

// Issue 28: --engine auto says which engine runs and why, in one line: the model for a tuner
// the real code does not run (rerace's native tuner), for a fix it has no patch for, and when
// the Python given imports no Triton; the real code when build/py's CPython 3.12 imports the
// Triton the recording came from (3.6: the recording does not say, as the model takes it), and
// then its hint replays the engine it chose.
TEST(ReportEngine, AutoSaysWhichEngineAndWhy) {
  const std::string triton = SampleTrace("triton-none-h200.rrt");
  const CliRun native = Rerace("replay " + SampleTrace("native-none-h200.rrt") + " --engine auto --seed 3");
  EXPECT_EQ(native.out.rfind("engine: model (--engine auto: the recording's tuner is modelled by "
                             "'native', which the real-code engine does not run",
                             0),
            0u)
      << native.out;
  EXPECT_TRUE(Has(native.out, "(model native, fix none")) << native.out;
  // FLA's class: the model, and the way to its real code (the engine runs it when asked)
  const CliRun fla = Rerace("replay " + SampleTrace("restore-fla-none-h200.rrt") + " --engine auto --seed 3");
  EXPECT_EQ(fla.out.rfind("engine: model (--engine auto: the recording's tuner is FLA's "
                          "CachedAutotuner, modelled by 'fla'; --engine python --python-exe PY with "
                          "FLA importable",
                          0),
            0u)
      << fla.out;
  // a model named by the user is the reason, not what the recording holds
  const CliRun named = Rerace("replay " + triton + " --engine auto --model fla --seed 3");
  EXPECT_EQ(named.out.rfind("engine: model (--engine auto: --model fla names one of rerace's C++ "
                            "tuner models)",
                            0),
            0u)
      << named.out;
  const CliRun fix = Rerace("check " + triton + " --engine auto --fix owner-thread --bound 1 --max-runs 2");
  EXPECT_TRUE(Has(fix.out, "engine: model (--engine auto: the real-code engine has no patch for "
                           "--fix 'owner-thread')\n"))
      << fix.out;
  const CliRun none = Rerace("replay " + triton + " --engine auto --python-exe /bin/false --seed 3");
  EXPECT_TRUE(Has(none.out, "engine: model (--engine auto: the recording came from Python with "
                            "Triton 3.6 (the recording does not say; the model's default), but no "
                            "Python here imports it (/bin/false (no triton))"))
      << none.out;
  EXPECT_TRUE(Has(none.out, "(model triton, fix none")) << none.out;
  const std::string python = EnvPython("venv312");
  if (python.empty()) GTEST_SKIP() << Missing("venv312");
  const CliRun real = Rerace("replay " + triton + " --engine auto --python-exe " + python + " --seed 3");
  EXPECT_EQ(real.code, 1) << real.out;
  EXPECT_TRUE(Has(real.out, "engine: python (--engine auto: the recording came from Python with "
                            "Triton 3.6 (the recording does not say; the model's default), and " +
                                python + " imports Triton 3.6.0"))
      << real.out;
  EXPECT_TRUE(Has(real.out, "(engine python: CPython 3.12")) << real.out;
  EXPECT_TRUE(Has(real.out, "--engine python --python-exe " + python + " --strategy random --seed 3"))
      << real.out;
}

// Issue 28: --engine auto is the default. It chooses per trace (fuzz of a native and a Triton
// recording runs each under its own engine), every hint names the engine it ran, fuzz runs 100
// seeds under the real code unless told, and a --patch the model would get is refused.
TEST(ReportEngine, TheDefaultIsAutoPerTraceAndHintsNameTheEngine) {
  EXPECT_TRUE(Has(Rerace("replay --help").out, "=auto")) << "the default engine";
  const std::string native = SampleTrace("native-none-h200.rrt");
  const CliRun model = Rerace("replay " + native + " --seed 3");
  EXPECT_EQ(model.code, 1) << model.out;
  EXPECT_TRUE(Has(model.out, "engine: model (--engine auto: ")) << model.out;
  EXPECT_TRUE(Has(model.out, "rerace replay " + native + " --engine model --strategy random --seed 3"))
      << model.out;
  const std::string patch = Source("tests/data/patches/reach_works.py");
  const CliRun patched = Rerace("check " + native + " --patch " + patch);
  EXPECT_EQ(patched.code, 64) << patched.out;
  EXPECT_TRUE(Has(patched.out, "--patch runs only under the real-code engine, and --engine auto "
                               "chose the model: the recording's tuner is modelled by 'native'"))
      << patched.out;
  EXPECT_EQ(Lines(patched.out).size(), 1u) << patched.out;
  if (EnvPython("venv312").empty()) GTEST_SKIP() << Missing("venv312");
  const std::string triton = SampleTrace("triton-none-h200.rrt");
  const CliRun dflt = Rerace("replay " + triton + " --seed 3");
  EXPECT_EQ(dflt.out, Rerace("replay " + triton + " --engine auto --seed 3").out);
  EXPECT_TRUE(Has(dflt.out, "(engine python: CPython 3.12")) << dflt.out;
  const CliRun both = Rerace("fuzz " + triton + " " + native + " --failure nargs-none");
  EXPECT_EQ(both.code, 1) << both.out;
  EXPECT_TRUE(Has(both.out, "fuzz " + triton + " (engine python, fix none, strategy random, failure "
                            "nargs-none): 100 runs"))
      << both.out;
  EXPECT_TRUE(Has(both.out, "fuzz " + native + " (model native, fix none, strategy random, failure "
                            "nargs-none): 1000 runs"))
      << both.out;
}

// Issue 26, item 6: fuzz --jobs N with the real-code engine (a Python process per job) gives
// one job's report, byte for byte: text, JSON with races, and every schedule file. Small runs
// and one failure kind, so that shrinking stays short.
TEST(ReportFuzz, EngineJobsGiveOneJobsReportsAndScheduleFiles) {
  const std::string python = EnvPython("venv312");
  if (python.empty()) GTEST_SKIP() << Missing("venv312");
  const std::string t = SampleTrace("triton-none-h200.rrt");
  std::string text[2], json[2], sched[2];
  const int jobs[2] = {1, 3};
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(jobs[k]);
    // One folder name for both, so that the text reports compare whole.
    const std::string dir = ::testing::TempDir() + "/report-engine-jobs-" + std::to_string(getpid());
    std::filesystem::remove_all(dir);
    const std::string common = "fuzz " + t + " --engine python --python-exe " + python +
                               " --runs 5 --failure in-param-not-in-cache --jobs " +
                               std::to_string(jobs[k]);
    const CliRun r = Rerace(common + " --save-failures " + dir);
    ASSERT_EQ(r.code, 1) << r.out;
    text[k] = r.out;
    for (int n = 1;; ++n) {
      const std::string s = Slurp(dir + "/triton-none-h200-none-" + std::to_string(n) + ".sched");
      if (s.empty()) break;
      sched[k] += s + "\n----\n";
    }
    json[k] = Rerace(common + " --races --json").out;
    std::filesystem::remove_all(dir);
  }
  EXPECT_TRUE(Has(text[0], "in-param-not-in-cache")) << text[0];
  EXPECT_TRUE(Has(sched[0], "# failure: in-param-not-in-cache")) << sched[0];
  EXPECT_TRUE(Has(json[0], "\"races\":[{")) << json[0];
  EXPECT_EQ(text[1], text[0]);
  EXPECT_EQ(sched[1], sched[0]);
  EXPECT_EQ(json[1], json[0]);
}

// Issue 50: check --jobs N with the real code runs its DPOR search on N engines, in batches: the
// same N gives the same report byte for byte (text and JSON); a fix that holds on one engine holds,
// exhausted, on three; a failing check gives the same report each time too.
TEST(ReportCheck, EngineJobsSearchOnManyEnginesDeterministically) {
  const std::string python = EnvPython("venv312");
  if (python.empty()) GTEST_SKIP() << Missing("venv312");
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const std::string engine = " --engine python --python-exe " + python + " --python gil --bound 1";
  const std::string holds = "check " + t + engine + " --fix lock-run --jobs ";
  const CliRun one = Rerace(holds + "1 --json");
  const CliRun a = Rerace(holds + "3 --json");
  const CliRun b = Rerace(holds + "3 --json");
  ASSERT_EQ(one.code, 0) << one.out;
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(Has(a.out, "\"exhausted\":true")) << a.out;
  const std::string fails = "check " + t + engine + " --fix none --failure in-param-not-in-cache --jobs 3";
  const CliRun f = Rerace(fails);
  const CliRun g = Rerace(fails);
  ASSERT_EQ(f.code, 1) << f.out;
  EXPECT_EQ(f.out, g.out);
  EXPECT_TRUE(Has(f.out, "FAILED: in-param-not-in-cache")) << f.out;
}

// A check of the real code starts one engine for all its phases (the probe, the DPOR search, the
// sampled schedules, and a failure's shrinking and timeline: each had a Python process of its own,
// four or more with the one that reports its set-up), and --jobs N adds N-1 for the search. Counted by a --python-exe that notes each
// engine it starts.
TEST(ReportCheck, OneEngineForEveryPhaseOfACheck) {
  const std::string python = EnvPython("venv312");
  if (python.empty()) GTEST_SKIP() << Missing("venv312");
  const std::string dir = TempDir("one-engine");
  const std::string log = dir + "/starts";
  const std::string exe = dir + "/python";
  {
    std::ofstream w(exe);
    w << "#!/bin/sh\ncase \"$2\" in *rerace_real*) echo engine >> '" << log << "';; esac\nexec '"
      << std::filesystem::absolute(python).string() << "' \"$@\"\n";
  }
  std::filesystem::permissions(exe, std::filesystem::perms::owner_all);
  auto starts = [&] {
    std::ifstream r(log);
    int n = 0;
    for (std::string line; std::getline(r, line);) n += line == "engine";
    return n;
  };
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const std::string check = "check " + t + " --engine python --python-exe " + exe + " --fix lock-run";
  const CliRun whole = Rerace(check);  // probe, DPOR at bound 1, sampled schedules
  ASSERT_EQ(whole.code, 0) << whole.out;
  EXPECT_TRUE(Has(whole.out, "sampled")) << whole.out;
  EXPECT_EQ(starts(), 1) << whole.out;
  std::filesystem::remove(log);
  const CliRun jobs = Rerace(check + " --bound 1 --jobs 2");
  ASSERT_EQ(jobs.code, 0) << jobs.out;
  EXPECT_EQ(starts(), 2) << jobs.out;
  std::filesystem::remove(log);
  // A failing check shrinks its counterexample and writes its timeline on that engine too.
  const std::string timeline = dir + "/fails.json";
  const CliRun fails = Rerace("check " + t + " --engine python --python-exe " + exe +
                              " --fix tls-nargs --perfetto " + timeline);
  ASSERT_EQ(fails.code, 1) << fails.out;
  EXPECT_TRUE(Has(fails.out, "shrunk")) << fails.out;
  EXPECT_TRUE(std::filesystem::file_size(timeline) > 0);
  EXPECT_EQ(starts(), 1) << fails.out;
}

// Issue 28: races merged from the real code's shards are the races of one run of the same seeds
// (each shard's labels are its own process's; the merge keys them by text, not by address).
TEST(ReportMerge, EngineShardsMergeToOneRunsRaces) {
  const std::string python = EnvPython("venv");
  if (python.empty()) GTEST_SKIP() << Missing("venv");
  const std::string dir = TempDir("merge-engine");
  const std::string run = "fuzz --engine python --python-exe " + python + " " +
                          SampleTrace("synth-h200-shape.rrt") + " --races --json";
  // the engine's notes go to standard error, which Rerace joins to the report: keep the JSON line
  for (const char* shard : {"0", "1"}) {
    const CliRun r = Rerace(run + " --runs 6 --shard " + shard + "/2");
    ASSERT_EQ(r.code, 1) << r.out;
    const size_t at = r.out.find("{\"schema_version\"");
    ASSERT_NE(at, std::string::npos) << r.out;
    std::ofstream(dir + "/r" + shard + ".json") << r.out.substr(at, r.out.find('\n', at) - at) << "\n";
  }
  const CliRun whole = Rerace(run + " --runs 12");
  const CliRun merged = Rerace("merge " + dir + "/r0.json " + dir + "/r1.json");
  EXPECT_GT(Count(whole.out, "\"object\":"), 0u) << whole.out;
  EXPECT_EQ(Count(merged.out, "\"object\":"), Count(whole.out, "\"object\":")) << merged.out;
  EXPECT_TRUE(Has(merged.out, "\"engine\":\"python\"")) << merged.out;
  // the engine's step-ordering objects (gil-warmup FILE:LINE@OFFSET) are no race of the program
  EXPECT_FALSE(Has(whole.out, "gil-warmup")) << whole.out;
}

}  // namespace

// Issue 49, item 13: a schedule saved under a patch replays only under that patch; an edit of
// the same file (a comment) is refused with the way to replay it anyway, and
// --allow-changed-patch replays it, saying so. Another file by name is refused either way.
TEST(ReportEngine, AChangedPatchIsRefusedUnlessAllowedAndThenSaid) {
  const std::string python = EnvPython("venv312");
  if (python.empty()) GTEST_SKIP() << Missing("venv312");
  const std::string dir = TempDir("changed-patch");
  const std::string patch = dir + "/my_lock.py", sched = dir + "/s.sched";
  std::filesystem::copy_file(Source("replay/engine/python/rerace_real/fixes/lock_run.py"), patch,
                             std::filesystem::copy_options::overwrite_existing);
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const std::string run = "replay " + t + " --engine python --python-exe " + python;
  const CliRun saved = Rerace(run + " --patch " + patch + " --seed 2 --save-schedule " + sched);
  ASSERT_EQ(saved.code, 0) << saved.out;
  std::ofstream(patch, std::ios::app) << "# an edit that changes nothing but the hash\n";
  const CliRun refused = Rerace(run + " --patch " + patch + " --schedule " + sched);
  EXPECT_EQ(refused.code, 64) << refused.out;
  EXPECT_TRUE(Has(refused.out, "the same patch files, changed since: --allow-changed-patch replays it "
                               "anyway"))
      << refused.out;
  const CliRun allowed =
      Rerace(run + " --patch " + patch + " --schedule " + sched + " --allow-changed-patch");
  EXPECT_EQ(allowed.code, 0) << allowed.out;
  EXPECT_TRUE(Has(allowed.out, "their content has changed since")) << allowed.out;
  // Another patch file is another program: refused, with or without the flag.
  const std::string other = dir + "/other.py";
  std::filesystem::copy_file(patch, other, std::filesystem::copy_options::overwrite_existing);
  const CliRun renamed =
      Rerace(run + " --patch " + other + " --schedule " + sched + " --allow-changed-patch");
  EXPECT_EQ(renamed.code, 64) << renamed.out;
  EXPECT_FALSE(Has(renamed.out, "--allow-changed-patch replays it")) << renamed.out;
  // A raw rs1: line has no header: a divergence names the patches of this run. The unpatched
  // run's schedule, under the lock, diverges at the lock.
  const std::string bare = dir + "/bare.sched";
  ASSERT_EQ(Rerace(run + " --seed 2 --save-schedule " + bare).code, 1);
  std::string line;
  for (const std::string& l : Lines(Slurp(bare)))
    if (l.rfind("rs1:", 0) == 0) line = l;
  ASSERT_FALSE(line.empty());
  const CliRun raw = Rerace(run + " --patch " + patch + " --schedule '" + line + "'");
  EXPECT_EQ(raw.code, 65) << raw.out;
  EXPECT_TRUE(Has(raw.out, "made for another trace, fix, patch, engine or --reps; this run is "
                           "python: "))
      << raw.out;
  EXPECT_TRUE(Has(raw.out, "patches my_lock.py (sha256 ")) << raw.out;
  std::filesystem::remove_all(dir);
}

namespace {

// A number after `key` in a one-line JSON object ("\"step_ms\":" -> 2071.617); -1 when absent.
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + key.size(), nullptr);
}

}  // namespace

// Issue 49 item 10: a patch file of the user's is priced as the fix they declare it implements
// (check --price-as): the model's figure for that fix, on the same calibrated virtual GPU, and
// the cost says it is the declaration that was priced; without it, the patch is not priced and
// the reason names the flag. A rerace fix copied as the user's own file is the test's patch.
TEST(ReportEngine, APatchIsPricedAsTheFixItIsDeclaredToImplement) {
  const std::string python = EnvPython("venv");
  if (python.empty()) GTEST_SKIP() << Missing("venv");
  const std::string dir = TempDir("price-as");
  std::filesystem::copy_file(Source("replay/engine/python/rerace_real/fixes/lock_run.py"),
                             dir + "/my_lock.py");
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const std::string engine = " --engine python --python-exe " + python + " --patch " + dir + "/my_lock.py";
  const CliRun priced = Rerace("check " + t + engine + " --price-as lock-run --bound 1 --json 2>/dev/null");
  ASSERT_EQ(priced.code, 0) << priced.out;
  EXPECT_TRUE(Has(priced.out, "\"priced_by\":\"price-as\",\"price_as\":\"lock-run\",\"unpriced\":null"))
      << priced.out;
  const CliRun model = Rerace("check " + t + " --engine model --fix lock-run --bound 1 --json");
  ASSERT_EQ(model.code, 0) << model.out;
  const double patch_ms = JsonNumber(priced.out, "\"step_ms\":");
  const double fix_ms = JsonNumber(model.out, "\"step_ms\":");
  ASSERT_GT(fix_ms, 0) << model.out;
  EXPECT_LE(std::abs(patch_ms - fix_ms), 0.15 * fix_ms) << patch_ms << " against " << fix_ms;
  const CliRun text = Rerace("check " + t + engine + " --price-as lock-run --bound 1 2>/dev/null");
  EXPECT_TRUE(Has(text.out, "(priced by the C++ model of 'lock-run', which --price-as declares")) << text.out;
  // Without the declaration: not priced, and the reason says how to price it.
  const CliRun bare = Rerace("check " + t + engine + " --bound 1 2>/dev/null");
  EXPECT_TRUE(Has(bare.out, "cost: not priced: a patch file (--patch) is real code the model cannot "
                            "price (--price-as FIX prices it as the fix it implements)"))
      << bare.out;
  EXPECT_EQ(Rerace("check " + t + " --price-as lock-run").code, 64);
  const CliRun unknown = Rerace("check " + t + engine + " --price-as nope --bound 1");
  EXPECT_EQ(unknown.code, 64) << unknown.out;
  EXPECT_TRUE(Has(unknown.out, "--price-as: unknown fix 'nope'")) << unknown.out;
  std::filesystem::remove_all(dir);
}
