// tools/rerace/output.cc: checked stdout and all-or-nothing files (see output.h).
#include "output.h"

#include "commands.h"
#include "rerace/base/output_file.h"
#include "rerace/replay/command/command.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rerace::tools {

namespace {
std::string program = "rerace";
std::string quoted_program = "rerace";
}  // namespace

void SetProgram(const char* argv0) {
  if (argv0 == nullptr || *argv0 == '\0') return;
  program = argv0;
  quoted_program = replay::ShellQuote(program);
}
const std::string& Program() { return program; }
const std::string& QuotedProgram() { return quoted_program; }

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
