// tools/rerace/fuzz_cmd.cc: `rerace fuzz`: its flags, then replay::RunFuzzCommand
// (rerace/replay/command/command.h) and what it returns, printed; the progress line on a terminal.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>

#include "flags.h"
#include "replay_flags.h"
#include "rerace/replay/command/command.h"

namespace rerace::tools {

namespace {

struct FuzzArgs {
  CommonFlags flags;
  replay::FuzzCommand command;
  std::string time;  // --time
};

}  // namespace

void RegisterFuzz(CLI::App& app, CommandTable& table) {
  auto fa = std::make_shared<FuzzArgs>();
  replay::FuzzCommand& cmd = fa->command;
  CLI::App* f = app.add_subcommand(
      "fuzz", "Replay traces under many seeds; report each distinct failure once, with its seed "
              "and schedule (exit 1 when any fails)");
  f->add_option("traces", cmd.traces, "Trace files")->required();
  auto* runs = f->add_option("--runs", cmd.runs, "Runs per trace (1000; 100 for a trace the python engine runs, unless given); with "
                             "--shard, runs of this shard (N shards of --runs R cover N*R seeds)")
                   ->default_val(1000)
                   ->check(flags::Count(1, flags::kMaxRuns));
  auto* time = f->add_option("--time", fa->time, "Time budget instead of --runs (90s, 10m, 1h)")
                   ->check(flags::Duration());
  runs->excludes(time);
  f->add_option("--seed", cmd.seed, "First seed; run i uses seed + i")
      ->default_val(1)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  f->add_option("--save-failures", cmd.save_dir, "Folder for one schedule file per distinct failure")
      ->check(flags::FileName());
  f->add_option("--junit", cmd.junit, "Write a JUnit XML report (one case per trace and fix, one per distinct failure)")
      ->check(flags::FileName());
  f->add_option("--shard", cmd.shard,
                "Run only shard K of N (K/N): run i of the campaign belongs to shard i mod N, so N jobs "
                "cover the seeds once. 'auto' reads K from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID "
                "and N from SLURM_ARRAY_TASK_COUNT or RERACE_SHARDS ('auto/N' gives N)")
      ->check(flags::ShardSpec());
  f->add_option("--jobs", cmd.jobs,
                "Worker threads, each running its share of the seeds; the report is the one a "
                "single job gives for the same seeds (0: the cores available). With the python "
                "engine each job runs a Python process of its own")
      ->default_val(0)
      ->check(flags::Count(0, 4096));
  f->add_flag("--fork-every-run", cmd.fork_every_run,
              "Python engine: run every schedule in a fresh fork of the engine's process, as check "
              "does. By default the runs share one process that puts back between runs what a "
              "run changed (about twice as fast), and each failing run is run again in a fresh "
              "fork: only what that run finds is counted and reported");
  AddCommonFlags(f, fa->flags, true);
  table.Add(f, [fa, runs] {
    replay::FuzzCommand command = fa->command;
    command.runs_given = runs->count() > 0;
    command.options = ParsedOptions(fa->flags);
    // Checked by flags::Duration() when parsed.
    auto seconds = fa->time.empty() ? Result<double>(0.0) : flags::ParseDuration(fa->time);
    if (!seconds) return ReportError(seconds.error());
    command.seconds = *seconds;
    if (ShowProgress(command.options)) {
      const auto start = std::chrono::steady_clock::now();
      command.progress = [start, budget = command.seconds](const std::string& trace,
                                                            const replay::CampaignProgress& p) {
        const uint64_t planned = p.planned;
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double rate = static_cast<double>(p.runs) / std::max(elapsed, 1e-9);
        const double left = budget > 0 ? budget - elapsed
                                       : (static_cast<double>(planned) - static_cast<double>(p.runs)) / std::max(rate, 1e-9);
        std::fprintf(stderr, "\r%s: %llu runs (%.0f/s), %llu failing, %llu distinct, %.0f s left   ",
                     trace.c_str(), static_cast<unsigned long long>(p.runs), rate,
                     static_cast<unsigned long long>(p.failing),
                     static_cast<unsigned long long>(p.distinct), std::max(left, 0.0));
      };
      command.progress_done = [] { std::fprintf(stderr, "\r\033[K"); };
    }
    return PrintOutput(replay::RunFuzzCommand(command));
  });
}

}  // namespace rerace::tools
