// replay/model/src/program_builder.cc: trace → programs, one event at a time.
#include "program_builder.h"

#include "sync_order.h"

#include "rerace/replay/model/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "rerace/traces/format.h"

namespace rerace::replay::detail {

using namespace rerace::traces;

namespace {
Nanos MsToNs(double ms) {
  if (!(ms > 0)) return 0;  // also NaN and inf (a config that failed to compile)
  const double ns = ms * 1e6;
  return ns > 1e15 ? static_cast<Nanos>(1e15) : static_cast<Nanos>(ns);
}

}  // namespace

ProgramBuilder::ProgramBuilder(std::string source, const std::vector<Thread>& threads,
                               const std::unordered_map<uint32_t, Nanos>* durations,
                               StreamWindows windows)
    : durations_(durations), windows_(std::move(windows)), sync_(threads.size()) {
  p_.source = std::move(source);
  // One program per recorded thread, in the trace's thread order: replay's thread ids are the
  // trace's (what `rerace show` prints). A thread that did nothing replay models just ends.
  for (const Thread& t : threads) {
    ThreadProgram tp;
    tp.thread = t.id;
    tp.name = t.name;
    p_.threads.push_back(std::move(tp));
  }
  open_call_.assign(threads.size(), -1);
  op_cpu_.resize(threads.size());
  clock_.resize(threads.size());
}

Nanos ProgramBuilder::Known(uint32_t correlation) const {
  if (durations_ == nullptr) return 0;  // deferred: memory operations have none (program_builder.h)
  const auto it = durations_->find(correlation);
  return it == durations_->end() ? Nanos{0} : it->second;
}

void ProgramBuilder::PushOp(const Event& e, Op op) {
  p_.threads[e.thread].ops.push_back(std::move(op));
  op_cpu_[e.thread].push_back(e.cpu_ns);
}

void ProgramBuilder::Apply(const Pending& pd, Nanos d) {
  if (pd.op != UINT32_MAX) p_.threads[pd.thread].ops[pd.op].duration = d;
  if (pd.bench != UINT32_MAX) bench_gpu_[pd.bench] += d;
  if (pd.call != UINT32_MAX && call_launches_[pd.call] == pd.ordinal) p_.calls[pd.call].launch_ns = d;
}

Result<void> ProgramBuilder::Add(const Event& e, const TunerEvent* te, const Trace& meta, bool timed) {
  if (!first_ns_) first_ns_ = e.cpu_ns;
  last_ns_ = e.cpu_ns;
  switch (e.kind) {
    case EventKind::kTuner:
      return AddTuner(e, *te, meta);
    case EventKind::kLaunch:
      AddLaunch(e, meta, timed);
      break;
    case EventKind::kActivity: {
      if (durations_ != nullptr || e.gpu_start_ns == 0) break;
      const auto it = pending_.find(e.correlation);
      if (it == pending_.end()) break;
      Apply(it->second, e.gpu_end_ns - e.gpu_start_ns);
      if (e.gpu_end_ns > e.gpu_start_ns) {
        const auto w = windows_.find({it->second.device, it->second.stream});
        if (w != windows_.end() && e.gpu_start_ns < w->second.second && e.gpu_end_ns > w->second.first)
          intervals_[it->second.device].push_back({e.gpu_start_ns, e.gpu_end_ns, it->second.stream});
      }
      pending_.erase(it);
      break;
    }
    case EventKind::kSync: {
      if (e.sync == SyncKind::kEventRecord || e.sync == SyncKind::kStreamWaitEvent) break;
      if (open_call_[e.thread] >= 0) {  // do_bench's own synchronizations
        if (e.sync == SyncKind::kContext && clock_[e.thread].in_bench)
          p_.calls[static_cast<size_t>(open_call_[e.thread])].trial_device_sync = true;
        break;
      }
      Op op;
      op.kind = Op::Kind::kSync;
      op.seq = e.seq;
      op.sync = e.sync;
      op.device = e.device;
      op.stream = e.stream;
      op.cpu_before_ns = clock_[e.thread].Gap(e);
      clock_[e.thread].End(e, false);  // recorded at entry: what follows was waiting
      PushOp(e, std::move(op));
      break;
    }
    case EventKind::kLock: {
      Op op;
      op.kind = e.lock == LockKind::kAcquire ? Op::Kind::kLockAcquire : Op::Kind::kLockRelease;
      op.seq = e.seq;
      op.lock = e.handle;
      op.lock_name = meta.Str(e.text);
      op.cpu_before_ns = clock_[e.thread].Gap(e);
      LockHolds& holds = locks_[e.handle];
      if (e.lock == LockKind::kAcquire) {
        // The probes mark an acquire once the lock is held: the thread's wait for it lies in
        // the gap before the mark. Not CPU time: the time other threads held the lock within
        // that gap (their holds never overlap) is taken out; replay makes the thread wait
        // for the lock itself.
        const uint64_t from = clock_[e.thread].last_end;
        Nanos waited = 0;
        for (const LockHolds::Hold& h : holds.recent) {
          const uint64_t lo = std::max<uint64_t>(h.acquire, from), hi = std::min<uint64_t>(h.release, e.cpu_ns);
          if (h.thread != e.thread && hi > lo) waited += hi - lo;
        }
        op.cpu_before_ns = op.cpu_before_ns > waited ? op.cpu_before_ns - waited : 0;
        holds.holder = e.thread;
        holds.since = e.cpu_ns;
      } else if (holds.holder == e.thread) {
        const LockHolds::Hold hold{holds.since, e.cpu_ns, e.thread};
        if (holds.recent.size() < kLockHolds) {
          holds.recent.push_back(hold);
        } else {
          holds.recent[holds.next] = hold;
          holds.next = (holds.next + 1) % kLockHolds;
        }
        holds.holder = UINT32_MAX;
      }
      clock_[e.thread].End(e, e.lock != LockKind::kAcquire);  // an acquire may have waited
      PushOp(e, std::move(op));
      break;
    }
    case EventKind::kMemOp:
      AddMemOp(e);
      break;
    case EventKind::kNvtx:
      // The program's own synchronization (rerace_probe/sync.py): an order between calls.
      if (e.nvtx == NvtxKind::kMark && e.thread < open_call_.size()) {
        const std::string& text = meta.Str(e.text);
        if (SyncOrder::IsMark(text)) sync_.Mark(e.thread, text, open_call_[e.thread] >= 0);
      }
      break;
  }
  return {};
}

void ProgramBuilder::AddLaunch(const Event& e, const Trace& meta, bool timed) {
  const LaunchShape& sh = meta.shapes[e.shape];
  ThreadProgram& tp = p_.threads[e.thread];
  Pending pd;
  pd.thread = e.thread;
  pd.device = sh.device;
  pd.stream = sh.stream;
  Clock& ck = clock_[e.thread];
  if (open_call_[e.thread] >= 0) {
    // A launch inside a call: the final launch's time, and the call's device and stream.
    const auto ci = static_cast<uint32_t>(open_call_[e.thread]);
    TunerCall& c = p_.calls[ci];
    c.device = sh.device;
    c.stream = sh.stream;
    if (ck.in_bench) pd.bench = ck.bench;
    if (!tp.transitions.empty() && tp.transitions.back().kind == TunerKind::kLaunch) {
      c.launch_ns = 0;  // until its activity says
      pd.call = ci;
      pd.ordinal = ++call_launches_[ci];
    }
  } else {
    Op op;
    op.kind = Op::Kind::kLaunch;
    op.seq = e.seq;
    op.device = sh.device;
    op.stream = sh.stream;
    op.kernel = meta.Str(sh.kernel);
    op.cpu_before_ns = ck.Gap(e);
    ck.End(e, true);  // the launch's own CPU time is in the next gap
    pd.op = static_cast<uint32_t>(tp.ops.size());
    PushOp(e, std::move(op));
  }
  if (durations_ != nullptr)
    Apply(pd, Known(e.correlation));
  else if (timed)
    pending_[e.correlation] = pd;
}

void ProgramBuilder::AddMemOp(const Event& e) {
  const Nanos d = Known(e.correlation);
  Clock& ck = clock_[e.thread];
  if (open_call_[e.thread] >= 0) {
    // do_bench's clones, copies and fills: part of the trial's GPU work.
    if (ck.in_bench) bench_gpu_[ck.bench] += d;
    return;
  }
  if (d == 0) return;  // a host-side or untimed operation: in the CPU gaps
  Op op;
  op.kind = Op::Kind::kLaunch;
  op.seq = e.seq;
  op.device = e.device;
  op.stream = e.stream;
  op.duration = d;
  op.kernel = "(memory operation)";
  op.cpu_before_ns = ck.Gap(e);
  ck.End(e, false);  // a copy may wait for the device: the gap after it too
  PushOp(e, std::move(op));
}

Result<void> ProgramBuilder::AddTuner(const Event& e, const TunerEvent& te, const Trace& meta) {
  auto bad = [&](const std::string& what) {
    return Error{fmt::format("{}: event {} (thread {}): {}", p_.source, e.seq, e.thread, what),
                 kExitDataError};
  };
  ThreadProgram& tp = p_.threads[e.thread];
  tp.transitions.push_back({te.kind, te.config, e.seq, te.field});
  Clock& ck = clock_[e.thread];
  if (te.kind == TunerKind::kCallBegin) {
    if (te.configs.empty()) return bad("a tuner call with no configs");
    TunerCall c;
    if (!te.detail.empty() && te.detail.front() == '{') {
      const nlohmann::json j = nlohmann::json::parse(te.detail, nullptr, false);
      // The metadata of the tuner's first call; every call's restore_value shapes.
      if (!j.is_object() || j.contains("v")) p_.tuner_meta.try_emplace(te.tuner, te.detail);
      if (j.is_object() && j.contains("restore_shapes") && j["restore_shapes"].is_array())
        for (const auto& s : j["restore_shapes"]) {
          std::vector<int64_t> shape;
          if (s.is_array())
            for (const auto& d : s)
              if (d.is_number_integer()) shape.push_back(d.get<int64_t>());
          c.restore_shapes.push_back(std::move(shape));
        }
      c.reach = ReachOfDetail(te.detail);
    }
    c.tuner = te.tuner;
    c.tuner_class = meta.Str(te.tuner_class);
    c.kernel = meta.Str(te.kernel);
    c.key = te.key;
    c.configs = te.configs;
    c.arg_names = te.arg_names;
    c.restore_value = te.restore_value;
    c.reset_to_zero = te.reset_to_zero;
    c.bench_ns.assign(c.configs.size(), 0);
    c.bench_reps.assign(c.configs.size(), 0);
    if (std::find(p_.tuner_classes.begin(), p_.tuner_classes.end(), c.tuner_class) ==
        p_.tuner_classes.end())
      p_.tuner_classes.push_back(c.tuner_class);
    open_call_[e.thread] = static_cast<int64_t>(p_.calls.size());
    Op op;
    op.kind = Op::Kind::kTunerCall;
    op.seq = e.seq;
    op.cpu_before_ns = ck.Gap(e);
    ck.call_begin = e.cpu_ns;
    ck.bench_walls = 0;
    ck.in_bench = false;
    bench_seen_.emplace_back(c.configs.size());
    call_cpu_.push_back(UINT64_MAX);
    call_launches_.push_back(0);
    op.call = static_cast<uint32_t>(p_.calls.size());
    c.begin_seq = e.seq;
    if (auto after = sync_.CallBegins(e.thread, op.call); !after.empty()) {
      sync_after_.resize(p_.calls.size() + 1);
      sync_after_[op.call] = std::move(after);
    }
    PushOp(e, std::move(op));
    p_.calls.push_back(std::move(c));
    return {};
  }
  if (open_call_[e.thread] < 0) {
    // Field accesses outside a call: the tuner's constructor (self.cache = {}).
    if (te.kind == TunerKind::kFieldRead || te.kind == TunerKind::kFieldWrite) return {};
    if (te.kind == TunerKind::kError) {
      tp.failures.push_back({e.seq, te.error_type, te.error_message, te.error_where});
      return {};
    }
    return bad(fmt::format("tuner transition '{}' outside any call (no call-begin before it)",
                           TunerKindName(te.kind)));
  }
  const auto ci = static_cast<size_t>(open_call_[e.thread]);
  TunerCall& c = p_.calls[ci];
  if (te.config >= static_cast<int32_t>(c.configs.size()) && te.kind != TunerKind::kPrune)
    return bad(fmt::format("config index {} of a call with {} configs", te.config, c.configs.size()));
  if (te.kind == TunerKind::kBenchBegin) {
    ck.bench_begin = e.cpu_ns;
    ck.bench = static_cast<uint32_t>(bench_gpu_.size());
    bench_gpu_.push_back(0);
    ck.in_bench = true;
    ck.bench_copies = 0;
  }
  if (te.kind == TunerKind::kFieldWrite && te.field == traces::TunerField::kRestoreCopies &&
      ck.in_bench)
    ++ck.bench_copies;
  if (te.kind == TunerKind::kBenchEnd && te.config >= 0) {
    const auto i = static_cast<size_t>(te.config);
    if (!te.timings_ms.empty()) c.bench_ns[i] = MsToNs(te.timings_ms[0]);
    c.bench_reps[i] = te.repetitions;
    // No repetitions counted: the probe's hook wrappers were replaced (a tuner class that
    // installs its own hooks after Triton's __init__, as FLA's did before the probe wrapped
    // them again at each call). Each repetition's hooks write restore_copies twice (the copy,
    // then the reset): the recorded writes give the count where there are any.
    if (te.repetitions == 0 && ck.in_bench && ck.bench_copies != 0)
      c.bench_reps[i] = std::min((ck.bench_copies + 1) / 2, traces::kMaxRepetitions);
    if (ck.in_bench && e.cpu_ns >= ck.bench_begin) {
      bench_seen_[ci][i] = {e.cpu_ns - ck.bench_begin, ck.bench};
      benches_.push_back({ci, i, ck.bench_begin, e.cpu_ns});
      ck.bench_walls += e.cpu_ns - ck.bench_begin;
    }
    ck.in_bench = false;
  }
  if (te.kind == TunerKind::kError) {
    tp.failures.push_back({e.seq, te.error_type, te.error_message, te.error_where});
    open_call_[e.thread] = -1;
    c.end_seq = e.seq;
    ck.End(e, true);
  }
  if (te.kind == TunerKind::kCallEnd) {
    open_call_[e.thread] = -1;
    c.end_seq = e.seq;
    const Nanos wall = e.cpu_ns > ck.call_begin ? e.cpu_ns - ck.call_begin : 0;
    call_cpu_[ci] = wall > ck.bench_walls ? wall - ck.bench_walls : 0;
    ck.End(e, true);
  }
  return {};
}

Program ProgramBuilder::Finish(bool truncated, std::set<uint32_t> overlapping) {
  Program& p = p_;
  p.truncated = truncated;
  if (first_ns_) p.recorded_span_ns = last_ns_ - *first_ns_;
  p.overlapping_devices = durations_ != nullptr ? std::move(overlapping) : OverlapsOf(std::move(intervals_));
  ReadSharing(p);
  p.sync_recorded = sync_.recorded();
  p.sync_overflowed = sync_.overflowed();
  p.sync_orders = sync_.orders();
  if (!sync_after_.empty()) {
    sync_after_.resize(p.calls.size());
    p.call_after = std::move(sync_after_);
  }
  // Configs a thread never benchmarked itself (it found the key tuned, or raised first) take
  // the time another thread measured for the same tuner, key and config, so that a schedule in
  // which this thread does benchmark has a cost; tuners that share state (shallow copies of one
  // tuner: the same kernel and configs) count as one.
  auto group = [&p](uint64_t tuner) {
    if (auto h = p.hooks_home.find(tuner); h != p.hooks_home.end()) return h->second;
    if (auto h = p.cache_home.find(tuner); h != p.cache_home.end()) return h->second;
    return tuner;
  };
  std::map<std::tuple<uint64_t, std::string, size_t>, std::pair<Nanos, uint32_t>> measured;
  for (const TunerCall& c : p.calls)
    for (size_t i = 0; i < c.configs.size(); ++i)
      if (c.bench_ns[i] != 0) measured[{group(c.tuner), c.key, i}] = {c.bench_ns[i], c.bench_reps[i]};
  for (TunerCall& c : p.calls) {
    for (size_t i = 0; i < c.configs.size(); ++i) {
      if (c.bench_ns[i] != 0) continue;
      auto it = measured.find({group(c.tuner), c.key, i});
      if (it != measured.end()) {
        c.bench_ns[i] = it->second.first;
        c.bench_reps[i] = it->second.second;
      }
    }
    if (c.launch_ns == 0) {
      // No timing for the final launch: the fastest measured config's time.
      Nanos best = 0;
      for (Nanos n : c.bench_ns)
        if (n != 0 && (best == 0 || n < best)) best = n;
      c.launch_ns = best;
    }
  }
  // Per call, per config: the benchmark's recorded wall time and the GPU work launched in it.
  std::vector<std::vector<std::pair<Nanos, Nanos>>> bench_seen(bench_seen_.size());
  for (size_t ci = 0; ci < bench_seen_.size(); ++ci)
    for (const Bench& b : bench_seen_[ci])
      bench_seen[ci].emplace_back(b.wall, b.gpu == UINT32_MAX ? 0 : bench_gpu_[b.gpu]);
  detail::Calibrate(p, std::move(bench_seen), call_cpu_, benches_);
  // Each thread starts at its recorded time (its first op's cpu_before_ns is 0).
  const uint64_t first = first_ns_.value_or(0);
  // Threads that call a tuner (workers) start together, at the first one's recorded start (a
  // later worker's first recorded event may come after it waited for a lock). A trace without
  // tuner calls makes every thread with ops a worker, but the process's first thread (which
  // starts the others) when others have ops.
  Nanos any = UINT64_MAX, worker = UINT64_MAX;
  size_t with_ops = 0;
  for (size_t i = 0; i < p.threads.size(); ++i) {
    ThreadProgram& tp = p.threads[i];
    if (tp.ops.empty()) continue;
    ++with_ops;
    const uint64_t at = op_cpu_[i].front();
    tp.start_ns = at > first ? at - first : 0;
    for (const Op& op : tp.ops) tp.worker |= op.kind == Op::Kind::kTunerCall;
    if (tp.worker) worker = std::min(worker, tp.start_ns);
  }
  for (size_t i = 0; i < p.threads.size(); ++i)
    if (!p.threads[i].ops.empty() && (i != 0 || with_ops == 1))
      any = std::min(any, p.threads[i].start_ns);
  p.step_start_ns = worker != UINT64_MAX ? worker : any != UINT64_MAX ? any : 0;
  for (size_t i = 0; i < p.threads.size(); ++i) {
    ThreadProgram& tp = p.threads[i];
    if (worker == UINT64_MAX) tp.worker = !tp.ops.empty() && (i != 0 || with_ops == 1);
    if (tp.worker && worker != UINT64_MAX) tp.start_ns = worker;
    if (tp.worker) continue;
    // Another thread (the one that starts and joins the workers): what it does during the step
    // is not CPU time of the step (its recorded gaps span the join, which is not recorded).
    for (size_t k = 0; k < tp.ops.size(); ++k)
      if (op_cpu_[i][k] >= first + p.step_start_ns) tp.ops[k].cpu_before_ns = 0;
  }
  return std::move(p_);
}

}  // namespace rerace::replay::detail
