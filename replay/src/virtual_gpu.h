// replay/src/virtual_gpu.h: the virtual GPU and CPU a replay run charges its time to
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
// Every charge is also counted by term (rerace/replay/cost.h) for check's report.
//
// All methods are called from the scheduler's fibers of one run.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "rerace/replay/cost.h"
#include "rerace/replay/replay.h"
#include "rerace/sim/scheduler.h"

namespace rerace::replay::detail {

class VirtualGpu {
 public:
  VirtualGpu(sim::Scheduler& s, const Program& p);

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
  // synchronization): one thread's at a time per device, in the order the schedule reaches it.
  void Context(uint32_t device, Nanos ns);
  // A launch of `duration` of GPU work on (device, stream); the launch costs its thread `cpu`
  // of CPU. `tuning`: part of a benchmark (counted under tuning, not kernels).
  void Launch(uint32_t device, uint64_t stream, Nanos duration, bool tuning, Nanos cpu);
  // Waits for the stream's work (or the whole device's).
  void Sync(uint32_t device, uint64_t stream, bool whole_device);
  // A benchmark() of `configs` configs that took its thread `ns`.
  void CountTuning(size_t configs, Nanos ns);

  // After the run: the terms, and the makespan (largest clock, CPU or GPU).
  void Finalize(const sim::RunResult& run, StepCost& cost, Nanos& makespan) const;

 private:
  void Own(Nanos ns);  // the current thread did `ns` of its own work (CPU or waiting for the GPU)

  sim::Scheduler& s_;
  const Program& p_;
  std::map<std::pair<uint32_t, uint64_t>, Nanos> streams_;  // (device, stream) → ready
  std::map<uint32_t, Nanos> devices_;                       // device → busy until
  Nanos gil_free_ = 0;
  std::map<uint32_t, Nanos> context_free_;                  // device → its context is free
  std::vector<Nanos> own_;    // per scheduler thread: its own work
  std::vector<Nanos> start_;  // per scheduler thread: its start
  std::vector<bool> counted_; // per scheduler thread: counts in the step
  Nanos gpu_end_ = 0;         // end of the GPU work counted threads launched
  bool any_worker_ = false;   // the program marks some thread part of the step
  StepCost cost_;
};

}  // namespace rerace::replay::detail
