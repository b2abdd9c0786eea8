// replay/command/src/replay_command.cc: `rerace replay`, one run of a trace under a seeded strategy, a
// saved schedule or the recorded interleaving (see rerace/replay/command/command.h).
#include <fmt/format.h>

#include <map>
#include <memory>
#include <optional>

#include "command_output.h"
#include "rerace/base/output_file.h"
#include "rerace/replay/search/check.h"
#include "rerace/replay/command/command.h"
#include "rerace/replay/report/recorded.h"
#include "rerace/replay/report/fuzz_report.h"
#include "rerace/replay/report/timeline.h"
#include "rerace/sim/schedule.h"
#include "rerace/sim/strategy.h"
#include "rerace/replay/model/text.h"

namespace rerace::replay {

using detail::Done;
using detail::Fail;
using detail::Flush;
using detail::Sprintf;

namespace {

// `text` without its "(sha256 ...)" parts: what names the same patch files, edited or not.
std::string WithoutHashes(std::string text) {
  for (size_t at; (at = text.find(" (sha256 ")) != std::string::npos;) {
    const size_t close = text.find(')', at);
    if (close == std::string::npos) break;
    text.erase(at, close + 1 - at);
  }
  return text;
}


// PCT needs k, the steps of a run, and SURW each thread's steps: measured once per trace.
using Probe = StepShape;

Result<std::unique_ptr<sim::Strategy>> StrategyFor(const sim::StrategySpec& spec, uint64_t seed,
                                                   Replayer& r, std::optional<Probe>* probe) {
  sim::StrategySpec s = spec;
  if (s.name == "pct" || s.name == "surw" || s.name == "portfolio") {
    if (!probe->has_value()) *probe = MeasureShape(r);
    s.pct_steps = (*probe)->steps;
    s.surw_steps = (*probe)->per_thread;
  }
  return sim::MakeStrategy(s, seed);
}

}  // namespace

ReplayOutput RunReplayCommand(const ReplayCommand& a) {
  std::string out;
  if (a.schedule_given && a.schedule.empty())
    return Fail(out, Error{"--schedule: '' names no file and no schedule", kExitUsage});
  if (auto same = RefuseOutputsAreInputs({{"--perfetto", a.perfetto}, {"--save-schedule", a.save}},
                                         {a.trace, a.schedule}, a.options);
      !same)
    return Fail(out, same.error());
  CommandOptions c = a.options;
  // --schedule takes a file, or the schedule line itself ("rs1:...", as check prints it); read
  // before anything starts, so that a bad one is the only thing said.
  const bool inline_schedule = a.schedule.rfind(std::string(sim::kScheduleFormat) + ":", 0) == 0;
  std::optional<sim::Schedule> schedule;
  if (!a.schedule.empty()) {
    auto s = inline_schedule ? sim::Schedule::Parse(a.schedule, "--schedule")
                             : sim::Schedule::Load(a.schedule);
    if (!s) return Fail(out, s.error());
    schedule = std::move(*s);
  }
  const bool engine_auto = c.engine == "auto";
  if (!a.schedule.empty() && !inline_schedule)
    if (auto h = ApplyScheduleHeader(a.schedule, c); !h) return Fail(out, h.error());
  // A schedule the real-code engine made: --engine auto finds the Python that runs it.
  const bool made_by_engine = engine_auto && c.engine == "python";
  if (made_by_engine && !c.python_exe_given) c.engine = "auto";
  auto engine_choice = ResolveEngine(a.trace, c, a.recorded);
  if (!engine_choice) return Fail(out, engine_choice.error());
  if (made_by_engine && c.engine != "python")
    return Fail(out, Error{fmt::format("{} was made by the real-code engine, which --engine auto "
                                         "did not choose for {} ({}): a schedule replays only "
                                         "under what made it; give --engine python --python-exe PY",
                                         a.schedule, a.trace, engine_choice->why),
                             kExitUsage});
  if (a.recorded && c.engine == "python")
    return Fail(out, Error{"--recorded follows the recorded order with the C++ tuner models; the "
                             "python engine runs the real code under its own switch points and "
                             "cannot follow it: drop --engine python, or replay a seed or a "
                             "schedule with it",
                             kExitUsage});
  auto l = LoadTrace(a.trace, c, out);
  if (!l) return Fail(out, l.error());
  Flush(out, c);
  Replayer rep(l->program, l->options);
  if (auto e = StartEngine(rep, c.notes, engine_choice->note + l->note); !e) return Fail(out, e.error());
  if (!a.schedule.empty() && !inline_schedule) {
    // A schedule of the real code replays only under the interpreter, mode, Triton and patches
    // that made it: the scheduling points are theirs.
    const auto header = ScheduleHeader(a.schedule);
    const auto it = header.find("engine");
    const std::string now = rep.EngineSummary();
    // Patch files edited since (their hashes alone differ) are the patches check's below.
    const bool hashes_only = it != header.end() && it->second != now &&
                             WithoutHashes(it->second) == WithoutHashes(now);
    if (it != header.end() && it->second != now && !(hashes_only && a.allow_changed_patch))
      return Fail(out, Error{fmt::format("{} was made with the engine '{}'; this run would use "
                                           "'{}': a schedule replays only under what made it{}",
                                           a.schedule, it->second, now,
                                           hashes_only ? " (the same patch files, changed since: "
                                                         "--allow-changed-patch replays it anyway)"
                                                       : ""),
                               kExitUsage});
    const auto patches = header.find("patches");
    const std::string given = PatchesHeader(c);
    if (patches != header.end() && patches->second != given) {
      // The same files by name, edited since: replayed under --allow-changed-patch, said.
      const bool same_names = PatchNames(patches->second) == PatchNames(given);
      if (!(same_names && a.allow_changed_patch))
        return Fail(out, Error{fmt::format("{} was made with the patches {}; this run has {}: a "
                                             "schedule replays only under the patches that made "
                                             "it{}",
                                             a.schedule, patches->second,
                                             given.empty() ? "none" : given,
                                             same_names ? " (the same patch files, changed since: "
                                                          "--allow-changed-patch replays it "
                                                          "anyway)"
                                                        : ""),
                                 kExitUsage});
      c.notes(Sprintf("warning: %s was made with the patches %s; their content has changed "
                      "since (%s): replayed anyway (--allow-changed-patch), and a schedule "
                      "divergence is the change's\n",
                      a.schedule.c_str(), patches->second.c_str(), given.c_str()));
    }
    // The same Triton version can come from other module files: PYTHONPATH is said, both ways.
    const auto pp = header.find("pythonpath");
    if (c.engine == "python" && pp != header.end() && pp->second != EngineEnvironment(c))
      c.notes(Sprintf("warning: %s was made with PYTHONPATH=%s; this run has PYTHONPATH=%s (the "
                      "engine, Triton and patches match: '%s'; modules found on the path may not)\n",
                      a.schedule.c_str(), ShellQuote(pp->second).c_str(),
                      ShellQuote(EngineEnvironment(c)).c_str(), now.c_str()));
  }
  ReplayResult r;
  std::string how;
  std::optional<replay::StepLog> log;
  auto wrap = [&](sim::Strategy& s) -> sim::Strategy& {
    if (a.perfetto.empty()) return s;
    log.emplace(s);
    return *log;
  };
  std::optional<uint64_t> seed;
  if (a.recorded) {
    r = rep.RunRecorded(wrap);
    how = "recorded";
  } else if (!a.schedule.empty()) {
    sim::ScheduleReplay strategy(std::move(*schedule));
    r = rep.Run(wrap(strategy));
    how = inline_schedule ? "the schedule given" : "schedule " + a.schedule;
  } else {
    std::optional<Probe> k;
    auto strategy = StrategyFor(c.strategy, a.seed, rep, &k);
    if (!strategy) return Fail(out, strategy.error());
    r = rep.Run(wrap(**strategy));
    how = fmt::format("seed {}", a.seed);
    seed = a.seed;
  }
  if (auto e = RunError(r)) {
    Error err = *e;
    err.message = fmt::format("replay {} ({}): {}", a.trace, how, err.message);
    return Fail(out, err);
  }
  if (log) {
    if (auto w = WriteOutput(a.perfetto, replay::ReplayTimeline(r, log->steps())); !w)
      return Fail(out, w.error());
  }
  const Finding* target = FirstOf(r, c.failure);
  std::string hint;
  if (!a.save.empty()) {
    if (auto s = SaveSchedule(r, a.save, a.trace, c, seed, FailureOf(target)); !s)
      return Fail(out, s.error());
    hint = fmt::format("schedule saved: replay it with: {} --schedule {}", ReplayCommandLine(a.trace, c),
                       ShellQuote(a.save));
  } else if (r.failed() && seed) {
    hint = fmt::format("replay it (add --save-schedule FILE to keep the schedule): {}",
                       SeedCommandLine(a.trace, c, *seed));
  }
  const bool hit = target != nullptr;
  LeadWith(r, c.failure);
  std::optional<replay::RecordedComparison> compared;
  if (a.recorded) compared = replay::CompareRecorded(r, l->program);
  if (c.json) {
    // FormatJson's object, opened by the header and with the comparison to the recording
    // (--recorded; null without it) before its closing brace.
    std::string json = JsonHeader("replay") + FormatJson(r, l->program, c.races).substr(1);
    json.insert(json.size() - 1,
                compared ? fmt::format(",\"left_recording\":{},\"recorded_comparison\":{}",
                                       r.left_recording, replay::RecordedComparisonJson(*compared))
                         : std::string(",\"left_recording\":null,\"recorded_comparison\":null"));
    out += Sprintf("%s\n", json.c_str());
  } else {
    if (!c.failure.empty())
      out += Sprintf("%s\n", hit ? fmt::format("--failure {}: found at step {}; listed first", c.failure,
                                               r.findings.front().step)
                                              .c_str()
                                  : fmt::format("--failure {}: not in this schedule", c.failure).c_str());
    out += ColourReport(FormatReport(r, l->program, hint), c.colour);
    if (c.races) out += FormatRaces(r.races, r.findings);
    if (compared) out += replay::FormatRecordedComparison(*compared);
  }
  ReplayOutput done = Done(out, r.failed() ? kExitFound : kExitOk);
  done.findings = r.findings;
  done.schedule = r.run.schedule.Encode();
  return done;
}

}  // namespace rerace::replay
