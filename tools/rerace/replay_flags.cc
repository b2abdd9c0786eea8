// tools/rerace/replay_flags.cc: the flags replay, fuzz and check share (see replay_flags.h).
#include "replay_flags.h"

#include "rerace/base/wrap.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "flags.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"

namespace rerace::tools {

using namespace rerace::replay;

void AddCommonFlags(CLI::App* sub, CommonFlags& f, bool with_strategy) {
  replay::CommandOptions& c = f.options;
  f.fix_opt = sub->add_option("--fix", c.fix,
                  "Fix to apply: a name (" + fmt::format("{}", fmt::join(FixNames(), ", ")) +
                      "), names joined by '+', or a description like 'local=nargs;lock=hooks'")
      ->default_val("none");
  std::vector<std::string> models = {"auto"};
  models.insert(models.end(), ModelNames().begin(), ModelNames().end());
  f.model_opt = sub->add_option("--model", c.model,
                                "Tuner model: auto (from the trace's tuner class and Triton "
                                "version; a class rerace does not know is refused), or one of " +
                                    fmt::format("{}", fmt::join(ModelNames(), ", ")) +
                                    " (docs/MODEL.md: triton is Triton 3.6, native rerace's C++ "
                                    "autotuner)")
      ->default_val("auto")
      ->check(CLI::IsMember(models));
  sub->add_option("--engine", c.engine,
                  "auto: the real tuner code when the recording came from Python's Triton and a "
                  "Triton of its version imports with --python-exe (else build/py's), else the "
                  "model, said in one line on standard error; python: the real tuner code (the "
                  "Triton installed for --python-exe, the patches) run one thread at a time under "
                  "rerace's scheduler; model: rerace's C++ tuner models (fast, no Python needed)")
      ->default_val("auto")
      ->check(CLI::IsMember({"model", "python", "auto"}));
  sub->add_option("--patch", c.patches,
                  "With --engine python: a Python file imported before the tuners are built, as "
                  "a training script applies a patch at start-up (repeatable; a missing file is "
                  "exit 66)");
  sub->add_option("--python", c.python_mode,
                  "Where a thread can lose the interpreter: gil (only where this CPython can hand "
                  "the GIL over; the model merges the accesses between two such places into one "
                  "step), free-threaded (at every shared access), or auto (as the recorded "
                  "interpreter ran; a recording that does not say is taken as CPython 3.12 with the "
                  "GIL, the H200's, and the verdict says so)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "gil", "free-threaded"}));
  sub->add_option("--python-version", c.python_version,
                  "With --engine model: the CPython version (X.Y) whose GIL hand-over places cut "
                  "the steps, instead of the recorded one")
      ->check([](const std::string& v) {
        const size_t dot = v.find('.');
        const bool ok = dot != std::string::npos && dot > 0 && dot + 1 < v.size() &&
                        v.find_first_not_of("0123456789.") == std::string::npos &&
                        v.find('.', dot + 1) == std::string::npos;
        return ok ? std::string() : "expected a version X.Y such as 3.12, found '" + v + "'";
      });
  f.python_exe_opt = sub->add_option("--python-exe", c.python_exe,
                  "With --engine python: the Python that runs the tuner code (its Triton is the "
                  "one replayed)")
      ->default_val("python3");
  sub->add_flag("--allow-recorded-patch", c.allow_recorded_patch,
                "With --engine python and a patched recording without --patch: import the patch "
                "module the recording names, when it is installed here (site-packages or your "
                "PYTHONPATH; never the current directory or the standard library)");
  sub->add_option("--watchdog", f.watchdog,
                  "With --engine python: a run or set-up with no progress for this long ends as a "
                  "hang naming where each Python thread is (90s, 10m, 1h; at least 1 s)")
      ->default_val("60s")
      ->check(flags::Duration());
  f.reps_opt = sub->add_option("--reps", c.reps,
                  "do_bench repetitions executed per config (0: as recorded); fewer steps, same "
                  "failures")
      ->default_val(1)
      ->check(flags::Count(0, 10000));
  f.max_steps_opt = sub->add_option("--max-steps", c.max_steps, "Step bound of one run")
                        ->default_val(kDefaultMaxSteps)
                        ->check(flags::Count(1, flags::kMaxSteps));
  sub->add_option("--failure", c.failure,
                                  "Target one kind of failure (" +
                                      fmt::format("{}", fmt::join(FailureKinds(), ", ")) +
                                      ") or the exception it raised as Python names it "
                                      "(KeyError, TypeError), optionally where it happens "
                                      "(KIND@WHERE, e.g. nargs-none@autotuner.py:233 or "
                                      "KeyError@autotuner.py:74): the report leads with it; "
                                      "fuzz and check count only it")
                      ->check([](const std::string& v) -> std::string {
                        const std::string kind = v.substr(0, v.find('@'));
                        const auto& kinds = FailureKinds();
                        if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return "";
                        if (IsExceptionName(kind)) return "";
                        return fmt::format("'{}' is neither a failure kind ({}) nor an exception's "
                                           "name as Python gives it (KeyError, TypeError)",
                                           kind, fmt::join(kinds, ", "));
                      });
  f.only_opt = sub->add_option("--only", c.only,
                               "Replay only these recorded worker threads (indices as reports "
                               "number them, e.g. 1,3): the sub-program a certificate's "
                               "counterexample comes from (check --threads)");
  sub->add_flag("--order-from-timing", c.order_from_timing,
                "Keep calls of different threads that never overlapped in the recording in their "
                "recorded order (for a recording made before the probe recorded the program's "
                "Events, joins and queues, whose calls they ordered replay as concurrent "
                "otherwise)");
  sub->add_flag("--json", c.json, "Print JSON instead of the text report");
  sub->add_flag("--races", c.races,
                "Detect unordered conflicting accesses to the tuner's fields by happens-before, "
                "also in runs where nothing failed, and print them (text and --json)");
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

replay::CommandOptions ParsedOptions(const CommonFlags& f) {
  replay::CommandOptions o = f.options;
  o.program = Program();
  auto given = [](const CLI::Option* opt) { return opt != nullptr && opt->count() > 0; };
  o.fix_given = given(f.fix_opt);
  o.model_given = given(f.model_opt);
  o.reps_given = given(f.reps_opt);
  o.max_steps_given = given(f.max_steps_opt);
  o.python_exe_given = given(f.python_exe_opt);
  o.only_given = given(f.only_opt);
  // Checked by flags::Duration() when parsed.
  auto watchdog = flags::ParseDuration(f.watchdog);
  o.watchdog_seconds = watchdog ? *watchdog : 60;
  o.colour = UseColour();
  // What the report printed so far goes out first: a note follows it as the command said them.
  // Every line of prose under kReportWidth columns (rerace/base/wrap.h); JSON and the commands
  // to copy stay whole.
  o.notes = [](const std::string& text) {
    std::fflush(stdout);
    std::fputs(Wrapped(text).c_str(), stderr);
  };
  o.report = [](const std::string& text) { std::fputs(Wrapped(text).c_str(), stdout); };
  return o;
}

std::string Wrapped(const std::string& text) {
  // RERACE_REPORT_WIDTH: the columns a report's prose is wrapped at (default kReportWidth); 0
  // leaves every line whole, for a script that reads the text. Read once.
  static const size_t width = [] {
    const char* v = std::getenv("RERACE_REPORT_WIDTH");
    if (v == nullptr || *v == '\0') return kReportWidth;
    const std::string s = v;
    const bool digits = s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos;
    const size_t n = digits ? std::stoul(s) : 1;
    if (n != 0 && n < 40) {
      std::fprintf(stderr, "rerace: error: RERACE_REPORT_WIDTH=%s: not a width (0 for no wrapping, "
                           "or 40 columns or more)\n", v);
      std::exit(kExitUsage);
    }
    return n == 0 ? std::string::npos : n;
  }();
  return width == std::string::npos ? text : WrapReport(text, width);
}

int PrintOutput(const replay::CommandOutput& output) {
  std::fputs(Wrapped(output.out).c_str(), stdout);
  if (output.error) return ReportError(*output.error);
  return output.exit_code;
}

bool ShowProgress(const replay::CommandOptions& options) {
  return isatty(2) && !options.json && std::getenv("NO_PROGRESS") == nullptr;
}

void RegisterReplayCommands(CLI::App& app, CommandTable& table) {
  RegisterReplay(app, table);
  RegisterFuzz(app, table);
  RegisterCheck(app, table);
}

}  // namespace rerace::tools
