// rerace/replay/model/result.h: what one run is asked to do and what it found.
//
// `ReplayOptions` are a run's inputs besides the program and the strategy (the fix, the model
// or engine, the interpreter's switch points); `ReplayResult` is what a run found, the same
// for the C++ tuner models and the real-code engine (replay/engine): its `Finding`s by step,
// duplicate tuning, the simulated step time and where it went. The free functions below
// answer questions about findings (which kinds exist, whether a run hits one, the first of a
// kind, an error that is not a finding).
//
// Failures are reported as the real program raises them, and in rerace's words:
//   in-param-not-in-cache  KeyError: 'y_ptr' in _post_hook (crash; the thread's call ends)
//   restore-shape-mismatch RuntimeError: a saved copy of another shape restored (crash)
//   nargs-none             TypeError on None nargs (crash)
//   wrong-restore          a thread restores another thread's saved copy (silent)
//   config-mismatch        a launch runs with a config another thread's key selected (silent)
//   deadlock, step-bound, divergence (from the scheduler)
// and, as warnings, duplicate tuning of one key. As in the real program, a crash ends the
// calling thread's task, not the others; silent corruption ends nothing. A run reports every
// finding, first by step.
//
// Plain values; the functions are pure and safe to call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/replay/model/cost.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/model/text.h"  // JsonEscape, for every JSON of a result
#include "rerace/sim/race_detector.h"
#include "rerace/sim/scheduler.h"

