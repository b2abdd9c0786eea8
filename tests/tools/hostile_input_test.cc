// Hostile input as a user (or an attacker) meets the command line: corrupt and amplifying
// traces, devices where files belong, flags that wrap, fix descriptions that mean nothing,
// output to a full device. Each case gives its exit code and one line; none aborts (134) or
// dies of SIGFPE (136).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

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
      {"show " + SourcePath("traces/samples/native-call-local-h200.rrt"), 65,
       "the limit; set RERACE_MAX_TRACE_MB"},
      {"show " + SourcePath("traces/samples/triton-none-h200.rrt"), 65,
       "a file of 4 MiB; this rerace reads traces of at most 1 MiB"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const std::string env = c.code == 65 ? "RERACE_MAX_TRACE_MB=1" : "";
    ExpectOneLineError(RunRerace(c.args, env), c.code, c.fragment);
  }
}

}  // namespace
}  // namespace rerace
