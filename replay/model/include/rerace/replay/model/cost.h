// rerace/replay/model/cost.h: where a run's simulated step time went, and a fix's cost against a
// baseline that does not fail.
//
// The virtual GPU and CPU (replay/model/include/rerace/replay/model/virtual_gpu.h) charge every run's time to a few terms:
// tuning (the benchmarks of the configs, their trials' CPU and GPU time), kernels launched
// outside tuning, the CPU time a thread spends between its events (as recorded), waiting for
// the GIL, and, for the thread that ends last, the time it spent blocked on other threads
// (locks, futures, an owner thread). `DominantTerms` names the largest, in words a user can
// check against the trace ("tuning: 8 x 12 configs x 0.412 ms").
//
// Plain values; deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rerace/replay/model/program.h"

namespace rerace::replay {

struct StepCost {
  uint32_t tunings = 0;       // benchmark() runs (cache misses tuned)
  uint64_t configs = 0;       // configs benchmarked, over every tuning
  Nanos tuning_ns = 0;        // threads' time inside benchmarks (waits for the GPU included)
  uint64_t launches = 0;      // kernels launched outside tuning
  Nanos kernel_ns = 0;        // their GPU time
  uint64_t cpu_spans = 0;     // CPU spans between events charged (calibrated by the recording)
  Nanos cpu_ns = 0;
  Nanos gil_wait_ns = 0;      // CPU work that waited for the GIL (Python tuners)
  Nanos context_wait_ns = 0;  // trials' host work that waited for the device's context
                              // (another thread's cudaMalloc / cudaFree / device synchronization)
  Nanos gpu_queue_ns = 0;     // kernels that waited for a busy device
  Nanos cold_ns = 0;          // the process's cold start, paid by the first trial (Program::cold_ns)
  Nanos trial_contention_ns = 0;  // Python trials' time beyond their own, from other threads'
                                  // trials running at once (Program::trial_contention_ppm)
  uint32_t trial_contention_ppm = 0;   // the figure used, and where it came from
  std::string trial_contention_from;   // "recording", "H200"
  Nanos blocked_ns = 0;       // the last thread to end: time blocked on other threads
  Nanos critical_ns = 0;      // that thread's clock at its end
  std::string critical;       // its name
};

struct CostTerm {
  std::string name;   // "tuning", "kernels", "cpu", "gil", "context", "blocked", "gpu-queue",
                      // "contention", "cold"
  Nanos ns = 0;
  std::string words;  // "tuning: 8 x 12 configs x 0.412 ms"
};

// The `n` largest non-zero terms of `c`, largest first (ties by name).
std::vector<CostTerm> DominantTerms(const StepCost& c, size_t n);

// What a fix's step time is compared with: the stock code (no fix) on the serial schedule
// (threads one after another, so it does not race) when that run does not fail; else the
// recorded interleaving when it replays without a failure; else nothing.
struct Baseline {
  std::string kind;   // "serial", "recorded", or "" (no baseline)
  Nanos ns = 0;
  std::string failure;  // why there is none: the failure codes of both candidates
  std::string Words() const;  // "the stock code on the serial schedule (threads one after another)"
};

// A fix's cost: its step time on the timed schedule, or its failure (no step time).
struct FixCost {
  std::string fix;
  bool priced = false;        // the timed run under the fix did not fail
  std::string failure;        // its finding's code when it did
  Nanos step_ns = 0;
  StepCost terms;
  Baseline baseline;
  // Workers that failed in the recording and were priced with a completed worker's rest of the
  // step (CompleteFailedWorkers in replay/model/include/rerace/replay/model/calibrate.h); the report says so.
  uint32_t completed_workers = 0;
  // "" when the engine that checked the fix priced it; "model" when the real-code engine's fix
  // was priced by the model of the same fix; "price-as" when a patch file was priced by the
  // model of the fix the user declared it implements (check --price-as FIX: `price_as`).
  std::string priced_by;
  std::string price_as;
  // Why there is no cost at all (the real-code engine ran code the model cannot price); then
  // `priced` is false and `failure` empty.
  std::string unpriced;
  double Ratio() const {
    return priced && baseline.ns ? static_cast<double>(step_ns) / static_cast<double>(baseline.ns) : 0.0;
  }
};

// One line for check's report ("cost: with lock-run the step takes ... because ...").
std::string FormatCost(const FixCost& c);
// The JSON object check --json prints under "cost".
std::string CostJson(const FixCost& c);

}  // namespace rerace::replay
