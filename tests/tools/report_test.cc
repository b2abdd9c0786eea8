// Every report tells the truth (issue 16): what rerace prints, run as a user runs it, matches
// what it does. Each test names the item of the issue it covers. The replay hints:
// report_hints_test.cc; what the reports say of the real-code engine: report_engine_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "rerace/testing/cli.h"
#include "report_test.h"

namespace {

using rerace::testing::CliRun;
using rerace::testing::Has;
using rerace::testing::Lines;
using rerace::testing::Rerace;
using rerace::testing::SampleTrace;
using rerace::testing::Slurp;
using rerace::testing::Source;
using rerace::testing::report::Count;
using rerace::testing::report::FailedCode;
using rerace::testing::report::TempDir;

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
  // (A command longer than show's 160 columns goes whole on the line after "command:".)
  const size_t label = show.out.find("command:");
  ASSERT_NE(label, std::string::npos) << show.out;
  const size_t at = show.out.find_first_not_of(" \n", label + 8);
  ASSERT_EQ(show.out.compare(at, 13, "rerace synth "), 0) << show.out;
  const std::string cmd = show.out.substr(at + 7, show.out.find('\n', at) - at - 7);
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
  EXPECT_TRUE(Has(Rerace("fuzz --help").out, "of this shard (N shards of --runs R"));
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
// the end of time), and names C++ kernels short, their full names as their source spells them
// and the raw ones in its kernels table (readability_test.cc has more).
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
  EXPECT_TRUE(Has(j, R"("name":"NormKernel")")) << j.substr(0, 2000);
  EXPECT_TRUE(Has(j, R"("full_name":"rerace::kernels::(anonymous namespace)::NormKernel(float const*)")) << j.substr(0, 2000);
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
