// Every report tells the truth (issue 16): what rerace prints, run as a user runs it, matches
// what it does. Each test names the item of the issue it covers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "rerace/testing/cli.h"

namespace {

using rerace::testing::CliRun;
using rerace::testing::Has;
using rerace::testing::Lines;
using rerace::testing::Rerace;
using rerace::testing::SampleTrace;
using rerace::testing::Slurp;
using rerace::testing::Source;

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/report-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// "FAILED: CODE in thread N (NAME) at step S" → CODE ("" when the report has no failure).
std::string FailedCode(const std::string& report) {
  static const std::regex re("(^|\n)FAILED: ([a-z-]+)");
  std::smatch m;
  return std::regex_search(report, m, re) ? m[2].str() : "";
}

// The thread name of the FAILED line, "" without one.
std::string FailedThread(const std::string& report) {
  static const std::regex re("(^|\n)FAILED: [a-z-]+ in thread [0-9]+ \\(([^)]*)\\)");
  std::smatch m;
  return std::regex_search(report, m, re) ? m[2].str() : "";
}

// Item 3: a replay hint carries every option that changes the run, so running it gives the
// failure it is printed for. Each fuzz listing entry "[n] CODE at WHERE: ..., first in NAME"
// is followed by "replay: rerace replay ...": that command must fail first with CODE in NAME.
struct FuzzCase {
  const char* trace;
  const char* flags;
};

TEST(ReportHints, EveryFuzzHintReproducesItsFailure) {
  const std::string dir = TempDir("hints");
  const FuzzCase cases[] = {
      {"synth-h200-shape.rrt", "--runs 40 --strategy pct --pct-depth 3"},
      {"synth-h200-shape.rrt", "--runs 40 --strategy portfolio --model fla"},
      {"triton-none-h200.rrt", "--runs 40 --fix tls-nargs --reps 2 --max-steps 500000"},
      {"triton-none-h200.rrt", "--runs 200 --save-failures DIR"},
      {"triton-none-h200.rrt", "--runs 100 --fix tls-nargs --save-failures DIR"},
      {"native-none-h200.rrt", "--runs 30 --strategy surw"},
      {"synth-h200-shape.rrt", "--runs 60 --failure nargs-none --strategy pos"},
  };
  size_t hints = 0;
  for (const FuzzCase& c : cases) {
    std::string flags = c.flags;
    if (auto p = flags.find("DIR"); p != std::string::npos) flags.replace(p, 3, dir);
    SCOPED_TRACE(std::string(c.trace) + " " + flags);
    const CliRun f = Rerace("fuzz " + SampleTrace(c.trace) + " " + flags);
    ASSERT_EQ(f.code, 1) << f.out;
    std::string code, thread;
    // "first in NAME with seed N", or for a saved schedule "first in NAME in its saved schedule
    // (found with seed N)": NAME is where its replay shows it.
    static const std::regex entry(
        R"(^  \[[0-9]+\] ([a-z-]+) at .*, first in (.*?)(?: in its saved schedule \(found)? with seed [0-9]+\)?$)");
    for (const std::string& line : Lines(f.out)) {
      std::smatch m;
      if (std::regex_match(line, m, entry)) {
        code = m[1].str();
        thread = m[2].str();
      } else if (line.rfind("      replay: rerace ", 0) == 0) {
        const std::string hint = line.substr(std::string("      replay: rerace ").size());
        const CliRun r = Rerace(hint);
        EXPECT_EQ(r.code, 1) << hint << "\n" << r.out;
        EXPECT_EQ(FailedCode(r.out), code) << hint << "\n" << r.out;
        EXPECT_EQ(FailedThread(r.out), thread) << hint << "\n" << r.out;
        ++hints;
      }
    }
  }
  EXPECT_GE(hints, 15u);
}

// Item 3: the hints of replay and check.
struct CommandCase {
  std::string command;
  std::string hint_prefix;  // the hint follows this text, to the end of its line
};

TEST(ReportHints, ReplayAndCheckHintsReproduceTheirFailure) {
  const std::string dir = TempDir("hint-cmds");
  const std::string synth = SampleTrace("synth-h200-shape.rrt");
  const std::string triton = SampleTrace("triton-none-h200.rrt");
  const CommandCase cases[] = {
      {"replay " + synth + " --strategy pct --pct-depth 3 --seed 5",
       "replay it (add --save-schedule FILE to keep the schedule): "},
      {"replay " + triton + " --fix tls-nargs --reps 0 --seed 2 --max-steps 3000000",
       "replay it (add --save-schedule FILE to keep the schedule): "},
      {"replay " + synth + " --strategy pos --seed 4 --save-schedule " + dir + "/a.sched",
       "replay it with: "},
      {"check " + triton + " --fix tls-nargs --runs 200 --save-schedule " + dir + "/b.sched",
       "replay it with: "},
      {"check " + synth + " --bound 1 --failure in-param-not-in-cache --save-schedule " + dir +
           "/c.sched",
       "replay it with: "},
      {"check " + SampleTrace("native-none-h200.rrt") + " --fix tls-nargs --save-schedule " + dir +
           "/d.sched",
       "replay it with: "},
      {"check " + triton + " --fix tls-nargs", "replay it (add --save-schedule FILE to keep it): "},  // the schedule inline
      {"check " + triton + " --failure in-param-not-in-cache --bound 1",
       "replay it (add --save-schedule FILE to keep it): "},
      // A file name a shell must quote: the hint quotes it so that it runs as printed.
      {"replay " + synth + " --strategy pos --seed 4 --save-schedule \"" + dir + "/it's a.sched\"",
       "replay it with: "},
  };
  for (const CommandCase& c : cases) {
    SCOPED_TRACE(c.command);
    const CliRun run = Rerace(c.command);
    ASSERT_EQ(run.code, 1) << run.out;
    const size_t at = run.out.find(c.hint_prefix);
    ASSERT_NE(at, std::string::npos) << run.out;
    const size_t from = at + c.hint_prefix.size();
    const size_t end = run.out.find('\n', from);
    const std::string cmd = run.out.substr(from, end - from);
    ASSERT_EQ(cmd.rfind("rerace replay ", 0), 0u) << cmd;
    const CliRun again = Rerace(cmd.substr(7));
    EXPECT_EQ(again.code, 1) << cmd << "\n" << again.out;
    EXPECT_EQ(FailedCode(again.out), FailedCode(run.out)) << cmd << "\n" << again.out;
    EXPECT_EQ(FailedThread(again.out), FailedThread(run.out)) << cmd << "\n" << again.out;
  }
}

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

// `command` run by the shell as a user pastes it, in the source tree, `rerace` on the PATH and
// no PYTHONPATH but what the command sets.
CliRun Pasted(const std::string& command) {
  const char* bin = std::getenv("RERACE_BIN");
  const std::string cmd = "cd " + Source(".") + " && unset PYTHONPATH && PATH=" +
                          std::string(bin ? bin : "build/bin") + ":$PATH; " + command + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Issue 28, item 4: a fuzz run of the real code under PYTHONPATH=triton-3.8.0 prints hints that
// carry it, so that each, pasted as printed, replays Triton 3.8 (not the venv's 3.6) and fails
// as listed; the saved schedules record it, and one replayed without it is refused with both
// Tritons named.
TEST(ReportHints, EngineHintsCarryTheirEnvironment) {
  const std::string root = RERACE_PY_ROOT;
  const std::string python = root + "/venv/bin/python";
  const std::string triton38 = root + "/triton-3.8.0";
  if (root.empty() || access(python.c_str(), X_OK) != 0 ||
      access((triton38 + "/.complete").c_str(), F_OK) != 0)
    GTEST_SKIP() << python << " or " << triton38 << " is missing (tools/scripts/python-envs.sh)";
  const std::string dir = TempDir("engine-env");
  const std::string engine = " --engine python --python-exe " + python;
  const CliRun f = Pasted("PYTHONPATH=" + triton38 +
                          " rerace fuzz traces/samples/triton-none-h200.rrt --runs 3 --save-failures " +
                          dir + engine);
  ASSERT_EQ(f.code, 1) << f.out;
  EXPECT_TRUE(Has(f.out, "Triton 3.8.0")) << f.out;
  static const std::regex entry(
      R"(^  \[[0-9]+\] ([a-z-]+) at .*, first in (.*) in its saved schedule \(found with seed [0-9]+\)$)");
  std::string code, thread;
  int replayed = 0;
  for (const std::string& line : Lines(f.out)) {
    std::smatch m;
    if (std::regex_match(line, m, entry)) {
      code = m[1].str();
      thread = m[2].str();
    } else if (line.rfind("      replay: ", 0) == 0) {
      const std::string hint = line.substr(14);
      SCOPED_TRACE(hint);
      ASSERT_EQ(hint.rfind("PYTHONPATH=" + triton38 + " rerace replay ", 0), 0u);
      const CliRun again = Pasted(hint);
      EXPECT_EQ(again.code, 1) << again.out;
      EXPECT_TRUE(Has(again.out, "Triton 3.8.0")) << again.out;
      EXPECT_EQ(FailedCode(again.out), code) << again.out;
      EXPECT_EQ(FailedThread(again.out), thread) << again.out;
      ++replayed;
    }
  }
  EXPECT_GE(replayed, 1);
  const std::string file = dir + "/triton-none-h200-none-1.sched";
  const std::string text = Slurp(file);
  EXPECT_TRUE(Has(text, "# pythonpath: " + triton38 + "\n")) << text;
  EXPECT_TRUE(Has(text, "Triton 3.8.0")) << text;
  // Without the PYTHONPATH it was made with: another Triton, refused, both named.
  const CliRun bare = Pasted("rerace replay traces/samples/triton-none-h200.rrt" + engine +
                             " --schedule " + file);
  EXPECT_EQ(bare.code, 64) << bare.out;
  EXPECT_TRUE(Has(bare.out, "Triton 3.8.0") && Has(bare.out, "Triton 3.6.0")) << bare.out;
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
  const std::string root = RERACE_PY_ROOT;
  const std::string python = root + "/venv312/bin/python";
  if (root.empty() || access(python.c_str(), X_OK) != 0)
    GTEST_SKIP() << python << " is missing (tools/scripts/python-envs.sh)";
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
  const std::string root = RERACE_PY_ROOT;
  if (root.empty() || access((root + "/venv312/bin/python").c_str(), X_OK) != 0)
    GTEST_SKIP() << root << "/venv312/bin/python is missing (tools/scripts/python-envs.sh)";
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
  const std::string root = RERACE_PY_ROOT;
  const std::string python = root + "/venv312/bin/python";
  if (root.empty() || access(python.c_str(), X_OK) != 0)
    GTEST_SKIP() << python << " is missing (tools/scripts/python-envs.sh)";
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

// Items 1 and 2: each saved file is named after the trace, the fix and its place in the
// listing; its header names the failure listed; fixes saved into one folder do not collide.
TEST(ReportFuzz, SavedFilesMatchTheListingAndNameTheFix) {
  const std::string dir = TempDir("saved");
  const std::string t = SampleTrace("triton-none-h200.rrt");
  std::vector<std::string> all_files;
  for (const char* fix : {"none", "tls-nargs"}) {
    SCOPED_TRACE(fix);
    const CliRun f = Rerace("fuzz " + t + " --runs 300 --fix " + std::string(fix) + " --save-failures " + dir);
    ASSERT_EQ(f.code, 1) << f.out;
    static const std::regex entry(R"(^  \[([0-9]+)\] (.* at [^:]*:[0-9]+ in [a-z_]+): .*$)");
    std::string signature;
    int listed = 0;
    for (const std::string& line : Lines(f.out)) {
      std::smatch m;
      if (std::regex_match(line, m, entry)) {
        signature = m[2].str();
        ++listed;
        EXPECT_EQ(std::stoi(m[1].str()), listed);
      } else if (const size_t p = line.find(" --schedule "); p != std::string::npos) {
        const std::string file = line.substr(p + 12);
        EXPECT_EQ(file, dir + "/triton-none-h200-" + std::string(fix) + "-" + std::to_string(listed) + ".sched");
        const std::string text = Slurp(file);
        EXPECT_TRUE(Has(text, std::string("# fix: ") + fix + "\n")) << text;
        EXPECT_TRUE(Has(text, "# failure: " + signature)) << signature << "\n" << text;
        // Shrunk, unless shrinking could not make it the first failure (then the note says so).
        EXPECT_TRUE(Has(text, "# strategy: shrunk\n") || Has(text, "this failure follows at step"))
            << text;
        EXPECT_FALSE(Has(text, "# seed:")) << text;  // a shrunk schedule has no seed
        all_files.push_back(file);
      }
    }
    EXPECT_GE(listed, 2);
  }
  std::sort(all_files.begin(), all_files.end());
  EXPECT_EQ(std::adjacent_find(all_files.begin(), all_files.end()), all_files.end());
}

// Item 4: a schedule replays under the fix, model and reps its header names; a flag that
// contradicts the header is a usage error naming both; a divergence is bad input, not a race.
TEST(ReportSchedule, HeaderOptionsApplyAndMismatchesAreRefused) {
  const std::string dir = TempDir("header");
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const std::string sched = dir + "/tls.sched";
  const CliRun made = Rerace("replay " + t + " --fix tls-nargs --reps 2 --seed 3 --save-schedule " + sched);
  ASSERT_EQ(made.code, 1) << made.out;
  const CliRun plain = Rerace("replay " + t + " --schedule " + sched);
  EXPECT_EQ(plain.code, 1) << plain.out;
  EXPECT_TRUE(Has(plain.out, "fix tls-nargs")) << plain.out;
  EXPECT_EQ(FailedCode(plain.out), FailedCode(made.out)) << plain.out;
  EXPECT_FALSE(Has(plain.out, "divergence")) << plain.out;
  const CliRun wrong = Rerace("replay " + t + " --schedule " + sched + " --fix none");
  EXPECT_EQ(wrong.code, 64) << wrong.out;
  EXPECT_TRUE(Has(wrong.out, "--fix 'none'") && Has(wrong.out, "'tls-nargs'")) << wrong.out;
  const CliRun reps = Rerace("replay " + t + " --schedule " + sched + " --reps 1");
  EXPECT_EQ(reps.code, 64) << reps.out;
  // A schedule of another trace diverges: exit 65 with the step, never 1.
  const std::string other = dir + "/synth.sched";
  ASSERT_EQ(Rerace("replay " + SampleTrace("synth-h200-shape.rrt") + " --engine model --seed 3 --save-schedule " + other).code, 1);
  const CliRun diverged = Rerace("replay " + SampleTrace("native-none-h200.rrt") + " --schedule " + other);
  EXPECT_EQ(diverged.code, 65) << diverged.out;
  EXPECT_TRUE(Has(diverged.out, "diverges from this program at step")) << diverged.out;
}

// Item 5: --races is printed by check and is in every --json output.
struct RacesCase {
  std::string args;
  std::string expect;
};

TEST(ReportRaces, RacesArePrintedByCheckAndInEveryJson) {
  const std::string s = SampleTrace("synth-h200-shape.rrt");
  const RacesCase cases[] = {
      {"check " + s + " --fix tls-nargs --runs 50 --races", "races (happens-before, "},
      {"check " + s + " --fix lock-run --runs 50 --races", "races (happens-before, "},
      {"check " + s + " --fix tls-nargs --runs 50 --races --json", "\"races\":[{\"object\":"},
      {"replay " + s + " --seed 3 --races --json", "\"races\":[{\"object\":"},
      {"fuzz " + s + " --runs 20 --races --json", "\"races\":[{\"object\":"},
  };
  for (const RacesCase& c : cases) {
    const CliRun r = Rerace(c.args);
    EXPECT_TRUE(Has(r.out, c.expect)) << c.args << "\n" << r.out;
  }
}

// Item 6: --naive needs --bound; --bound 0 cannot preempt and does not certify.
TEST(ReportCheck, NaiveNeedsABoundAndBoundZeroIsNoVerdict) {
  const std::string s = SampleTrace("synth-h200-shape.rrt");
  const CliRun naive = Rerace("check --engine model " + s + " --naive");
  EXPECT_EQ(naive.code, 64) << naive.out;
  EXPECT_TRUE(Has(naive.out, "--naive requires --bound")) << naive.out;
  const CliRun zero = Rerace("check --engine model " + s + " --fix none --bound 0");
  EXPECT_FALSE(Has(zero.out, "holds")) << zero.out;
  EXPECT_TRUE(Has(zero.out, "verdict: inconclusive")) << zero.out;
  EXPECT_TRUE(Has(zero.out, "cannot reach a race")) << zero.out;
  EXPECT_EQ(zero.code, 3) << zero.out;  // not 0: nothing was certified
  const CliRun zero_json = Rerace("check --engine model " + s + " --fix none --bound 0 --json");
  EXPECT_TRUE(Has(zero_json.out, "\"verdict\":\"inconclusive\"")) << zero_json.out;
  EXPECT_EQ(zero_json.code, 3) << zero_json.out;
}

// Issue 26, item 5: a search its budget stopped is no "holds". The same fix, the same bound:
// one run of budget gives "inconclusive" (exit 3, JSON "exhausted":false), enough runs give
// "holds" with "search exhausted" (exit 0, JSON "exhausted":true). Also without --bound (the
// automatic policy's DPOR at bound 1 stopped by --max-runs).
TEST(ReportCheck, ABudgetStopIsInconclusiveNotHolds) {
  const std::string s = SampleTrace("synth-h200-shape.rrt");
  const CliRun cut = Rerace("check --engine model " + s + " --fix lock-run --bound 1 --max-runs 1");
  EXPECT_EQ(cut.code, 3) << cut.out;
  EXPECT_FALSE(Has(cut.out, "holds for")) << cut.out;
  EXPECT_TRUE(Has(cut.out, "verdict: inconclusive: no counterexample to fix 'lock-run' in 1 "
                           "schedules, but the DPOR search at bound 1 was not exhausted (stopped "
                           "at the budget of 1 runs, --max-runs)"))
      << cut.out;
  const CliRun cut_json = Rerace("check --engine model " + s + " --fix lock-run --bound 1 --max-runs 1 --json");
  EXPECT_EQ(cut_json.code, 3) << cut_json.out;
  EXPECT_TRUE(Has(cut_json.out, "\"verdict\":\"inconclusive\"")) << cut_json.out;
  EXPECT_TRUE(Has(cut_json.out, "\"exhausted\":false")) << cut_json.out;
  const CliRun full = Rerace("check --engine model " + s + " --fix lock-run --bound 1 --json");
  EXPECT_EQ(full.code, 0) << full.out;
  EXPECT_TRUE(Has(full.out, "\"verdict\":\"holds\"")) << full.out;
  EXPECT_TRUE(Has(full.out, "\"exhausted\":true")) << full.out;
  const CliRun automatic = Rerace("check --engine model " + s + " --fix lock-run --max-runs 2 --runs 3");
  EXPECT_EQ(automatic.code, 3) << automatic.out;
  EXPECT_TRUE(Has(automatic.out, "3 sampled schedules found nothing either")) << automatic.out;
}

// Items 7 and 8: the recorded H200 run counts 7 of the 8 workers (the main thread only launched),
// and a report that leads with silent corruption says so and names the first error raised.
TEST(ReportSummary, RecordedRunCountsWorkersAndNamesTheKeyError) {
  const CliRun r = Rerace("replay " + SampleTrace("triton-none-h200.rrt") + " --recorded");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.out, "summary: in-param-not-in-cache in 7 of 8 threads;")) << r.out;
  EXPECT_TRUE(Has(r.out, "first by step, and first by harm (silent corruption ranks before crashes, "
                         "docs/MODEL.md); the first error raised: KeyError: 'y_ptr' "
                         "(in-param-not-in-cache)"))
      << r.out;
  // fuzz lists by harm: silent corruption, then crashes.
  const CliRun f = Rerace("fuzz " + SampleTrace("triton-none-h200.rrt") + " --runs 50");
  const size_t silent = f.out.find("] wrong-restore");
  const size_t crash = f.out.find("] in-param-not-in-cache");
  ASSERT_NE(silent, std::string::npos) << f.out;
  ASSERT_NE(crash, std::string::npos) << f.out;
  EXPECT_LT(silent, crash) << f.out;
}

// Item 9: --failure KIND targets a kind of failure in check, fuzz and replay.
TEST(ReportFailureKind, CheckFuzzAndReplayTargetAKind) {
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const CliRun check = Rerace("check " + t + " --failure in-param-not-in-cache");
  EXPECT_EQ(check.code, 1) << check.out;
  EXPECT_TRUE(Has(check.out, "FAILS against in-param-not-in-cache")) << check.out;
  EXPECT_EQ(FailedCode(check.out), "in-param-not-in-cache") << check.out;
  EXPECT_TRUE(Has(check.out, "KeyError: 'y_ptr'")) << check.out;
  const CliRun fuzz = Rerace("fuzz " + t + " --runs 60 --failure nargs-none");
  EXPECT_EQ(fuzz.code, 1) << fuzz.out;
  EXPECT_FALSE(Has(fuzz.out, "] wrong-restore")) << fuzz.out;
  EXPECT_FALSE(Has(fuzz.out, "] in-param-not-in-cache")) << fuzz.out;
  EXPECT_TRUE(Has(fuzz.out, "] nargs-none")) << fuzz.out;
  const CliRun replay = Rerace("replay " + t + " --recorded --failure in-param-not-in-cache");
  EXPECT_EQ(FailedCode(replay.out), "in-param-not-in-cache") << replay.out;
  const CliRun none = Rerace("check " + SampleTrace("synth-h200-shape.rrt") +
                             " --fix lock-run --runs 30 --failure deadlock");
  EXPECT_EQ(none.code, 0) << none.out;
  EXPECT_TRUE(Has(none.out, "holds against deadlock")) << none.out;
  EXPECT_EQ(Rerace("check " + t + " --failure no-such-kind").code, 64);
}

// Item 10: record of a command that makes no CUDA context writes no trace and says so.
TEST(ReportRecord, NoCudaContextIsAnErrorNotSilence) {
  const std::string dir = TempDir("record");
  const CliRun r = Rerace("record --library /bin/true -o " + dir + "/r.rrt -- true");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "created no CUDA context, so no trace was written")) << r.out;
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
  // A command that cannot start: that one line, and the shell's exit code for it.
  const CliRun missing = Rerace("record --library /bin/true -o " + dir + "/m.rrt -- /nonexistent-cmd");
  EXPECT_EQ(missing.code, 127) << missing.out;
  EXPECT_TRUE(Has(missing.out, "cannot run /nonexistent-cmd: No such file or directory")) << missing.out;
  EXPECT_EQ(Lines(missing.out).size(), 1u) << missing.out;
}

