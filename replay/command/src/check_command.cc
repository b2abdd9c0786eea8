// replay/command/src/check_command.cc: `rerace check`, a fix's verdict (a counterexample, "holds" for
// every schedule up to the bound, or inconclusive) and its cost, as text or JSON (see
// rerace/replay/command/command.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <optional>
#include <string_view>

#include "command_output.h"
#include "rerace/base/output_file.h"
#include "rerace/replay/search/certificate.h"
#include "rerace/replay/search/check.h"
#include "rerace/replay/report/checked.h"
#include "rerace/replay/command/command.h"
#include "rerace/replay/model/cost.h"
#include "rerace/replay/report/fuzz_report.h"
#include "rerace/replay/search/shrink.h"
#include "rerace/replay/report/timeline.h"
#include "rerace/sim/schedule.h"
#include "rerace/replay/model/text.h"

namespace rerace::replay {

using detail::Done;
using detail::Fail;
using detail::Flush;
using detail::Sprintf;

namespace {

// `"patches":[{"file":...,"sha256":...}],"engine":"python",` for a JSON object.
std::string CheckedJson(const CommandOptions& c) {
  std::string patches;
  for (const PatchId& p : IdentifyPatches(c.patches))
    patches += fmt::format("{}{{\"file\":\"{}\",\"sha256\":\"{}\"}}", patches.empty() ? "" : ",",
                           JsonEscape(p.name), p.sha256);
  return fmt::format("\"patches\":[{}],\"engine\":{},", patches, JsonString(c.engine));
}


Result<void> SaveCounterexample(const CheckCommand& a, const Verdict& v, std::optional<uint64_t> seed) {
  if (a.save.empty()) return {};
  if (!v.counterexample) {
    a.options.notes(Sprintf("note: no counterexample was found, so there is no schedule to save: "
                            "%s was not written\n", a.save.c_str()));
    return {};
  }
  return SaveSchedule(*v.counterexample, a.save, a.trace, a.options, seed,
                      FailureOf(FirstOf(*v.counterexample, a.options.failure)));
}

}  // namespace

CheckOutput RunCheckCommand(const CheckCommand& command) {
  const auto start = std::chrono::steady_clock::now();  // JUnit's time of the case
  std::string out;
  CheckCommand a = command;
  auto engine_choice = ResolveEngine(a.trace, a.options, false);
  if (!engine_choice) return Fail(out, engine_choice.error());
  auto colour = [&](const std::string& text) { return ColourReport(text, a.options.colour); };
  if (auto same = RefuseOutputsAreInputs({{"--perfetto", a.perfetto}, {"--save-schedule", a.save}, {"--junit", a.junit}},
                                         {a.trace}, a.options);
      !same)
    return Fail(out, same.error());
  auto l = LoadTrace(a.trace, a.options, out, !a.allow_truncated);
  if (!l) return Fail(out, l.error());
  if (a.threads) {
    const auto workers = static_cast<uint32_t>(WorkerIndices(l->program).size());
    const uint32_t k = *a.threads;
    if (k == 0 || k > workers)
      return Fail(out, {fmt::format("--threads {}: {} has {} worker thread{}: give 1 to {}", k,
                                    a.trace, workers, workers == 1 ? "" : "s", workers),
                        kExitUsage});
    if (Combinations(workers, k) > kMaxCertificateCombinations)
      return Fail(out, {fmt::format("--threads {}: {} worker threads make {} combinations of {}, "
                                    "more than a certificate enumerates ({}); give a smaller K",
                                    k, workers, Combinations(workers, k), k,
                                    kMaxCertificateCombinations),
                        kExitUsage});
  }
  Flush(out, a.options);
  // What ran, as the notes said it (the engine, and for the real code its Python, Triton,
  // tuners and patches): the JUnit case carries it too.
  std::string engine_said = engine_choice->note + l->note;
  // The real code: one engine, started here (a clean error), for every phase of the whole
  // program's check (CheckFix below); a certificate's sub-programs have engines of their own.
  std::optional<Replayer> engine;
  if (l->options.engine == "python") {
    engine.emplace(l->program, l->options);
    auto said = StartEngine(*engine, a.options.notes, engine_said);
    if (!said) return Fail(out, said.error());
    engine_said = *said;
  } else if (!engine_said.empty()) {
    a.options.notes(engine_said);
  }
  CheckRequest request;
  request.bound = a.bound;
  request.naive = a.naive;
  request.runs = a.runs;
  request.runs_given = a.runs_given;
  request.max_runs = a.max_runs;
  request.max_runs_given = a.max_runs_given;
  request.seed = a.seed;
  const CheckPlan check_plan = [&] {
    CheckPlan p = PlanCheck(request, l->options.engine);
    p.jobs = a.jobs;  // the systematic search's replayers at once (with --threads, the classes')
    return p;
  }();
  CheckProgress show;
  if (a.progress)
    show = [&](uint64_t runs, const char* phase) { a.progress(runs, phase, check_plan); };
  // --threads K: the certificate over every K-thread sub-program first (certificate.h).
  std::optional<Certificate> cert;
  if (a.threads) {
    const uint64_t budget = a.max_runs_given ? a.max_runs
                            : l->options.engine == "python" ? kCertificateMaxRunsPython
                                                            : kCertificateMaxRuns;
    cert = Certify(l->program, l->options, *a.threads, budget, a.jobs, show);
  }
  CheckOutcome outcome;
  if (cert && cert->counterexample) {
    // A failure of a sub-program is a failure of the recording: from here on the command works
    // on that sub-program, and every hint and saved schedule replays it with --only.
    std::string only;
    for (uint32_t t : cert->failing_threads) only += (only.empty() ? "" : ",") + std::to_string(t);
    a.options.only = only;
    auto sub = SubProgram(l->program, cert->failing_threads);
    if (!sub) return Fail(out, sub.error());
    engine.reset();  // it ran the whole program, which the sub-program now replaces
    l->program = std::move(*sub);
    outcome.plan = check_plan;
    outcome.verdict.holds = false;
    outcome.verdict.explored = cert->runs;
    outcome.verdict.counterexample = cert->counterexample;
  } else if (cert && (!cert->complete || cert->threads == cert->of)) {
    // Stopped by its budget (inconclusive), or K = N: the certificate is the whole program's.
    outcome.plan = check_plan;
    outcome.verdict = PriceFix(l->program, l->options);
    outcome.verdict.explored = cert->runs;
  } else {
    outcome = engine ? CheckFix(*engine, check_plan, show) : CheckFix(l->program, l->options, check_plan, show);
    if (cert) outcome.verdict.explored += cert->runs;
  }
  const uint64_t cert_runs = cert ? cert->runs : 0;
  if (a.progress && a.progress_done) a.progress_done();
  // The interpreter the model's steps assumed, when the recording does not name one: said right
  // under the verdict (and in JSON), since the verdict depends on it (docs/FIDELITY.md).
  const std::string assumed = Replayer(l->program, l->options).StepAssumption();
  const std::string assumed_line = assumed.empty() ? "" : "verdict assumes " + assumed + "\n";
  const CheckPlan& plan = outcome.plan;
  const BoundedVerdict& systematic = outcome.systematic;
  Verdict& v = outcome.verdict;
  const bool automatic = plan.automatic;
  if (v.holds && v.explored == 0)
    return Fail(out, {fmt::format("{}: no schedule was explored (--runs {}, --max-runs {}): "
                                    "that is not a verdict; give at least one run",
                                    a.trace, a.runs, a.max_runs),
                        kExitUsage});
  const std::optional<uint64_t> seed = outcome.seed;
  // --bound 0 never preempts a thread: it cannot reach a race, so "holds" would certify nothing.
  const bool no_preemption = !automatic && a.bound == 0u;
  // A systematic search its budget stopped certifies nothing either: "holds" only when it was
  // exhausted.
  const bool inconclusive =
      v.holds && (cert ? !cert->complete : no_preemption || !systematic.exhausted);
  const int holds_exit = inconclusive ? kExitInconclusive : kExitOk;
  const std::string against = a.options.failure.empty() ? "" : " against " + a.options.failure;
  std::string shrink_note;
  if (!v.holds) {
    if (auto e = RunError(*v.counterexample)) {
      Error err = *e;
      err.message = fmt::format("check {} ({}): {}", a.trace, CheckedLabel(a.options), err.message);
      return Fail(out, err);
    }
    // The check's engine where it ran this program (not after a certificate's sub-program took
    // its place: `engine` was let go then).
    std::optional<Replayer> own;
    Replayer& rep = engine ? *engine : own.emplace(l->program, l->options);
    Shrunk sh = ShrinkFailure(rep, *v.counterexample, a.options.failure);
    shrink_note = DescribeShrink(sh);
    sh.result.strategy = v.counterexample->strategy + ", shrunk";
    v.counterexample = std::move(sh.result);
    LeadWith(*v.counterexample, a.options.failure);
  }
  auto ms = [](Nanos n) { return static_cast<double>(n) / 1e6; };
  if (!a.options.patches.empty()) v.cost.fix = CheckedLabel(a.options);  // the cost names what the verdict does
  if (auto s = SaveCounterexample(a, v, seed); !s) return Fail(out, s.error());
  const char* verdict = !v.holds ? "fails" : inconclusive ? "inconclusive" : "holds";
  // The verdict in one line, uncoloured: the text report's first line and the JUnit case's
  // message, so both say the same.
  std::string verdict_line;
  if (!v.holds) {
    const auto& found = v.counterexample->findings;
    if (!found.empty() && found.front().code == "patch-not-reached")
      // Its own words: no schedule checked the patch, which never ran (docs/ENGINE.md).
      verdict_line = fmt::format("verdict: {} FAILS{}: the patch never ran (patch-not-reached): "
                                 "{}, after {} schedules ({})\n",
                                 CheckedLabel(a.options), against, found.front().message, v.explored,
                                 v.counterexample->strategy);
    else
      verdict_line = fmt::format("verdict: {} FAILS{}: counterexample found after {} schedules ({})\n",
                                 CheckedLabel(a.options), against, v.explored, v.counterexample->strategy);
  } else {
    // What the search covered, in words that claim no more. DPOR under a bound does not reach
    // every interleaving within it (sim/explore.h): only a search the bound cut no race reversal
    // from covered every interleaving; otherwise the words name the search, and what it cut.
    const std::string preemptions =
        fmt::format("{} preemption{}", systematic.bound, systematic.bound == 1 ? "" : "s");
    const std::string counts = fmt::format("{} explored, {} pruned; {}", systematic.verdict.explored,
                                           systematic.pruned,
                                           systematic.exhausted
                                               ? std::string("search exhausted")
                                               : fmt::format("stopped at the budget of {} runs{}",
                                                             plan.max_runs, automatic ? "" : " (--max-runs)"));
    std::string covered;
    if (systematic.naive)
      covered = fmt::format("every interleaving with at most {} (a bounded depth-first search: {})",
                            preemptions, counts);
    else if (systematic.Complete())
      covered = fmt::format("every interleaving (DPOR: {}; the bound of {} cut no race reversal)",
                            counts, preemptions);
    else
      covered = fmt::format(
          "every schedule of a DPOR search at bound {} ({}), which is not every interleaving with "
          "at most {}: the bound refused {} race reversal{} it found",
          systematic.bound, counts, preemptions, systematic.cut, systematic.cut == 1 ? "" : "s");
    const std::string systematic_text =
        covered + (outcome.probed > 0 ? fmt::format(", after {} sampled schedules found nothing", outcome.probed)
                                      : std::string());
    if (cert && !cert->complete) {
      const std::string stopped =
          cert->stopped ? fmt::format("{}", fmt::join(cert->stopped->threads, ",")) : "?";
      verdict_line = fmt::format(
          "verdict: inconclusive: no counterexample to {}{} in {} runs over the sub-programs of "
          "{} of the {} recorded threads, but the search of threads {} stopped at its budget of "
          "{} runs{} before it was exhausted: this is not a 'holds'. Give --max-runs more runs, "
          "or a smaller --threads.\n",
          CheckedLabel(a.options), against, cert->runs, cert->threads, cert->of, stopped,
          a.max_runs_given ? a.max_runs
          : l->options.engine == "python" ? kCertificateMaxRunsPython : kCertificateMaxRuns,
          a.max_runs_given ? " (--max-runs)" : "");
    } else if (cert && cert->threads == cert->of) {
      verdict_line = fmt::format("verdict: {} holds{} for {}\n", CheckedLabel(a.options), against,
                                 CertificateWords(*cert));
    } else if (cert) {
      // Complete: the certificate is the claim; the full program's search says what it got on top.
      std::string full;
      if (!systematic.exhausted)
        full = fmt::format("no counterexample in {} schedules (the DPOR search at bound {} stopped "
                           "at its budget of {} runs{}{})",
                           v.explored - cert->runs, systematic.bound, plan.max_runs,
                           a.max_runs_given ? ", --max-runs" : "",
                           v.explored - cert->runs > systematic.verdict.explored + outcome.probed
                               ? ", then sampled schedules"
                               : "");
      else if (automatic)
        full = fmt::format("{}, and {} schedules sampled after it (random walk, PCT d=2 and d=3 "
                           "over k={} steps, seeds {}..{})",
                           systematic_text, plan.sampled_runs, v.pct_steps, plan.seed + plan.probe_runs,
                           plan.seed + plan.probe_runs + plan.sampled_runs - 1);
      else
        full = systematic_text;
      verdict_line = fmt::format("verdict: {} holds{} for {}; all {} threads: {}\n",
                                 CheckedLabel(a.options), against, CertificateWords(*cert),
                                 cert->of, full);
    } else if (no_preemption) {
      verdict_line = fmt::format(
          "verdict: inconclusive: {} did not fail{} in {} schedule(s) without preemption{}, but "
          "--bound 0 never preempts a thread, so it cannot reach a race: this certifies nothing. "
          "Use --bound 1 or more, or no --bound.\n",
          CheckedLabel(a.options), against, systematic.verdict.explored,
          outcome.probed > 0
              ? fmt::format(" (and {} sampled schedules before it, which certify nothing)", outcome.probed)
              : std::string());
    } else if (inconclusive) {
      // Stopped by its budget: say what was run and what was not, never "holds".
      verdict_line = fmt::format(
          "verdict: inconclusive: no counterexample to {}{} in {} schedules, but the "
          "{} search at bound {} was not exhausted (stopped at the budget of {} runs{}){}: "
          "this is not a 'holds'. Give --max-runs more runs, or a lower --bound.\n",
          CheckedLabel(a.options), against, v.explored, systematic.naive ? "bounded depth-first" : "DPOR",
          systematic.bound, plan.max_runs, a.max_runs_given ? ", --max-runs" : "",
          v.explored > systematic.verdict.explored
              ? fmt::format("; {} sampled schedules found nothing either",
                            v.explored - systematic.verdict.explored)
              : std::string());
    } else if (!automatic) {
      verdict_line = fmt::format("verdict: {} holds{} for {}\n", CheckedLabel(a.options), against, systematic_text);
    } else {
      verdict_line = fmt::format("verdict: {} holds{} for {}, and for every schedule "
                                 "sampled after it: {} (random walk, PCT d=2 and d=3 over k={} "
                                 "steps, seeds {}..{}). Chosen without --bound: bound {}, "
                                 "{} sampled runs; --bound B --max-runs N explores further.\n",
                                 CheckedLabel(a.options), against, systematic_text, plan.sampled_runs,
                                 v.pct_steps, plan.seed + plan.probe_runs,
                                 plan.seed + plan.probe_runs + plan.sampled_runs - 1,
                                 plan.bound, plan.sampled_runs);
    }
  }
  // The failure's report (text mode, and the JUnit case of a fix that fails).
  std::string failure_report;
  if (!v.holds && (!a.options.json || !a.junit.empty())) {
    std::string hint;
    if (!a.save.empty()) {
      hint = fmt::format("counterexample saved: replay it with: {} --schedule {}",
                         ReplayCommandLine(a.trace, a.options), ShellQuote(a.save));
    } else {
      hint = fmt::format("replay it (add --save-schedule FILE to keep it): {} --schedule {}",
                         ReplayCommandLine(a.trace, a.options), ShellQuote(v.counterexample->run.schedule.Encode()));
    }
    failure_report = FormatReport(*v.counterexample, l->program, hint);
  }
  // The lines that say under what the verdict was reached: the interpreter assumed, and (for
  // a holds) where the patch was entered.
  std::string context = assumed_line;
  if (v.holds)
    for (const std::string& line : v.reach)
      context += Sprintf("patch reach (in the first schedule checked): %s\n", line.c_str());
  // --failure counts one kind: a verdict without a counterexample of it says what else failed.
  if (!v.counterexample && !v.others.empty())
    context += fmt::format("warning: --failure {} counts only that kind, but these schedules also "
                           "failed with: {}; drop --failure to check every kind\n",
                           a.options.failure, fmt::join(v.others, ", "));
  if (!a.junit.empty()) {
    // Named without the patches' hashes (a CI page keeps the case's history across edits of
    // them); the hashes are its properties, and its report's.
    const std::vector<PatchId> ids = IdentifyPatches(a.options.patches);
    std::vector<std::pair<std::string, std::string>> hashes;
    for (const PatchId& p : ids) hashes.emplace_back(p.name, p.sha256);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (auto w = WriteOutput(a.junit, CheckJunit(a.trace,
                                                 CheckedNames(a.options.fix, ids) + against,
                                                 l->options.engine, verdict, verdict_line,
                                                 engine_said + context + failure_report, hashes, seconds));
        !w)
      return Fail(out, w.error());
  }
  if (!v.holds && !a.perfetto.empty()) {
    std::optional<Replayer> own;
    Replayer& rep = engine ? *engine : own.emplace(l->program, l->options);
    sim::ScheduleReplay again(v.counterexample->run.schedule);
    replay::StepLog log(again);
    const ReplayResult r = rep.Run(log);
    if (auto w = WriteOutput(a.perfetto, replay::ReplayTimeline(r, log.steps())); !w)
      return Fail(out, w.error());
  }
  auto finish = [&](int exit_code) {
    CheckOutput done = Done(out, exit_code);
    done.verdict = verdict;
    done.explored = v.explored;
    if (v.counterexample) done.counterexample = v.counterexample->run.schedule.Encode();
    return done;
  };
  if (a.options.json) {
    // One shape whatever ran (docs/JSON.md): what was not done or not given is null. "search"
    // says what the systematic search did; its method and bound are null when none ran (a
    // counterexample found by the sampled probe or by a sub-program's certificate). "explored"
    // counts every schedule run: search.runs + sampled + probed + certificate_runs.
    const bool searched = systematic.verdict.explored > 0;
    auto ns = [](Nanos n) { return n ? std::to_string(n) : std::string("null"); };
    out += JsonHeader("check");
    out += fmt::format(
        "\"trace\":{},\"fix\":{},{}\"failure\":{},\"verdict\":\"{}\",\"explored\":{},"
        "\"search\":{{\"method\":{},\"bound\":{},\"runs\":{},\"max_runs\":{},\"exhausted\":{},"
        "\"cut\":{},\"complete\":{},\"sampled\":{},\"probed\":{},\"certificate_runs\":{}}},"
        "\"makespan_fix_ns\":{},\"makespan_none_ns\":{},\"makespan_recorded_ns\":{},"
        "\"cost\":{},\"counterexample\":{},\"races\":{},\"assumed\":{},\"certificate\":{},"
        "\"only\":{}}}\n",
        JsonString(a.trace), JsonString(a.options.fix), CheckedJson(a.options),
        JsonOrNull(a.options.failure), verdict, v.explored,
        !searched ? "null" : systematic.naive ? "\"bounded-dfs\"" : "\"dpor\"",
        searched ? std::to_string(systematic.bound) : "null", systematic.verdict.explored,
        plan.max_runs, systematic.exhausted ? "true" : "false", systematic.cut,
        systematic.Complete() ? "true" : "false",
        v.explored - systematic.verdict.explored - outcome.probed - cert_runs, outcome.probed,
        cert_runs, ns(v.makespan_fix), ns(v.makespan_none), ns(v.makespan_recorded),
        v.holds ? CostJson(v.cost) : "null",
        v.counterexample ? FormatJson(*v.counterexample, l->program) : "null",
        a.options.races ? RacesJson(v.races) : "null", JsonOrNull(assumed),
        cert ? CertificateJson(*cert) : "null", JsonOrNull(a.options.only));
    return finish(v.holds ? holds_exit : kExitFound);
  }
  out += colour(verdict_line);
  // The patch it checked was on the path (a failing verdict's report has its own lines).
  out += context;
  if (!v.holds) {
    out += colour(failure_report);
    out += Sprintf("%s\n", shrink_note.c_str());
  }
  if (a.options.races) out += FormatRaces(v.races, v.counterexample ? v.counterexample->findings
                                                                   : std::vector<Finding>{})
                                ;
  // A fix that fails has its failure, not a cost.
  if (v.holds) out += Sprintf("%s\n", FormatCost(v.cost).c_str());
  for (const DuplicateTuning& d : v.duplicates_fix)
    out += Sprintf("warning: duplicate-tuning under this fix: %s key %s tuned by %u threads (%.3f ms "
                "of GPU time wasted)\n",
                d.kernel.c_str(), d.key.c_str(), d.threads, ms(d.wasted_gpu_ns));
  return finish(v.holds ? holds_exit : kExitFound);
}

}  // namespace rerace::replay
