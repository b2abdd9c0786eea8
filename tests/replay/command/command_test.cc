// The replay/fuzz/check commands as library functions (rerace/replay/command/command.h): what the
// command line prints is what they return, so a binding calling them gets the same reports.
#include "rerace/replay/command/command.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rerace/replay/report/fuzz_report.h"
#include "rerace/replay/search/shard.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

using testing::SamplePath;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Command, CheckHoldsForLockRunAndSaysSo) {
  CheckCommand c;
  c.options.fix = "lock-run";
  c.trace = SamplePath("triton-none-h200.rrt");
  c.runs = 50;
  c.runs_given = true;
  const CheckOutput r = RunCheckCommand(c);
  ASSERT_FALSE(r.error.has_value()) << r.error->message;
  EXPECT_EQ(r.exit_code, kExitOk);
  EXPECT_TRUE(Has(r.out, "verdict: fix 'lock-run' holds for every schedule of a DPOR search")) << r.out;
  EXPECT_TRUE(Has(r.out, "\ncost: with lock-run the step takes")) << r.out;
  EXPECT_EQ(r.verdict, "holds");
  EXPECT_GT(r.explored, 50u);
  EXPECT_EQ(r.counterexample, "");
}

TEST(Command, FuzzListsFailuresByHarmAndRendersJson) {
  FuzzCommand f;
  f.traces = {SamplePath("triton-none-h200.rrt")};
  f.runs = 30;
  f.jobs = 1;
  std::string notes;
  f.options.notes = [&](const std::string& n) { notes += n; };
  const FuzzOutput text = RunFuzzCommand(f);
  ASSERT_FALSE(text.error.has_value()) << text.error->message;
  EXPECT_EQ(text.exit_code, kExitFound);
  EXPECT_TRUE(Has(text.out, "30 runs, 30 failing")) << text.out;
  EXPECT_TRUE(Has(text.out, "  [1] wrong-restore at ")) << text.out;  // silent corruption first
  ASSERT_EQ(text.traces.size(), 1u);
  EXPECT_EQ(text.traces[0].failing, 30u);
  ASSERT_FALSE(text.traces[0].failures.empty());
  EXPECT_EQ(text.traces[0].failures[0].signature.rfind("wrong-restore at ", 0), 0u);
  f.options.json = true;
  const FuzzOutput json = RunFuzzCommand(f);
  EXPECT_EQ(json.out, FuzzJson(json.traces, "") + "\n");
  EXPECT_EQ(json.out.rfind("{\"schema_version\":1,\"command\":\"fuzz\",\"rerace_fuzz\":1,\"shard\":null,"
                           "\"traces\":[",
                           0),
            0u)
      << json.out;
  EXPECT_EQ(notes, "");
}

TEST(Command, ReplayErrorsComeBackWithTheirExitCode) {
  struct Case {
    const char* what;
    std::string trace, fix, schedule;
    int exit;
  };
  const std::vector<Case> cases = {
      {"missing trace", "no/such.rrt", "none", "", kExitNoInput},
      {"unknown fix", SamplePath("triton-none-h200.rrt"), "no-such-fix", "", kExitUsage},
      {"bad inline schedule", SamplePath("triton-none-h200.rrt"), "none", "rs1:garbage", kExitDataError},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    ReplayCommand r;
    r.trace = k.trace;
    r.options.fix = k.fix;
    r.schedule = k.schedule;
    r.schedule_given = !k.schedule.empty();
    const ReplayOutput o = RunReplayCommand(r);
    ASSERT_TRUE(o.error.has_value());
    EXPECT_EQ(o.exit_code, k.exit) << o.error->message;
    EXPECT_EQ(o.error->exit_code, k.exit);
  }
}

TEST(Command, HintsQuoteWhatTheShellWouldSplit) {
  CommandOptions o;
  o.fix = "local=nargs;lock=hooks";
  o.reps = 3;
  // The engine is named always: the command line's default (auto) may choose the other one.
  EXPECT_EQ(ReplayCommandLine("a b.rrt", o),
            "rerace replay 'a b.rrt' --fix 'local=nargs;lock=hooks' --reps 3 --engine model");
  EXPECT_EQ(SeedCommandLine("t.rrt", CommandOptions{}, 7),
            "rerace replay t.rrt --engine model --strategy random --seed 7");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(UniqueStems({"a/x.rrt", "b/x.rrt", "c/y.rrt"}), (std::vector<std::string>{"x.1", "x.2", "y"}));
}

