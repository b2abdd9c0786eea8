// rerace: the command line. Each subcommand lives in its own file and registers itself here.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <string>

#include "commands.h"
#include "output.h"
#include "rerace/base/result.h"

int main(int argc, char** argv) {
  CLI::App app{
      "rerace: deterministic record-and-replay race simulator for multi-threaded, multi-GPU "
      "training code.\n"
      "Exit codes: 0 nothing found / fix holds, 1 failure found / fix fails, 64 usage, "
      "65 bad input data, 66 missing input, 70 internal error, 74 cannot write output."};
  app.name("rerace");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("rerace ") + RERACE_VERSION);
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
    std::fprintf(stderr, "rerace: error: %s (run 'rerace --help')\n", e.what());
    return rerace::kExitUsage;
  }
  // Output lost to a full disk or a file size limit must be noticed: SIGXFSZ would end the
  // process by a signal (153) where rerace reports the failed write (74).
  std::signal(SIGXFSZ, SIG_IGN);
  return rerace::tools::FinishStdout(table.Run());
}
