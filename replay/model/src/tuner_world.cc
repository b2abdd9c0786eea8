// replay/model/src/tuner_world.cc: the world the tuner models act on: the fix-aware shared fields,
// the fix's locks and futures, the run's fibers (recorded threads, prewarm, GPU owners), the
// virtual GPU and the findings. The recorded-order anchors are in tuner_world_anchors.cc; the
// models themselves in replay/model/src/models/.
#include "rerace/replay/model/tuner_world.h"

#include <fmt/format.h>

#include <algorithm>

namespace rerace::replay::detail {

using traces::TunerKind;

TunerState::TunerState(sim::Scheduler& s, const std::string& name, size_t keys)
    : nargs(s, name + ".nargs"),
      nargs_local(s),
      own_cache(s, name + ".cache", std::vector<int32_t>(keys, -1)),
      restore_copies(s, name + ".restore_copies"),
      restore_copies_local(s),
      best_config(s, name + ".best_config"),
      configs_timings(s, name + ".configs_timings"),
      bench_time(s, name + ".bench_time"),
      key_lock(s, name + " key lock"),
      futures(keys),
      future_of(keys),
      events(keys) {}

TunerWorld::Queue::Queue(sim::Scheduler& s, const std::string& name)
    : m(s, name + " queue lock"), cv(s, name + " queue") {}

TunerWorld::TunerWorld(sim::Scheduler& s, const Program& p, const ReplayOptions& o, uint32_t reps,
                       const TunerModel& model, std::vector<uint64_t>* anchors,
                       const TrialTimeline* prior)
    : s_(s), p_(p), o_(o), reps_(reps), model_(model),
      local_nargs_(o.fix.IsLocal(Field::kNargs)),
      local_copies_(o.fix.IsLocal(Field::kRestoreCopies)),
      per_key_future_(o.fix.per_key_future), per_key_event_(o.fix.per_key_event),
      per_thread_tuner_(o.fix.per_thread_tuner),
      owner_thread_(o.fix.owner_thread), prewarm_(o.fix.prewarm),
      anchors_(anchors),
      cursor_(p.threads.size(), 0), fields_recorded_(p.threads.size(), false),
      reads_recorded_(p.threads.size(), false), gpu_(s, p, prior) {
  for (size_t t = 0; t < p.threads.size(); ++t)
    for (const RecordedTransition& tr : p.threads[t].transitions) {
      if (tr.kind == TunerKind::kFieldWrite) fields_recorded_[t] = true;
      if (tr.kind == TunerKind::kFieldRead) reads_recorded_[t] = true;
      if (tr.kind == TunerKind::kPreHook || tr.kind == TunerKind::kPostHook)
        hooks_recorded_ = true;
    }
  if (!p.call_after.empty()) {
    call_done_.reserve(p.calls.size());
    for (size_t i = 0; i < p.calls.size(); ++i)
      call_done_.emplace_back(s, "recorded order: call " + std::to_string(i));
    call_ended_.assign(p.calls.size(), false);
  }
  for (const TunerCall& c : p.calls) {
    auto [it, fresh] = tuner_index_.try_emplace(c.tuner, keys_.size());
    if (fresh) {
      keys_.emplace_back();
      tokens_.push_back(c.tuner);
      kernels_.push_back(c.kernel);
    }
    auto& keys = keys_[it->second];
    if (std::find(keys.begin(), keys.end(), c.key) == keys.end()) keys.push_back(c.key);
  }
  called_tuners_ = keys_.size();
  cache_home_.assign(keys_.size(), SIZE_MAX);
  copies_home_.assign(keys_.size(), SIZE_MAX);
  // A per-thread-tuner fix builds each thread its own tuner: nothing recorded is shared then.
  if (!per_thread_tuner_) ShareRecorded();
  for (const auto& [region, name] : o.fix.locks)
    if (!fix_locks_.count(name)) fix_locks_[name] = std::make_unique<sim::Mutex>(s, name);
  for (Region r : {Region::kRun, Region::kBenchmark, Region::kBench, Region::kHooks, Region::kCache}) {
    const std::string name = o.fix.LockFor(r);
    if (region_locks_.size() <= static_cast<size_t>(r)) region_locks_.resize(static_cast<size_t>(r) + 1);
    region_locks_[static_cast<size_t>(r)] = name.empty() ? nullptr : fix_locks_.at(name).get();
  }
  for (const ThreadProgram& tp : p.threads)
    for (const Op& op : tp.ops)
      if ((op.kind == Op::Kind::kLockAcquire || op.kind == Op::Kind::kLockRelease) &&
          !recorded_locks_.count(op.lock))
        recorded_locks_[op.lock] = std::make_unique<sim::Mutex>(s, "recorded lock " + op.lock_name);
  if (owner_thread_) {
    for (const ThreadProgram& tp : p.threads) {
      std::set<uint32_t> devices;
      for (const Op& op : tp.ops)
        if (op.kind == Op::Kind::kTunerCall) devices.insert(p.calls[op.call].device);
      for (uint32_t d : devices) {
        auto& q = queues_[d];
        if (!q) q = std::make_unique<Queue>(s, fmt::format("GPU {} owner", d));
        ++q->clients;
      }
    }
  }
  if (anchors_) {
    anchors_->assign(p.threads.size(), UINT64_MAX);
    for (size_t t = 0; t < p.threads.size(); ++t)
      if (!p.threads[t].ops.empty()) (*anchors_)[t] = p.threads[t].ops.front().seq;
  }
}

std::string TunerWorld::ThreadName(uint32_t t) const {
  if (t < p_.threads.size()) return p_.threads[t].name;
  return s_.ThreadName(t);
}

void TunerWorld::ShareRecorded() {
  // The index of a home tuner; one that no recorded call used (a shallow copy's original) gets
  // its own, past the called tuners', with the key space of the tuner that refers to it.
  auto home = [&](uint64_t token, size_t member) {
    auto [it, fresh] = tuner_index_.try_emplace(token, keys_.size());
    if (fresh) {
      keys_.push_back(keys_[member]);
      tokens_.push_back(token);
      kernels_.push_back(kernels_[member]);
      cache_home_.push_back(SIZE_MAX);
      copies_home_.push_back(SIZE_MAX);
    }
    return it->second;
  };
  for (const auto& [tuner, token] : p_.cache_home) {
    auto it = tuner_index_.find(tuner);
    if (it == tuner_index_.end() || it->second >= called_tuners_) continue;
    const size_t h = home(token, it->second);
    if (h != it->second) cache_home_[it->second] = h;
  }
  for (const auto& [tuner, token] : p_.hooks_home) {
    auto it = tuner_index_.find(tuner);
    if (it == tuner_index_.end() || it->second >= called_tuners_) continue;
    const size_t h = home(token, it->second);
    if (h != it->second) copies_home_[it->second] = h;
  }
  // One cache dict, one key space: each member of a group keys it by the union of the group's
  // keys, in the order of the home's, then each member's.
  std::map<size_t, std::vector<std::string>> unions;
  for (size_t ti = 0; ti < cache_home_.size(); ++ti) {
    if (cache_home_[ti] == SIZE_MAX) continue;
    auto [u, fresh] = unions.try_emplace(cache_home_[ti], keys_[cache_home_[ti]]);
    for (const std::string& k : keys_[ti])
      if (std::find(u->second.begin(), u->second.end(), k) == u->second.end()) u->second.push_back(k);
  }
  for (const auto& [h, keys] : unions) keys_[h] = keys;
  for (size_t ti = 0; ti < cache_home_.size(); ++ti)
    if (cache_home_[ti] != SIZE_MAX) keys_[ti] = keys_[cache_home_[ti]];
}

TunerState& TunerWorld::StateFor(uint32_t thread, const TunerCall& c) {
  return StateAt(tuner_index_.at(c.tuner), per_thread_tuner_ ? thread : UINT32_MAX);
}

TunerState& TunerWorld::StateAt(size_t ti, uint32_t owner) {
  auto& st = states_[{ti, owner}];  // a map's node: stays put while homes are added below
  if (!st) {
    std::string name = fmt::format("Autotuner({})", kernels_[ti]);
    if (ti >= called_tuners_) {
      name += fmt::format(" {:#x}", tokens_[ti]);
    } else if (cache_home_[ti] != SIZE_MAX || copies_home_[ti] != SIZE_MAX) {
      // One of several objects of one kernel (shallow copies): numbered as the python engine
      // numbers them, in the order of their first call.
      const auto n = std::count(kernels_.begin(), kernels_.begin() + static_cast<std::ptrdiff_t>(ti),
                                kernels_[ti]);
      if (n != 0) name += fmt::format("#{}", n);
    }
    if (owner != UINT32_MAX) name += fmt::format("[thread {}]", owner);
    st = std::make_unique<TunerState>(s_, name, keys_[ti].size());
    if (p_.cache_results.count(tokens_[ti])) {
      auto& disk = disks_[ti];
      if (!disk)
        disk = std::make_unique<sim::Shared<std::vector<Owned>>>(
            s_, fmt::format("disk cache of {}", kernels_[ti]), std::vector<Owned>(keys_[ti].size()));
      st->disk = disk.get();
    }
    if (cache_home_[ti] != SIZE_MAX) st->cache_home = &StateAt(cache_home_[ti], owner);
    if (copies_home_[ti] != SIZE_MAX) st->copies_home = &StateAt(copies_home_[ti], owner);
  }
  return *st;
}

int32_t TunerWorld::KeyId(const TunerCall& c, const std::string& key) const {
  const auto& keys = keys_[tuner_index_.at(c.tuner)];
  return static_cast<int32_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
}

const std::string& TunerWorld::KeyName(const TunerCall& c, int32_t key) const {
  return keys_[tuner_index_.at(c.tuner)][static_cast<size_t>(key)];
}

uint32_t TunerWorld::Reps(uint32_t recorded) const {
  return reps_ == 0 ? recorded : std::min(reps_, recorded);
}

void TunerWorld::CountTuning(const TunerCall& c, int32_t key, uint32_t thread, Nanos gpu) {
  size_t ti = tuner_index_.at(c.tuner);
  if (cache_home_[ti] != SIZE_MAX) ti = cache_home_[ti];  // one cache dict: one tuning per key
  tunings_[{ti, key}].push_back({thread, gpu});
  gpu_.CountTuning(c.configs.size(), gpu);
}

Nargs TunerWorld::ReadNargs(TunerState& st, const char* label) {
  AnchorRead(s_.CurrentThread(), traces::TunerField::kNargs);
  if (local_nargs_) return st.nargs_local.Get();
  return st.nargs.Read(label);
}

// NB: a shared write is stamped with its own step, which the scheduler gives it at its point
// (inside Update); s_.step() before the point is the thread's previous step, another access.
void TunerWorld::WriteNargs(TunerState& st, Nargs v, const char* label) {
  v.writer = s_.CurrentThread();
  if (local_nargs_) {
    v.step = s_.step();
    st.nargs_local.Get() = v;
    return;
  }
  st.nargs.Update(
      [&](Nargs& n) {
        v.step = s_.step();
        n = v;
      },
      label);
}

Copies TunerWorld::ReadCopies(TunerState& of, const char* label) {
  TunerState& st = of.CopiesHome();
  if (local_copies_) return st.restore_copies_local.Get();
  return st.restore_copies.Read(label);
}

void TunerWorld::WriteCopies(TunerState& of, Copies v, const char* label) {
  TunerState& st = of.CopiesHome();
  v.writer = s_.CurrentThread();
  if (local_copies_) {
    v.step = s_.step();
    st.restore_copies_local.Get() = v;
    return;
  }
  st.restore_copies.Update(
      [&](Copies& c) {
        v.step = s_.step();
        c = v;
      },
      label);
}

void TunerWorld::Silent(uint32_t thread, std::string code, std::string words, std::string where,
                   uint32_t other, uint64_t other_step) {
  for (const Finding& f : findings_)
    if (f.code == code && f.thread == thread) return;  // the first of each kind per thread
  Finding f;
  f.code = std::move(code);
  f.silent = true;
  f.thread = thread;
  f.thread_name = ThreadName(thread);
  f.step = s_.step();
  f.type = "(none: silent corruption)";
  f.where = std::move(where);
  f.words = std::move(words);
  f.other = other;
  f.other_step = other_step;
  // The report's last steps of both threads are those up to this moment (the thread goes on).
  s_.KeepHistory(thread);
  if (other != UINT32_MAX) s_.KeepHistory(other);
  findings_.push_back(std::move(f));
}

void TunerWorld::Raise(uint32_t thread, std::string code, std::string type, std::string message,
                  std::string where, std::string words, uint32_t other, uint64_t other_step) {
  Finding f;
  f.code = std::move(code);
  f.thread = thread;
  f.thread_name = ThreadName(thread);
  f.step = s_.step();
  f.type = std::move(type);
  f.message = std::move(message);
  f.where = std::move(where);
  f.words = std::move(words);
  f.other = other;
  f.other_step = other_step;
  s_.KeepHistory(thread);
  if (other != UINT32_MAX) s_.KeepHistory(other);
  throw PyError{std::move(f)};
}

void TunerWorld::Launch(uint32_t device, uint64_t stream, Nanos duration) {
  gpu_.Launch(device, stream, duration, false, o_.launch_cpu_ns);
}

void TunerWorld::Sync(uint32_t device, uint64_t stream, bool whole_device) {
  gpu_.Sync(device, stream, whole_device);
}

void TunerWorld::Trial(const TunerCall& c, size_t config, uint32_t reps) {
  gpu_.ColdStart();
  const uint32_t recorded = std::max<uint32_t>(c.bench_reps[config], 1);
  const Nanos measured = c.bench_ns[config] * recorded;
  const bool calibrated = !c.trial_cpu_ns.empty() && c.trial_cpu_ns[config] + c.trial_gpu_ns[config] != 0;
  if (calibrated && c.time_budgeted) {
    // Triton's do_bench runs for a time budget (warm-up 25 ms, 100 ms of repetitions): its GPU
    // work does not queue behind other threads'; waiting for the device releases the GIL.
    gpu_.BudgetedTrial((c.trial_cpu_ns[config] + c.trial_gpu_ns[config]) / reps);
    return;
  }
  // A fixed number of repetitions: the recorded GPU work of the whole benchmark (kernels,
  // clones, copies, fills) queues on the device; the rest of its recorded wall time is the
  // thread's own. Uncalibrated, what the benchmark measured. Calibrated, not raised to that
  // measurement: in a recording of trials at once, the benchmark's events also hold the host's
  // delay before the launch and other threads' work, which the calibration divides out
  // (calibrate.cc; the H200's per-thread-tuner: 91 of 220 trials timed above their calibrated
  // wall, the estimate 14 % above the recording's own serialized trials).
  const Nanos gpu = calibrated ? c.trial_gpu_ns[config] : measured;
  const Nanos cpu = calibrated ? c.trial_cpu_ns[config] : 0;
  if (c.trial_device_sync && calibrated) {
    // Each repetition ends with a device-wide synchronization and a cudaFree, and the next
    // starts with a cudaMalloc: one thread's repetition at a time per device, host and GPU
    // work together (the H200: call-local's step 35 / 79 / 178 / 397 ms at 1 / 2 / 4 / 8 threads).
    gpu_.Context(c.device, (cpu + gpu) / reps);
    return;
  }
  gpu_.Cpu(cpu / reps, false, false);
  gpu_.Launch(c.device, c.stream, gpu / reps, true, cpu != 0 ? 0 : o_.launch_cpu_ns);
  gpu_.Sync(c.device, c.stream, false);
}

void TunerWorld::Spawn() {
  for (uint32_t t = 0; t < p_.threads.size(); ++t)
    s_.Spawn(p_.threads[t].name, [this, t] { RunThread(t); });
  if (prewarm_) prewarm_thread_ = s_.Spawn("prewarm", [this] { RunPrewarm(); });
  if (owner_thread_) {
    std::set<uint32_t> devices;
    for (const TunerCall& c : p_.calls) devices.insert(c.device);
    for (uint32_t d : devices)
      s_.Spawn(fmt::format("GPU {} owner", d), [this, d] { RunOwner(d); });
  }
}

void TunerWorld::WaitForEarlierCalls(uint32_t call) {
  if (call_done_.empty()) return;
  for (uint32_t before : p_.call_after[call])
    call_done_[before].GetFuture().Get("recorded order: wait for an earlier call");
}

void TunerWorld::EndCall(uint32_t call) {
  if (call_done_.empty() || call_ended_[call]) return;
  call_ended_[call] = true;
  call_done_[call].SetValue(1, "recorded order: call ended");
}

void TunerWorld::RunThread(uint32_t t) {
  if (prewarm_thread_ != UINT32_MAX) s_.Join(prewarm_thread_);
  const ThreadProgram& tp = p_.threads[t];
  try {
    gpu_.Start(tp.start_ns, tp.worker);
    bool calibrated = false;
    for (const Op& op : tp.ops) calibrated |= op.cpu_before_ns != 0;
    for (const Op& op : tp.ops) {
      AnchorOp(t, op.seq);
      // Recorded wall time between events already holds the recording's waits for the GIL.
      gpu_.Cpu(op.cpu_before_ns, true, false);
      switch (op.kind) {
        case Op::Kind::kTunerCall:
          WaitForEarlierCalls(op.call);
          Call(t, op.call);
          EndCall(op.call);
          break;
        case Op::Kind::kLaunch:
          // A calibrated trace has the launch's CPU time in the gap after it.
          gpu_.Launch(op.device, op.stream, op.duration, false, calibrated ? 0 : o_.launch_cpu_ns);
          break;
        case Op::Kind::kSync:
          Sync(op.device, op.stream, op.sync == traces::SyncKind::kContext);
          break;
        case Op::Kind::kLockAcquire:
          recorded_locks_.at(op.lock)->Lock("recorded lock acquire");
          break;
        case Op::Kind::kLockRelease:
          recorded_locks_.at(op.lock)->Unlock("recorded lock release");
          break;
      }
    }
  } catch (PyError& e) {
    findings_.push_back(std::move(e.finding));
  }
  // A thread whose call raised ends there: the calls ordered after its calls go on.
  for (const Op& op : tp.ops)
    if (op.kind == Op::Kind::kTunerCall) EndCall(op.call);
  CountUnreached(t);
  // Locks the recording shows taken and not released by the end (an exception) are released,
  // as Python's `with` would.
  for (auto& [id, m] : recorded_locks_)
    if (m->owner() == s_.CurrentThread()) m->Unlock("release at thread end");
  if (owner_thread_) {
    for (auto& [d, q] : queues_) {
      bool client = false;
      for (const Op& op : tp.ops)
        client |= op.kind == Op::Kind::kTunerCall && p_.calls[op.call].device == d;
      if (!client) continue;
      q->m.Lock("owner queue: client done");
      --q->clients;
      q->cv.NotifyAll("owner queue: client done");
      q->m.Unlock("owner queue: client done");
    }
  }
}

void TunerWorld::RunPrewarm() {
  // Every (tuner, key) once, serially, before the threads start.
  std::set<std::pair<uint64_t, std::string>> done;
  const uint32_t self = s_.CurrentThread();
  gpu_.Start(p_.step_start_ns, true);
  for (uint32_t i = 0; i < p_.calls.size(); ++i) {
    if (!done.insert({p_.calls[i].tuner, p_.calls[i].key}).second) continue;
    try {
      gpu_.Cpu(p_.calls[i].call_cpu_ns, true);
      model_.Run(*this, self, p_.calls[i], i);
    } catch (PyError& e) {
      findings_.push_back(std::move(e.finding));
    }
  }
}

void TunerWorld::RunOwner(uint32_t device) {
  Queue& q = *queues_.at(device);
  const uint32_t self = s_.CurrentThread();
  gpu_.Start(p_.step_start_ns, true);
  for (;;) {
    q.m.Lock("owner: take work");
    while (q.pending.empty() && q.clients > 0) q.cv.Wait(q.m, "owner: wait for work");
    if (q.pending.empty()) {
      q.m.Unlock("owner: no clients left");
      return;
    }
    Request* r = q.pending.front();
    q.pending.erase(q.pending.begin());
    q.m.Unlock("owner: take work");
    try {
      gpu_.Cpu(p_.calls[r->call].call_cpu_ns, true);
      model_.Run(*this, self, p_.calls[r->call], r->call);
    } catch (PyError& e) {
      findings_.push_back(std::move(e.finding));
    }
    r->done->SetValue(1, "owner: hand back the result");
  }
}

void TunerWorld::Call(uint32_t thread, uint32_t call) {
  const TunerCall& c = p_.calls[call];
  if (owner_thread_ && queues_.count(c.device)) {
    Queue& q = *queues_.at(c.device);
    Request r{thread, call, std::make_unique<sim::Promise<int>>(s_, "owner result")};
    sim::Future<int> f = r.done->GetFuture();
    q.m.Lock("send to owner");
    q.pending.push_back(&r);
    q.cv.NotifyOne("send to owner");
    q.m.Unlock("send to owner");
    f.Get("wait for owner");
    return;
  }
  if (per_key_event_ && c.configs.size() > 1) {
    CallWithKeyEvent(thread, c, call);
    return;
  }
  Locked(LockFor(Region::kRun), "lock around Autotuner.run", [&] {
    gpu_.Cpu(c.call_cpu_ns, true);
    model_.Run(*this, thread, c, call);
  });
}

std::optional<Finding> SchedulerFinding(const sim::RunResult& run) {
  if (!run.failure) return std::nullopt;
  const sim::Failure& f = *run.failure;
  Finding x;
  x.code = f.kind == sim::FailureKind::kDeadlock     ? "deadlock"
           : f.kind == sim::FailureKind::kStepBound  ? "step-bound"
           : f.kind == sim::FailureKind::kDivergence ? "divergence"
                                                      : "internal";
  x.thread = f.thread;
  if (f.thread != sim::kNoThread && f.thread < run.threads.size())
    x.thread_name = run.threads[f.thread].name;
  x.step = f.step;
  x.type = f.type;
  x.message = f.message;
  x.where = f.where.ToString();
  for (const auto& w : f.waits) x.words += (x.words.empty() ? "" : "\n  ") + w;
  if (x.where == "?") x.where.clear();
  return x;
}

void TunerWorld::Finalize(ReplayResult& r) {
  if (auto x = SchedulerFinding(r.run)) findings_.push_back(std::move(*x));
  std::stable_sort(findings_.begin(), findings_.end(),
                   [](const Finding& a, const Finding& b) { return a.step < b.step; });
  r.findings = std::move(findings_);
  for (const auto& [k, list] : tunings_) {
    if (list.size() < 2) continue;
    DuplicateTuning d;
    d.kernel = kernels_[k.first];
    d.key = keys_[k.first][static_cast<size_t>(k.second)];
    d.threads = static_cast<uint32_t>(list.size());
    for (size_t i = 1; i < list.size(); ++i) d.wasted_gpu_ns += list[i].second;
    r.duplicates.push_back(std::move(d));
  }
  gpu_.Finalize(r.run, r.cost, r.makespan, r.trials);
  r.left_recording = left_recording_;
}

}  // namespace rerace::replay::detail
