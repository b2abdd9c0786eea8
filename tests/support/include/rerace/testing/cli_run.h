// rerace/testing/cli_run.h: runs the built `rerace` as a user would, for command-line tests.
//
//   CliRun r = RunRerace("show " + SourcePath("tests/data/bad-magic.rrt"));
//   EXPECT_EQ(r.code, 65);
//
// The binary is $RERACE_BIN/rerace (set by ctest; build/bin otherwise), paths in the source tree
// are under $RERACE_SOURCE (the working directory otherwise). Not thread-safe (popen).
#pragma once

#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rerace::testing {

struct CliRun {
  int code = -1;    // the exit status; -1 when killed by a signal
  int signal = 0;   // the signal that ended it, if any
  std::string out;  // stdout and stderr together (stderr alone with `stderr_only`)
};

// `args` is passed to the shell as written: quote what needs quoting. `env` (e.g. "FOO=1")
// goes before the command; `redirect` replaces the default "2>&1".
inline CliRun RunRerace(const std::string& args, const std::string& env = "",
                        const std::string& redirect = "2>&1") {
  const char* bin = std::getenv("RERACE_BIN");
  // From PATH, as a user runs it (the hints say "rerace ..."); `env` may be commands of its own
  // ("ulimit -f 0;", "cd DIR && env -u PYTHONPATH"), so PATH is exported first.
  const std::string dir = std::filesystem::absolute(bin ? bin : "build/bin").string();
  const std::string cmd = "export PATH='" + dir + "':\"$PATH\"; " + env + (env.empty() ? "" : " ") +
                          "rerace " + args + " " + redirect;
  FILE* p = popen(cmd.c_str(), "r");
  CliRun r;
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

inline std::string SourcePath(const std::string& rel) {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/" + rel;
}

}  // namespace rerace::testing
