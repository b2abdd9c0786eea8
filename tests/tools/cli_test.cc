// The command line as a user meets it: exit codes and one-line errors.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct CliRun {
  int code;
  std::string out;  // stdout and stderr together
};

CliRun Rerace(const std::string& args, const std::string& env = "") {
  const char* bin = std::getenv("RERACE_BIN");
  // From PATH, as a user runs it (the hints say "rerace ...").
  const std::string cmd = "PATH=" + std::string(bin ? bin : "build/bin") + ":\"$PATH\" " + env +
                          (env.empty() ? "" : " ") + "rerace " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  CliRun r{-1, ""};
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Sample(const char* name) {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/traces/samples/" + name;
}

std::string Data(const char* name) {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/tests/data/" + name;
}

TEST(Cli, CorruptTraceIsOneLineAndExit65) {
  const CliRun r = Rerace("show " + Data("dangling-thread.rrt"));
  EXPECT_EQ(r.code, 65);
  EXPECT_EQ(r.out.rfind("rerace: error: ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
}

TEST(Cli, MissingTraceIsExit66) {
  const CliRun r = Rerace("show /no/such.rrt");
  EXPECT_EQ(r.code, 66);
  EXPECT_NE(r.out.find("/no/such.rrt: cannot open the trace"), std::string::npos) << r.out;
}

// A --patch that is not there is missing input, as a missing trace is, with either engine.
TEST(Cli, MissingPatchIsExit66) {
  for (const char* engine : {"auto", "model", "python"}) {
    SCOPED_TRACE(engine);
    const CliRun r = Rerace(std::string("check ") + Sample("triton-none-h200.rrt") +
                            " --patch /no/such/fix.py --engine " + engine);
    EXPECT_EQ(r.code, 66) << r.out;
    EXPECT_NE(r.out.find("--patch /no/such/fix.py: no such file"), std::string::npos) << r.out;
  }
}

// A reader that closed standard output (`rerace ... | head -1`) ends rerace with exit 74,
// quietly (the reader stopped on purpose), not by SIGPIPE (141).
TEST(Cli, AClosedStdoutPipeIsExit74) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);  // nobody reads
  const std::string err = ::testing::TempDir() + "/closed-stdout-" + std::to_string(getpid()) + ".err";
  const char* bin_dir = std::getenv("RERACE_BIN");
  const std::string bin = std::string(bin_dir ? bin_dir : "build/bin") + "/rerace";
  const std::string trace = Sample("triton-none-h200.rrt");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(e, 2);
    execl(bin.c_str(), "rerace", "replay", trace.c_str(), "--engine", "model", "--seed", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 74);
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("rerace: error"), std::string::npos) << text;
  std::remove(err.c_str());
}

