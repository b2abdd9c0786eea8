// tools/rerace/output.cc: checked stdout and all-or-nothing files (see output.h).
#include "output.h"

#include "rerace/base/output_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace rerace::tools {

int FinishStdout(int code) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && std::ferror(stdout) == 0) return code;
  const int err = errno;
  std::fprintf(stderr, "rerace: error: standard output: cannot write: %s (the report is incomplete)\n",
               err != 0 ? std::strerror(err) : "write error");
  return kExitIoError;
}

Result<void> WriteFileAtomically(const std::string& path, const std::string& text) {
  return WriteOutput(path, text);
}

std::vector<std::string> UniqueStems(const std::vector<std::string>& paths) {
  std::vector<std::string> stems;
  std::map<std::string, int> uses;
  for (const std::string& p : paths) {
    stems.push_back(std::filesystem::path(p).stem().string());
    ++uses[stems.back()];
  }
  for (size_t i = 0; i < stems.size(); ++i)
    if (uses[stems[i]] > 1) stems[i] += fmt::format(".{}", i + 1);
  return stems;
}

}  // namespace rerace::tools
