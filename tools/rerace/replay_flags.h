// tools/rerace/replay_flags.h: the flags replay, fuzz and check share, parsed into
// replay::CommandOptions (rerace/replay/command/command.h, where what they mean is carried out), and the
// printing of a command's output. The commands themselves are in replay_cmd.cc, fuzz_cmd.cc and
// check_cmd.cc: each parses its flags, calls the replay library and prints what it returns.
// Must be called from the main thread.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "commands.h"
#include "rerace/replay/command/command.h"

namespace rerace::tools {

// The shared flags as parsed: the options, and the CLI11 options whose count tells a value the
// user gave from a default.
struct CommonFlags {
  replay::CommandOptions options;
  std::string watchdog = "60s";
  CLI::Option* fix_opt = nullptr;
  CLI::Option* model_opt = nullptr;
  CLI::Option* reps_opt = nullptr;
  CLI::Option* max_steps_opt = nullptr;
  CLI::Option* python_exe_opt = nullptr;
  CLI::Option* only_opt = nullptr;
};

// Adds --fix, --model, --engine, ... to `sub`; --strategy and --pct-depth when `with_strategy`.
void AddCommonFlags(CLI::App* sub, CommonFlags& flags, bool with_strategy);

// The options after parsing: which flags were given, the watchdog in seconds, colour when
// standard output is a terminal, notes printed on standard error as they come.
replay::CommandOptions ParsedOptions(const CommonFlags& flags);

// Prints the command's report on standard output, then its error, if any, on standard error;
// returns its exit code.
// A report's text wrapped as RERACE_REPORT_WIDTH says (default 160 columns; rerace/base/wrap.h).
std::string Wrapped(const std::string& text);
int PrintOutput(const replay::CommandOutput& output);

// Progress lines on standard error: only on a terminal, without --json and NO_PROGRESS unset.
bool ShowProgress(const replay::CommandOptions& options);

void RegisterReplay(CLI::App& app, CommandTable& table);
void RegisterFuzz(CLI::App& app, CommandTable& table);
void RegisterCheck(CLI::App& app, CommandTable& table);

}  // namespace rerace::tools
