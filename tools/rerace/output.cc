// tools/rerace/output.cc: checked stdout and all-or-nothing files (see output.h).
#include "output.h"

#include "rerace/base/output_file.h"

#include <fmt/format.h>
#include <poll.h>
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
  // A reader that closed the pipe (`rerace ... | head`) chose to stop reading: exit 74, quietly.
  // (The write that failed may have been an earlier one, its errno gone: a pipe's write end
  // with no reader left polls as an error.)
  struct pollfd pipe_end {1, POLLOUT, 0};
  if (err == EPIPE || (poll(&pipe_end, 1, 0) == 1 && (pipe_end.revents & POLLERR) != 0))
    return kExitIoError;
  std::fprintf(stderr, "rerace: error: standard output: cannot write: %s (the report is incomplete)\n",
               err != 0 ? std::strerror(err) : "write error");
  return kExitIoError;
}

Result<void> WriteFileAtomically(const std::string& path, const std::string& text) {
  return WriteOutput(path, text);
}

}  // namespace rerace::tools
