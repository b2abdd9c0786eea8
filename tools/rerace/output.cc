// tools/rerace/output.cc: checked stdout and all-or-nothing files (see output.h).
#include "output.h"

#include "rerace/base/output_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

}  // namespace rerace::tools
