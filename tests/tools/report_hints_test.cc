// tests/tools/report_hints_test.cc: every replay hint a report prints reproduces its failure
// (issue 16, item 3), pasted as printed, with the options and environment that change the run
// (issue 28, item 4).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
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
using rerace::testing::report::FailedCode;
using rerace::testing::report::FailedThread;
using rerace::testing::report::TempDir;

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
    // The command follows its words, or, where the line would pass 160 columns, goes whole on
    // the next line (rerace/base/wrap.h).
    const std::string words = c.hint_prefix.substr(0, c.hint_prefix.size() - 1);
    const size_t at = run.out.find(words);
    ASSERT_NE(at, std::string::npos) << run.out;
    const size_t from = run.out.find_first_not_of(" \n", at + words.size());
    const size_t end = run.out.find('\n', from);
    const std::string cmd = run.out.substr(from, end - from);
    ASSERT_EQ(cmd.rfind("rerace replay ", 0), 0u) << cmd;
    const CliRun again = Rerace(cmd.substr(7));
    EXPECT_EQ(again.code, 1) << cmd << "\n" << again.out;
    EXPECT_EQ(FailedCode(again.out), FailedCode(run.out)) << cmd << "\n" << again.out;
    EXPECT_EQ(FailedThread(again.out), FailedThread(run.out)) << cmd << "\n" << again.out;
  }
}

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

// Issue 48, item 4: run by path (no rerace on PATH), every hint and suggestion names that path, so
// that it runs as printed: replay's and fuzz's replay commands, a saved schedule's, fuzz's JUnit
// replay, and the usage error's --help.
TEST(ReportHints, HintsNameTheCommandAsInvoked) {
  const char* dir = std::getenv("RERACE_BIN");
  const std::string bin = std::string(dir ? dir : Source("build/bin")) + "/rerace";
  const std::string tmp = TempDir("invoked");
  auto by_path = [&](const std::string& args) {  // a PATH without rerace, the binary by path
    return Pasted("PATH=/usr/bin:/bin; " + bin + " " + args);
  };
  const std::string t = SampleTrace("triton-none-h200.rrt");
  auto hint_after = [](const std::string& out, const std::string& words) {
    const size_t at = out.find(words);
    if (at == std::string::npos) return std::string();
    const size_t from = out.find_first_not_of(" \n", at + words.size());
    return out.substr(from, out.find('\n', from) - from);
  };
  const CliRun r = by_path("replay " + t + " --engine model --seed 1");
  ASSERT_EQ(r.code, 1) << r.out;
  const std::string hint = hint_after(r.out, "replay it (add --save-schedule FILE to keep the schedule):");
  ASSERT_EQ(hint.rfind(bin + " replay ", 0), 0u) << r.out;
  const CliRun again = Pasted("PATH=/usr/bin:/bin; " + hint);
  EXPECT_EQ(again.code, 1) << hint << "\n" << again.out;
  EXPECT_EQ(FailedCode(again.out), FailedCode(r.out)) << again.out;
  const CliRun f = by_path("fuzz " + t + " --engine model --runs 20 --junit " + tmp + "/j.xml");
  ASSERT_EQ(f.code, 1) << f.out;
  EXPECT_TRUE(Has(f.out, "      replay: " + bin + " replay ")) << f.out;
  EXPECT_FALSE(Has(f.out, "replay: rerace replay")) << f.out;
  const std::string xml = Slurp(tmp + "/j.xml");
  EXPECT_TRUE(Has(xml, "replay: " + bin + " replay ")) << xml;
  const CliRun s = by_path("replay " + t + " --engine model --seed 1 --save-schedule " + tmp + "/s.sched");
  EXPECT_TRUE(Has(s.out, "replay it with: " + bin + " replay ")) << s.out;
  const CliRun bad = by_path("replay --no-such-flag");
  EXPECT_EQ(bad.code, 64);
  EXPECT_TRUE(Has(bad.out, "(run '" + bin + " --help')")) << bad.out;
  // From PATH, the hints say plain "rerace".
  EXPECT_TRUE(Has(Rerace("replay " + t + " --engine model --seed 1").out,
                  "keep the schedule): rerace replay "));
  std::filesystem::remove_all(tmp);
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

}  // namespace
