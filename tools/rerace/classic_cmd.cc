// tools/rerace/classic_cmd.cc: `rerace classic`, the scheduler's self-demonstration on the
// corpus of classic concurrency bugs: find a failure with a strategy, save its schedule,
// replay it from the schedule alone.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <limits>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "flags.h"
#include "rerace/base/result.h"
#include "rerace/replay/command/command.h"
#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/schedule.h"
#include "rerace/sim/scheduler.h"
#include "rerace/sim/strategy.h"

namespace rerace::tools {

int ReportError(const Error& e) {
  std::fprintf(stderr, "rerace: error: %s\n", e.message.c_str());
  return e.exit_code;
}

namespace {
struct ClassicArgs {
  std::string bug;
  bool list = false;
  sim::StrategySpec strategy;
  uint64_t seed = 1;
  uint64_t runs = 1;
  uint64_t max_steps = 100'000;
  std::string schedule_in;
  std::string schedule_out;
};

int RunClassic(const ClassicArgs& a) {
  if (a.list || a.bug.empty()) {
    for (const auto& b : sim::ClassicBugs())
      std::printf("%-16s depth %u  %s\n", std::string(b.name).c_str(), b.depth,
                  std::string(b.description).c_str());
    return a.list ? kExitOk : ReportError({"no bug named: give one of the names above", kExitUsage});
  }
  const sim::ClassicBug* bug = sim::FindClassicBug(a.bug);
  if (bug == nullptr) {
    std::string names;
    for (const auto& b : sim::ClassicBugs()) names += (names.empty() ? "" : ", ") + std::string(b.name);
    return ReportError({fmt::format("unknown bug '{}': expected one of {}", a.bug, names), kExitUsage});
  }
  sim::Scheduler::Options opts;
  opts.max_steps = a.max_steps;

  if (!a.schedule_in.empty()) {
    auto s = sim::Schedule::Load(a.schedule_in);
    if (!s) return ReportError(s.error());
    sim::ScheduleReplay strategy(std::move(*s));
    sim::Scheduler sched(strategy, opts);
    bug->build(sched);
    sim::RunResult r = sched.Run();
    std::printf("%s: replaying %s\n%s", std::string(bug->name).c_str(), a.schedule_in.c_str(),
                r.Report().c_str());
    return r.failed() ? kExitFound : kExitOk;
  }

  for (uint64_t i = 0; i < a.runs; ++i) {
    const uint64_t seed = a.seed + i;
    auto strategy = sim::MakeStrategy(a.strategy, seed);
    if (!strategy) return ReportError(strategy.error());
    sim::Scheduler sched(**strategy, opts);
    bug->build(sched);
    sim::RunResult r = sched.Run();
    if (!r.failed()) continue;
    std::printf("%s: found by %s in run %llu of %llu\n%s", std::string(bug->name).c_str(),
                (*strategy)->Name().c_str(), static_cast<unsigned long long>(i + 1),
                static_cast<unsigned long long>(a.runs), r.Report().c_str());
    if (!a.schedule_out.empty()) {
      auto saved = r.schedule.Save(a.schedule_out, {{"bug", std::string(bug->name)},
                                                    {"strategy", (*strategy)->Name()},
                                                    {"failure", r.failure->message}});
      if (!saved) return ReportError(saved.error());
      std::printf("schedule saved to %s: replay it with: %s classic %s --schedule %s\n",
                  a.schedule_out.c_str(), QuotedProgram().c_str(), std::string(bug->name).c_str(),
                  replay::ShellQuote(a.schedule_out).c_str());
    }
    return kExitFound;
  }
  std::printf("%s: no failure in %llu runs of %s from seed %llu\n", std::string(bug->name).c_str(),
              static_cast<unsigned long long>(a.runs), a.strategy.name.c_str(),
              static_cast<unsigned long long>(a.seed));
  return kExitOk;
}
}  // namespace

void RegisterClassic(CLI::App& app, CommandTable& table) {
  auto args = std::make_shared<ClassicArgs>();
  CLI::App* sub = app.add_subcommand(
      "classic",
      "Run a classic concurrency bug from the built-in corpus under a strategy, or replay it "
      "from a saved schedule (exit 1 when the bug shows)");
  sub->add_option("bug", args->bug, "Bug name (see --list)");
  sub->add_flag("--list", args->list, "List the corpus");
  sub->add_option("--strategy", args->strategy.name, "One of " + fmt::format("{}", fmt::join(sim::StrategyNames(), ", ")) +
                      " (docs/MODEL.md, Exploring)")
      ->default_val("random");
  sub->add_option("--seed", args->seed, "Seed of the first run; run i uses seed + i")
      ->default_val(1)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  sub->add_option("--runs", args->runs, "Runs to try before giving up")
      ->default_val(1)
      ->check(flags::Count(1, flags::kMaxRuns));
  sub->add_option("--pct-depth", args->strategy.pct_depth, "PCT bug depth d")
      ->default_val(3)
      ->check(flags::Count(1, sim::kMaxPctDepth));
  sub->add_option("--pct-steps", args->strategy.pct_steps, "PCT expected steps k")
      ->default_val(100)
      ->check(flags::Count(1, flags::kMaxSteps));
  sub->add_option("--quantum", args->strategy.rr_quantum, "Round-robin steps per turn")
      ->default_val(1)
      ->check(flags::Count(1, 1'000'000));
  sub->add_option("--max-steps", args->max_steps, "Step bound of one run")
      ->default_val(100000)
      ->check(flags::Count(1, flags::kMaxSteps));
  sub->add_option("--schedule", args->schedule_in, "Replay this saved schedule (ignores --seed)")
      ->check(flags::FileName());
  sub->add_option("--save-schedule", args->schedule_out, "Save the failing run's schedule here")
      ->check(flags::FileName());
  table.Add(sub, [args] { return RunClassic(*args); });
}

}  // namespace rerace::tools
