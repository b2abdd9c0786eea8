// rerace/replay/report/timeline.h: timelines for the Perfetto UI (ui.perfetto.dev) and
// chrome://tracing, in the Chrome trace-event JSON format both open.
//
// A replayed run: one track per host thread on a step axis (1 µs = 1 scheduling step), each
// step a slice named by the access it performed with its Triton source line, the failures
// marked, and flow arrows from the write that led to a failure to the access that failed.
// A recorded trace (`rerace export`): real time, one track per host thread with its launches
// and tuner transitions (calls as slices), one track per GPU stream with its kernels (GPU
// times moved onto the CPU clock by the header's clock pair), recorded failures marked.
//
// StepLog wraps a strategy to keep every step for the timeline; it allocates per step, so it
// is used only when a timeline is asked for. Single-threaded, like the scheduler.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rerace/replay/model/program.h"
#include "rerace/replay/model/result.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/trace.h"

namespace rerace::replay {

class StepLog final : public sim::Strategy {
 public:
  struct Step {
    uint64_t step;
    sim::ThreadId thread;
    sim::SchedulingPoint point;  // NB: point.label may not outlive the run (the python engine's do not)
    std::string label;           // point.label, copied when the step was taken
  };
  explicit StepLog(sim::Strategy& inner) : inner_(inner) {}
  sim::ThreadId Pick(const sim::Choice& c) override;
  std::optional<std::string> AtEnd(uint64_t steps) override { return inner_.AtEnd(steps); }
  uint64_t Promised(uint64_t step, sim::ThreadId t) const override {
    return inner_.Promised(step, t);
  }
  void Plan(uint64_t step, sim::ThreadId t, std::span<const sim::ThreadId> runnable,
            bool runnable_changed, uint64_t max_picks,
            std::vector<sim::PlannedPicks>& out) const override {
    inner_.Plan(step, t, runnable, runnable_changed, max_picks, out);
  }
  void OnInStep(uint64_t step, sim::ThreadId t, const sim::SchedulingPoint& p) override {
    inner_.OnInStep(step, t, p);
  }
  std::string Name() const override { return inner_.Name(); }
  const std::vector<Step>& steps() const { return steps_; }

 private:
  sim::Strategy& inner_;
  std::vector<Step> steps_;
};

// `steps` from the StepLog the run was made with.
std::string ReplayTimeline(const ReplayResult& r, const std::vector<StepLog::Step>& steps);
// Kernels as a slice per launch, named short (ShortKernelName, as Nsight Systems shows them),
// with the kernel's number in its "kernel" argument; the top-level "metadata" has the table of
// kernels by number, each with its full name (Demangle) and the raw one ("kernels": [{"kernel",
// "name", "full_name", "mangled"}]), and the first event that names a kernel has its
// "full_name" argument too. Each tuner call a B/E pair (a call the trace never ends is closed at
// its thread's last event, with a note).
std::string TraceTimeline(const traces::Trace& t);
// The same text, streamed from the trace at `trace_path` to the file `out_path` (written
// whole or not at all: a temporary file renamed) in two passes: the first reads the whole
// trace with the reader's checks (its errors, exit 65 / 66, come before anything is written),
// the threads' final names and which launches get a GPU time; the second writes. Memory: what
// the reader keeps, the launches whose activity has not come yet, a megabyte of text. Returns
// the bytes written; `read`, when given, receives the trace without its events (truncation).
Result<uint64_t> WriteTraceTimeline(const std::string& trace_path, const std::string& out_path,
                                    traces::Trace* read = nullptr);

// A kernel's name as its source spells it, from the mangled symbol CUDA reports for C++
// kernels ("_ZN6rerace7kernels...NormKernelEPKfS3_Pfllib" → "rerace::kernels::(anonymous
// namespace)::NormKernel(float const*, float const*, float*, long, long, int, bool)"); a name
// that is not a mangled C++ name (Triton's kernels) comes back unchanged. Uses the C++
// runtime's demangler (abi::__cxa_demangle).
std::string Demangle(const std::string& name);

// A kernel's short name, as Nsight Systems shows it by default: demangled (Demangle), without
// template arguments, parameter list, return type or namespaces ("void at::native::(anonymous
// namespace)::distribution_elementwise_grid_stride_kernel<float, 4, ...>(long, ...)" →
// "distribution_elementwise_grid_stride_kernel"); a Triton kernel's name comes back unchanged.
std::string ShortKernelName(const std::string& name);

}  // namespace rerace::replay
