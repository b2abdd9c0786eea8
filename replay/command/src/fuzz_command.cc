// replay/command/src/fuzz_command.cc: `rerace fuzz`, a campaign of seeded runs per trace, each distinct
// failure listed once by harm with the command line that replays it (see
// rerace/replay/command/command.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "command_output.h"
#include "rerace/base/output_file.h"
#include "rerace/replay/search/campaign.h"
#include "rerace/replay/report/checked.h"
#include "rerace/replay/command/command.h"
#include "rerace/replay/report/fuzz_report.h"
#include "rerace/replay/search/shard.h"
#include "rerace/replay/search/shrink.h"
#include "rerace/replay/model/text.h"

namespace rerace::replay {

using detail::Done;
using detail::Fail;
using detail::Flush;
using detail::Sprintf;

namespace {

// `text`'s second and later lines indented by `indent` (its first line follows a prefix).
std::string Indented(const std::string& text, const std::string& indent) {
  std::string out;
  size_t pos = 0;
  for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    size_t from = nl + 1;
    while (from < text.size() && text[from] == ' ') ++from;  // the words' own indent
    out += text.substr(pos, nl + 1 - pos) + indent;
    nl = from - 1;
  }
  return out + text.substr(pos);
}

}  // namespace

FuzzOutput RunFuzzCommand(const FuzzCommand& command) {
  std::string out;
  FuzzCommand a = command;
  if (auto same = RefuseOutputsAreInputs({{"--junit", a.junit}}, a.traces, a.options); !same)
    return Fail(out, same.error());
  auto shard = ParseShard(a.shard);
  if (!shard) return Fail(out, shard.error());
  if (!a.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.save_dir, ec);
    if (ec)
      return Fail(out, {fmt::format("{}: cannot create the folder: {}", a.save_dir, ec.message()),
                          kExitIoError});
  }
  const bool progress = static_cast<bool>(a.progress);
  const auto start = std::chrono::steady_clock::now();
  std::vector<FuzzTrace> all;
  bool any = false;
  std::optional<Error> error;  // the first trace that could not be fuzzed
  const std::vector<std::string> stems = UniqueStems(a.traces);
  const char* pp = std::getenv("PYTHONPATH");
  const std::optional<std::string> pythonpath = pp ? std::optional<std::string>(pp) : std::nullopt;
  for (const std::string& path : a.traces) {
    const std::string& stem = stems[static_cast<size_t>(&path - a.traces.data())];
    const auto trace_start = std::chrono::steady_clock::now();  // JUnit's time of this trace
    auto trace_seconds = [&trace_start] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - trace_start).count();
    };
    // --engine auto chooses per trace, each from the environment the command started in.
    if (pythonpath) setenv("PYTHONPATH", pythonpath->c_str(), 1);
    else unsetenv("PYTHONPATH");
    CommandOptions o = command.options;
    // One trace that cannot be fuzzed (corrupt, missing, an engine that does not start) among
    // several: its error is a result of its own, and the others' results are kept.
    auto skip = [&](const Error& e) -> bool {
      if (a.traces.size() < 2) return false;
      FuzzTrace bad;
      bad.trace = path;
      bad.fix = o.fix;
      bad.engine = o.engine == "python" ? "python" : "model";
      bad.strategy = o.strategy.name;
      bad.error = e.message;
      bad.error_code = e.exit_code;
      bad.seconds = trace_seconds();
      if (!o.json) out += Sprintf("fuzz %s: error: %s\n", path.c_str(), e.message.c_str());
      if (!error) error = e;
      all.push_back(std::move(bad));
      Flush(out, o);
      return true;
    };
    auto engine_choice = ResolveEngine(path, o, false);
    if (!engine_choice) {
      if (skip(engine_choice.error())) continue;
      return Fail(out, engine_choice.error());
    }
    auto l = LoadTrace(path, o, out);
    if (!l) {
      if (skip(l.error())) continue;
      return Fail(out, l.error());
    }
    Flush(out, o);
    Replayer rep(l->program, l->options);
    if (auto e = StartEngine(rep, o.notes, engine_choice->note + l->note); !e) {
      if (skip(e.error())) continue;
      return Fail(out, e.error());
    }
    FuzzTrace ft;
    ft.trace = path;
    ft.fix = o.fix;
    ft.model = rep.ModelName();
    ft.engine = o.engine;
    for (const PatchId& p : IdentifyPatches(o.patches)) ft.patches.emplace_back(p.name, p.sha256);
    ft.strategy = o.strategy.name;
    // Seeds: run i of this shard is global run shard.index + i * shard.count; the runs are
    // shared out over --jobs threads and merged as one job gives them (replay/campaign.h).
    CampaignOptions co;
    co.strategy = o.strategy;
    co.first_seed = a.seed;
    co.offset = shard->index;
    co.stride = shard->count;
    co.runs = a.runs_given || o.engine != "python" ? a.runs : kEngineFuzzRuns;
    co.seconds = a.seconds;
    co.start = start;  // the budget is the command's, over all its traces
    co.target = o.failure;
    co.races = o.races;
    co.in_process = o.engine == "python" && !a.fork_every_run;
    co.jobs = a.jobs == 0 ? AvailableCores() : a.jobs;
    auto campaign = RunCampaign(rep, co, [&](const CampaignProgress& p) {
      if (progress) a.progress(path, p);
    });
    if (!campaign) return Fail(out, campaign.error());
    if (campaign->error) {
      Error err = *campaign->error;
      err.message = fmt::format("fuzz {} seed {}: {} (replay it with: {})", path, campaign->error_seed,
                                err.message, SeedCommandLine(path, o, campaign->error_seed));
      return Fail(out, err);
    }
    ft.runs = campaign->runs;
    ft.failing = campaign->failing;
    ft.in_process = campaign->in_process;
    ft.unconfirmed = campaign->unconfirmed;
    const std::vector<sim::Race>& races = campaign->races;
    const std::vector<Finding>& campaign_findings = campaign->findings;
    std::map<std::string, const ReplayResult*> kept;  // signature → its shrunk run
    for (const CampaignFailure& c : campaign->failures) {
      const Finding& f = c.finding;
      const Shrunk& sh = c.shrunk;
      FuzzFailure x;
      x.signature = c.signature;
      x.seed = c.seed;
      // Shrunk towards this failure being the run's first, so that its schedule file
      // replays to what the listing says (docs/MODEL.md: shrunk before reported or saved).
      x.schedule = sh.result.run.schedule.Encode();
      // As its replay hint will show it: the saved (shrunk) schedule when there is one and
      // it fails first with it, else the seed's run.
      // A saved schedule that fails first with another failure still has this one later: the
      // listing names where it happens there (the thread can differ from the seed's run).
      const Finding* in_saved = nullptr;
      if (!a.save_dir.empty())
        for (const Finding& g : sh.result.findings)
          if (in_saved == nullptr && g.code == f.code && g.where == f.where) in_saved = &g;
      const Finding& shown = !a.save_dir.empty() && sh.first_matches ? sh.result.findings.front()
                             : in_saved != nullptr                   ? *in_saved
                                                                     : f;
      x.thread_name = shown.thread_name;
      x.type = shown.type;
      x.message = shown.message;
      x.words = shown.words;
      x.silent = shown.silent;
      x.first = c.first;
      if (!sh.first_matches && !sh.result.findings.empty()) {
        const Finding& first = sh.result.findings.front();
        x.note = fmt::format("this schedule fails first with {} at step {}; this failure "
                             "follows at step {}",
                             first.code, first.step, f.step);
      }
      kept[c.signature] = &sh.result;
      ft.failures.push_back(std::move(x));
    }
    if (progress && a.progress_done) a.progress_done();
    const auto unshrunk = std::count_if(campaign->failures.begin(), campaign->failures.end(),
                                        [](const CampaignFailure& c) { return c.shrunk.stopped; });
    if (unshrunk > 0)
      o.notes(fmt::format("note: {}: {} of {} distinct failures were not shrunk: the --time budget "
                          "ran out (their schedules are their seeds' runs)\n",
                          path, unshrunk, campaign->failures.size()));
    any |= !ft.failures.empty();
    // Listed by harm (docs/MODEL.md: silent corruption, crashes, deadlocks, the step bound),
    // then by signature; the files are numbered as listed.
    std::sort(ft.failures.begin(), ft.failures.end(), FailureBefore);
    if (!a.save_dir.empty()) {
      size_t n = 0;
      for (FuzzFailure& x : ft.failures) {
        x.schedule_file = fmt::format("{}/{}-{}-{}.sched", a.save_dir, stem,
                                      CheckedFileTag(o.fix, IdentifyPatches(o.patches)), ++n);
        const ReplayResult& keep = *kept.at(x.signature);
        if (auto s = SaveSchedule(keep, x.schedule_file, path, o, std::nullopt,
                                  x.signature + (x.note.empty() ? "" : " (" + x.note + ")"));
            !s)
          return Fail(out, s.error());
      }
    }
    if (o.races) ft.races_json = RacesJson(races);
    if (!o.json) {
      out += Sprintf("fuzz %s (%s %s, %s, strategy %s%s%s): %llu runs, %llu failing, %zu distinct "
                  "failure(s)\n",
                  path.c_str(), ft.engine == "python" ? "engine" : "model",
                  ft.engine == "python" ? "python" : ft.model.c_str(), ft.Checked().c_str(),
                  o.strategy.name.c_str(),
                  o.failure.empty() ? "" : (", failure " + o.failure).c_str(),
                  a.shard.empty() ? "" : fmt::format(", shard {}/{}", shard->index, shard->count).c_str(),
                  static_cast<unsigned long long>(ft.runs), static_cast<unsigned long long>(ft.failing),
                  ft.failures.size());
      if (campaign->in_process > 0)
        out += Sprintf("  %llu runs in one process, reset between runs; each failing run was "
                       "confirmed by running its schedule again in a fresh process%s\n",
                       static_cast<unsigned long long>(campaign->in_process),
                       campaign->unconfirmed == 0
                           ? ""
                           : fmt::format(" ({} of them found otherwise there: the reset missed "
                                         "some state; that run is the one counted)",
                                         campaign->unconfirmed)
                                 .c_str());
      size_t n = 0;
      for (const FuzzFailure& f : ft.failures) {
        // A deadlock has no thread of its own: its words say what each thread waits for. The
        // label is what its replay shows: a saved (shrunk) schedule, found by a seed.
        out += Sprintf("  [%zu] %s: %s, %s%s %llu%s\n", ++n, f.signature.c_str(),
                    f.silent ? "silent corruption" : (f.type + ": " + f.message).c_str(),
                    f.thread_name.empty() ? "found" : ("first in " + f.thread_name).c_str(),
                    f.schedule_file.empty() ? " with seed" : " in its saved schedule (found with seed",
                    static_cast<unsigned long long>(f.seed), f.schedule_file.empty() ? "" : ")");
        if (!f.words.empty()) out += Sprintf("      %s\n", Indented(f.words, "      ").c_str());
        if (!f.note.empty() && !f.schedule_file.empty()) out += Sprintf("      note: %s\n", f.note.c_str());
        // A failure that is not its schedule's first: --failure makes the replay lead with it.
        CommandOptions hc = o;
        const bool leads = f.schedule_file.empty() ? f.first : f.note.empty();
        if (!leads) {
          const size_t sp = f.signature.find(" at ");
          hc.failure = sp == std::string::npos ? f.signature
                                               : f.signature.substr(0, sp) + "@" + f.signature.substr(sp + 4);
        }
        if (!f.schedule_file.empty())
          out += Sprintf("      replay: %s --schedule %s\n", ReplayCommandLine(path, hc).c_str(),
                      ShellQuote(f.schedule_file).c_str());
        else
          out += Sprintf("      replay: %s\n", SeedCommandLine(path, hc, f.seed).c_str());
      }
    }
    if (o.races && !o.json) out += FormatRaces(races, campaign_findings);
    ft.seconds = trace_seconds();
    all.push_back(std::move(ft));
    Flush(out, o);
  }
  const std::string shard_text = a.shard.empty() ? "" : fmt::format("{}/{}", shard->index, shard->count);
  if (a.options.json) out += Sprintf("%s\n", FuzzJson(all, shard_text).c_str());
  if (!a.junit.empty())
    if (auto w = WriteOutput(a.junit, FuzzJunit(all, ShellQuote(command.options.program))); !w) return Fail(out, w.error());
  if (error) {
    // The others' results are out (text, JSON, JUnit); the command still ends in the error.
    Error e = *error;
    e.message = fmt::format("{} of {} traces could not be fuzzed; the first: {}",
                            std::count_if(all.begin(), all.end(),
                                          [](const FuzzTrace& t) { return !t.error.empty(); }),
                            all.size(), e.message);
    FuzzOutput failed = Fail(out, e);
    failed.traces = std::move(all);
    return failed;
  }
  FuzzOutput done = Done(out, any ? kExitFound : kExitOk);
  done.traces = std::move(all);
  return done;
}

}  // namespace rerace::replay
