// tools/rerace/replay_cmd.cc: `rerace replay`: its flags, then replay::RunReplayCommand
// (rerace/replay/command/command.h) and what it returns, printed.
#include <CLI/CLI.hpp>
#include <limits>
#include <memory>

#include "flags.h"
#include "replay_flags.h"
#include "rerace/replay/command/command.h"

namespace rerace::tools {

namespace {

struct ReplayArgs {
  CommonFlags flags;
  replay::ReplayCommand command;
};

}  // namespace

void RegisterReplay(CLI::App& app, CommandTable& table) {
  auto ra = std::make_shared<ReplayArgs>();
  replay::ReplayCommand& cmd = ra->command;
  CLI::App* r = app.add_subcommand(
      "replay", "Replay a trace once: under a seeded strategy, a saved schedule, or the recorded "
                "interleaving (exit 1 when it fails)");
  r->add_option("trace", cmd.trace, "Trace file")->required();
  auto* seed = r->add_option("--seed", cmd.seed, "Seed of the strategy")
                   ->default_val(1)
                   ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  auto* sched = r->add_option("--schedule", cmd.schedule,
                              "Replay a saved schedule (no seed needed): a file written by "
                              "--save-schedule (its header gives the fix, model and reps), or the "
                              "schedule line itself (rs1:..., as check prints it)");
  auto* rec = r->add_flag("--recorded", cmd.recorded,
                          "Replay the recorded interleaving: reproduce what happened on the GPU");
  sched->excludes(rec);
  rec->excludes(sched);
  r->add_flag("--allow-changed-patch", cmd.allow_changed_patch,
              "Replay a schedule file made with --patch files of the same names whose content "
              "has changed since (an edit, a comment), saying what changed; without it such a "
              "schedule is refused")
      ->needs(sched);
  (void)seed;
  r->add_option("--save-schedule", cmd.save, "Save this run's schedule to a file")
      ->check(flags::FileName());
  r->add_option("--perfetto", cmd.perfetto,
                "Write the run as a timeline for ui.perfetto.dev / chrome://tracing (1 us = 1 step)")
      ->check(flags::FileName());
  AddCommonFlags(r, ra->flags, true);
  table.Add(r, [ra, sched] {
    replay::ReplayCommand command = ra->command;
    command.schedule_given = sched->count() > 0;
    command.options = ParsedOptions(ra->flags);
    return PrintOutput(replay::RunReplayCommand(command));
  });
}

}  // namespace rerace::tools
