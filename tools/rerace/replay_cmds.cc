// tools/rerace/replay_cmds.cc: `rerace replay`, `rerace fuzz` and `rerace check`.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <limits>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <optional>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <memory>

#include "commands.h"
#include "flags.h"
#include "output.h"
#include "rerace/base/result.h"
#include "rerace/base/utf8.h"
#include "rerace/replay/check.h"
#include "rerace/replay/fix.h"
#include "rerace/replay/program.h"
#include "rerace/replay/replay.h"
#include "rerace/replay/shrink.h"
#include "rerace/replay/timeline.h"
#include "rerace/sim/random.h"
#include "rerace/sim/schedule.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"

namespace rerace::tools {

using namespace rerace::replay;

namespace {

struct Common {
  bool races = false;
  std::string fix = "none";
  std::string model = "auto";
  uint32_t reps = 1;
  uint64_t max_steps = 2'000'000;
  sim::StrategySpec strategy;
  bool json = false;
};

void AddCommon(CLI::App* sub, Common& c, bool with_strategy) {
  sub->add_option("--fix", c.fix,
                  "Fix to apply: a name (" + fmt::format("{}", fmt::join(FixNames(), ", ")) +
                      "), names joined by '+', or a description like 'local=nargs;lock=hooks'")
      ->default_val("none");
  sub->add_option("--model", c.model, "Tuner model: auto (from the trace's tuner class), triton, fla or native (rerace's C++ autotuner)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "triton", "fla", "native"}));
  sub->add_option("--reps", c.reps,
                  "do_bench repetitions executed per config (0: as recorded); fewer steps, same "
                  "failures")
      ->default_val(1)
      ->check(flags::Count(0, 10000));
  sub->add_option("--max-steps", c.max_steps, "Step bound of one run")
      ->default_val(2'000'000)
      ->check(flags::Count(1, flags::kMaxSteps));
  sub->add_flag("--json", c.json, "Print JSON instead of the text report");
  sub->add_flag("--races", c.races,
                "Detect unordered conflicting accesses to the tuner's fields by happens-before, "
                "also in runs where nothing failed, and print them");
  if (with_strategy) {
    sub->add_option("--strategy", c.strategy.name,
                    "random, pct, pos, surw, timed, round-robin, or portfolio (random, PCT d=2, PCT "
                    "d=3, POS and SURW in turn by seed)")
        ->default_val("random");
    sub->add_option("--pct-depth", c.strategy.pct_depth, "PCT bug depth d")
        ->default_val(2)
        ->check(flags::Count(1, sim::kMaxPctDepth));
  }
}

struct Loaded {
  Program program;
  ReplayOptions options;
};

// A truncated trace is said on the first line of what a command prints (on stderr under
// --json): what follows covers only the events recorded before the cut. `check` refuses one
// unless told otherwise (`refuse_truncated`).
Result<Loaded> Load(const std::string& path, const Common& c, bool refuse_truncated = false) {
  auto trace = traces::ReadTrace(path);
  if (!trace) return trace.error();
  if (trace->truncated && refuse_truncated)
    return Error{fmt::format("{}: {}; a verdict on part of a run is not a verdict on the run: "
                             "pass --allow-truncated to check the {} events that are there",
                             path, trace->truncation, trace->events.size()),
                 kExitDataError};
  if (trace->truncated)
    std::fprintf(c.json ? stderr : stdout,
                 "warning: TRUNCATED trace %s: %s; what follows covers only the %zu events "
                 "recorded before the cut\n",
                 path.c_str(), trace->truncation.c_str(), trace->events.size());
  auto program = BuildProgram(*trace, path);
  if (!program) return program.error();
  auto fix = ParseFix(c.fix);
  if (!fix) return fix.error();
  if (program->calls.empty())
    return Error{fmt::format("{}: the trace has no tuner calls: nothing for a tuner model to "
                             "replay (was it recorded with --probe?)",
                             path),
                 kExitDataError};
  Loaded l;
  l.program = std::move(*program);
  l.options.fix = std::move(*fix);
  l.options.model = c.model;
  l.options.reps = c.reps;
  l.options.max_steps = c.max_steps;
  l.options.detect_races = c.races;
  return l;
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

std::string Flags(const std::string& trace, const Common& c) {
  std::string f = "rerace replay " + trace;
  if (c.fix != "none") f += " --fix '" + c.fix + "'";
  if (c.model != "auto") f += " --model " + c.model;
  if (c.reps != 1) f += fmt::format(" --reps {}", c.reps);
  return f;
}

Result<void> SaveSchedule(const ReplayResult& r, const std::string& path, const std::string& trace,
                          const Common& c, const std::string& seed) {
  return r.run.schedule.Save(path, {{"trace", trace},
                                    {"fix", c.fix},
                                    {"model", r.model},
                                    {"reps", std::to_string(c.reps)},
                                    {"strategy", r.strategy},
                                    {"seed", seed},
                                    {"failure", r.findings.empty() ? "none" : r.findings[0].code}});
}

// ---- replay ----
struct ReplayArgs {
  std::string perfetto;
  Common c;
  std::string trace;
  uint64_t seed = 1;
  bool seed_given = false;
  std::string schedule;
  bool recorded = false;
  std::string save;
};

int RunReplay(const ReplayArgs& a) {
  auto l = Load(a.trace, a.c);
  if (!l) return ReportError(l.error());
  Replayer rep(l->program, l->options);
  ReplayResult r;
  std::string how;
  std::optional<replay::StepLog> log;
  auto wrap = [&](sim::Strategy& s) -> sim::Strategy& {
    if (a.perfetto.empty()) return s;
    log.emplace(s);
    return *log;
  };
  if (a.recorded) {
    r = rep.RunRecorded(wrap);
    how = "recorded";
  } else if (!a.schedule.empty()) {
    auto s = sim::Schedule::Load(a.schedule);
    if (!s) return ReportError(s.error());
    sim::ScheduleReplay strategy(std::move(*s));
    r = rep.Run(wrap(strategy));
    how = "schedule " + a.schedule;
  } else {
    std::optional<Probe> k;
    auto strategy = StrategyFor(a.c.strategy, a.seed, rep, &k);
    if (!strategy) return ReportError(strategy.error());
    r = rep.Run(wrap(**strategy));
    how = fmt::format("seed {}", a.seed);
  }
  if (log) {
    if (auto w = WriteFile(a.perfetto, replay::ReplayTimeline(r, log->steps())); !w)
      return ReportError(w.error());
  }
  std::string hint;
  if (!a.save.empty()) {
    if (auto s = SaveSchedule(r, a.save, a.trace, a.c, how); !s) return ReportError(s.error());
    hint = fmt::format("schedule saved: replay it with '{} --schedule {}'", Flags(a.trace, a.c), a.save);
  } else if (r.failed() && !a.recorded && a.schedule.empty()) {
    hint = fmt::format("replay it: '{} --strategy {} --seed {}' (add --save-schedule FILE to keep "
                       "the schedule)",
                       Flags(a.trace, a.c), a.c.strategy.name, a.seed);
  }
  if (a.c.json) {
    std::printf("%s\n", FormatJson(r, l->program).c_str());
  } else {
    std::fputs(Colour(FormatReport(r, l->program, hint)).c_str(), stdout);
    if (a.c.races) std::fputs(FormatRaces(r.races, r.findings).c_str(), stdout);
  }
  return r.failed() ? kExitFound : kExitOk;
}

// ---- fuzz ----
struct FuzzArgs {
  Common c;
  std::vector<std::string> traces;
  uint64_t runs = 1000;
  std::string time;
  uint64_t seed = 1;
  std::string save_dir;
  std::string junit;
  std::string shard;  // "K/N" or "auto"
};

struct Shard {
  uint64_t index = 0;
  uint64_t count = 1;
};

Result<Shard> ParseShard(const std::string& s) {
  if (s.empty()) return Shard{};
  std::string spec = s;
  if (spec == "auto" || spec.rfind("auto/", 0) == 0) {
    const char* idx = std::getenv("JOB_COMPLETION_INDEX");
    if (!idx || !*idx) idx = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* cnt = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (!cnt || !*cnt) cnt = std::getenv("RERACE_SHARDS");
    std::string count = spec.size() > 5 ? spec.substr(5) : (cnt ? cnt : "");
    if (!idx || !*idx || count.empty())
      return Error{"--shard auto: the index comes from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID "
                   "and the count from SLURM_ARRAY_TASK_COUNT, RERACE_SHARDS or --shard auto/N; "
                   "some are not set",
                   kExitUsage};
    spec = std::string(idx) + "/" + count;
  }
  Shard sh;
  const size_t slash = spec.find('/');
  try {
    if (slash == std::string::npos) throw 0;
    if (!flags::CheckCount(spec.substr(0, slash), 0, flags::kMaxRuns).empty() ||
        !flags::CheckCount(spec.substr(slash + 1), 1, flags::kMaxRuns).empty())
      throw 0;
    size_t a = 0, b = 0;
    sh.index = std::stoull(spec.substr(0, slash), &a);
    sh.count = std::stoull(spec.substr(slash + 1), &b);
    if (a != slash || b != spec.size() - slash - 1) throw 0;
  } catch (...) {
    return Error{fmt::format("--shard '{}': expected K/N (0 <= K < N) or auto", s), kExitUsage};
  }
  if (sh.count == 0 || sh.index >= sh.count)
    return Error{fmt::format("--shard '{}': expected 0 <= K < N", s), kExitUsage};
  return sh;
}

std::string XmlEscape(const std::string& raw) {
  const std::string s = ValidUtf8(raw);  // the report says encoding="UTF-8"
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

}  // namespace

std::string FuzzJson(const std::vector<FuzzTrace>& all, const std::string& shard) {
  std::string out = fmt::format("{{\"rerace_fuzz\":1,\"shard\":\"{}\",\"traces\":[", JsonEscape(shard));
  for (size_t i = 0; i < all.size(); ++i) {
    const FuzzTrace& t = all[i];
    out += fmt::format("{}{{\"trace\":\"{}\",\"fix\":\"{}\",\"model\":\"{}\",\"strategy\":\"{}\",\"runs\":{},\"failing\":{},\"failures\":[",
                       i ? "," : "", JsonEscape(t.trace), JsonEscape(t.fix), t.model, JsonEscape(t.strategy), t.runs, t.failing);
    for (size_t k = 0; k < t.failures.size(); ++k) {
      const FuzzFailure& f = t.failures[k];
      out += fmt::format("{}{{\"failure\":\"{}\",\"seed\":{},\"schedule\":\"{}\",\"schedule_file\":\"{}\",\"thread_name\":\"{}\",\"type\":\"{}\",\"message\":\"{}\",\"words\":\"{}\",\"silent\":{}}}",
                         k ? "," : "", JsonEscape(f.signature), f.seed, f.schedule, JsonEscape(f.schedule_file),
                         JsonEscape(f.thread_name), JsonEscape(f.type), JsonEscape(f.message), JsonEscape(f.words),
                         f.silent ? "true" : "false");
    }
    out += "]}";
  }
  return out + "]}";
}

std::string FuzzJunit(const std::vector<FuzzTrace>& all) {
  // One test case per trace and fix, and one more per distinct failure (with its seed and
  // schedule in the message), so that a CI page lists each failure on its own line.
  size_t tests = 0, failures = 0;
  std::string cases;
  for (const FuzzTrace& t : all) {
    const std::string cls = XmlEscape(t.trace);
    ++tests;
    cases += fmt::format("    <testcase classname=\"{}\" name=\"fix {} ({} runs, {})\"", cls, XmlEscape(t.fix), t.runs, XmlEscape(t.strategy));
    if (t.failures.empty()) {
      cases += "/>\n";
    } else {
      ++failures;
      cases += fmt::format(">\n      <failure message=\"{} distinct failure(s) in {} of {} runs\"/>\n    </testcase>\n",
                           t.failures.size(), t.failing, t.runs);
    }
    for (const FuzzFailure& f : t.failures) {
      ++tests;
      ++failures;
      const std::string msg = fmt::format("{} in thread {}: {}; seed {}; replay: rerace replay {} --fix '{}' --schedule FILE with schedule {}",
                                          f.silent ? "silent corruption" : f.type + ": " + f.message,
                                          f.thread_name, f.words, f.seed, t.trace, t.fix, f.schedule);
      cases += fmt::format("    <testcase classname=\"{}\" name=\"fix {}: {}\">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                           cls, XmlEscape(t.fix), XmlEscape(f.signature), XmlEscape(msg), XmlEscape(msg));
    }
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"rerace fuzz\" tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
                     tests, failures, cases);
}

namespace {

int RunFuzz(const FuzzArgs& a) {
  auto seconds = a.time.empty() ? Result<double>(0.0) : flags::ParseDuration(a.time);
  if (!seconds) return ReportError(seconds.error());
  auto shard = ParseShard(a.shard);
  if (!shard) return ReportError(shard.error());
  if (!a.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.save_dir, ec);
    if (ec)
      return ReportError({fmt::format("{}: cannot create the folder: {}", a.save_dir, ec.message()),
                          kExitIoError});
  }
  const bool progress = isatty(2) && !a.c.json && std::getenv("NO_PROGRESS") == nullptr;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<FuzzTrace> all;
  bool any = false;
  const std::vector<std::string> stems = UniqueStems(a.traces);
  for (const std::string& path : a.traces) {
    const std::string& stem = stems[static_cast<size_t>(&path - a.traces.data())];
    auto l = Load(path, a.c);
    if (!l) return ReportError(l.error());
    Replayer rep(l->program, l->options);
    std::optional<Probe> k;
    std::vector<sim::Race> races;
    std::set<std::string> race_seen;
    std::vector<Finding> campaign_findings;
    FuzzTrace ft;
    ft.trace = path;
    ft.fix = a.c.fix;
    ft.model = rep.ModelName();
    ft.strategy = a.c.strategy.name;
    std::map<std::string, size_t> index;  // signature → position in ft.failures
    double last_progress = 0;
    // Seeds: run i of this shard is global run shard.index + i * shard.count.
    for (uint64_t i = 0;; ++i) {
      if (*seconds > 0) {
        if (i > 0 && elapsed() >= *seconds) break;  // at least one run
      } else if (i >= a.runs) {
        break;
      }
      const uint64_t seed = a.seed + shard->index + i * shard->count;
      auto strategy = StrategyFor(a.c.strategy, seed, rep, &k);
      if (!strategy) return ReportError(strategy.error());
      const ReplayResult r = rep.Run(**strategy);
      ++ft.runs;
      if (a.c.races) {
        for (const sim::Race& race : r.races) {
          const std::string key = race.object_name + race.first.label + "|" + race.second.label;
          if (!race_seen.count(key)) {
            race_seen.insert(key);
            races.push_back(race);
          }
        }
        campaign_findings.insert(campaign_findings.end(), r.findings.begin(), r.findings.end());
      }
      if (r.failed()) {
        ++ft.failing;
        for (const Finding& f : r.findings) {
          const std::string sig = f.code + " at " + f.where;
          if (index.count(sig)) continue;
          index[sig] = ft.failures.size();
          FuzzFailure x;
          x.signature = sig;
          x.seed = seed;
          // Shrink the schedule when this failure is the run's first (what the shrinker keeps).
          const ReplayResult* keep = &r;
          std::optional<Shrunk> sh;
          if (&f == &r.findings.front()) {
            sh = ShrinkFailure(rep, r);
            keep = &sh->result;
          }
          x.schedule = keep->run.schedule.Encode();
          x.thread_name = f.thread_name;
          x.type = f.type;
          x.message = f.message;
          x.words = f.words;
          x.silent = f.silent;
          if (!a.save_dir.empty()) {
            x.schedule_file = fmt::format("{}/{}-{}.sched", a.save_dir, stem, ft.failures.size() + 1);
            if (auto s = SaveSchedule(*keep, x.schedule_file, path, a.c, std::to_string(seed)); !s)
              return ReportError(s.error());
          }
          ft.failures.push_back(std::move(x));
        }
      }
      if (progress && elapsed() - last_progress >= 0.25) {
        last_progress = elapsed();
        const double rate = static_cast<double>(ft.runs) / std::max(elapsed(), 1e-9);
        const double left = *seconds > 0 ? *seconds - elapsed()
                                         : static_cast<double>(a.runs - ft.runs) / std::max(rate, 1e-9);
        std::fprintf(stderr, "\r%s: %llu runs (%.0f/s), %llu failing, %zu distinct, %.0f s left   ",
                     path.c_str(), static_cast<unsigned long long>(ft.runs), rate,
                     static_cast<unsigned long long>(ft.failing), ft.failures.size(), std::max(left, 0.0));
      }
    }
    if (progress) std::fprintf(stderr, "\r\033[K");
    any |= !ft.failures.empty();
    std::sort(ft.failures.begin(), ft.failures.end(),
              [](const FuzzFailure& x, const FuzzFailure& y) { return x.signature < y.signature; });
    if (!a.c.json) {
      std::printf("fuzz %s (model %s, fix %s, strategy %s%s): %llu runs, %llu failing, %zu distinct "
                  "failure(s)\n",
                  path.c_str(), ft.model.c_str(), a.c.fix.c_str(), a.c.strategy.name.c_str(),
                  a.shard.empty() ? "" : fmt::format(", shard {}/{}", shard->index, shard->count).c_str(),
                  static_cast<unsigned long long>(ft.runs), static_cast<unsigned long long>(ft.failing),
                  ft.failures.size());
      size_t n = 0;
      for (const FuzzFailure& f : ft.failures) {
        std::printf("  [%zu] %s: %s, first in %s with seed %llu\n", ++n, f.signature.c_str(),
                    f.silent ? "silent corruption" : (f.type + ": " + f.message).c_str(),
                    f.thread_name.c_str(), static_cast<unsigned long long>(f.seed));
        if (!f.words.empty()) std::printf("      %s\n", f.words.c_str());
        if (!f.schedule_file.empty())
          std::printf("      replay: %s --schedule %s\n", Flags(path, a.c).c_str(), f.schedule_file.c_str());
        else
          std::printf("      replay: %s --strategy %s --seed %llu\n", Flags(path, a.c).c_str(),
                      a.c.strategy.name.c_str(), static_cast<unsigned long long>(f.seed));
      }
    }
    if (a.c.races && !a.c.json) std::fputs(FormatRaces(races, campaign_findings).c_str(), stdout);
    all.push_back(std::move(ft));
  }
  const std::string shard_text = a.shard.empty() ? "" : fmt::format("{}/{}", shard->index, shard->count);
  if (a.c.json) std::printf("%s\n", FuzzJson(all, shard_text).c_str());
  if (!a.junit.empty())
    if (auto w = WriteFile(a.junit, FuzzJunit(all)); !w) return ReportError(w.error());
  return any ? kExitFound : kExitOk;
}

// ---- check ----
struct CheckArgs {
  int64_t bound = -1;
  bool naive = false;
  uint64_t max_runs = 200'000;
  std::string perfetto;
  Common c;
  std::string trace;
  uint64_t runs = 3000;
  uint64_t seed = 1;
  std::string save;
  bool allow_truncated = false;
};

int RunCheck(const CheckArgs& a) {
  auto l = Load(a.trace, a.c, !a.allow_truncated);
  if (!l) return ReportError(l.error());
  std::optional<BoundedVerdict> bounded;
  Verdict v;
  // Without --bound: DPOR at bound 1 within kAutoRuns runs, then the sampled schedules.
  constexpr uint32_t kAutoBound = 1;
  constexpr uint64_t kAutoRuns = 20'000;
  const bool automatic = a.bound < 0;
  if (!automatic) {
    bounded = CheckFixBounded(l->program, l->options, static_cast<uint32_t>(a.bound), a.max_runs, a.naive);
    v = bounded->verdict;
  } else {
    bounded = CheckFixBounded(l->program, l->options, kAutoBound, std::min(a.max_runs, kAutoRuns), false);
    v = bounded->verdict;
    if (v.holds) {
      v = CheckFix(l->program, l->options, a.runs, a.seed);
      v.explored += bounded->verdict.explored;
    }
  }
  if (v.holds && v.explored == 0)
    return ReportError({fmt::format("{}: no schedule was explored (--runs {}, --max-runs {}): "
                                    "that is not a verdict; give at least one run",
                                    a.trace, a.runs, a.max_runs),
                        kExitUsage});
  std::string shrink_note;
  if (!v.holds) {
    Replayer rep(l->program, l->options);
    Shrunk sh = ShrinkFailure(rep, *v.counterexample);
    shrink_note = DescribeShrink(sh);
    sh.result.strategy = v.counterexample->strategy + ", shrunk";
    v.counterexample = std::move(sh.result);
  }
  auto ms = [](Nanos n) { return static_cast<double>(n) / 1e6; };
  const double ratio = v.makespan_none ? static_cast<double>(v.makespan_fix) /
                                             static_cast<double>(v.makespan_none)
                                       : 0.0;
  if (a.c.json) {
    std::printf("{\"trace\":\"%s\",\"fix\":\"%s\",\"verdict\":\"%s\",\"explored\":%llu,"
                "\"makespan_fix_ns\":%llu,\"makespan_none_ns\":%llu,\"makespan_recorded_ns\":%llu,"
                "\"counterexample\":%s}\n",
                JsonEscape(a.trace).c_str(), JsonEscape(a.c.fix).c_str(),
                v.holds ? "holds" : "fails", static_cast<unsigned long long>(v.explored),
                static_cast<unsigned long long>(v.makespan_fix),
                static_cast<unsigned long long>(v.makespan_none),
                static_cast<unsigned long long>(v.makespan_recorded),
                v.counterexample ? FormatJson(*v.counterexample, l->program).c_str() : "null");
    return v.holds ? kExitOk : kExitFound;
  }
  if (!v.holds) {
    std::string hint;
    if (!a.save.empty()) {
      if (auto s = SaveSchedule(*v.counterexample, a.save, a.trace, a.c,
                                std::to_string(v.counterexample_seed));
          !s)
        return ReportError(s.error());
      hint = fmt::format("counterexample saved: replay it with '{} --schedule {}'",
                         Flags(a.trace, a.c), a.save);
    } else {
      hint = fmt::format("counterexample schedule: {}", v.counterexample->run.schedule.Encode());
    }
    if (!a.perfetto.empty()) {
      Replayer rep(l->program, l->options);
      sim::ScheduleReplay again(v.counterexample->run.schedule);
      replay::StepLog log(again);
      const ReplayResult r = rep.Run(log);
      if (auto w = WriteFile(a.perfetto, replay::ReplayTimeline(r, log.steps())); !w)
        return ReportError(w.error());
    }
    std::fputs(Colour(fmt::format("verdict: fix '{}' FAILS: counterexample found after {} schedules ({})\n",
                                  a.c.fix, v.explored, v.counterexample->strategy))
                   .c_str(),
               stdout);
    std::fputs(Colour(FormatReport(*v.counterexample, l->program, hint)).c_str(), stdout);
    std::printf("%s\n", shrink_note.c_str());
  } else {
    const std::string systematic = fmt::format(
        "{} with at most {} preemption{} ({} explored, {} pruned; {})", 
        a.naive ? "every interleaving a bounded depth-first search ran"
                : "every interleaving that DPOR distinguishes",
        bounded->bound, bounded->bound == 1 ? "" : "s", bounded->verdict.explored, bounded->pruned,
        bounded->exhausted ? "search exhausted"
                           : fmt::format("stopped at the budget of {} runs{}",
                                         automatic ? std::min(a.max_runs, kAutoRuns) : a.max_runs,
                                         automatic ? "" : " (--max-runs)"));
    if (!automatic) {
      std::fputs(Colour(fmt::format("verdict: fix '{}' holds for {}\n", a.c.fix, systematic)).c_str(),
                 stdout);
    } else {
      std::fputs(Colour(fmt::format("verdict: fix '{}' holds for {}, and for every schedule "
                                    "sampled after it: {} (random walk, PCT d=2 and d=3 over k={} "
                                    "steps, seeds {}..{}). Chosen without --bound: bound {}, "
                                    "{} sampled runs; --bound B --max-runs N explores further.\n",
                                    a.c.fix, systematic, a.runs, v.pct_steps, a.seed,
                                    a.seed + a.runs - 1, kAutoBound, a.runs))
                     .c_str(),
                 stdout);
    }
  }
  auto fails = [](const std::string& code) {
    return code.empty() ? std::string() : fmt::format(" (that run fails: {})", code);
  };
  std::printf("cost, as simulated step time under the timed strategy: %.3f ms with %s%s; %.3f ms "
              "with none%s (%.2fx); the recorded interleaving replays in %.3f ms (recorded CPU "
              "span %.3f ms)\n",
              ms(v.makespan_fix), a.c.fix.c_str(), fails(v.fix_timed_failure).c_str(),
              ms(v.makespan_none), fails(v.none_timed_failure).c_str(), ratio,
              ms(v.makespan_recorded), ms(l->program.recorded_span_ns));
  for (const DuplicateTuning& d : v.duplicates_fix)
    std::printf("warning: duplicate-tuning under this fix: %s key %s tuned by %u threads (%.3f ms "
                "of GPU time wasted)\n",
                d.kernel.c_str(), d.key.c_str(), d.threads, ms(d.wasted_gpu_ns));
  return v.holds ? kExitOk : kExitFound;
}

}  // namespace

void RegisterReplayCommands(CLI::App& app, CommandTable& table) {
  auto ra = std::make_shared<ReplayArgs>();
  CLI::App* r = app.add_subcommand(
      "replay", "Replay a trace once: under a seeded strategy, a saved schedule, or the recorded "
                "interleaving (exit 1 when it fails)");
  r->add_option("trace", ra->trace, "Trace file")->required();
  auto* seed = r->add_option("--seed", ra->seed, "Seed of the strategy")
                   ->default_val(1)
                   ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  auto* sched = r->add_option("--schedule", ra->schedule, "Replay a saved schedule (no seed needed)");
  auto* rec = r->add_flag("--recorded", ra->recorded,
                          "Replay the recorded interleaving: reproduce what happened on the GPU");
  sched->excludes(rec);
  rec->excludes(sched);
  (void)seed;
  r->add_option("--save-schedule", ra->save, "Save this run's schedule to a file");
  r->add_option("--perfetto", ra->perfetto,
                "Write the run as a timeline for ui.perfetto.dev / chrome://tracing (1 us = 1 step)");
  AddCommon(r, ra->c, true);
  table.Add(r, [ra] { return RunReplay(*ra); });

  auto fa = std::make_shared<FuzzArgs>();
  CLI::App* f = app.add_subcommand(
      "fuzz", "Replay traces under many seeds; report each distinct failure once, with its seed "
              "and schedule (exit 1 when any fails)");
  f->add_option("traces", fa->traces, "Trace files")->required();
  auto* runs = f->add_option("--runs", fa->runs, "Runs per trace")
                   ->default_val(1000)
                   ->check(flags::Count(1, flags::kMaxRuns));
  auto* time = f->add_option("--time", fa->time, "Time budget instead of --runs (90s, 10m, 1h)")
                   ->check(flags::Duration());
  runs->excludes(time);
  f->add_option("--seed", fa->seed, "First seed; run i uses seed + i")
      ->default_val(1)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  f->add_option("--save-failures", fa->save_dir, "Folder for one schedule file per distinct failure");
  f->add_option("--junit", fa->junit, "Write a JUnit XML report (one case per trace and fix, one per distinct failure)");
  f->add_option("--shard", fa->shard,
                "Run only shard K of N (K/N): run i of the campaign belongs to shard i mod N, so N jobs "
                "cover the seeds once. 'auto' reads K from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID "
                "and N from SLURM_ARRAY_TASK_COUNT or RERACE_SHARDS ('auto/N' gives N)")
      ->check(flags::ShardSpec());
  AddCommon(f, fa->c, true);
  table.Add(f, [fa] { return RunFuzz(*fa); });

  auto ca = std::make_shared<CheckArgs>();
  CLI::App* c = app.add_subcommand(
      "check", "Check a fix: a counterexample schedule, or 'holds' with how many schedules were "
               "explored; and the fix's cost in simulated step time (exit 1 when it fails)\n"
               "Named fixes:\n" + DescribeFixes());
  c->add_option("trace", ca->trace, "Trace file")->required();
  c->add_option("--runs", ca->runs,
                 "Without --bound: schedules sampled after DPOR at bound 1 (random walk, PCT d=2, "
                 "PCT d=3 in turn)")
      ->default_val(3000)
      ->check(flags::Count(0, flags::kMaxRuns));
  c->add_option("--seed", ca->seed, "First seed")
      ->default_val(1)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  c->add_option("--bound", ca->bound,
                "Explore systematically every interleaving with at most B preemptions that DPOR "
                "(source sets, sleep sets) distinguishes; without it, DPOR at bound 1 (at most "
                "20000 runs) and then --runs sampled schedules")
      ->check(CLI::Range(0, 100));
  c->add_flag("--allow-truncated", ca->allow_truncated,
              "Check a truncated trace (no footer, or cut short): the verdict then covers only the "
              "events recorded before the cut");
  c->add_flag("--naive", ca->naive, "With --bound: a plain bounded depth-first search (no reduction)");
  c->add_option("--max-runs", ca->max_runs, "Stop the systematic search after this many runs")
      ->default_val(200000)
      ->check(flags::Count(1, flags::kMaxRuns));
  c->add_option("--save-schedule", ca->save, "Save the counterexample's schedule here");
  c->add_option("--perfetto", ca->perfetto, "Write the counterexample as a Perfetto timeline");
  AddCommon(c, ca->c, false);
  table.Add(c, [ca] { return RunCheck(*ca); });
}

}  // namespace rerace::tools
