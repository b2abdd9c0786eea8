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

// One trace's fuzzing result, as `fuzz --json` writes it and `rerace merge` reads it.
struct FuzzFailure {
  std::string signature;  // "code at where"
  uint64_t seed = 0;
  std::string schedule;   // rs1:...
  std::string schedule_file;
  std::string thread_name;
  std::string type, message, words;
  bool silent = false;
  bool first = true;      // the first failure of its seed's run
  std::string note;       // text only: when its schedule fails first with something else
};
struct FuzzTrace {
  std::string trace, fix, model, strategy;
  std::string engine = "model";  // "model" or "python"
  // The --patch files run (python engine), named as the text names them, each with the
  // SHA-256 of its content: (file, sha256).
  std::vector<std::pair<std::string, std::string>> patches;
  // "fix 'none'", "patch my_lock.py (sha256 1a2b3c4d)": what was checked, as reports name it.
  std::string Checked() const;
  uint64_t runs = 0, failing = 0;
  std::vector<FuzzFailure> failures;
  std::string races_json;  // with --races: the campaign's distinct races, a JSON array
};
// The order fuzz and merge list failures in: by harm (docs/MODEL.md), then by signature.
bool FailureBefore(const FuzzFailure& x, const FuzzFailure& y);
std::string FuzzJson(const std::vector<FuzzTrace>& all, const std::string& shard);
std::string FuzzJunit(const std::vector<FuzzTrace>& all);

// "\033[1;31m" etc. when stdout is a terminal and NO_COLOR is unset; "" otherwise.
bool UseColour();
Result<void> WriteFile(const std::string& path, const std::string& text);
std::string Colour(const std::string& report);

void RegisterClassic(CLI::App& app, CommandTable& table);
void RegisterMergeExport(CLI::App& app, CommandTable& table);
void RegisterTraceCommands(CLI::App& app, CommandTable& table);
void RegisterReplayCommands(CLI::App& app, CommandTable& table);
void RegisterRecord(CLI::App& app, CommandTable& table);

// Prints "rerace: error: <message>" on stderr and returns the error's exit code.
int ReportError(const Error& e);

}  // namespace rerace::tools
