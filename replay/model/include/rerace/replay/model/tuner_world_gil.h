// replay/model/include/rerace/replay/model/tuner_world_gil.h: steps as the interpreter takes them (private to replay).
//
// Under CPython with the GIL a thread loses the interpreter only where that version can hand
// the GIL over (an eval-breaker check, a blocking call; docs/GIL.md); the accesses between two
// such places are atomic. A model's table (GilWindow rows, made from the release's bytecode by
// tools/scripts/gil-regions.py and kept between markers in the model's file) lists, per Python
// version, the pairs of consecutive accesses of one function (by source line) with no
// hand-over place between them; GilSteps, a sim::StepMerge, performs the second access of such
// a pair inside the step of the first. Free-threaded (or a tuner that is not Python code),
// nothing is merged: every access is a step.
//
//   StepMode m = ResolveStepMode(program, options, model);   // once per Replayer
//   GilSteps merge(m);              // per run: counts executions for warm-up
//   so.merge = m.gil ? &merge : nullptr;
//
// GilSteps is used from the scheduler's thread only; it consumes no random stream.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rerace/replay/model/result.h"
#include "rerace/sim/scheduler.h"

namespace rerace::replay::detail {

class TunerModel;

// Two consecutive accesses of one function, by the line of each in autotuner.py, and whether
// the code between them can hand the GIL over.
struct GilWindow {
  uint16_t from;
  uint16_t to;
  // -1: it can (a checking instruction or call between); 0: it cannot; N > 0: it cannot once
  // the call between runs specialized, from the (N+1)-th execution of the window on (all
  // threads together: the specialization lives in the shared code object).
  int8_t warmup;
};

// The windows of one Python version ("3.12").
struct GilTable {
  const char* python;
  std::span<const GilWindow> windows;
};

// How a run's steps are cut, and why (for the report).
struct StepMode {
  bool gil = false;
  std::string python;         // "3.12"; empty when unknown
  std::string why;            // one line for the report; empty when free-threaded by default
  const GilTable* table = nullptr;  // null: no window is atomic
  // The recording does not say which Python ran it and no --python-version was given: `python`
  // is kAssumedPython, with the GIL, and `why` says so ("assumed " + `assumption`).
  bool assumed = false;
  std::string assumption;
};

// The interpreter assumed for a recording that does not name one: the H200's (docs/FIDELITY.md).
inline constexpr const char* kAssumedPython = "3.12";

// The mode for replaying `p` with `model` under `o` (--python, --python-version): the recorded
// interpreter's (the probe's metadata) unless overridden; free-threaded for a tuner that is not
// Python code. An unknown --python-version is an EngineError naming the versions known.
StepMode ResolveStepMode(const Program& p, const ReplayOptions& o, const TunerModel& model,
                         const std::string& model_name);

// What a saved schedule records as the engine: "model", or "model, CPython 3.12 GIL steps"
// (a schedule of merged steps replays only under the same steps).
std::string ModelEngine(const StepMode& m);

class GilSteps final : public sim::StepMerge {
 public:
  explicit GilSteps(const StepMode& mode) : mode_(mode) {}
  bool InStep(sim::ThreadId t, const sim::SchedulingPoint& p) override;

 private:
  // The autotuner.py line a label names ("autotuner.py:213 ..."), 0 for none; cached by pointer.
  uint16_t LineOf(const char* label);

  const StepMode& mode_;
  std::vector<uint16_t> last_;                          // per thread: line of its last access
  std::vector<std::pair<const char*, uint16_t>> lines_;  // label → line
  std::vector<uint32_t> executions_;                    // per window of the table
};

}  // namespace rerace::replay::detail
