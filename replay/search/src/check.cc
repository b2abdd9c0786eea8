// replay/search/src/check.cc: the verdict of a fix.
#include "rerace/replay/search/check.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "rerace/replay/model/calibrate.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/sim/explore.h"

namespace rerace::replay {

namespace {
void Costs(const Program& program, const ReplayOptions& options, Replayer& rep, Verdict& v);

// The real-code engine's virtual GPU runs the recorded kernels and nothing else (no calibrated
// CPU time, launches, trials at once or cold start), so its own clock is no step time: a fix it
// checks is priced by the model of the same fix, on the same calibrated virtual GPU and CPU, and
// the cost says so. A fix the model has no equivalent for (a patch file of the user's, a
// recorded patch checked as recorded) has no cost line, and says why.
void EngineCosts(const Program& program, const ReplayOptions& options, Verdict& v) {
  v.cost.fix = options.fix.name.empty() ? "none" : options.fix.name;
  ReplayOptions shipped;  // the patch files the fix's name stands for
  auto own = UsePythonFix(v.cost.fix, shipped);
  auto fix = ParseFix(v.cost.fix);
  const std::vector<std::string> recorded = PatchedParts(program);
  if (!own || !fix) {
    v.cost.unpriced = fmt::format("the model has no fix named '{}'", v.cost.fix);
  } else if (options.patches.size() > shipped.patches.size() && !options.price_as.empty()) {
    // The user says what the patch does (check --price-as): the model of that prices it, and the
    // cost line says it is the declaration that was priced.
    auto declared = ParseFix(v.cost.fix == "none" ? options.price_as : v.cost.fix + "+" + options.price_as);
    if (!declared) {
      v.cost.unpriced = fmt::format("--price-as '{}': {}", options.price_as, declared.error().message);
      return;
    }
    ReplayOptions model = options;
    model.engine = "model";
    model.patches.clear();
    model.fix = *declared;
    model.target.clear();
    const std::string label = v.cost.fix;
    Replayer rep(program, model);
    Costs(program, model, rep, v);
    v.cost.fix = label;
    v.cost.priced_by = "price-as";
    v.cost.price_as = options.price_as;
    return;
  } else if (options.patches.size() > shipped.patches.size()) {
    v.cost.unpriced = "a patch file (--patch) is real code the model cannot price (--price-as FIX "
                      "prices it as the fix it implements); the real-code engine's virtual GPU "
                      "runs the recorded kernels only";
  } else if (!recorded.empty() && v.cost.fix == "none") {
    v.cost.unpriced = "the recorded program was patched and the model would price stock Triton; "
                      "--fix NAME prices the fix it stands for";
  }
  if (!v.cost.unpriced.empty()) return;
  ReplayOptions model = options;
  model.engine = "model";
  model.patches.clear();
  model.fix = *fix;
  model.target.clear();
  Replayer rep(program, model);
  Costs(program, model, rep, v);
  v.cost.priced_by = "model";
}

void Costs(const Program& program, const ReplayOptions& options, Replayer& rep, Verdict& v) {
  if (options.engine == "python") return EngineCosts(program, options, v);
  // Priced on the program with the recording's failed workers completed (calibrate.h), so that
  // a fix that lets them go on is charged their work.
  uint32_t completed = 0;
  const Program full = detail::CompleteFailedWorkers(program, &completed);
  const Program& priced = completed != 0 ? full : program;
  std::unique_ptr<Replayer> own;
  if (completed != 0) own = std::make_unique<Replayer>(priced, options);
  Replayer& fixed = own ? *own : rep;
  const ReplayResult with_fix = fixed.RunTimed();
  v.makespan_fix = with_fix.makespan;
  if (with_fix.failed()) v.fix_timed_failure = with_fix.findings.front().code;
  v.duplicates_fix = with_fix.duplicates;
  v.cost.fix = options.fix.name.empty() ? "none" : options.fix.name;
  v.cost.priced = !with_fix.failed();
  v.cost.failure = v.fix_timed_failure;
  v.cost.step_ns = with_fix.makespan;
  v.cost.terms = with_fix.cost;
  v.cost.completed_workers = completed;
  ReplayOptions none = options;
  none.fix = Fix{};
  Replayer base(priced, none);
  const ReplayResult without = base.RunTimed();
  v.makespan_none = without.makespan;
  if (without.failed()) v.none_timed_failure = without.findings.front().code;
  ReplayResult recorded;
  if (completed != 0) {
    recorded = Replayer(program, none).RunRecorded();  // the recording as it was
  } else {
    recorded = base.RunRecorded();
  }
  v.makespan_recorded = recorded.makespan;
  // The baseline: the stock code where it does not fail. The serial schedule (each thread
  // runs to its end before the next starts: no interleaving, so no race), else the recorded
  // interleaving when it replays cleanly, else none.
  sim::RoundRobin serial(UINT64_MAX);
  const ReplayResult one_by_one = base.Run(serial);
  if (!one_by_one.failed()) {
    v.cost.baseline = {"serial", one_by_one.makespan, ""};
  } else if (!recorded.failed() && recorded.left_recording == 0) {
    v.cost.baseline = {"recorded", recorded.makespan, ""};
  } else {
    v.cost.baseline.failure = fmt::format(
        "serial: {}; recorded: {}", one_by_one.findings.front().code,
        recorded.failed() ? recorded.findings.front().code
                          : fmt::format("{} recorded transitions not reached", recorded.left_recording));
  }
}
}  // namespace

void Verdict::NoteOthers(const ReplayResult& r, const std::string& target) {
  if (target.empty()) return;
  for (const Finding& f : r.findings)
    if (!Matches(f, target)) others.insert(f.code + (f.where.empty() ? "" : " at " + f.where));
}

StepShape MeasureShape(Replayer& replayer) {
  sim::RoundRobin rr(1'000'000);
  const ReplayResult r = replayer.Run(rr);
  StepShape s;
  s.steps = std::max<uint64_t>(r.run.steps, 1);
  for (const auto& t : r.run.threads) s.per_thread.push_back(t.steps);
  return s;
}

BoundedVerdict CheckFixBounded(const Program& program, const ReplayOptions& options,
                               uint32_t bound, uint64_t max_runs, bool naive,
                               const CheckProgress& progress, unsigned jobs) {
  Replayer rep(program, options);
  return CheckFixBounded(rep, bound, max_runs, naive, progress, jobs);
}

BoundedVerdict CheckFixBounded(Replayer& rep, uint32_t bound, uint64_t max_runs, bool naive,
                               const CheckProgress& progress, unsigned jobs) {
  const Program& program = rep.program();
  const ReplayOptions& options = rep.options();
  BoundedVerdict b;
  b.bound = bound;
  // The real code under the GIL: a step can hold several accesses (an atomic stretch between
  // two places where the GIL can change hands); the engine reports every one of them inside
  // its step (python_engine.h, EngineSteps), as the model's GilSteps do, so DPOR sees what a
  // step touches in either mode (source sets and sleep sets, a sleeping thread's whole step
  // compared: sim/explore.cc).
  b.naive = naive;
  sim::Explorer e(naive ? sim::Explorer::Mode::kNaive : sim::Explorer::Mode::kDpor, bound, max_runs);
  uint64_t runs = 0;
  const char* method = naive ? "bounded DFS" : "DPOR";
  // One run's result, as the search takes it (in the order the runs started).
  auto settle = [&](const ReplayResult& r) {
    if (options.detect_races) MergeRaces(b.verdict.races, r.races);
    b.verdict.NoteOthers(r, options.target);
    if (runs == 0) b.verdict.reach = r.notes;
    ++runs;
    if (progress) progress(runs, method);
    return Hits(r, options.target);
  };
  sim::ExploreResult x;
  // The model's runs take tens of microseconds, less than a batch's bookkeeping on the caller's
  // thread (a check of the H200 recording at bound 2: 0.65 s on one replayer, 1.0 s on two): its
  // search runs on one; the real code's take milliseconds.
  if (jobs <= 1 || options.engine != "python") {
    x = e.Explore([&](sim::Strategy& s) { return settle(rep.Run(s)); });
  } else {
    // Worker 0 is `rep`; the others have replayers of their own (for the real code, engines).
    std::vector<std::unique_ptr<Replayer>> more;
    for (unsigned w = 1; w < jobs; ++w) more.push_back(std::make_unique<Replayer>(program, options));
    std::vector<ReplayResult> results(jobs);
    x = e.Explore(
        jobs,
        [&](unsigned w, sim::Strategy& s) { results[w] = (w == 0 ? rep : *more[w - 1]).Run(s); },
        [&](unsigned w) {
          const bool hit = settle(results[w]);
          results[w] = ReplayResult{};
          return hit;
        });
  }
  b.verdict.explored = x.runs;
  b.exhausted = x.exhausted;
  b.pruned = x.pruned;
  b.cut = x.cut;
  if (x.failed) {
    b.verdict.holds = false;
    sim::ScheduleReplay again(x.failing);
    b.verdict.counterexample = rep.Run(again);
    b.verdict.counterexample->strategy = method;
  }
  Costs(program, options, rep, b.verdict);
  return b;
}

Verdict PriceFix(const Program& program, const ReplayOptions& options) {
  Verdict v;
  Replayer rep(program, options);
  Costs(program, options, rep, v);
  return v;
}

Verdict CheckFix(const Program& program, const ReplayOptions& options, uint64_t runs,
                 uint64_t seed, const CheckProgress& progress) {
  Replayer rep(program, options);
  return CheckFix(rep, runs, seed, progress);
}

Verdict CheckFix(Replayer& rep, uint64_t runs, uint64_t seed, const CheckProgress& progress) {
  Verdict v = SampleSchedules(rep, runs, seed, progress);
  Costs(rep.program(), rep.options(), rep, v);
  return v;
}

Verdict SampleSchedules(Replayer& rep, uint64_t runs, uint64_t seed, const CheckProgress& progress,
                        const char* phase) {
  const ReplayOptions& options = rep.options();
  Verdict v;
  v.pct_steps = MeasureShape(rep).steps;
  for (uint64_t i = 0; i < runs; ++i) {
    const uint64_t s = seed + i;
    const std::unique_ptr<sim::Strategy> strategy = SampledStrategy(i, seed, v.pct_steps);
    ReplayResult r = rep.Run(*strategy);
    if (v.explored == 0) v.reach = r.notes;
    ++v.explored;
    if (progress) progress(v.explored, phase);
    if (options.detect_races) MergeRaces(v.races, r.races);
    v.NoteOthers(r, options.target);
    if (Hits(r, options.target)) {
      v.holds = false;
      v.counterexample = std::move(r);
      v.counterexample_seed = s;
      break;
    }
  }
  return v;
}

}  // namespace rerace::replay
