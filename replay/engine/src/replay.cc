// replay/engine/src/replay.cc: Replayer (one run of the programs under a strategy) and the recorded
// order as a strategy. The findings' queries are in findings.cc, the reports in report.cc.
#include "rerace/replay/engine/replay.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "python_engine.h"
#include "rerace/replay/model/tuner_world_gil.h"
#include "rerace/sim/stack_pool.h"
#include "rerace/replay/model/registry.h"
#include "rerace/replay/model/tuner_world.h"

namespace rerace::replay {

namespace {

// The recorded interleaving: the runnable thread whose pending point belongs to the earliest
// recorded transition runs; a thread keeps running while its next point belongs to the same
// transition. Consumes no randomness.
class RecordedOrder final : public sim::Strategy {
 public:
  explicit RecordedOrder(const std::vector<uint64_t>& anchors) : anchors_(anchors) {}
  sim::ThreadId Pick(const sim::Choice& c) override {
    auto anchor = [&](sim::ThreadId t) { return t < anchors_.size() ? anchors_[t] : UINT64_MAX; };
    sim::ThreadId best = c.runnable.front();
    for (sim::ThreadId t : c.runnable) {
      if (anchor(t) < anchor(best)) best = t;
    }
    if (c.previous != sim::kNoThread && anchor(c.previous) == anchor(best) &&
        std::binary_search(c.runnable.begin(), c.runnable.end(), c.previous))
      return c.previous;
    return best;
  }
  std::string Name() const override { return "recorded"; }

 private:
  const std::vector<uint64_t>& anchors_;
};

}  // namespace

Replayer::Replayer(const Program& program, ReplayOptions options)
    : program_(program), options_(std::move(options)), pool_(std::make_unique<sim::StackPool>()) {}

Replayer::~Replayer() = default;

Result<std::string> Replayer::StartEngine() {
  if (options_.engine != "python") return std::string();
  if (!py_) {
    auto py = detail::PythonProcess::Start(program_, options_);
    if (!py) return py.error();
    py_ = std::move(*py);
  }
  return py_->info();
}

std::string Replayer::EngineSummary() {
  if (options_.engine != "python") return detail::ModelEngine(Steps());
  auto info = StartEngine();
  return info ? detail::EngineSummaryOf(*info) : std::string();
}

std::string Replayer::StepAssumption() {
  if (options_.engine == "python" || !Steps().assumed) return std::string();
  return Steps().assumption;
}

const detail::StepMode& Replayer::Steps() {
  if (!steps_) {
    const std::string name = ModelName();
    const detail::TunerModel* model = detail::FindModel(name);
    steps_ = std::make_shared<const detail::StepMode>(
        model == nullptr ? detail::StepMode{}
                         : detail::ResolveStepMode(program_, options_, *model, name));
  }
  return *steps_;
}

std::string Replayer::ModelName() const {
  if (options_.engine == "python") return "python";
  if (options_.model != "auto") return options_.model;
  return detail::AutoModel(program_);
}

ReplayResult Replayer::Run(sim::Strategy& strategy) {
  return RunWith(strategy, nullptr, options_.reps);
}

bool Replayer::CanRunInProcess() {
  if (!in_process_) {
    in_process_ = false;
    if (options_.engine == "python") {
      if (auto info = StartEngine()) {
        const nlohmann::json j = nlohmann::json::parse(*info, nullptr, false);
        in_process_ = j.is_object() && j.value("in_process", false);
      }
    }
  }
  return *in_process_;
}

ReplayResult Replayer::RunInProcess(sim::Strategy& strategy) {
  return RunWith(strategy, nullptr, options_.reps, nullptr, CanRunInProcess());
}

ReplayResult Replayer::RunTimed() {
  sim::Timed first_timed(0);
  ReplayResult r = RunWith(first_timed, nullptr, options_.reps);
  for (int pass = 0; pass < 2 && !r.trials.empty(); ++pass) {
    const TrialTimeline prior = std::move(r.trials);
    sim::Timed timed(0);
    r = RunWith(timed, nullptr, options_.reps, &prior);
  }
  return r;
}

ReplayResult Replayer::RunRecorded() {
  return RunRecorded([](sim::Strategy& s) -> sim::Strategy& { return s; });
}

ReplayResult Replayer::RunRecorded(const std::function<sim::Strategy&(sim::Strategy&)>& wrap) {
  std::vector<uint64_t> anchors;
  RecordedOrder strategy(anchors);
  return RunWith(wrap(strategy), &anchors, 0);
}

ReplayResult Replayer::RunWith(sim::Strategy& strategy, std::vector<uint64_t>* anchors,
                               uint32_t reps, const TrialTimeline* prior, bool here) {
  sim::Scheduler::Options so;
  so.max_steps = options_.max_steps;
  sim::RaceDetector detector;
  if (options_.detect_races) so.races = &detector;
  // --recorded follows the recording's own interleaving (the probe's marks are Python code,
  // places where the recorded run could switch): every access a step there.
  static const detail::StepMode kEveryAccess;
  const detail::StepMode& steps =
      options_.engine == "python" || anchors != nullptr ? kEveryAccess : Steps();
  detail::GilSteps merge(steps);
  if (steps.gil) so.merge = &merge;
  detail::EngineSteps engine_steps;  // the real code's steps: it says which accesses merge
  if (options_.engine == "python") so.merge = &engine_steps;
  if (options_.engine == "python") {
    if (anchors != nullptr)
      throw detail::EngineError("the python engine cannot follow the recorded order (--recorded): "
                                "use --engine model");
    if (auto started = StartEngine(); !started) throw detail::EngineError(started.error().message);
    ReplayResult r;
    r.strategy = strategy.Name();
    r.fix = options_.fix.name;
    r.model = ModelName();
    r.engine = detail::EngineSummaryOf(py_->info());
    std::exception_ptr error;
    {
      sim::Scheduler sched(strategy, so, pool_.get());
      detail::PythonWorld world(sched, program_, *py_, engine_steps, here);
      for (uint32_t t = 0; t < program_.threads.size(); ++t)
        sched.Spawn(program_.threads[t].name, [&world, t] { world.RunThread(t); });
      try {
        r.run = sched.Run();
        world.Finalize(r);
      } catch (...) {
        error = std::current_exception();
      }
      // The scheduler is torn down here, with no exception in flight: a proxy fiber still
      // waiting unwinds (Teardown) rather than running on against a world that is gone.
    }
    if (error) std::rethrow_exception(error);
    r.races = detector.races();
    return r;
  }
  sim::Scheduler sched(strategy, so, pool_.get());
  const std::string name = ModelName();
  const detail::TunerModel* model = detail::FindModel(name);
  if (model == nullptr)
    throw detail::EngineError(fmt::format("no tuner model is named '{}' (one of {})", name,
                                          fmt::join(ModelNames(), ", ")));
  detail::TunerWorld world(sched, program_, options_, reps, *model, anchors, prior);
  world.Spawn();
  ReplayResult r;
  r.strategy = strategy.Name();
  r.fix = options_.fix.name;
  r.model = name;
  r.engine = detail::ModelEngine(steps);
  r.steps = steps.why;
  r.run = sched.Run();
  world.Finalize(r);
  r.races = detector.races();
  return r;
}

}  // namespace rerace::replay
