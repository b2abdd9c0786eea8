// replay/command/include/rerace/replay/command/command.h: the replay, fuzz and check commands as functions, the
// same ones `rerace replay|fuzz|check` call after parsing its flags, so that any front end (the
// command line, a Python binding) runs the same policy and prints the same bytes.
//
// A command takes plain option structs and returns a CommandOutput: the report as the command
// prints it on standard output (text, or JSON under `json`), the exit code (docs/CLI.md), and
// the error that ended it, if any (printed after the report, as "rerace: error: ..."). What a
// command says on standard error as it goes (the engine chosen, a truncated trace under --json,
// progress) goes to the `notes` callback as it happens; files it was asked to write (schedules,
// JUnit, timelines) it writes itself:
//
//   CommandOptions o;             // --fix, --model, --engine, ...: CommandOptions' defaults
//   o.fix = "lock-run";
//   CheckCommand c{.options = o, .trace = "traces/samples/triton-none-h200.rrt"};
//   CheckOutput r = RunCheckCommand(c);       // r.verdict: "holds"
//   std::fputs(r.out.c_str(), stdout);  // "verdict: fix 'lock-run' holds for ..."
//
// The policy lives here: which search a check runs and with which bounds (check.h's PlanCheck),
// how a failure is ranked and listed (report.h), how shards split and merge the seeds
// (shard.h), and the hints: the replay command line that reproduces each finding.
//
// Must be called from one thread at a time (--engine auto may set PYTHONPATH for the process).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/replay/search/campaign.h"
#include "rerace/replay/search/check.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/report/fuzz_report.h"
#include "rerace/sim/strategy.h"