// Item 11: a tuner class rerace does not model is refused by name, with the way out.
TEST(ReportModel, UnknownTunerClassIsRefusedByName) {
  const std::string t = SampleTrace("torch-two-threads-h200.rrt");
  for (const std::string& cmd : {"fuzz --engine model " + t + " --runs 5", "replay --engine model " + t, "check --engine model " + t}) {
    const CliRun r = Rerace(cmd);
    EXPECT_EQ(r.code, 65) << cmd << "\n" << r.out;
    EXPECT_TRUE(Has(r.out, "tuner class 'torch.test'") && Has(r.out, "--model")) << r.out;
    EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
  }
  EXPECT_NE(Rerace("replay --engine model " + t + " --model triton").code, 65);
  // The default tries the real class, which needs its module: one line naming it, and the way
  // out (--engine model), never a run of stock code under its name.
  const CliRun real = Rerace("replay " + t);
  EXPECT_NE(real.code, 0) << real.out;
  EXPECT_NE(real.code, 1) << real.out;
  EXPECT_TRUE(Has(real.out, "torch.test") && Has(real.out, "--engine model")) << real.out;
  EXPECT_EQ(Lines(real.out).size(), 1u) << real.out;
}

// Item 12: synth calls every tuner it announces, and the header records the whole scenario.
TEST(ReportSynth, EveryTunerIsCalledAndTheHeaderRemakesTheTrace) {
  const std::string dir = TempDir("synth");
  const CliRun w = Rerace("synth -o " + dir + "/a.rrt --tuners 2 --keys 1 2");
  ASSERT_EQ(w.code, 0) << w.out;
  const CliRun show = Rerace("show " + dir + "/a.rrt");
  EXPECT_TRUE(Has(show.out, "tuned_kernel_1")) << show.out;
  EXPECT_TRUE(Has(show.out, "l2norm_fwd_kernel")) << show.out;
  const size_t at = show.out.find("command: rerace synth ");
  ASSERT_NE(at, std::string::npos) << show.out;
  const std::string cmd = show.out.substr(at + 16, show.out.find('\n', at) - at - 16);
  EXPECT_TRUE(Has(cmd, "--tuners=2") && Has(cmd, "--keys 1 2")) << cmd;
  ASSERT_EQ(Rerace(cmd + " -o " + dir + "/b.rrt").code, 0);
  EXPECT_EQ(Slurp(dir + "/a.rrt"), Slurp(dir + "/b.rrt"));
  const CliRun few = Rerace("synth -o " + dir + "/c.rrt --tuners 3 --threads 2");
  EXPECT_EQ(few.code, 64) << few.out;
}

