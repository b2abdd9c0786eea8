// rerace: the command line. Each subcommand lives in its own file and registers itself here.
#include <fmt/format.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "commands.h"
#include "output.h"
#include "rerace/base/result.h"
#include "rerace/base/wrap.h"

namespace {

// --help wrapped to the terminal's width, 80 columns when standard output is not a terminal
// (a pipe, a file: the same text wherever it is read, as docs/CLI.md is).
class WrappedHelp : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    size_t width = 80;
    struct winsize ws {};
    if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) width = ws.ws_col;
    return rerace::WrapHelp(CLI::Formatter::make_help(app, std::move(name), mode), width);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rerace: deterministic record-and-replay race simulator for multi-threaded, multi-GPU "
      "training code.\n"
      "Exit codes: 0 nothing found / fix holds, 1 failure found / fix fails, 3 check inconclusive "
      "(its search stopped at a budget: never a holds), 64 usage, 65 bad input data (a corrupt "
      "trace, a schedule that does not fit it, a tuner class rerace does not model), 66 missing "
      "input, 69 the environment lacks something (no Triton for --python-exe), 70 internal error "
      "(a bug in rerace, never reported as a failure found), 74 cannot write output (also a "
      "closed pipe on standard output), 78 configuration (--python-exe is not a Python that "
      "starts the engine)."};
  app.name("rerace");
  app.formatter(std::make_shared<WrappedHelp>());  // before the subcommands: they take it over
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("rerace ") + RERACE_VERSION);
  rerace::tools::SetProgram(argc > 0 ? argv[0] : nullptr);  // what the hints name
  rerace::tools::CommandTable table;
  rerace::tools::RegisterClassic(app, table);
  rerace::tools::RegisterTraceCommands(app, table);
  rerace::tools::RegisterReplayCommands(app, table);
  rerace::tools::RegisterRecord(app, table);
  rerace::tools::RegisterMergeExport(app, table);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "rerace: error: %s (run '%s --help')\n", e.what(),
                 rerace::tools::QuotedProgram().c_str());
    return rerace::kExitUsage;
  }
  // Output lost to a full disk or a file size limit must be noticed: SIGXFSZ would end the
  // process by a signal (153) where rerace reports the failed write (74).
  std::signal(SIGXFSZ, SIG_IGN);
  // Likewise a reader that closed standard output (`rerace ... | head`): the write fails with
  // EPIPE and rerace exits 74 (quietly: the reader stopped on purpose), not by SIGPIPE (141).
  std::signal(SIGPIPE, SIG_IGN);
  // A command reports its own errors (bad input, usage, output) with their codes; anything
  // that escapes one is a bug in rerace: exit 70 with the message, never 1 (a race found).
  // Otherwise stdout is flushed and checked (74 when the report was lost).
  int code = rerace::kExitInternal;
  try {
    code = table.Run();
  } catch (const rerace::ExitError& e) {
    if (e.exit_code() != rerace::kExitInternal) {
      std::fprintf(stderr, "rerace: error: %s\n", e.what());
      return e.exit_code();
    }
    std::fprintf(stderr, "rerace: internal error: %s (a bug in rerace: please report it with the "
                         "command)\n", e.what());
    return rerace::kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rerace: internal error: %s (a bug in rerace: please report it with the "
                         "command)\n", e.what());
    return rerace::kExitInternal;
  } catch (...) {
    std::fprintf(stderr, "rerace: internal error: an exception of unknown type (a bug in rerace)\n");
    return rerace::kExitInternal;
  }
  return rerace::tools::FinishStdout(code);
}