namespace rerace::replay {

inline constexpr uint64_t kDefaultMaxSteps = 2'000'000;

// What a command says on standard error as it goes: a whole line (or lines) with its newline,
// or a progress line that starts with '\r'.
using Notes = std::function<void(const std::string&)>;

// The options replay, fuzz and check share (the command line's flags of the same names). A
// `*_given` flag tells a value the user gave from a default (a schedule file's header fills in
// what was not given).
struct CommandOptions {
  // The command as it was invoked (argv[0]: "rerace" from PATH, "build/bin/rerace" or a venv's
  // path when run by path): the hints and saved schedules name it, so that they run as printed.
  std::string program = "rerace";
  bool races = false;
  std::string fix = "none";
  std::string model = "auto";
  uint32_t reps = 1;
  uint64_t max_steps = kDefaultMaxSteps;
  // --strategy and --pct-depth, with the command line's defaults (random; PCT depth 2).
  sim::StrategySpec strategy = [] {
    sim::StrategySpec s;
    s.name = "random";
    s.pct_depth = 2;
    return s;
  }();
  bool json = false;
  std::string engine = "model";  // model, python or auto
  std::vector<std::string> patches;
  std::string python_mode = "auto";
  std::string python_version;
  std::string python_exe = "python3";
  bool allow_recorded_patch = false;
  double watchdog_seconds = 60;
  std::string failure;  // --failure KIND[@WHERE]
  std::string price_as;  // check --price-as FIX: price the --patch files as the model of FIX
  // --only T,T,...: replay the sub-program of these recorded worker threads alone (indices as
  // reports number them; model/program.h SubProgram). "": every thread.
  std::string only;
  // --order-from-timing: calls of different threads that never overlapped in the recording
  // replay in their recorded order (model/program.h OrderFromTiming); the model only.
  bool order_from_timing = false;
  bool colour = false;  // colour the text report's verdict lines (a terminal)
  bool fix_given = false, model_given = false, reps_given = false, max_steps_given = false;
  bool only_given = false;
  bool python_exe_given = false;
  Notes notes = [](const std::string&) {};
  // Set: the report goes here in parts as they are ready (after the trace is read; fuzz: after
  // each trace), as a terminal shows it, and CommandOutput::out holds only the rest. Unset: all
  // of it is in CommandOutput::out.
  Notes report;
};

struct CommandOutput {
  std::string out;             // standard output, as printed
  int exit_code = 0;           // kExitOk, kExitFound, kExitInconclusive, or the error's
  std::optional<Error> error;  // set: printed after `out` as "rerace: error: ..."
};

// Each command's result as data too (empty when it ended in an error).
struct ReplayOutput : CommandOutput {
  ReplayOutput() = default;
  ReplayOutput(CommandOutput o) : CommandOutput(std::move(o)) {}  // NOLINT: from Fail/Done
  std::vector<Finding> findings;  // in the report's order (--failure's kind first)
  std::string schedule;           // the run's schedule, encoded ("rs1:...")
};
struct FuzzOutput : CommandOutput {
  FuzzOutput() = default;
  FuzzOutput(CommandOutput o) : CommandOutput(std::move(o)) {}  // NOLINT: from Fail/Done
  std::vector<FuzzTrace> traces;  // one per trace, failures listed by harm
};
struct CheckOutput : CommandOutput {
  CheckOutput() = default;
  CheckOutput(CommandOutput o) : CommandOutput(std::move(o)) {}  // NOLINT: from Fail/Done
  std::string verdict;            // "holds", "fails" or "inconclusive"
  uint64_t explored = 0;          // schedules run
  std::string counterexample;     // with "fails": its (shrunk) schedule, encoded
};

// ---- the commands ----

struct ReplayCommand {
  CommandOptions options;
  std::string trace;
  uint64_t seed = 1;
  std::string schedule;  // a file, or the schedule line itself ("rs1:...")
  bool schedule_given = false;
  // --allow-changed-patch: a schedule file made with patch files of the same names whose
  // content has changed since replays all the same, saying so (a divergence may follow).
  bool allow_changed_patch = false;
  bool recorded = false;
  std::string save;      // --save-schedule
  std::string perfetto;  // --perfetto
};
ReplayOutput RunReplayCommand(const ReplayCommand& command);

struct FuzzCommand {
  CommandOptions options;
  std::vector<std::string> traces;
  uint64_t runs = 1000;
  bool runs_given = false;  // not given: kEngineFuzzRuns for a trace the python engine runs
  double seconds = 0;     // --time: > 0 replaces runs
  uint64_t seed = 1;
  std::string save_dir;   // --save-failures
  std::string junit;
  std::string shard;      // "K/N", "auto", "auto/N" or ""
  unsigned jobs = 0;      // 0: the cores available
  // --fork-every-run: the python engine forks a fresh process for every run, as check does;
  // else runs share one, reset between runs, and each failing run is confirmed in a fresh fork
  // (CampaignOptions::in_process).
  bool fork_every_run = false;
  // Called as runs finish (from the calling thread), with the trace and the elapsed budget.
  std::function<void(const std::string& trace, const CampaignProgress&)> progress;
  std::function<void()> progress_done;  // after each trace's campaign, when `progress` is set
};
// fuzz's runs per trace under the real-code engine when --runs is not given (about 10 a second
// there, against thousands for the model): check's sampled runs use the same number.
inline constexpr uint64_t kEngineFuzzRuns = 100;
// --engine auto resolves per trace (a native recording among Python ones runs the model).
FuzzOutput RunFuzzCommand(const FuzzCommand& command);

struct CheckCommand {
  CommandOptions options;
  std::string trace;
  std::optional<uint32_t> bound;
  bool naive = false;
  uint64_t runs = 3000;
  bool runs_given = false;
  uint64_t max_runs = 200'000;
  bool max_runs_given = false;
  uint64_t seed = 1;
  std::string save;       // --save-schedule
  std::string perfetto;
  std::string junit;      // --junit: the verdict as a JUnit test case (report.h CheckJunit)
  bool allow_truncated = false;
  // --threads K: first a certificate over every K-thread sub-program (search/certificate.h),
  // each symmetry class searched by unbounded DPOR within `max_runs` runs; a holds then says
  // what it certified, and the full program's search runs after it.
  std::optional<uint32_t> threads;
  unsigned jobs = 1;      // --jobs: replayers at once (the certificate's classes, the DPOR search's runs)
  // Called as schedules are explored, with the plan it follows; and once after the search.
  std::function<void(uint64_t runs, const char* phase, const CheckPlan& plan)> progress;
  std::function<void()> progress_done;
};
CheckOutput RunCheckCommand(const CheckCommand& command);

// ---- the parts the commands share ----

// A trace read for a command: its programs and the options of its runs.
struct LoadedTrace {
  Program program;
  ReplayOptions options;
  // What the command says after its engine line, on standard error: that the recording holds
  // no synchronization of the program while its calls show an order (--order-from-timing).
  std::string note;
};
// Reads the trace at `path` and checks that the options fit it (a patched recording, a tuner
// class rerace does not model, --patch without the python engine, ...). A truncated trace is
// said first in `out` (in notes under --json); `refuse_truncated` refuses one instead (check).
[[nodiscard]] Result<LoadedTrace> LoadTrace(const std::string& path, const CommandOptions& c,
                                            std::string& out, bool refuse_truncated = false);

// What --engine auto chose for a trace: `note`, the line that says which and why ("" when
// --engine was not auto), and `why`, the reason alone (for an error that cites it).
struct EngineChoice {
  std::string note;
  std::string why;
};

// --engine auto: resolves c.engine to "python" or "model" for the trace at `path`; returns the
// choice, whose note the caller gives after what must come first (a truncated trace's warning)
// and never before an error. `recorded`: --recorded, which only the model follows. A --patch
// the model cannot run is an error.
// NB: may set PYTHONPATH for the engine (and so for the hints).
[[nodiscard]] Result<EngineChoice> ResolveEngine(const std::string& path, CommandOptions& c,
                                                 bool recorded);

// python engine: starts it and says what runs in one note, after `choice` (ResolveEngine's
// note); a start that fails says only its error. The model: says `choice` alone. Returns what
// it said.
[[nodiscard]] Result<std::string> StartEngine(Replayer& replayer, const Notes& notes,
                                              const std::string& choice = "");

// One word as a POSIX shell reads it: as is when plain, else in single quotes.
std::string ShellQuote(const std::string& word);
// The environment that changed what the real-code engine ran: PYTHONPATH, "" for the model.
std::string EngineEnvironment(const CommandOptions& c);
// "rerace replay TRACE" with every option that changes a run, quoted as a shell reads it; the
// caller adds how the schedule is chosen.
std::string ReplayCommandLine(const std::string& trace, const CommandOptions& c);
// The same, replaying seed `seed` of the strategy.
std::string SeedCommandLine(const std::string& trace, const CommandOptions& c, uint64_t seed);
// --only's text ("1,3") as thread indices, ascending; an error (exit 64) names what is wrong.
[[nodiscard]] Result<std::vector<uint32_t>> ParseOnly(const std::string& text);
// "fix 'lock-run'", "patch my_lock.py (sha256 1a2b3c4d)": what was checked (checked.h).
std::string CheckedLabel(const CommandOptions& c);

// Refuses an output (flag, path) that names one of the inputs (or a --patch file).
[[nodiscard]] Result<void> RefuseOutputsAreInputs(
    const std::vector<std::pair<std::string, std::string>>& outputs, std::vector<std::string> inputs,
    const CommandOptions& c);

// The `# key: value` lines at the top of a schedule file.
std::map<std::string, std::string> ScheduleHeader(const std::string& path);
// A schedule replays only under the fix, model, reps and step bound it was made with: takes
// them from its header where the options were not given; refuses a given one that differs.
[[nodiscard]] Result<void> ApplyScheduleHeader(const std::string& path, CommandOptions& c);
// A schedule header's "patches": each --patch file's name and full content hash.
std::string PatchesHeader(const CommandOptions& c);
// The file names of a "patches" header, in order, without their hashes.
std::vector<std::string> PatchNames(const std::string& header);
// Saves r's schedule with the header that replays it. `seed`: only for a schedule a seeded
// strategy made. `failure`: the finding it is saved for, as "code at where".
[[nodiscard]] Result<void> SaveSchedule(const ReplayResult& r, const std::string& path,
                                        const std::string& trace, const CommandOptions& c,
                                        std::optional<uint64_t> seed, const std::string& failure);
// --failure KIND: the first finding of that kind moves to the front of r.findings.
void LeadWith(ReplayResult& r, const std::string& kind);
// "code at where", or "none".
std::string FailureOf(const Finding* f);

// File-name stems for the traces of one command, one per trace and all different: a/x.rrt and
// b/x.rrt are "x.1" and "x.2" (their positions), a trace whose stem is unique keeps it ("x").
std::vector<std::string> UniqueStems(const std::vector<std::string>& paths);

}  // namespace rerace::replay