namespace rerace::replay {

struct ReplayOptions {
  Fix fix;
  // auto (from the trace's tuner class and Triton version) or one of ModelNames()
  std::string model = "auto";
  uint32_t reps = 1;            // do_bench repetitions executed per config; 0: as recorded
  uint64_t max_steps = 2'000'000;
  Nanos launch_cpu_ns = 4'000;  // CPU time a launch costs its thread
  bool detect_races = false;    // happens-before race detection (sim/race_detector.h)
  // The engine: "model" (the C++ tuner models) or "python" (the real tuner code, run by
  // replay/engine/python/rerace_real in `python_exe`; see replay/engine/src/python_engine.h).
  std::string engine = "model";
  std::vector<std::string> patches;       // python: files imported before the tuners are built
  // python: "gil" or "free-threaded" switch points; "auto": as the recorded interpreter ran
  // (the probe's metadata), the GIL when the recording does not say.
  // model: the same for a Python tuner's steps (replay/model/include/rerace/replay/model/tuner_world_gil.h); "auto" without
  // a recorded interpreter: every access a step. `python_version` ("3.12") overrides the
  // recorded version whose GIL windows apply.
  std::string python_mode = "auto";
  std::string python_version;
  std::string python_exe = "python3";
  // python: import the patch module a patched recording names when it is installed here
  // (site-packages or the user's PYTHONPATH); without it such a recording needs --patch.
  bool allow_recorded_patch = false;
  // check --price-as FIX: the model fix a --patch is priced as (its verdict stays the real
  // code's); "" prices no patch file.
  std::string price_as;
  // python: a run (or the set-up) that makes no progress for this long ends as a hang naming
  // where each Python thread is (--watchdog).
  uint32_t watchdog_ms = 60'000;
  // --failure KIND: only a finding with this code makes a run count as failing for check's
  // verdict and fuzz's findings (empty: any finding). Does not change a run.
  std::string target;
};

struct Finding {
  std::string code;        // "in-param-not-in-cache", "nargs-none", "wrong-restore", ...
  bool silent = false;     // the real program raises nothing
  uint32_t thread = 0;     // replay thread index (sim::kNoThread for deadlock / step bound)
  std::string thread_name;
  uint64_t step = 0;
  std::string type;        // as Python raises it: "KeyError"
  std::string message;     // "'y_ptr'"
  std::string where;       // "triton/runtime/autotuner.py:74 in _post_hook"
  std::string words;       // rerace's explanation
  uint32_t other = UINT32_MAX;  // the thread whose write led to it, if known
  uint64_t other_step = UINT64_MAX;  // the step of that write
};

struct DuplicateTuning {
  std::string kernel;
  std::string key;
  uint32_t threads = 0;
  Nanos wasted_gpu_ns = 0;
};

// Per replay thread, the intervals of its trials that contend with other threads' (Python
// time-budgeted trials, trials that synchronize the device), in time order.
using TrialTimeline = std::vector<std::vector<std::pair<Nanos, Nanos>>>;

struct ReplayResult {
  std::string strategy;
  std::string fix;
  std::string model;
  sim::RunResult run;
  std::vector<Finding> findings;          // by step
  std::vector<DuplicateTuning> duplicates;
  Nanos makespan = 0;                     // simulated step time
  StepCost cost;                          // where it went (model engine)
  TrialTimeline trials;                   // model engine: its contending trials
  uint64_t left_recording = 0;            // --recorded: transitions the model could not match
  std::vector<sim::Race> races;           // with detect_races
  // What ran: "model", or the python engine's interpreter, mode, Triton and patches
  // (Replayer::EngineSummary); a saved schedule records it and replays only under the same.
  std::string engine;
  // model: how steps were cut, and why, when it is not every access a step by default
  // ("CPython 3.12 with the GIL (as recorded, ...)"); empty otherwise.
  std::string steps;
  // python engine: one line per callable a patch replaced that the run's calls entered
  // ("your Autotuner.run replacement (fix.py:7) was entered by 8 of 8 threads' calls"); one
  // entered by none is the finding "patch-not-reached" instead.
  std::vector<std::string> notes;
  bool failed() const { return !findings.empty(); }
  // Distinct failure signature, for fuzz's de-duplication: codes and where, not thread ids.
  std::string Signature() const;
};

// Adds the races of `from` not yet in `into` (same object and the same two source labels).
void MergeRaces(std::vector<sim::Race>& into, const std::vector<sim::Race>& from);

// What a run means for the command line, beyond "failed or not": a divergence (a saved
// schedule that does not fit this program, fix, model or reps) is bad input, exit 65; an
// exception that escaped the model or a failed check is a bug in rerace, exit 70. Neither is a
// race, so neither may end a command with exit 1. Returns the error (message and exit code) for
// those two, nothing for a run that failed or passed on its own terms.
std::optional<Error> RunError(const ReplayResult& r);

// The finding codes a run can report (for --failure), in order of harm as docs/MODEL.md ranks
// them: silent corruption, crashes, deadlocks, then the scheduler's step bound.
const std::vector<std::string>& FailureKinds();
// `kind` is a code ("nargs-none") or the name of the exception raised, as Python names it
// ("KeyError", "TypeError": the failures that raised it), or either with where it happened,
// "KIND@WHERE" (the finding's `where` contains WHERE: "nargs-none@autotuner.py:233");
// empty matches any finding.
bool Matches(const Finding& f, const std::string& kind);
// Whether `name` can be an exception's name: a Python class name ("KeyError"), not a code.
bool IsExceptionName(const std::string& name);
// Whether `r` has a finding of `kind` (any finding when `kind` is empty), or a RunError.
bool Hits(const ReplayResult& r, const std::string& kind);
// The first finding of `kind` by step (the first finding when `kind` is empty), or null.
const Finding* FirstOf(const ReplayResult& r, const std::string& kind);
// The number of threads of `p` that call a tuner (the workers; not a main thread that only
// launched or synchronized), as the summary counts them: "7 of 8 threads".
uint32_t WorkerThreads(const Program& p);

// The Triton version the recording names (the probe's metadata), "" when it does not say.
std::string RecordedTritonVersion(const Program& p);

// The tuner models, by name, in the registry's order (what --model takes besides "auto";
// replay/model/src/models/registry.cc).
const std::vector<std::string>& ModelNames();

// The tuner classes `--model auto` recognizes: Triton's Autotuner (a class under `triton.`),
// FLA's CachedAutotuner (a class under `fla.` or naming CachedAutotuner) and rerace's native
// tuner (under `rerace.kernels.`). Returns the first class of `p` that is none of these, which
// no model may stand for without the user saying so (--model).
std::optional<std::string> UnknownTunerClass(const Program& p);

}  // namespace rerace::replay
