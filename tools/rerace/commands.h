// tools/rerace/commands.h: how subcommands plug into the command line.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rerace/base/result.h"

namespace rerace::tools {

// Each subcommand adds itself to the CLI11 app and leaves an action here; after parsing,
// the action of the chosen subcommand runs and its return value is the exit code.
class CommandTable {
 public:
  void Add(CLI::App* sub, std::function<int()> action) { entries_.push_back({sub, std::move(action)}); }
  int Run() const {
    for (const auto& e : entries_)
      if (e.sub->parsed()) return e.action();
    return kExitUsage;
  }

 private:
  struct Entry {
    CLI::App* sub;
    std::function<int()> action;
  };
  std::vector<Entry> entries_;
};

// The command as it was invoked (main's argv[0], "rerace" until main sets it), shell-quoted: what
// every hint and suggestion names, so that it runs as printed ("build/bin/rerace replay ..." when
// run by path, "rerace replay ..." from PATH). Set once by main before any command runs.
void SetProgram(const char* argv0);
const std::string& Program();        // as invoked
const std::string& QuotedProgram();  // as a shell reads it

// "\033[1;31m" etc. when stdout is a terminal and NO_COLOR is unset; "" otherwise.
bool UseColour();

void RegisterClassic(CLI::App& app, CommandTable& table);
void RegisterMergeExport(CLI::App& app, CommandTable& table);
void RegisterTraceCommands(CLI::App& app, CommandTable& table);
void RegisterReplayCommands(CLI::App& app, CommandTable& table);
void RegisterRecord(CLI::App& app, CommandTable& table);

// Prints "rerace: error: <message>" on stderr and returns the error's exit code.
int ReportError(const Error& e);

}  // namespace rerace::tools
