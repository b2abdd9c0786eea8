// replay/src/virtual_gpu.cc: the virtual GPU and CPU (see virtual_gpu.h).
#include "virtual_gpu.h"

#include <algorithm>

namespace rerace::replay::detail {

VirtualGpu::VirtualGpu(sim::Scheduler& s, const Program& p) : s_(s), p_(p) {
  for (const ThreadProgram& tp : p.threads) any_worker_ |= tp.worker;
}

void VirtualGpu::Own(Nanos ns) {
  const uint32_t t = s_.CurrentThread();
  if (own_.size() <= t) own_.resize(t + 1, 0);
  own_[t] += ns;
}

void VirtualGpu::Start(Nanos at, bool counted) {
  const uint32_t t = s_.CurrentThread();
  if (start_.size() <= t) start_.resize(t + 1, 0);
  if (counted_.size() <= t) counted_.resize(t + 1, false);
  // A program that marks no thread part of the step (made by hand, not by BuildProgram): every
  // thread is; its GPU work runs all the same.
  counted_[t] = counted || !any_worker_;
  start_[t] = std::max(at, s_.Now());
  s_.AdvanceTo(at);
}

void VirtualGpu::Cpu(Nanos ns, bool between, bool gil) {
  if (ns == 0) return;
  if (between) {
    ++cost_.cpu_spans;
    cost_.cpu_ns += ns;
  }
  const bool held = p_.gil && gil;
  if (held) {
    const Nanos now = s_.Now();
    if (gil_free_ > now) {
      cost_.gil_wait_ns += gil_free_ - now;
      Own(gil_free_ - now);  // not blocked on another thread's lock: waiting for the interpreter
      s_.AdvanceTo(gil_free_);
    }
  }
  s_.Advance(ns);
  Own(ns);
  if (held) gil_free_ = s_.Now();
}

void VirtualGpu::Context(uint32_t device, Nanos ns) {
  if (ns == 0) return;
  Nanos& free = context_free_[device];
  const Nanos now = s_.Now();
  if (free > now) {
    cost_.context_wait_ns += free - now;
    Own(free - now);  // waiting for the driver, not for another thread's lock
    s_.AdvanceTo(free);
  }
  s_.Advance(ns);
  Own(ns);
  free = s_.Now();
}

void VirtualGpu::Launch(uint32_t device, uint64_t stream, Nanos duration, bool tuning, Nanos cpu) {
  Nanos& ready = streams_[{device, stream}];
  const bool shared = !p_.overlapping_devices.count(device);
  Nanos& busy = devices_[device];
  const Nanos now = s_.Now();
  const Nanos start = std::max({ready, shared ? busy : Nanos{0}, now});
  if (shared && busy > std::max(ready, now)) cost_.gpu_queue_ns += busy - std::max(ready, now);
  ready = start + duration;
  if (shared) busy = ready;
  const uint32_t t = s_.CurrentThread();
  if (t < counted_.size() && counted_[t]) gpu_end_ = std::max(gpu_end_, ready);
  if (!tuning) {
    ++cost_.launches;
    cost_.kernel_ns += duration;
  }
  Cpu(cpu);
}

void VirtualGpu::Sync(uint32_t device, uint64_t stream, bool whole_device) {
  Nanos until = 0;
  for (const auto& [k, ready] : streams_)
    if (k.first == device && (whole_device || k.second == stream)) until = std::max(until, ready);
  const Nanos now = s_.Now();
  if (until > now) {
    Own(until - now);
    s_.AdvanceTo(until);
  }
}

void VirtualGpu::CountTuning(size_t configs, Nanos ns) {
  ++cost_.tunings;
  cost_.configs += configs;
  cost_.tuning_ns += ns;
}

void VirtualGpu::Finalize(const sim::RunResult& run, StepCost& cost, Nanos& makespan) const {
  cost = cost_;
  makespan = gpu_end_;
  for (const sim::ThreadSummary& t : run.threads) {
    if (t.id >= counted_.size() || !counted_[t.id]) continue;
    makespan = std::max(makespan, t.clock);
    if (t.clock < cost.critical_ns && !cost.critical.empty()) continue;
    if (t.clock == cost.critical_ns && !cost.critical.empty()) continue;
    cost.critical_ns = t.clock;
    cost.critical = t.name;
    const Nanos own = (t.id < own_.size() ? own_[t.id] : 0) + (t.id < start_.size() ? start_[t.id] : 0);
    cost.blocked_ns = t.clock > own ? t.clock - own : 0;
  }
  // The step: from the first worker's start (the process's start-up before it is not part of it).
  makespan = makespan > p_.step_start_ns ? makespan - p_.step_start_ns : 0;
  cost.critical_ns = cost.critical_ns > p_.step_start_ns ? cost.critical_ns - p_.step_start_ns : 0;
}

}  // namespace rerace::replay::detail
