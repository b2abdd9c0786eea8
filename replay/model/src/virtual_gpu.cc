// replay/model/src/virtual_gpu.cc: the virtual GPU and CPU (see virtual_gpu.h).
#include "rerace/replay/model/virtual_gpu.h"

#include "rerace/replay/model/calibrate.h"

#include <algorithm>
#include <cmath>

namespace rerace::replay::detail {

VirtualGpu::VirtualGpu(sim::Scheduler& s, const Program& p, const TrialTimeline* prior)
    : prior_(prior), s_(s), p_(p) {
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
  const Nanos more = Contention(ns, now);
  cost_.trial_contention_ns += more;
  ns += more;
  if (free > now) {
    cost_.context_wait_ns += free - now;
    Own(free - now);  // waiting for the driver, not for another thread's lock
    s_.AdvanceTo(free);
  }
  s_.Advance(ns);
  Own(ns);
  free = s_.Now();
  AddTrial(now, free);
}

Nanos VirtualGpu::Contention(Nanos alone, Nanos now) const {
  if (p_.trial_contention_ppm == 0) return 0;
  const uint32_t t = s_.CurrentThread();
  const TrialTimeline& all = prior_ != nullptr ? *prior_ : trials_;
  uint64_t others = 0;
  for (uint32_t u = 0; u < all.size(); ++u) {
    if (u == t || all[u].empty()) continue;
    // u's last trial that starts at or before now: does it run at now?
    const auto& list = all[u];
    auto it = std::upper_bound(list.begin(), list.end(), now,
                               [](Nanos at, const std::pair<Nanos, Nanos>& i) { return at < i.first; });
    others += it != list.begin() && std::prev(it)->second > now;
  }
  if (others == 0) return 0;
  const double f = TrialContentionFactor(p_.trial_contention_ppm, static_cast<double>(others + 1));
  return static_cast<Nanos>(std::llround(static_cast<double>(alone) * (f - 1)));
}

void VirtualGpu::AddTrial(Nanos from, Nanos to) {
  if (p_.trial_contention_ppm == 0) return;
  const uint32_t t = s_.CurrentThread();
  if (trials_.size() <= t) trials_.resize(t + 1);
  trials_[t].emplace_back(from, to);
}

void VirtualGpu::ColdStart() {
  if (p_.cold_ns == 0) return;
  const Nanos now = s_.Now();
  if (!cold_started_) {
    cold_started_ = true;
    cost_.cold_ns = p_.cold_ns;
    s_.Advance(p_.cold_ns);
    Own(p_.cold_ns);
    cold_until_ = s_.Now();
  } else if (now < cold_until_) {
    Own(cold_until_ - now);  // waiting for the runtime's start, not for another thread's lock
    s_.AdvanceTo(cold_until_);
  }
}

void VirtualGpu::BudgetedTrial(Nanos alone) {
  const Nanos now = s_.Now();
  const Nanos more = Contention(alone, now);
  cost_.trial_contention_ns += more;
  Cpu(alone + more, false, false);
  AddTrial(now, s_.Now());
}

Nanos VirtualGpu::Queue::EndBefore(Nanos now) const {
  Nanos end = folded_;
  for (size_t i = 0; i < size_; ++i)
    if (recent_[i].first <= now) end = std::max(end, recent_[i].second);
  return end;
}

void VirtualGpu::Queue::Add(Nanos launched, Nanos ends) {
  if (size_ == recent_.size()) folded_ = std::max(folded_, recent_[next_].second);
  recent_[next_] = {launched, ends};
  next_ = (next_ + 1) % recent_.size();
  size_ = std::min(size_ + 1, recent_.size());
}

void VirtualGpu::Launch(uint32_t device, uint64_t stream, Nanos duration, bool tuning, Nanos cpu) {
  Queue& work = streams_[{device, stream}];
  const bool shared = !p_.overlapping_devices.count(device);
  const Nanos now = s_.Now();
  const Nanos ready = std::max(work.EndBefore(now), now);
  const Nanos busy = shared ? devices_[device].EndBefore(now) : 0;
  const Nanos start = std::max(ready, busy);
  if (busy > ready) cost_.gpu_queue_ns += busy - ready;
  const Nanos end = start + duration;
  work.Add(now, end);
  if (shared) devices_[device].Add(now, end);
  const uint32_t t = s_.CurrentThread();
  if (t < counted_.size() && counted_[t]) gpu_end_ = std::max(gpu_end_, end);
  if (!tuning) {
    ++cost_.launches;
    cost_.kernel_ns += duration;
  }
  Cpu(cpu);
}

void VirtualGpu::Sync(uint32_t device, uint64_t stream, bool whole_device) {
  Nanos until = 0;
  const Nanos now = s_.Now();
  for (const auto& [k, work] : streams_)
    if (k.first == device && (whole_device || k.second == stream)) until = std::max(until, work.EndBefore(now));
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

void VirtualGpu::Finalize(const sim::RunResult& run, StepCost& cost, Nanos& makespan, TrialTimeline& trials) {
  cost = cost_;
  trials = std::move(trials_);
  cost.trial_contention_ppm = p_.trial_contention_ppm;
  cost.trial_contention_from = p_.trial_contention_from;
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