// Item 13: merge takes each shard once and reports a missing one; --runs is per shard.
TEST(ReportMerge, SameShardTwiceIsRefusedAndAMissingShardReported) {
  const std::string dir = TempDir("merge");
  const std::string t = SampleTrace("synth-h200-shape.rrt");
  ASSERT_EQ(Rerace("fuzz --engine model " + t + " --runs 10 --shard 0/2 --json > " + dir + "/s0.json").code, 1);
  ASSERT_EQ(Rerace("fuzz --engine model " + t + " --runs 10 --shard 1/2 --json > " + dir + "/s1.json").code, 1);
  std::filesystem::copy_file(dir + "/s0.json", dir + "/copy.json");
  const CliRun twice = Rerace("merge " + dir + "/s0.json " + dir + "/s0.json");
  EXPECT_EQ(twice.code, 64) << twice.out;
  const CliRun copy = Rerace("merge " + dir + "/s0.json " + dir + "/copy.json " + dir + "/s1.json");
  EXPECT_EQ(copy.code, 64) << copy.out;
  EXPECT_TRUE(Has(copy.out, "both shard '0/2'")) << copy.out;
  const CliRun missing = Rerace("merge " + dir + "/s0.json");
  EXPECT_EQ(missing.code, 66) << missing.out;
  EXPECT_TRUE(Has(missing.out, "shard 1/2 is missing")) << missing.out;
  EXPECT_EQ(Rerace("merge " + dir + "/s0.json " + dir + "/s1.json > /dev/null").code, 1);
  // Item 5: races travel through merge, once per object and pair of lines, as in one run.
  ASSERT_EQ(Rerace("fuzz --engine model " + t + " --runs 10 --shard 0/2 --races --json > " + dir + "/r0.json").code, 1);
  ASSERT_EQ(Rerace("fuzz --engine model " + t + " --runs 10 --shard 1/2 --races --json > " + dir + "/r1.json").code, 1);
  const CliRun whole = Rerace("fuzz --engine model " + t + " --runs 20 --races --json");
  const CliRun merged = Rerace("merge " + dir + "/r0.json " + dir + "/r1.json");
  EXPECT_GT(Count(whole.out, "\"object\":"), 0u) << whole.out;
  EXPECT_EQ(Count(merged.out, "\"object\":"), Count(whole.out, "\"object\":"));
  EXPECT_TRUE(Has(Rerace("fuzz --help").out, "with --shard, runs of this shard"));
}