// One corrupt trace among several loses nothing of the others: it is an error of its own in the
// text, the JSON and the JUnit file (and for merge), and the command still exits with its code.
TEST(Cli, FuzzKeepsTheOtherTracesResultsWhenOneIsCorrupt) {
  const std::string dir = ::testing::TempDir() + "/fuzz-bad-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string args = "fuzz " + Sample("triton-none-h200.rrt") + " " + Data("bad-magic.rrt") +
                           " --engine model --runs 10";
  const CliRun text = Rerace(args);
  EXPECT_EQ(text.code, 65) << text.out;
  EXPECT_NE(text.out.find("10 runs, 10 failing"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("bad-magic.rrt: error: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rerace: error: 1 of 2 traces could not be fuzzed"), std::string::npos)
      << text.out;
  const CliRun json = Rerace(args + " --json --junit " + dir + "/j.xml 2>/dev/null > " + dir + "/f.json; echo rc=$?");
  EXPECT_NE(json.out.find("rc=65"), std::string::npos) << json.out;
  std::ifstream f(dir + "/f.json");
  const std::string j((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(j.find("\"runs\":10,\"failing\":10"), std::string::npos) << j;
  EXPECT_NE(j.find("\"error\":\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"exit_code\":65"), std::string::npos) << j;
  std::ifstream x(dir + "/j.xml");
  const std::string xml((std::istreambuf_iterator<char>(x)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("errors=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error message="), std::string::npos) << xml;
  const CliRun merged = Rerace("merge " + dir + "/f.json");
  EXPECT_EQ(merged.code, 65) << merged.out;
  std::filesystem::remove_all(dir);
}

TEST(Cli, UnknownFlagIsExit64) {
  const CliRun r = Rerace("show --no-such-flag x.rrt");
  EXPECT_EQ(r.code, 64);
  EXPECT_NE(r.out.find("--no-such-flag"), std::string::npos) << r.out;
}

TEST(Cli, UnknownSubcommandIsExit64) {
  EXPECT_EQ(Rerace("frobnicate").code, 64);
}

TEST(Cli, HelpIsExit0AndListsSubcommands) {
  const CliRun r = Rerace("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* sub : {"show", "synth", "classic"})
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
}

// Issue 49 item 11: --help fits 80 columns when piped (every subcommand's), and a report's lines
// fit 160 columns, but for a command to copy, which is never broken.
TEST(Cli, HelpFits80ColumnsAndReportsFit160) {
  auto longest = [](const std::string& text, bool skip_commands) {
    size_t most = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (skip_commands && line.find("rerace ") != std::string::npos &&
          line.find("--schedule") != std::string::npos)
        continue;
      most = std::max(most, line.size());
    }
    return most;
  };
  for (const char* sub : {"", "show", "synth", "replay", "fuzz", "check", "record", "merge", "export",
                          "classic"}) {
    const CliRun r = Rerace(std::string(sub) + " --help | cat");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_LE(longest(r.out, false), 80u) << sub << ":\n" << r.out;
  }
  const std::string t = Sample("triton-none-h200.rrt");
  setenv("RERACE_REPORT_WIDTH", "", 1);  // the default width, as a user has it (ctest sets 0)
  EXPECT_EQ(Rerace("check " + t + " --engine model --runs 1 </dev/null; RERACE_REPORT_WIDTH=12 " +
                   std::string(std::getenv("RERACE_BIN") ? std::getenv("RERACE_BIN") : "build/bin") +
                   "/rerace check " + t + " --engine model --runs 1")
                .code,
            64);
  for (const std::string& args :
       {"check " + t + " --engine model --fix lock-run --runs 5", "check " + t + " --engine model",
        "replay " + t + " --engine model --seed 1", "fuzz " + t + " --engine model --runs 20"}) {
    const CliRun r = Rerace(args);
    EXPECT_LE(longest(r.out, true), 160u) << args << ":\n" << r.out;
    EXPECT_NE(r.out.find("\n    "), std::string::npos) << args;  // something was long enough to wrap
  }
}

TEST(Cli, UnknownClassicBugIsExit64) {
  const CliRun r = Rerace("classic no-such-bug");
  EXPECT_EQ(r.code, 64);
  EXPECT_NE(r.out.find("unknown bug 'no-such-bug'"), std::string::npos) << r.out;
}

TEST(Cli, SynthThenShowSummarizesTheTrace) {
  const std::string path = ::testing::TempDir() + "/cli-synth.rrt";
  const CliRun w = Rerace("synth -o " + path + " --threads 3 --configs 4");
  ASSERT_EQ(w.code, 0) << w.out;
  const CliRun s = Rerace("show " + path);
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("3 threads"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("3 calls, 12 config benchmarks, keys: 4096"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("complete: yes"), std::string::npos) << s.out;
  std::remove(path.c_str());
}

TEST(Cli, SynthRejectsABadScenarioWithExit64) {
  const CliRun r = Rerace("synth -o /tmp/never.rrt --restore-value z_ptr");
  EXPECT_EQ(r.code, 64);
  EXPECT_NE(r.out.find("restore_value names 'z_ptr'"), std::string::npos) << r.out;
}

}  // namespace

namespace {

std::string Sample() {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/traces/samples/synth-h200-shape.rrt";
}

TEST(CliReplay, FailingSeedExitsOneAndNamesTheKeyError) {
  const CliRun r = Rerace("replay --engine model " + Sample() + " --seed 3");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("KeyError: 'y_ptr'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at triton/runtime/autotuner.py:74 in _post_hook"), std::string::npos);
}

TEST(CliReplay, SavedScheduleReplaysWithoutTheSeed) {
  const std::string sched = ::testing::TempDir() + "/cli.sched";
  const CliRun a = Rerace("replay --engine model " + Sample() + " --seed 3 --save-schedule " + sched);
  ASSERT_EQ(a.code, 1);
  const CliRun b = Rerace("replay --engine model " + Sample() + " --schedule " + sched);
  EXPECT_EQ(b.code, 1);
  // Same failure, same step: compare the FAILED line.
  auto failed_line = [](const std::string& s) { return s.substr(s.find("FAILED"), s.find('\n', s.find("FAILED")) - s.find("FAILED")); };
  EXPECT_EQ(failed_line(a.out), failed_line(b.out));
  std::remove(sched.c_str());
}

TEST(CliReplay, UnknownFixIsExit64) {
  const CliRun r = Rerace("check --engine model " + Sample() + " --fix lock-everything");
  EXPECT_EQ(r.code, 64);
  EXPECT_NE(r.out.find("unknown fix 'lock-everything'"), std::string::npos) << r.out;
}

TEST(CliReplay, UnknownStrategyIsExit64) {
  EXPECT_EQ(Rerace("replay --engine model " + Sample() + " --strategy chaos").code, 64);
}

TEST(CliReplay, MissingScheduleIsExit66) {
  const CliRun r = Rerace("replay --engine model " + Sample() + " --schedule /no/such.sched");
  EXPECT_EQ(r.code, 66);
  EXPECT_NE(r.out.find("/no/such.sched: cannot open the schedule"), std::string::npos);
}

TEST(CliReplay, CheckHoldsIsExitZeroAndFailsIsExitOne) {
  const CliRun holds = Rerace("check --engine model " + Sample() + " --fix lock-run --runs 200");
  EXPECT_EQ(holds.code, 0) << holds.out;
  // Without --bound: DPOR at bound 1 first, then the sampled schedules; it says which.
  // DPOR at bound 1 refuses race reversals on this recording: the verdict covers the
  // search's schedules and says it is not every interleaving within the bound.
  EXPECT_NE(holds.out.find("verdict: fix 'lock-run' holds for every schedule of a DPOR search at "
                           "bound 1 ("),
            std::string::npos)
      << holds.out;
  EXPECT_NE(holds.out.find("search exhausted), which is not every interleaving with at most 1 "
                           "preemption: the bound refused "),
            std::string::npos)
      << holds.out;
  EXPECT_NE(holds.out.find(" race reversals it found, and for every schedule sampled after it: 200"),
            std::string::npos)
      << holds.out;
  EXPECT_NE(holds.out.find("Chosen without --bound: bound 1, 200 sampled runs"), std::string::npos);
  const CliRun bounded = Rerace("check --engine model " + Sample() + " --fix lock-run --bound 2");
  EXPECT_EQ(bounded.code, 0) << bounded.out;
  EXPECT_NE(bounded.out.find("DPOR search at bound 2 ("), std::string::npos) << bounded.out;
  EXPECT_EQ(bounded.out.find("holds for every interleaving"), std::string::npos) << bounded.out;
  EXPECT_EQ(bounded.out.find("sampled"), std::string::npos) << bounded.out;
  // Two threads, one tuner: at bound 2 the bound refuses no race reversal, and only then does
  // the verdict claim every interleaving (JSON: "complete"); at bound 1 it refuses some.
  const std::string two = ::testing::TempDir() + "/cli-two-threads.rrt";
  ASSERT_EQ(Rerace("synth -o " + two + " --threads 2 --configs 2 --other-launches 0").code, 0);
  const CliRun whole = Rerace("check --engine model " + two + " --fix lock-run --bound 2");
  EXPECT_EQ(whole.code, 0) << whole.out;
  EXPECT_NE(whole.out.find("holds for every interleaving (DPOR: "), std::string::npos) << whole.out;
  EXPECT_NE(whole.out.find("search exhausted; the bound of 2 preemptions cut no race reversal)"),
            std::string::npos)
      << whole.out;
  const CliRun part = Rerace("check --engine model " + two + " --fix lock-run --bound 1 --json");
  EXPECT_EQ(part.code, 0) << part.out;
  EXPECT_NE(part.out.find("\"exhausted\":true,\"cut\":"), std::string::npos) << part.out;
  EXPECT_NE(part.out.find(",\"complete\":false,"), std::string::npos) << part.out;
  EXPECT_EQ(part.out.find("\"cut\":0,"), std::string::npos) << part.out;
  const CliRun whole_json = Rerace("check --engine model " + two + " --fix lock-run --bound 2 --json");
  EXPECT_NE(whole_json.out.find("\"cut\":0,\"complete\":true,"), std::string::npos) << whole_json.out;
  const CliRun fails = Rerace("check --engine model " + Sample() + " --fix tls-nargs --runs 200");
  EXPECT_EQ(fails.code, 1) << fails.out;
  EXPECT_NE(fails.out.find("verdict: fix 'tls-nargs' FAILS"), std::string::npos);
}

TEST(CliReplay, FuzzSavesOneScheduleFilePerDistinctFailure) {
  const std::string dir = ::testing::TempDir() + "/cli-fuzz";
  const CliRun r = Rerace("fuzz --engine model " + Sample() + " --runs 100 --save-failures " + dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("in-param-not-in-cache at triton/runtime/autotuner.py:74"), std::string::npos);
  EXPECT_NE(r.out.find(dir + "/synth-h200-shape-none-1.sched"), std::string::npos) << r.out;
  const CliRun again = Rerace("replay --engine model " + Sample() + " --schedule " + dir + "/synth-h200-shape-none-1.sched");
  EXPECT_EQ(again.code, 1) << again.out;
}

TEST(CliReplay, BadTimeBudgetIsExit64) {
  const CliRun r = Rerace("fuzz --engine model " + Sample() + " --time soon");
  EXPECT_EQ(r.code, 64);
  EXPECT_NE(r.out.find("--time: 'soon': no number"), std::string::npos) << r.out;
}

TEST(CliReplay, JsonIsOneObjectPerRun) {
  const CliRun r = Rerace("replay --engine model " + Sample() + " --seed 3 --json");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"code\":\"in-param-not-in-cache\""), std::string::npos);
  EXPECT_NE(r.out.find("\"schedule\":\"rs1:"), std::string::npos);
}

}  // namespace

namespace {

std::string Slurp(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  std::string s;
  if (!f) return s;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

// A JUnit file without its times (the seconds each case took): the one part of a report that
// differs between two runs of the same inputs and seeds.
std::string WithoutTimes(const std::string& xml) {
  return std::regex_replace(xml, std::regex(R"( time="[0-9.]+")"), "");
}

std::string SampleTrace(const char* name) {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/traces/samples/" + name;
}

TEST(CliCi, ShardsSplitTheSeedsAndMergeAddsThemUp) {
  const std::string dir = ::testing::TempDir();
  const std::string t = SampleTrace("synth-h200-shape.rrt");
  const CliRun whole = Rerace("fuzz --engine model " + t + " --runs 60 --json");
  ASSERT_EQ(whole.code, 1) << whole.out;
  ASSERT_EQ(Rerace("fuzz --engine model " + t + " --runs 30 --shard 0/2 --json > " + dir + "/s0.json").code, 1);
  ASSERT_EQ(Rerace("fuzz --engine model " + t + " --runs 30 --shard 1/2 --json > " + dir + "/s1.json").code, 1);
  const CliRun merged = Rerace("merge " + dir + "/s0.json " + dir + "/s1.json --junit " + dir + "/m.xml");
  EXPECT_EQ(merged.code, 1) << merged.out;
  EXPECT_NE(merged.out.find("\"runs\":60"), std::string::npos) << merged.out;
  // The shards ran seeds 1,3,5... and 2,4,6...: together the same 60 seeds as the whole run,
  // so the same distinct failures with the same first seeds.
  auto failures = [](const std::string& json) {
    std::string f;
    for (size_t p = json.find("\"failure\":"); p != std::string::npos; p = json.find("\"failure\":", p + 1))
      f += json.substr(p, json.find(",\"schedule\"", p) - p) + "\n";
    return f;
  };
  EXPECT_EQ(failures(merged.out), failures(whole.out));
  const std::string xml = Slurp(dir + "/m.xml");
  EXPECT_NE(xml.find("<testsuite name=\"rerace fuzz\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("in-param-not-in-cache at triton/runtime/autotuner.py:74 in _post_hook"), std::string::npos);
  EXPECT_NE(xml.find("seed "), std::string::npos);
}

TEST(CliCi, ShardAutoReadsTheJobIndex) {
  const std::string t = SampleTrace("synth-h200-shape.rrt");
  const CliRun r = Rerace("fuzz --engine model " + t + " --runs 10 --shard auto/4 --json", "JOB_COMPLETION_INDEX=3");
  EXPECT_NE(r.out.find("\"shard\":\"3/4\""), std::string::npos) << r.out;
  EXPECT_EQ(Rerace("fuzz --engine model " + t + " --shard auto").code, 64);
  EXPECT_EQ(Rerace("fuzz --engine model " + t + " --shard 4/4").code, 64);
  EXPECT_EQ(Rerace("fuzz --engine model " + t + " --shard x").code, 64);
  // A bad value in the environment is named with the variable it came from.
  const CliRun bad = Rerace("fuzz --engine model " + t + " --shard auto",
                            "env -u JOB_COMPLETION_INDEX -u SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_ID=7 RERACE_SHARDS=4");
  EXPECT_EQ(bad.code, 64) << bad.out;
  EXPECT_NE(bad.out.find("(K from SLURM_ARRAY_TASK_ID='7', N from RERACE_SHARDS='4'): expected 0 <= K < N"),
            std::string::npos)
      << bad.out;
}

TEST(CliCi, JunitOfAFuzzRunNamesEachDistinctFailure) {
  const std::string xml_path = ::testing::TempDir() + "/f.xml";
  const CliRun r = Rerace("fuzz --engine model " + SampleTrace("synth-h200-shape.rrt") + " --runs 50 --fix lock-run --junit " + xml_path);
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string xml = Slurp(xml_path);
  EXPECT_NE(xml.find("tests=\"1\" failures=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"fix lock-run (50 runs, random)\" time=\""), std::string::npos) << xml;
}

// check --junit: the verdict as one test case, in the words the text report leads with: a fix
// that fails is a failure (its report the text), one that holds passes (what the search
// covered its output), a budget stop is skipped, never a pass; the lines under the verdict
// (what it assumes, where the patch ran) go with it. --json writes the same file,
// and the --perfetto timeline too.
TEST(CliCi, JunitOfACheckSaysHoldsFailsOrInconclusiveAsTheTextDoes) {
  const std::string dir = ::testing::TempDir() + "/cli-check-junit";
  std::filesystem::create_directories(dir);
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const std::string base = "check --engine model " + t + " ";
  auto first_line = [](const std::string& out) { return out.substr(0, out.find('\n')); };
  struct Case {
    const char* fix;
    const char* more;
    int code;
    const char* verdict;
    const char* element;  // what the test case holds
  };
  for (const Case& c : {Case{"none", "--bound 1", 1, "fails", "<failure message=\""},
                        Case{"lock-run", "--bound 1", 0, "holds", "<system-out>"},
                        Case{"lock-run", "--bound 2 --max-runs 3", 3, "inconclusive", "<skipped message=\""}}) {
    SCOPED_TRACE(std::string(c.fix) + " " + c.more);
    const std::string xml_path = dir + "/" + c.verdict + ".xml";
    const CliRun r = Rerace(base + "--fix " + c.fix + " " + c.more + " --junit " + xml_path);
    ASSERT_EQ(r.code, c.code) << r.out;
    const std::string xml = Slurp(xml_path);
    EXPECT_NE(xml.find("<property name=\"verdict\" value=\"" + std::string(c.verdict) + "\"/>"),
              std::string::npos) << xml;
    EXPECT_NE(xml.find("<property name=\"engine\" value=\"model\"/>"), std::string::npos) << xml;
    EXPECT_NE(xml.find(std::string(c.element) + first_line(r.out)), std::string::npos)
        << first_line(r.out) << "\n" << xml;
    // The line under the verdict (the interpreter it assumes: this recording does not say)
    // goes with it, as in the text.
    // (The text wraps a long verdict at 160 columns; the JUnit case has it whole.)
    const size_t assumes = r.out.find("\nverdict assumes ");
    ASSERT_NE(assumes, std::string::npos) << r.out;
    const std::string second = first_line(r.out.substr(assumes + 1));
    EXPECT_NE(xml.find(second), std::string::npos) << second << "\n" << xml;
    EXPECT_NE(xml.find("failures=\"" + std::string(c.code == 1 ? "1" : "0") + "\" skipped=\"" +
                       std::string(c.code == 3 ? "1" : "0") + "\""),
              std::string::npos) << xml;
    const CliRun j = Rerace(base + "--fix " + c.fix + " " + c.more + " --json --junit " + xml_path + "j");
    EXPECT_EQ(j.code, c.code) << j.out;
    EXPECT_EQ(WithoutTimes(Slurp(xml_path + "j")), WithoutTimes(xml));
  }
  const std::string timeline = dir + "/cx.json";
  const CliRun p = Rerace(base + "--fix none --json --perfetto " + timeline);
  EXPECT_EQ(p.code, 1) << p.out;
  EXPECT_EQ(Slurp(timeline).rfind("{\"displayTimeUnit\":\"ns\"", 0), 0u);
  // Two outputs at one file: refused before anything runs, the file untouched.
  const std::string both = dir + "/both.xml";
  const CliRun same = Rerace(base + "--fix none --junit " + both + " --perfetto " + dir + "/./both.xml");
  EXPECT_EQ(same.code, 64) << same.out;
  EXPECT_NE(same.out.find("name one file"), std::string::npos) << same.out;
  EXPECT_FALSE(std::filesystem::exists(both));
  EXPECT_EQ(Rerace(base + "--fix none --junit " + t).code, 64);  // the trace it reads
}

TEST(CliCi, PerfettoTimelinesOfAReplayAndOfARecordedTrace) {
  const std::string dir = ::testing::TempDir();
  const CliRun r = Rerace("replay --engine model " + SampleTrace("triton-none-h200.rrt") + " --seed 3 --perfetto " + dir + "/r.json");
  EXPECT_EQ(r.code, 1);
  const std::string rj = Slurp(dir + "/r.json");
  EXPECT_EQ(rj.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  EXPECT_NE(rj.find("\"name\":\"KeyError: 'y_ptr'\""), std::string::npos);
  EXPECT_NE(rj.find("\"ph\":\"f\""), std::string::npos);  // a flow arrow into the failure
  const CliRun e = Rerace("export " + SampleTrace("triton-none-h200.rrt") + " -o " + dir + "/e.json");
  EXPECT_EQ(e.code, 0) << e.out;
  const std::string ej = Slurp(dir + "/e.json");
  EXPECT_NE(ej.find("\"name\":\"GPU 0\""), std::string::npos);
  EXPECT_NE(ej.find("\"cat\":\"kernel\""), std::string::npos);
  EXPECT_NE(ej.find("KeyError: 'y_ptr'"), std::string::npos);
}

}  // namespace

namespace {

// fuzz --jobs: the threads' results merged are one job's report, byte for byte: text, JSON,
// JUnit (but for its times) and every schedule file (replay/campaign.h).
TEST(CliCi, FuzzJobsGiveTheSameReportsAndScheduleFiles) {
  const std::string dir = ::testing::TempDir() + "/cli-fuzz-jobs";
  const std::string t = SampleTrace("synth-h200-shape.rrt");
  std::string text[2], json[2], xml[2], sched[2];
  const int jobs[2] = {1, 3};
  for (int k = 0; k < 2; ++k) {
    // The folder name is the same for both, so that the text reports can be compared whole.
    ASSERT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
    const std::string common = "fuzz --engine model " + t + " --runs 90 --strategy portfolio --jobs " + std::to_string(jobs[k]);
    const CliRun r = Rerace(common + " --save-failures " + dir + " --junit " + dir + ".xml");
    ASSERT_EQ(r.code, 1) << r.out;
    text[k] = r.out;
    xml[k] = WithoutTimes(Slurp(dir + ".xml"));
    for (int n = 1;; ++n) {
      const std::string s = Slurp(dir + "/synth-h200-shape-none-" + std::to_string(n) + ".sched");
      if (s.empty()) break;
      sched[k] += s + "\n----\n";
    }
    json[k] = Rerace(common + " --races --json --shard 1/2").out;
  }
  EXPECT_NE(sched[0].find("rs1:"), std::string::npos) << text[0];
  EXPECT_NE(text[0].find("distinct failure(s)"), std::string::npos);
  EXPECT_NE(json[0].find("\"races\":[{"), std::string::npos) << json[0];
  EXPECT_EQ(text[1], text[0]);
  EXPECT_EQ(sched[1], sched[0]);
  EXPECT_EQ(xml[1], xml[0]);
  EXPECT_EQ(json[1], json[0]);
  EXPECT_EQ(Rerace("fuzz --engine model " + t + " --jobs -1").code, 64);
}

// check --jobs N without --threads under the model: its search runs on one replayer (its runs are
// shorter than a batch's bookkeeping), so the report is --jobs 1's byte for byte; --jobs 0 is a
// usage error. The real code's search on N engines: report_engine_test.cc.
TEST(CliCi, CheckJobsUnderTheModelGiveOneReplayersReport) {
  const std::string t = SampleTrace("synth-h200-shape.rrt");
  const std::string fails = "check --engine model " + t + " --fix tls-nargs --bound 2 --jobs ";
  const CliRun one = Rerace(fails + "1");
  const CliRun three = Rerace(fails + "3");
  ASSERT_EQ(one.code, 1) << one.out;
  EXPECT_EQ(three.out, one.out);
  EXPECT_EQ(Rerace("check --engine model " + t + " --fix lock-run --jobs 0").code, 64);
}

}  // namespace

namespace {

// `make demo`'s verdicts against the H200's (docs/FIDELITY.md): every `rerace check TRACE --fix
// F` that tools/scripts/demo.sh prints, run as it runs it, must give the verdict of the real runs
// wherever FIDELITY.md has them (the Triton experiment's tables, the native step's table): "0 of
// N" holds, any other count fails. Fixes with no real runs on that workload are listed, not
// judged. The Triton recording does not say which Python ran it, so its verdicts must state the
// interpreter the model assumed.
std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// Fix name -> whether the real runs failed, from the tables under headings that contain `heading`.
std::map<std::string, bool> RealOutcomes(const std::string& doc, const std::string& heading) {
  std::map<std::string, bool> out;
  std::istringstream in(doc);
  bool inside = false;
  static const std::regex kRow(R"(^\| `?([a-z-]+)`?[^|]*\| [^|]*?(\d+) of (\d+))");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line.find(heading) != std::string::npos;
    std::smatch m;
    if (inside && std::regex_search(line, m, kRow)) out.emplace(m[1], m[2] != "0");
  }
  return out;
}

TEST(CliDemo, VerdictsAgreeWithTheH200) {
  const char* src = std::getenv("RERACE_SOURCE");
  const std::string root = src ? src : ".";
  const std::string demo = Slurp(root + "/tools/scripts/demo.sh");
  const std::string fidelity = Slurp(root + "/docs/FIDELITY.md");
  ASSERT_FALSE(demo.empty());
  ASSERT_FALSE(fidelity.empty());
  std::map<std::string, bool> triton = RealOutcomes(fidelity, "The brief's experiment");
  for (const auto& [fix, failed] : RealOutcomes(fidelity, "The model's steps under the GIL"))
    triton.emplace(fix, failed);
  const std::map<std::string, bool> native = RealOutcomes(fidelity, "The native training step");
  ASSERT_EQ(triton.size(), 6u);  // none, lock-run, tls-nargs, tls-state, lock-key-event, prewarm
  ASSERT_EQ(native.size(), 8u);
  // The demo's check loops: `for fix in ...; do` followed by `check "$trace"` or `check "$native"`.
  static const std::regex kLoop(R"re(for fix in ([a-z -]+); do\n[^\n]*check "\$(trace|native)" --fix)re");
  int judged = 0, loops = 0;
  for (auto it = std::sregex_iterator(demo.begin(), demo.end(), kLoop); it != std::sregex_iterator();
       ++it) {
    ++loops;
    const bool is_native = (*it)[2] == "native";
    const std::string trace = SampleTrace(is_native ? "native-none-h200.rrt" : "triton-none-h200.rrt");
    for (const std::string& fix : Words((*it)[1])) {
      const auto& real = is_native ? native : triton;
      const auto r = real.find(fix);
      if (r == real.end()) {
        std::printf("%s --fix %s: no real runs in docs/FIDELITY.md, not judged\n",
                    is_native ? "native" : "triton", fix.c_str());
        continue;
      }
      SCOPED_TRACE((is_native ? "native --fix " : "triton --fix ") + fix);
      const CliRun c = Rerace("check " + trace + " --fix " + fix);
      const std::string verdict = "verdict: fix '" + fix + (r->second ? "' FAILS" : "' holds");
      EXPECT_NE(c.out.find(verdict), std::string::npos) << c.out;
      EXPECT_EQ(c.code, r->second ? 1 : 0);
      if (!is_native) {
        // The default (--engine auto) runs the real code when build/py has Triton 3.6, which
        // runs under its own interpreter's rules; else the model, which says what it assumed.
        const bool real_code = c.out.find("engine: python (--engine auto:") != std::string::npos;
        if (!real_code)
          EXPECT_NE(c.out.find("\nverdict assumes CPython 3.12 with the GIL: this recording does "
                               "not say which Python ran it"),
                    std::string::npos)
              << c.out;
        else
          EXPECT_EQ(c.out.find("\nverdict assumes"), std::string::npos) << c.out;
      }
      ++judged;
    }
  }
  EXPECT_EQ(loops, 2);
  EXPECT_GE(judged, 7);  // the Triton none, tls-nargs, lock-run, prewarm; the native three

  // FLA's recording: FIDELITY.md's FLA rows, "| fla (0.6.0) | FIX | R of N (...) | W of N ...":
  // the GPU failed when a trial raised (R) or returned a wrong y (W).
  std::map<std::string, bool> fla;
  static const std::regex kFlaRow(R"(^\| fla \([0-9.]+\) \| ([a-z-]+) \| (\d+) of \d+[^|]*\| (\d+) of \d+)");
  std::istringstream rows(fidelity);
  for (std::string line; std::getline(rows, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kFlaRow)) fla.emplace(m[1], m[2] != "0" || m[3] != "0");
  }
  ASSERT_EQ(fla.size(), 6u);
  static const std::regex kFlaCheck(R"re(check "\$fla" --fix ([a-z-]+))re");
  std::set<std::string> fla_fixes;  // each fix twice in the demo: the line shown, the line run
  for (auto it = std::sregex_iterator(demo.begin(), demo.end(), kFlaCheck);
       it != std::sregex_iterator(); ++it)
    fla_fixes.insert((*it)[1]);
  int fla_judged = 0;
  for (const std::string& fix : fla_fixes) {
    SCOPED_TRACE("fla --fix " + fix);
    ASSERT_TRUE(fla.count(fix)) << fix << ": no GPU row in docs/FIDELITY.md";
    const CliRun c = Rerace("check " + SampleTrace("restore-fla-none-h200.rrt") + " --fix " + fix);
    const std::string verdict = "verdict: fix '" + fix + (fla[fix] ? "' FAILS" : "' holds");
    EXPECT_NE(c.out.find(verdict), std::string::npos) << c.out;
    EXPECT_EQ(c.code, fla[fix] ? 1 : 0);
    ++fla_judged;
  }
  EXPECT_GE(fla_judged, 2);  // tls-nargs fails, lock-run holds
}

}  // namespace
