// rerace/testing/cli.h: running the `rerace` binary from a test, as a user would.
//
// The binary is $RERACE_BIN/rerace (build/bin by default), the source tree $RERACE_SOURCE (the
// working directory by default); ctest sets both (cmake/rerace.cmake). Header only.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace rerace::testing {

struct CliRun {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Runs `rerace ARGS` through the shell (so ARGS may quote and redirect).
inline CliRun Rerace(const std::string& args) {
  const char* bin = std::getenv("RERACE_BIN");
  // From PATH, as a user runs it: the hints it prints then say "rerace ..." (run by path they name
  // the path: ReportHints.HintsNameTheCommandAsInvoked).
  const std::string cmd = "PATH=" + std::string(bin ? bin : "build/bin") + ":\"$PATH\" rerace " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string Source(const std::string& rel) {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/" + rel;
}

inline std::string SampleTrace(const std::string& name) { return Source("traces/samples/" + name); }

inline std::string Slurp(const std::string& path) {
  std::string s;
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return s;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) s.append(buf.data(), n);
  std::fclose(f);
  return s;
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

inline bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace rerace::testing
