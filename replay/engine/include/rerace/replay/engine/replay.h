// rerace/replay/engine/replay.h: the recorded threads run again, under a chosen interleaving.
//
// Overview. A `Program` (model/program.h) holds one program per recorded host thread.
// `Replayer` runs them as fibers on a `sim::Scheduler`, with one of two engines:
//   - the model (replay/model): each tuner call is re-executed step by step by a C++ tuner
//     model (Triton's Autotuner per release, FLA's CachedAutotuner, rerace's native autotuner;
//     replay/model/src/models/, one file each) against simulated shared state, where every read
//     and write of a shared field is a scheduling point labelled with the Triton source line it
//     stands for; launches run on a virtual GPU timed by the recorded kernel durations;
//   - the real code (this folder: src/python_engine*.cc and python/rerace_real): the installed
//     tuner code itself, one recorded thread at a time in a Python process, switching only
//     where that interpreter can hand the GIL over.
// A `Fix` (model/fix.h) changes the model; a patch file changes the real code. What a run finds
// is a `ReplayResult` (model/result.h); its reports are in replay/report.
//
// Determinism: the result depends only on the program, the options and the strategy's
// choices. Replayer is used from one thread; it reuses fiber stacks across runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/model/result.h"
#include "rerace/sim/scheduler.h"
#include "rerace/sim/strategy.h"

namespace rerace::sim {
class StackPool;
}
namespace rerace::replay::detail {
class PythonProcess;
struct StepMode;
}

namespace rerace::replay {

class Replayer {
 public:
  // REQUIRES: `program` outlives the Replayer.
  Replayer(const Program& program, ReplayOptions options);
  ~Replayer();

  // One run under `strategy`. The python engine runs it in a fresh fork of its set-up process:
  // nothing an earlier run did is there.
  ReplayResult Run(sim::Strategy& strategy);
  // The same run, where the python engine can, in its long-lived process instead, which puts
  // back between runs what a run changes of the set-up's state (rerace_real/reset.py) rather
  // than forking: about twice as fast, but the reset's completeness is not proven, so no
  // caller reports a finding of it unconfirmed (RunCampaign replays each such run with Run and
  // reports that run). Where it cannot (the model engine, RERACE_ENGINE_IN_PROCESS=0): Run.
  ReplayResult RunInProcess(sim::Strategy& strategy);
  // Whether RunInProcess runs in the long-lived process (starts the engine).
  bool CanRunInProcess();
  // The schedule a cost is priced on: the timed strategy (the thread with the least virtual
  // time runs at each point), run three times. A trial that contends (Python time-budgeted
  // trials, trials that synchronize the device) counts the other threads' trials running when
  // it starts in the run before: every thread's, where the first run sees only those of threads
  // the schedule ran before it (a thread runs on until its next scheduling point).
  ReplayResult RunTimed();
  // The recorded interleaving: the thread whose next recorded transition comes first runs.
  // Repetitions as recorded.
  ReplayResult RunRecorded();
  // The same, with the recorded-order strategy handed to `wrap` first (a StepLog, say).
  ReplayResult RunRecorded(const std::function<sim::Strategy&(sim::Strategy&)>& wrap);

  // python engine: starts the Python process (Triton, patches, tuners) now, for a clean error;
  // returns what it reports (JSON: versions, switch rules, replaced parts, patches applied).
  // Run() starts it when this was not called, and throws on failure. Model engine: "".
  [[nodiscard]] Result<std::string> StartEngine();

  // One line naming what runs: "model", or for the python engine "python: CPython 3.12 (GIL),
  // Triton 3.6.0, patches lock_run.py". Starts the engine if needed ("" if it cannot start).
  std::string EngineSummary();

  // model: when the recording does not say which Python ran it, the interpreter its steps
  // assume, for the verdict ("CPython 3.12 with the GIL: this recording does not say ..."); else
  // "".
  std::string StepAssumption();

  const Program& program() const { return program_; }
  const ReplayOptions& options() const { return options_; }
  std::string ModelName() const;

 private:
  // `anchors`: the recorded-order strategy's per-thread position, kept by the model (or null).
  // `prior`: the trial timeline contention is counted against (RunTimed), or null.
  ReplayResult RunWith(sim::Strategy& strategy, std::vector<uint64_t>* anchors, uint32_t reps,
                       const TrialTimeline* prior = nullptr, bool here = false);
  // model: the steps' mode (tuner_world_gil.h), resolved on first use.
  const detail::StepMode& Steps();
  const Program& program_;
  ReplayOptions options_;
  std::unique_ptr<sim::StackPool> pool_;
  std::unique_ptr<detail::PythonProcess> py_;
  std::shared_ptr<const detail::StepMode> steps_;
  std::optional<bool> in_process_;  // CanRunInProcess's answer, once asked
};

// python engine: resolves `--fix` text: names joined by '+', each "none", "prewarm" (the
// engine runs every recorded call once, serially, before the threads) or a patch file shipped
// in replay/engine/python/rerace_real/fixes/ ("lock-run" is fixes/lock_run.py). Sets o.fix.name,
// o.fix.prewarm and prepends the patch files to o.patches. Unknown names: exit 64, listing
// the known ones.
[[nodiscard]] Result<void> UsePythonFix(const std::string& text, ReplayOptions& o);
// One line for people from what the python engine reports when it starts (JSON).
std::string DescribeEngine(const std::string& info_json);
// The folder holding the engine's Python package (RERACE_PYTHONPATH, else the source tree's).
std::string PythonEngineDir();

}  // namespace rerace::replay