TEST(Shard, ParsesKOfNAndRefusesTheRest) {
  struct Case {
    const char* spec;
    bool ok;
    uint64_t index, count;
  };
  unsetenv("JOB_COMPLETION_INDEX");
  unsetenv("SLURM_ARRAY_TASK_ID");
  for (const Case& k : std::vector<Case>{{"", true, 0, 1},
                                         {"0/1", true, 0, 1},
                                         {"2/3", true, 2, 3},
                                         {"3/3", false, 0, 0},
                                         {"+1/3", false, 0, 0},
                                         {"1/0", false, 0, 0},
                                         {"auto/4", false, 0, 0}}) {
    SCOPED_TRACE(k.spec);
    auto s = ParseShard(k.spec);
    ASSERT_EQ(s.ok(), k.ok);
    if (!k.ok) {
      EXPECT_EQ(s.error().exit_code, kExitUsage);
      continue;
    }
    EXPECT_EQ(s->index, k.index);
    EXPECT_EQ(s->count, k.count);
  }
}

TEST(Report, FailuresRankByHarmThenSignature) {
  FuzzFailure crash, silent, silent2;
  crash.signature = "in-param-not-in-cache at a.py:1";
  silent.signature = "wrong-restore at a.py:9";
  silent2.signature = "wrong-restore at a.py:10";
  EXPECT_TRUE(FailureBefore(silent, crash));
  EXPECT_TRUE(FailureBefore(silent2, silent));
  EXPECT_FALSE(FailureBefore(crash, silent));
  EXPECT_EQ(ColourReport("verdict: fix 'x' FAILS\n", false), "verdict: fix 'x' FAILS\n");
  EXPECT_EQ(ColourReport("verdict: fix 'x' FAILS\n", true), "\033[1;31mverdict: fix 'x' FAILS\033[0m\n");
}

}  // namespace
}  // namespace rerace::replay

namespace rerace::replay {
namespace {

// --engine auto looks first where a user's Python is: the active virtual environment, then
// python3 on PATH, before a build tree's build/py. A stand-in interpreter that answers the
// Triton probe with a version shows which one it took.
class AutoEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/auto-engine-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_ + "/venv/bin");
    if (const char* v = std::getenv("VIRTUAL_ENV")) saved_venv_ = v;
  }
  void TearDown() override {
    if (saved_venv_) setenv("VIRTUAL_ENV", saved_venv_->c_str(), 1); else unsetenv("VIRTUAL_ENV");
    std::filesystem::remove_all(dir_);
  }
  // A `python` in the venv that prints `version` for `-c 'import triton; ...'`.
  std::string FakePython(const std::string& version) {
    const std::string exe = dir_ + "/venv/bin/python";
    FILE* f = std::fopen(exe.c_str(), "w");
    std::fprintf(f, "#!/bin/sh\necho %s\n", version.c_str());
    std::fclose(f);
    std::filesystem::permissions(exe, std::filesystem::perms::owner_all);
    return exe;
  }
  std::string dir_;
  std::optional<std::string> saved_venv_;
};

TEST_F(AutoEngine, TakesTheActiveVirtualEnvironmentsPythonAndSaysSo) {
  const std::string exe = FakePython("3.6.0");
  setenv("VIRTUAL_ENV", (dir_ + "/venv").c_str(), 1);
  CommandOptions c;
  c.engine = "auto";
  auto choice = ResolveEngine(SamplePath("triton-none-h200.rrt"), c, false);
  ASSERT_TRUE(choice.ok()) << choice.error().message;
  EXPECT_EQ(c.engine, "python");
  EXPECT_EQ(c.python_exe, exe);
  EXPECT_TRUE(Has(choice->note, exe + " (the active virtual environment) imports Triton 3.6.0"))
      << choice->note;
}

TEST_F(AutoEngine, PassesOverAVenvWithAnotherTriton) {
  const std::string exe = FakePython("3.4.0");
  setenv("VIRTUAL_ENV", (dir_ + "/venv").c_str(), 1);
  CommandOptions c;
  c.engine = "auto";
  auto choice = ResolveEngine(SamplePath("triton-none-h200.rrt"), c, false);
  ASSERT_TRUE(choice.ok()) << choice.error().message;
  EXPECT_NE(c.python_exe, exe);
  if (c.engine == "model") {  // nothing else here imports 3.6: the venv is named with its version
    EXPECT_TRUE(Has(choice->note, exe + " (the active virtual environment) (Triton 3.4.0)"))
        << choice->note;
  }
}

}  // namespace
}  // namespace rerace::replay