// Issue 28: races merged from the real code's shards are the races of one run of the same seeds
// (each shard's labels are its own process's; the merge keys them by text, not by address).
TEST(ReportMerge, EngineShardsMergeToOneRunsRaces) {
  const std::string root = RERACE_PY_ROOT;
  const std::string python = root + "/venv/bin/python";
  if (root.empty() || access(python.c_str(), X_OK) != 0)
    GTEST_SKIP() << python << " is missing (tools/scripts/python-envs.sh)";
  const std::string dir = TempDir("merge-engine");
  const std::string run = "fuzz --engine python --python-exe " + python + " " +
                          SampleTrace("synth-h200-shape.rrt") + " --races --json";
  // the engine's notes go to standard error, which Rerace joins to the report: keep the JSON line
  for (const char* shard : {"0", "1"}) {
    const CliRun r = Rerace(run + " --runs 6 --shard " + shard + "/2");
    ASSERT_EQ(r.code, 1) << r.out;
    const size_t at = r.out.find("{\"rerace_fuzz\"");
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

// Item 14: no magic exit codes in the command line's sources: every exit is one of base's
// named codes (rerace/base/result.h), so an internal error cannot read as "a race was found".
TEST(ReportExit, CommandLineUsesOnlyNamedExitCodes) {
  static const std::regex magic(R"(return\s+[0-9]+\s*;|exit\(\s*[1-9][0-9]*\s*\))");
  for (const auto& e : std::filesystem::directory_iterator(Source("tools/rerace"))) {
    const std::string text = Slurp(e.path().string());
    std::smatch m;
    EXPECT_FALSE(std::regex_search(text, m, magic)) << e.path() << ": " << m.str();
  }
  // The commands' policy and reports, in the replay component (rerace/replay/command/command.h).
  for (const char* f : {"command/src/command.cc", "command/src/engine_choice.cc",
                        "command/src/replay_command.cc", "command/src/fuzz_command.cc",
                        "command/src/check_command.cc", "search/src/shard.cc",
                        "report/src/fuzz_report.cc"}) {
    const std::string text = Slurp(Source(std::string("replay/") + f));
    ASSERT_FALSE(text.empty()) << f;
    std::smatch m;
    EXPECT_FALSE(std::regex_search(text, m, magic)) << f << ": " << m.str();
  }
}

}  // namespace

namespace {

// Missing: show demangles kernel names (short by default, in full with --full-names, the raw
// ones with --mangled) and says, per thread, which tuner it called with which key, and per
// tuner what the probe recorded of the decorator.
TEST(ReportShow, DemangledKernelsAndWhatEachTunerRecorded) {
  const CliRun native = Rerace("show " + SampleTrace("native-none-h200.rrt"));
  EXPECT_TRUE(Has(native.out, "  NormKernel\n")) << native.out;
  EXPECT_FALSE(Has(native.out, "_ZN6rerace")) << native.out;
  const CliRun full = Rerace("show --full-names " + SampleTrace("native-none-h200.rrt"));
  EXPECT_TRUE(Has(full.out, "rerace::kernels::(anonymous namespace)::NormKernel(float const*")) << full.out;
  EXPECT_TRUE(Has(Rerace("show --mangled " + SampleTrace("native-none-h200.rrt")).out, "_ZN6rerace7kernels"));
  const CliRun triton = Rerace("show " + SampleTrace("triton-none-h200.rrt"));
  for (const char* want : {"      tuner            1  l2norm_fwd_kernel key (1024, ",
                           "      in-parameters: x_ptr, y_ptr, N, eps, BLOCK_N\n",
                           "      restore_value: y_ptr; reset_to_zero: (none)\n",
                           "      configs (12):\n",
                           "         11  BLOCK_N: 4096, num_warps: 8"})
    EXPECT_TRUE(Has(triton.out, want)) << want << "\n" << triton.out;
}

// Missing: the Perfetto export closes every call it opens (a B without an E draws a slice to
// the end of time), and names C++ kernels as their source does, keeping the raw name.
TEST(ReportExport, EveryCallSliceEndsAndKernelsAreDemangled) {
  const std::string dir = TempDir("export");
  for (const char* trace : {"torch-two-threads-h200.rrt", "triton-none-h200.rrt", "native-none-h200.rrt"}) {
    SCOPED_TRACE(trace);
    ASSERT_EQ(Rerace("export " + SampleTrace(trace) + " -o " + dir + "/t.json").code, 0);
    const std::string j = Slurp(dir + "/t.json");
    EXPECT_GT(Count(j, R"("cat":"tuner","ph":"B")"), 0u);
    EXPECT_EQ(Count(j, R"("cat":"tuner","ph":"B")"), Count(j, R"("cat":"tuner","ph":"E")"));
  }
  const std::string j = Slurp(dir + "/t.json");  // native-none-h200
  EXPECT_TRUE(Has(j, R"("name":"rerace::kernels::(anonymous namespace)::NormKernel(float const*)")) << j.substr(0, 2000);
  EXPECT_TRUE(Has(j, R"("mangled":"_ZN6rerace7kernels)"));
}

// Missing: a schedule file has a seed line only when a seed made it, and then just the number.
TEST(ReportSchedule, SeedLineOnlyForASeededSchedule) {
  const std::string dir = TempDir("seedline");
  const std::string s = SampleTrace("synth-h200-shape.rrt");
  struct Case {
    std::string args;
    std::string seed_line;  // "" : none
  };
  const Case cases[] = {
      {"replay --engine model " + s + " --seed 5", "# seed: 5\n"},
      {"replay --engine model " + s + " --recorded", ""},
      {"check --engine model " + s + " --bound 1", ""},
      {"check --engine model " + s + " --fix tls-nargs --runs 100", ""},  // DPOR finds it before the sampling
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string file = dir + "/" + std::to_string(++n) + ".sched";
    Rerace(c.args + " --save-schedule " + file);
    const std::string text = Slurp(file);
    ASSERT_FALSE(text.empty()) << c.args;
    if (c.seed_line.empty())
      EXPECT_FALSE(Has(text, "# seed:")) << c.args << "\n" << text;
    else
      EXPECT_TRUE(Has(text, c.seed_line)) << c.args << "\n" << text;
    EXPECT_FALSE(Has(text, "# seed: seed")) << text;
  }
}

}  // namespace

namespace {

// Stale documentation: the help names every strategy classic takes, and cites for call-local
// what can be checked (an unmerged upstream branch), not an unconfirmed PR number.
TEST(ReportHelp, ClassicListsEveryStrategyAndCallLocalCitesWhatCanBeChecked) {
  const CliRun classic = Rerace("classic --help");
  for (const char* s : {"random", "pct", "pos", "surw", "timed", "round-robin", "portfolio"})
    EXPECT_TRUE(Has(classic.out, s)) << s << "\n" << classic.out;
  const CliRun check = Rerace("check --help");
  EXPECT_FALSE(Has(check.out, "11580")) << check.out;
  EXPECT_TRUE(Has(check.out, "unmerged upstream Triton branch")) << check.out;
  EXPECT_FALSE(Has(Slurp(Source("docs/MODEL.md")), "11580"));
}

}  // namespace
