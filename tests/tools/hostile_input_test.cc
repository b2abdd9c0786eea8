// Hostile input as a user (or an attacker) meets the command line: corrupt and amplifying
// traces, devices where files belong, flags that wrap, fix descriptions that mean nothing,
// output to a full device. Each case gives its exit code and one line; none aborts (134) or
// dies of SIGFPE (136).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "rerace/base/utf8.h"
#include "rerace/testing/cli_run.h"

namespace rerace {
namespace {

using testing::CliRun;
using testing::RunRerace;
using testing::SourcePath;

std::string Sample() { return SourcePath("traces/samples/synth-h200-shape.rrt"); }

// One line on stderr, "rerace: error: ...", and the code; never a signal.
void ExpectOneLineError(const CliRun& r, int code, const std::string& fragment) {
  EXPECT_EQ(r.signal, 0) << r.out;
  EXPECT_EQ(r.code, code) << r.out;
  EXPECT_EQ(r.out.rfind("rerace: error: ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  EXPECT_NE(r.out.find(fragment), std::string::npos) << r.out;
}

std::vector<std::string> Fixtures() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(SourcePath("tests/data")))
    if (e.path().extension() == ".rrt") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Every corrupt fixture, through every command that reads a trace: exit 65 and one line, with
// nothing else on stderr (Cap'n Proto's own log included).
TEST(HostileInput, EveryCorruptFixtureIsOneLineAndExit65InEveryCommand) {
  const std::string out = ::testing::TempDir() + "/hostile-export.json";
  const std::vector<std::string> fixtures = Fixtures();
  ASSERT_GE(fixtures.size(), 17u);
  for (const std::string& f : fixtures) {
    for (const std::string& cmd : {"show " + f, "replay " + f, "check " + f + " --runs 1",
                                   "fuzz " + f + " --runs 1", "export " + f + " -o " + out}) {
      SCOPED_TRACE(cmd);
      ExpectOneLineError(RunRerace(cmd), 65, f + ": ");
    }
  }
}

// What is not a trace file is refused at once, before it is read.
TEST(HostileInput, DevicesAndFoldersAreRefusedBeforeReading) {
  struct Case {
    std::string args;
    int code;
    std::string fragment;
  } cases[] = {
      {"show /dev/zero", 66, "/dev/zero: not a regular file (a character device)"},
      {"show /dev/urandom", 66, "/dev/urandom: not a regular file"},
      {"show --frames /dev/zero", 66, "not a regular file"},
      {"replay /dev/zero", 66, "not a regular file"},
      {"check /tmp", 66, "/tmp: not a regular file (a directory)"},
      {"replay " + Sample() + " --schedule /dev/zero", 66, "/dev/zero: not a regular file"},
      // show, replay and export stream the trace: the limit bounds what is held at once (a
      // chunk of this one is more than 1 MiB), not the trace (MemoryLimitBoundsWhatIsHeldAtOnce).
      {"export " + SourcePath("traces/samples/triton-none-h200.rrt") + " -o " +
           ::testing::TempDir() + "/limit.json", 65, "more than 1 MiB in memory, the limit; set RERACE_MAX_TRACE_MB"},
      {"replay " + SourcePath("traces/samples/triton-none-h200.rrt"), 65,
       "more than 1 MiB in memory, the limit; set RERACE_MAX_TRACE_MB"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const std::string env = c.code == 65 ? "RERACE_MAX_TRACE_MB=1" : "";
    ExpectOneLineError(RunRerace(c.args, env), c.code, c.fragment);
  }
}

// show, replay and export stream: they hold the metadata and one chunk, not the trace; a limit
// that the whole trace exceeds (ReadTrace's) still lets them read it all, and they print what
// a whole read gives.
TEST(HostileInput, MemoryLimitBoundsWhatIsHeldAtOnce) {
  const std::string t = SourcePath("traces/samples/native-call-local-h200.rrt");
  const std::string limit = "RERACE_MAX_TRACE_MB=1";
  const CliRun whole = RunRerace("show " + t);
  const CliRun limited = RunRerace("show " + t, limit);
  EXPECT_EQ(limited.code, 0) << limited.out;
  EXPECT_EQ(limited.out, whole.out);
  EXPECT_NE(limited.out.find("complete: yes"), std::string::npos) << limited.out;
  const CliRun replayed = RunRerace("replay " + t + " --seed 3");
  const CliRun replayed_limited = RunRerace("replay " + t + " --seed 3", limit);
  EXPECT_EQ(replayed_limited.code, replayed.code) << replayed_limited.out;
  EXPECT_EQ(replayed_limited.out, replayed.out);
  const std::string a = ::testing::TempDir() + "/whole.json", b = ::testing::TempDir() + "/limited.json";
  EXPECT_EQ(RunRerace("export " + t + " -o " + a).code, 0);
  EXPECT_EQ(RunRerace("export " + t + " -o " + b, limit).code, 0);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  std::stringstream ta, tb;
  ta << fa.rdbuf();
  tb << fb.rdbuf();
  EXPECT_GT(ta.str().size(), 1000u);
  EXPECT_EQ(tb.str(), ta.str());
}

// Numbers that used to wrap (-1 as 2^64-1), saturate, or mean something else; durations that
// ran forever or nothing; shards with a sign or a space; fix descriptions that meant "none";
// requests for memory. Each is exit 64 naming the flag and what it expects.
TEST(HostileInput, FlagsThatWrapOrMeanNothingAreExit64) {
  const std::string t = Sample();
  struct Case {
    std::string args;
    std::string fragment;
  } cases[] = {
      {"replay " + t + " --seed -1", "--seed: '-1' is not a number in digits"},
      {"replay " + t + " --seed 18446744073709551616", "--seed: '18446744073709551616' is out of range"},
      {"replay " + t + " --seed ' 1'", "--seed: ' 1' is not a number"},
      {"fuzz " + t + " --seed +1", "--seed: '+1' is not a number"},
      {"check " + t + " --seed -1", "--seed: '-1'"},
      {"fuzz " + t + " --runs -1", "--runs: '-1' is not a number"},
      {"fuzz " + t + " --runs 0", "--runs: '0' is out of range"},
      {"replay " + t + " --max-steps -1", "--max-steps: '-1'"},
      {"replay " + t + " --max-steps 0", "--max-steps: '0' is out of range"},
      {"replay " + t + " --reps -1", "--reps: '-1'"},
      {"fuzz " + t + " --time nan", "--time: 'nan': no number"},
      {"fuzz " + t + " --time ''", "--time: '': no number"},
      {"fuzz " + t + " --time inf", "--time: 'inf': no number"},
      {"fuzz " + t + " --time 1ms", "--time: '1ms': too short"},
      {"fuzz " + t + " --time 1e9h", "--time: '1e9h': unknown unit 'e9h'"},
      {"fuzz " + t + " --shard ' 1/2'", "--shard: ' 1/2': expected K/N"},
      {"fuzz " + t + " --shard +1/2", "--shard: '+1/2': expected K/N"},
      {"fuzz " + t + " --shard 2/2", "--shard: '2/2': expected K/N"},
      {"fuzz " + t + " --shard auto/0", "--shard: 'auto/0'"},
      {"show --raw-frame -2 " + t, "--raw-frame: '-2' is not a number"},
      {"check " + t + " --runs 0 --max-runs 0", "--max-runs: '0' is out of range"},
      {"check " + t + " --runs -1", "--runs: '-1'"},
      {"replay " + t + " --strategy pct --pct-depth 4294967295", "--pct-depth: '4294967295' is out of range"},
      {"fuzz " + t + " --strategy pct --pct-depth 0", "--pct-depth: '0' is out of range"},
      {"synth -o /tmp/never.rrt --bench-ns 18446744073709551615", "durations must be at most"},
      {"synth -o /tmp/never.rrt --kernel-ns 18446744073709551615", "durations must be at most"},
      {"synth -o /tmp/never.rrt --threads 4096 --calls 10000", "events; at most 1000000"},
      {"synth -o /tmp/never.rrt --other-launches 4294967295", "other launches must be at most"},
      {"synth -o /tmp/never.rrt --threads -1", "--threads: '-1'"},
      {"synth -o /tmp/never.rrt --seed -1", "--seed: '-1'"},
      {"replay " + t + " --fix 'lock=run:'", "names no lock after ':'"},
      {"replay " + t + " --fix ''", "empty fix"},
      {"check " + t + " --fix 'local='", "local= names an empty field"},
      {"check " + t + " --fix 'lock='", "lock= names an empty region"},
      {"fuzz " + t + " --fix ';'", "an empty part"},
      {"fuzz " + t + " --fix +", "an empty name"},
      {"replay " + t + " --fix none+none", "'none' joined with other fixes"},
      {"replay " + t + " --fix future=1", "'future' takes no value"},
      {"replay " + t + " --fix per-thread=yes", "'per-thread' takes no value"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const CliRun r = RunRerace(c.args);
    EXPECT_EQ(r.signal, 0) << r.out;
    EXPECT_EQ(r.code, 64) << r.out;
    EXPECT_EQ(r.out.rfind("rerace: error: ", 0), 0u) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
    EXPECT_NE(r.out.find(c.fragment), std::string::npos) << r.out;
  }
}

// A recording cut short (85 of its 1,765 events): every command says so on its first line;
// check gives no verdict on it without --allow-truncated, and with it says what it covers.
TEST(HostileInput, TruncatedTraceIsSaidFirstAndCheckRefusesIt) {
  const std::string cut = ::testing::TempDir() + "/hostile-cut.rrt";
  {
    std::ifstream in(SourcePath("traces/samples/native-none-h200.rrt"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 40000u);
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, 40000);
  }
  const std::string first = "warning: TRUNCATED trace " + cut + ": truncated after 85 events";
  for (const std::string& cmd :
       {"show " + cut, "replay " + cut, "fuzz " + cut + " --runs 2",
        "check " + cut + " --runs 2 --max-runs 5 --allow-truncated"}) {
    SCOPED_TRACE(cmd);
    const CliRun r = RunRerace(cmd);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.out.rfind(first, 0), 0u) << r.out;
  }
  const CliRun json = RunRerace("fuzz " + cut + " --runs 2 --json", "", "2>&1 >/dev/null");
  EXPECT_EQ(json.out.rfind(first, 0), 0u) << json.out;  // on stderr, the JSON stays JSON
  const CliRun refused = RunRerace("check " + cut + " --runs 2");
  ExpectOneLineError(refused, 65, "truncated after 85 events");
  EXPECT_NE(refused.out.find("pass --allow-truncated"), std::string::npos);
  const CliRun allowed = RunRerace("check " + cut + " --runs 2 --max-runs 5 --allow-truncated");
  EXPECT_NE(allowed.out.find("covers only the 85 events recorded before the cut"),
            std::string::npos)
      << allowed.out;
  // Followed in its recorded order, a cut recording is left at the cut: said as such, not as a
  // recorded run that took another path, and never a reproduction.
  const CliRun recorded = RunRerace("replay " + cut + " --recorded");
  EXPECT_NE(recorded.out.find("(the trace is truncated: its threads' recorded runs end at the cut"),
            std::string::npos)
      << recorded.out;
  EXPECT_EQ(recorded.out.find("took another path"), std::string::npos) << recorded.out;
  EXPECT_EQ(recorded.out.find("recorded comparison: reproduces"), std::string::npos) << recorded.out;
  std::remove(cut.c_str());
}

// From here on the commands run the C++ model (--engine model): the real-code engine says on
// stderr what it runs before any output is written, and its own hostile cases are
// tests/tools/hostile_engine_test.cc.

// Output lost to a full device is an error (74) with one line on stderr, whatever the command
// found; a file that cannot be written whole is not left behind in part.
TEST(HostileInput, OutputToAFullDeviceIsExit74) {
  const std::string t = Sample();
  const std::string json = ::testing::TempDir() + "/hostile-fuzz.json";
  ASSERT_EQ(RunRerace("fuzz --engine model " + t + " --runs 3 --json", "", "> " + json).code, 1);
  for (const std::string& cmd :
       {"show " + t, "replay --engine model " + t, "replay --engine model " + t + " --seed 3", "check --engine model " + t + " --runs 3",
        "fuzz --engine model " + t + " --runs 3 --json", "fuzz --engine model " + t + " --runs 3", "merge " + json,
        "show --frames " + t, std::string("classic --list")}) {
    SCOPED_TRACE(cmd);
    const CliRun r = RunRerace(cmd, "", "2>&1 >/dev/full");
    ExpectOneLineError(r, 74, "standard output: cannot write");
  }
  std::remove(json.c_str());
}

TEST(HostileInput, FailedWritesLeaveNoPartialFile) {
  const std::string t = Sample();
  const std::string dir = ::testing::TempDir() + "/hostile-partial";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // A file size limit of zero: every write to a file fails (the files are created, then cannot
  // grow), as on a full disk.
  const struct {
    std::string cmd, fragment;
  } cases[] = {
      {"export " + t + " -o " + dir + "/export.json", dir + "/export.json: cannot write"},
      {"synth -o " + dir + "/synth.rrt --threads 64", dir + "/synth.rrt: write failed"},
      {"replay --engine model " + t + " --seed 3 --perfetto " + dir + "/replay.json", dir + "/replay.json: cannot write"},
      {"fuzz --engine model " + t + " --runs 40 --junit " + dir + "/junit.xml", dir + "/junit.xml: cannot write"},
      {"replay --engine model " + t + " --seed 3 --save-schedule " + dir + "/replay.sched",
       dir + "/replay.sched: cannot write the schedule"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.cmd);
    ExpectOneLineError(RunRerace(c.cmd, "ulimit -f 0;", "2>&1 >/dev/null"), 74, c.fragment);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "partial files left in " << dir;
  std::filesystem::remove_all(dir);
}

// Outputs are written to the path, never renamed over it (issue 27): a full device made in a
// temporary folder (c 1 7, as /dev/full) gives 74 and stays a device for every writer; a
// symlink's target is written and the link kept; a regular file is replaced whole.
TEST(HostileInput, OutputsAreWrittenToThePathNotRenamedOverIt) {
  const std::string t = Sample();
  const std::string dir = ::testing::TempDir() + "/hostile-in-place";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string full = dir + "/full";
  if (std::system(("mknod " + full + " c 1 7 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "mknod needs root here";
  const std::string writers[] = {
      "export " + t + " -o " + full,
      "synth -o " + full,
      "replay --engine model " + t + " --seed 3 --perfetto " + full,
      "replay --engine model " + t + " --seed 3 --save-schedule " + full,
      "check --engine model " + t + " --runs 3 --save-schedule " + full,
      "fuzz --engine model " + t + " --runs 20 --junit " + full,
  };
  for (const std::string& cmd : writers) {
    SCOPED_TRACE(cmd);
    const CliRun r = RunRerace(cmd, "", "2>&1 >/dev/null");
    ExpectOneLineError(r, 74, full + ": ");
    EXPECT_NE(r.out.find("No space left on device"), std::string::npos) << r.out;
    EXPECT_TRUE(std::filesystem::is_character_file(full)) << cmd << " replaced the device";
  }
  // A symlink: its target gets the output, the link stays a link.
  std::ofstream(dir + "/target.json") << "old";
  std::filesystem::create_symlink("target.json", dir + "/link.json");
  ASSERT_EQ(RunRerace("export " + t + " -o " + dir + "/link.json").code, 0);
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.json"));
  EXPECT_GT(std::filesystem::file_size(dir + "/target.json"), 1000u);
  // A regular file is replaced whole, with its permission bits, and no temporary is left.
  std::filesystem::permissions(dir + "/target.json", std::filesystem::perms::owner_read |
                                                         std::filesystem::perms::owner_write |
                                                         std::filesystem::perms::group_read);
  ASSERT_EQ(RunRerace("replay --engine model " + t + " --seed 3 --save-schedule " + dir + "/target.json").code, 1);
  EXPECT_EQ(std::filesystem::status(dir + "/target.json").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 3u);  // full, target.json, link.json
  std::filesystem::remove_all(dir);
}

// An output that is one of the command's inputs is refused (64) before anything is written:
// `export copy.rrt -o copy.rrt` used to destroy the trace. Through a symlink too.
TEST(HostileInput, OutputThatIsAnInputIsRefused) {
  const std::string dir = ::testing::TempDir() + "/hostile-same";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string copy = dir + "/copy.rrt";
  std::filesystem::copy_file(Sample(), copy);
  std::filesystem::create_symlink("copy.rrt", dir + "/alias.rrt");
  const std::string patch = dir + "/p.py";
  std::ofstream(patch) << "x = 1\n";
  const struct {
    std::string cmd, fragment;
  } cases[] = {
      {"export " + copy + " -o " + copy, "-o " + copy + ": that is the input " + copy},
      {"export " + copy + " -o " + dir + "/alias.rrt", "that is the input " + copy},
      {"replay --engine model " + copy + " --seed 3 --save-schedule " + copy, "--save-schedule " + copy + ": that is the input"},
      {"replay --engine model " + copy + " --seed 3 --perfetto " + copy, "--perfetto " + copy + ": that is the input"},
      {"check --engine model " + copy + " --runs 3 --save-schedule " + copy, "that is the input"},
      {"fuzz --engine model " + copy + " --runs 3 --junit " + copy, "--junit " + copy + ": that is the input"},
      {"merge " + copy + " --junit " + copy, "--junit " + copy + ": that is the input"},
      {"replay " + copy + " --engine python --patch " + patch + " --save-schedule " + patch,
       "that is the input " + patch},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.cmd);
    ExpectOneLineError(RunRerace(c.cmd), 64, c.fragment);
  }
  std::ifstream a(Sample(), std::ios::binary), b(copy, std::ios::binary);
  std::stringstream sa, sb;
  sa << a.rdbuf();
  sb << b.rdbuf();
  EXPECT_EQ(sb.str(), sa.str()) << "the input was changed";
  std::filesystem::remove_all(dir);
}

// Numbers are parsed the same way everywhere (digits only, in range): --bound took 0x10 and
// ' 7', classic took -1; an empty --schedule, or an empty output path, was ignored.
TEST(HostileInput, EveryNumberIsDigitsOnlyAndEmptyScheduleIsRefused) {
  const std::string t = Sample();
  const struct {
    std::string args, fragment;
  } cases[] = {
      {"check --engine model " + t + " --bound 0x10", "--bound: '0x10' is not a number in digits"},
      {"check --engine model " + t + " --bound ' 7'", "--bound: ' 7' is not a number in digits"},
      {"check --engine model " + t + " --bound 101", "--bound: '101' is out of range"},
      {"classic abba-deadlock --seed -1", "--seed: '-1' is not a number in digits"},
      {"classic abba-deadlock --runs 0x2", "--runs: '0x2'"},
      {"classic abba-deadlock --max-steps 0", "--max-steps: '0' is out of range"},
      {"classic abba-deadlock --quantum ' 1'", "--quantum: ' 1'"},
      {"replay --engine model " + t + " --schedule ''", "--schedule: '' names no file and no schedule"},
      {"classic abba-deadlock --schedule ''", "--schedule: '' names no file"},
      {"classic abba-deadlock --save-schedule ''", "--save-schedule: '' names no file"},
      // Every output a command may write: '' was ignored, and nothing written said so.
      {"replay --engine model " + t + " --save-schedule ''", "--save-schedule: '' names no file"},
      {"replay --engine model " + t + " --perfetto ''", "--perfetto: '' names no file"},
      {"check --engine model " + t + " --save-schedule ''", "--save-schedule: '' names no file"},
      {"check --engine model " + t + " --perfetto ''", "--perfetto: '' names no file"},
      {"check --engine model " + t + " --junit ''", "--junit: '' names no file"},
      {"fuzz --engine model " + t + " --junit ''", "--junit: '' names no file"},
      {"fuzz --engine model " + t + " --save-failures ''", "--save-failures: '' names no file"},
      {"merge " + t + " --junit ''", "--junit: '' names no file"},
      {"replay " + t + " --engine python --watchdog 0s", "--watchdog: '0s': too short"},
      {"replay " + t + " --engine model --allow-recorded-patch", "need --engine python"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    ExpectOneLineError(RunRerace(c.args), 64, c.fragment);
  }
}

// Two traces with one file name in different folders: each one's saved schedules keep their
// own names, and each printed replay line names a file saved from that trace.
TEST(HostileInput, SaveFailuresKeepsTracesOfOneNameApart) {
  const std::string dir = ::testing::TempDir() + "/hostile-stems";
  std::filesystem::remove_all(dir);
  for (const char* sub : {"/a", "/b", "/d"}) std::filesystem::create_directories(dir + sub);
  std::filesystem::copy_file(Sample(), dir + "/a/x.rrt");
  std::filesystem::copy_file(Sample(), dir + "/b/x.rrt");
  const CliRun r = RunRerace("fuzz --engine model " + dir + "/a/x.rrt " + dir + "/b/x.rrt --runs 30 --save-failures " +
                             dir + "/d");
  ASSERT_EQ(r.code, 1) << r.out;
  size_t lines = 0;
  for (size_t at = 0; (at = r.out.find("--schedule ", at)) != std::string::npos; ++lines) {
    at += 11;
    const std::string file = r.out.substr(at, r.out.find('\n', at) - at);
    const std::string trace = r.out.substr(r.out.rfind("rerace replay ", at) + 14);
    std::ifstream in(file);
    ASSERT_TRUE(in) << file;
    std::string header((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(header.find("# trace: " + trace.substr(0, trace.find(' '))), std::string::npos)
        << file << " holds " << header;
  }
  EXPECT_GE(lines, 2u);
  EXPECT_TRUE(std::filesystem::exists(dir + "/d/x.1-none-1.sched"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/d/x.2-none-1.sched"));
  std::filesystem::remove_all(dir);
}

// A trace path or a fix that is not UTF-8 still gives valid JSON (merge reads it back) and
// valid JUnit XML: the invalid bytes are replaced by U+FFFD.
TEST(HostileInput, NonUtf8PathsAndFixesGiveValidJsonAndJunit) {
  const std::string dir = ::testing::TempDir() + "/hostile-utf8";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string odd = dir + "/trace-\xff\xfe.rrt";
  std::filesystem::copy_file(Sample(), odd);
  const std::string fix = "\"$(printf 'lock=run:L\\377')\"";
  const CliRun json = RunRerace("fuzz --engine model '" + odd + "' --runs 5 --fix " + fix + " --json --junit " +
                                    dir + "/junit.xml",
                                "", "2>/dev/null > " + dir + "/out.json");
  ASSERT_EQ(json.signal, 0);
  ASSERT_TRUE(json.code == 0 || json.code == 1) << json.code;
  for (const char* name : {"/out.json", "/junit.xml"}) {
    SCOPED_TRACE(name);
    std::ifstream in(dir + name, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(ValidUtf8(text), text);
    EXPECT_NE(text.find("trace-\xEF\xBF\xBD\xEF\xBF\xBD.rrt"), std::string::npos) << text;
    EXPECT_NE(text.find("lock=run:L\xEF\xBF\xBD"), std::string::npos) << text;
  }
  const CliRun merged = RunRerace("merge " + dir + "/out.json", "", "2>&1 >/dev/null");
  EXPECT_EQ(merged.out, "");
  EXPECT_TRUE(merged.code == 0 || merged.code == 1) << merged.code;
  std::filesystem::remove_all(dir);
}

TEST(Utf8, InvalidBytesBecomeReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  const struct {
    std::string in, out;
  } cases[] = {
      {"plain", "plain"},
      {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {"a\xFF" "b", "a" + r + "b"},
      {"\xC0\xAF", r + r},                 // overlong '/'
      {"\xED\xA0\x80", r + r + r},         // a surrogate
      {"\xF4\x90\x80\x80", r + r + r + r},  // above U+10FFFF
      {"end\xE2\x82", "end" + r + r},       // cut short
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    EXPECT_EQ(ValidUtf8(c.in), c.out);
  }
}

}  // namespace
}  // namespace rerace
