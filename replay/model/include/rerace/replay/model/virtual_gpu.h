// replay/model/include/rerace/replay/model/virtual_gpu.h: the virtual GPU and CPU a replay run charges its time to
// (private to replay).
//
// GPU: per device and stream, work (kernels, copies, fills) queues in order and takes its
// recorded duration. Streams of one device run one at a time unless the recording shows
// kernels of different streams of that device overlapping (Program::overlapping_devices);
// then each stream runs on its own. A synchronization moves the thread's clock to the end of
// the work it waits for.
// CPU: a thread's CPU work (the recorded time between its events, a launch's cost, a trial's
// CPU time) moves its own clock; under the GIL (Program::gil) only one thread's CPU work runs
// at a time, in the order the schedule reaches it.
// Every charge is also counted by term (rerace/replay/model/cost.h) for check's report.
//
// All methods are called from the scheduler's fibers of one run.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "rerace/replay/model/cost.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/model/result.h"
#include "rerace/sim/scheduler.h"

namespace rerace::replay::detail {

class VirtualGpu {
 public:
  // `prior`: contention is counted against its trials (every thread's), else against this
  // run's (those the schedule ran before); see Replayer::RunTimed.
  VirtualGpu(sim::Scheduler& s, const Program& p, const TrialTimeline* prior);

  // The current thread starts at `at` (its recorded start); `counted`: its end (and the end of
  // the GPU work it launched) counts in the step (every thread counts when the program marks
  // none a worker).
  void Start(Nanos at, bool counted);
  // CPU work of the current thread (under the GIL: after the GIL is free). `between`: time
  // the recording shows between the thread's events (counted as its own term).
  // `gil`: false for time the recording shows inside do_bench, mostly waiting for the device,
  // which releases the GIL.
  void Cpu(Nanos ns, bool between = false, bool gil = true);
  // Host work of a trial that holds the device's context (cudaMalloc, cudaFree, a device
  // synchronization): one thread's at a time per device, in the order the schedule reaches it;
  // longer, as BudgetedTrial, when other threads' contending trials run when it asks (the
  // driver's locks: the H200's native call-local at 1 / 2 / 4 / 8 threads, docs/MODEL.md).
  void Context(uint32_t device, Nanos ns);
  // A launch of `duration` of GPU work on (device, stream); the launch costs its thread `cpu`
  // of CPU. `tuning`: part of a benchmark (counted under tuning, not kernels).
  void Launch(uint32_t device, uint64_t stream, Nanos duration, bool tuning, Nanos cpu);
  // Waits for the stream's work (or the whole device's).
  void Sync(uint32_t device, uint64_t stream, bool whole_device);
  // A repetition of a Python trial that runs for a time budget and took `alone` in the
  // recording without others: longer when other threads' contending trials run (in virtual
  // time) when it starts (TrialContentionFactor in calibrate.h of the number running). The
  // host's Python work under the GIL, and the repetition count estimated under contention,
  // make concurrent trials longer (the H200, docs/MODEL.md).
  void BudgetedTrial(Nanos alone);
  // Before every trial: the run's first pays the process's cold start (Program::cold_ns); a
  // trial that starts before that ends waits for it.
  void ColdStart();
  // A benchmark() of `configs` configs that took its thread `ns`.
  void CountTuning(size_t configs, Nanos ns);

  // After the run: the terms, the makespan (largest clock, CPU or GPU), its trial timeline.
  void Finalize(const sim::RunResult& run, StepCost& cost, Nanos& makespan, TrialTimeline& trials);

 private:
  void Own(Nanos ns);  // the current thread did `ns` of its own work (CPU or waiting for the GPU)
  // A contending trial of the current thread that takes `alone` without others, started at
  // `now`: the time contention adds (TrialContentionFactor of the trials running then).
  Nanos Contention(Nanos alone, Nanos now) const;
  void AddTrial(Nanos from, Nanos to);
  const TrialTimeline* prior_;

  sim::Scheduler& s_;
  const Program& p_;
  // Work queued on a stream (or on a device whose streams run one at a time). A thread runs on
  // until its next scheduling point, so the schedule can reach a launch of one thread before
  // another thread's that came earlier in virtual time: new work, and a synchronization, at a
  // thread's time wait only for the work launched (in virtual time) before it. The last 64
  // launches are kept with their launch times; older ones fold into one end (a thread whose
  // clock lags 64 launches behind a stream waits for them all).
  class Queue {
   public:
    // The latest end of the work launched at or before `now`.
    Nanos EndBefore(Nanos now) const;
    void Add(Nanos launched, Nanos ends);

   private:
    std::array<std::pair<Nanos, Nanos>, 64> recent_{};  // (launched at, ends), a ring
    size_t next_ = 0, size_ = 0;
    Nanos folded_ = 0;
  };
  std::map<std::pair<uint32_t, uint64_t>, Queue> streams_;  // (device, stream)
  std::map<uint32_t, Queue> devices_;                       // device → its work (streams one at a time)
  Nanos gil_free_ = 0;
  std::map<uint32_t, Nanos> context_free_;                  // device → its context is free
  std::vector<Nanos> own_;    // per scheduler thread: its own work
  std::vector<Nanos> start_;  // per scheduler thread: its start
  std::vector<bool> counted_; // per scheduler thread: counts in the step
  bool cold_started_ = false;
  Nanos cold_until_ = 0;
  TrialTimeline trials_;      // per scheduler thread: its contending trials, in time order
  Nanos gpu_end_ = 0;         // end of the GPU work counted threads launched
  bool any_worker_ = false;   // the program marks some thread part of the step
  StepCost cost_;
};

}  // namespace rerace::replay::detail
