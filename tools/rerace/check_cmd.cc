// tools/rerace/check_cmd.cc: `rerace check`: its flags, then replay::RunCheckCommand
// (rerace/replay/command/command.h) and what it returns, printed; the progress line on a terminal.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <string_view>

#include "flags.h"
#include "replay_flags.h"
#include "rerace/replay/search/check.h"
#include "rerace/replay/command/command.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/fix.h"

namespace rerace::tools {

namespace {

struct CheckArgs {
  CommonFlags flags;
  replay::CheckCommand command;
  int64_t bound = -1;  // --bound; -1: none
  int64_t threads = -1;  // --threads; -1: none
  CLI::Option* runs_opt = nullptr;
  CLI::Option* max_runs_opt = nullptr;
};

}  // namespace

void RegisterCheck(CLI::App& app, CommandTable& table) {
  auto ca = std::make_shared<CheckArgs>();
  replay::CheckCommand& cmd = ca->command;
  CLI::App* c = app.add_subcommand(
      "check", "Check a fix: a counterexample schedule, or 'holds' with how many schedules were "
               "explored; and the fix's cost in simulated step time (exit 1 when it fails; exit 3, "
               "'inconclusive', when the systematic search stopped at its budget before it was "
               "exhausted: that is never a 'holds')\n"
               "Named fixes:\n" + replay::DescribeFixes());
  c->add_option("trace", cmd.trace, "Trace file")->required();
  ca->runs_opt = c->add_option("--runs", cmd.runs,
                 "Without --bound: schedules sampled after DPOR at bound 1 (random walk, PCT d=2, "
                 "PCT d=3 in turn); with --engine python 100 unless given")
      ->default_val(3000)
      ->check(flags::Count(0, flags::kMaxRuns));
  c->add_option("--seed", cmd.seed, "First seed")
      ->default_val(1)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  auto* bound = c->add_option("--bound", ca->bound,
                "Explore systematically with DPOR (source sets, sleep sets) at a bound of B "
                "preemptions; without it, DPOR at bound 1 (at most 20000 runs) and then --runs "
                "sampled schedules. DPOR under a bound is not every interleaving with at most B "
                "preemptions: the verdict says how many race reversals the bound refused, and "
                "'every interleaving' only when it refused none (--naive runs every schedule "
                "within B). --bound 0 never preempts: it cannot reach a race and gives no verdict")
      ->check(flags::Count(0, 100));
  c->add_flag("--allow-truncated", cmd.allow_truncated,
              "Check a truncated trace (no footer, or cut short): the verdict then covers only the "
              "events recorded before the cut");
  c->add_flag("--naive", cmd.naive, "With --bound: a plain bounded depth-first search (no reduction)")
      ->needs(bound);
  ca->max_runs_opt = c->add_option("--max-runs", cmd.max_runs,
                                   "Stop the systematic search after this many runs (without "
                                   "--bound: 20000, with --engine python 200, unless given)")
      ->default_val(200000)
      ->check(flags::Count(1, flags::kMaxRuns));
  c->add_option("--threads", ca->threads,
                "First certify every interleaving of every sub-program of K of the recorded "
                "worker threads (unbounded DPOR per class of sub-programs that are the same up to "
                "renaming threads; --max-runs runs per class, 1000000 unless given, 20000 with "
                "--engine python): 'holds' then says so, and what the whole program's search got "
                "on top; a sub-program's counterexample replays with --only")
      ->check(flags::Count(1, 64));
  c->add_option("--jobs", cmd.jobs,
                "Search on this many replayers at once: with --threads, the classes (the verdict "
                "and every count are the same for any number); with --engine python, the "
                "systematic search too, on N engines in batches of N runs (the same for the same "
                "N; its run counts can differ from another N's; one that cut no race covers every "
                "interleaving for any N)")
      ->default_val(1)
      ->check(flags::Count(1, 256));
  c->add_option("--save-schedule", cmd.save, "Save the counterexample's schedule here")
      ->check(flags::FileName());
  c->add_option("--perfetto", cmd.perfetto, "Write the counterexample as a Perfetto timeline")
      ->check(flags::FileName());
  c->add_option("--junit", cmd.junit,
                "Write the verdict as a JUnit XML test case: passed for 'holds' (its output says "
                "what the search covered), failure for 'fails', skipped for 'inconclusive'")
      ->check(flags::FileName());
  AddCommonFlags(c, ca->flags, false);
  c->add_option("--price-as", ca->flags.options.price_as,
                "With --patch: price the patch as the model of this fix (a name, names joined by "
                "'+', or a description), which you declare it implements: the verdict stays the "
                "real code's, the cost line says it priced the declaration, not the patch's code")
      ->needs(c->get_option("--patch"));
  table.Add(c, [ca] {
    replay::CheckCommand command = ca->command;
    command.options = ParsedOptions(ca->flags);
    if (!command.options.price_as.empty())
      if (auto f = replay::ParseFix(command.options.price_as); !f)
        return ReportError({"--price-as: " + f.error().message, kExitUsage});
    if (ca->bound >= 0) command.bound = static_cast<uint32_t>(ca->bound);
    if (ca->threads >= 0) command.threads = static_cast<uint32_t>(ca->threads);
    command.runs_given = ca->runs_opt->count() > 0;
    command.max_runs_given = ca->max_runs_opt->count() > 0;
    if (ShowProgress(command.options)) {
      const auto start = std::chrono::steady_clock::now();
      auto last = std::make_shared<std::chrono::steady_clock::time_point>(start);
      command.progress = [start, last, trace = command.trace](uint64_t runs, const char* phase,
                                                              const replay::CheckPlan& plan) {
        const auto now = std::chrono::steady_clock::now();
        if (now - *last < std::chrono::milliseconds(250)) return;
        *last = now;
        const double secs = std::chrono::duration<double>(now - start).count();
        std::fprintf(stderr, "\r\033[K%s",
                     replay::CheckProgressLine(trace, runs, phase, plan, secs).c_str());
      };
      command.progress_done = [] { std::fprintf(stderr, "\r\033[K"); };
    }
    return PrintOutput(replay::RunCheckCommand(command));
  });
}

}  // namespace rerace::tools
