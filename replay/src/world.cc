// replay/src/world.cc: the tuner models (Triton 3.6's Autotuner, FLA's CachedAutotuner), the
// fixes' variants of them, and the virtual GPU.
//
// Line labels are those of triton/runtime/autotuner.py in the Triton 3.6.0 wheel (read from the
// installed package; the KeyError at line 74 is the one the H200 measured).
#include "world.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace rerace::replay::detail {

using traces::TunerKind;

namespace {
constexpr const char* kFlaCheck = "fla CachedAutotuner.run: if key in self.config_cache";
constexpr const char* kFlaLoad = "fla CachedAutotuner.run: self.cache[key] = cached config";
constexpr const char* kFlaBest = "fla CachedAutotuner.run: best = self.best_config";
constexpr const char* kFlaStore = "fla CachedAutotuner.run: self.config_cache[key] = best";

// The labels of each model's scheduling points and the places its errors name.
const Labels kTritonLabels = {
    "autotuner.py:213 Autotuner.run: self.nargs = dict(zip(self.arg_names, args))",
    "autotuner.py:216 Autotuner.run: all_args = {**self.nargs, **kwargs}",
    "autotuner.py:223 Autotuner.run: if key not in self.cache",
    "autotuner.py:143 Autotuner._bench: full_nargs = {**self.nargs, **current}",
    "autotuner.py:63 _pre_hook: self.restore_copies = {name: kwargs[name].clone() ...}",
    "autotuner.py:74 _post_hook: kwargs[name].copy_(self.restore_copies[name])",
    "autotuner.py:75 _post_hook: self.restore_copies = {}",
    "autotuner.py:231 benchmark: self.bench_time = bench_end - bench_start",
    "autotuner.py:232 benchmark: self.cache[key] = builtins.min(timings, key=timings.get)",
    "autotuner.py:233 benchmark: full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}",
    "autotuner.py:235 benchmark: self.configs_timings = timings",
    "autotuner.py:242 Autotuner.run: config = self.cache[key]",
    "autotuner.py:245 Autotuner.run: self.best_config = config",
    "autotuner.py:257 Autotuner.run: self.nargs = None",
    "triton/runtime/autotuner.py:74 in _post_hook",
    "triton/runtime/autotuner.py:143 in _bench",
    "triton/runtime/autotuner.py:216 in run",
    "triton/runtime/autotuner.py:233 in benchmark",
    "KeyError", "TypeError",
    "'{name}'",
    "'NoneType' object is not a mapping", "'NoneType' object is not a mapping",
    "'NoneType' object is not a mapping",
    "triton/runtime/autotuner.py:61 in _pre_hook"};
// rerace::kernels::Autotuner (kernels/src/autotuner.cc), the same steps in C++.
const Labels kNativeLabels = {
    "autotuner.cc Autotuner::RunHere: nargs_ = call (autotuner.py:213)",
    "autotuner.cc Autotuner::RunHere: key = KeyOf(*ReadNargs()) (autotuner.py:216)",
    "autotuner.cc Autotuner::RunHere: CachedConfig(key) < 0 (autotuner.py:223)",
    "autotuner.cc Autotuner::Bench: n = ReadNargs() (autotuner.py:143)",
    "autotuner.cc Autotuner::PreHook: restore_copies_ = clones (autotuner.py:63)",
    "autotuner.cc Autotuner::PostHook: CopyInto(arg, restore_copies_[i]) (autotuner.py:74)",
    "autotuner.cc Autotuner::PostHook: restore_copies_ = {} (autotuner.py:75)",
    "autotuner.cc Autotuner::Benchmark: bench_time_ = ... (autotuner.py:231)",
    "autotuner.cc Autotuner::Benchmark: cache_[key] = best (autotuner.py:232)",
    "autotuner.cc Autotuner::Benchmark: n = ReadNargs() (autotuner.py:233)",
    "autotuner.cc Autotuner::Benchmark: configs_timings_ = timings (autotuner.py:235)",
    "autotuner.cc Autotuner::RunHere: config = cache_[key] (autotuner.py:242)",
    "autotuner.cc Autotuner::RunHere: best_config_ = config (autotuner.py:245)",
    "autotuner.cc Autotuner::RunHere: nargs_ = nullptr (autotuner.py:257)",
    "kernels/src/autotuner.cc Autotuner::PostHook",
    "kernels/src/autotuner.cc Autotuner::Bench",
    "kernels/src/autotuner.cc Autotuner::Run",
    "kernels/src/autotuner.cc Autotuner::Benchmark",
    "rerace::kernels::TunerError", "rerace::kernels::TunerError",
    "In-parameter input {index} is not in the cache",
    "nargs is null while computing the key", "nargs is null after benchmarking",
    "nargs is null while benchmarking config {config}",
    "kernels/src/autotuner.cc Autotuner::Benchmark"};

// Runs `f` holding `m` (if any). A PyError leaving `f` is caught, the lock released after the
// catch block has ended (no fiber switch while an exception is in flight), then rethrown.
template <typename F>
void Locked(sim::Mutex* m, const char* label, F&& f) {
  if (m == nullptr) {
    f();
    return;
  }
  m->Lock(label);
  std::optional<PyError> err;
  try {
    f();
  } catch (PyError& e) {
    err = std::move(e);
  }
  m->Unlock(label);
  if (err) throw PyError(std::move(*err));
}
}  // namespace

TunerState::TunerState(sim::Scheduler& s, const std::string& name, size_t keys)
    : nargs(s, name + ".nargs"),
      nargs_local(s),
      cache(s, name + ".cache", std::vector<int32_t>(keys, -1)),
      restore_copies(s, name + ".restore_copies"),
      restore_copies_local(s),
      best_config(s, name + ".best_config"),
      configs_timings(s, name + ".configs_timings"),
      bench_time(s, name + ".bench_time"),
      fla_cache(s, name + ".config_cache", std::vector<int32_t>(keys, -1)),
      key_lock(s, name + " key lock"),
      futures(keys),
      future_of(keys) {}

World::Queue::Queue(sim::Scheduler& s, const std::string& name)
    : m(s, name + " queue lock"), cv(s, name + " queue") {}

World::World(sim::Scheduler& s, const Program& p, const ReplayOptions& o, uint32_t reps,
             const std::string& model, std::vector<uint64_t>* anchors)
    : s_(s), p_(p), o_(o), reps_(reps), fla_(model == "fla"),
      L_(model == "native" ? kNativeLabels : kTritonLabels), anchors_(anchors),
      cursor_(p.threads.size(), 0), fields_recorded_(p.threads.size(), false),
      reads_recorded_(p.threads.size(), false) {
  for (size_t t = 0; t < p.threads.size(); ++t)
    for (const RecordedTransition& tr : p.threads[t].transitions) {
      if (tr.kind == TunerKind::kFieldWrite) fields_recorded_[t] = true;
      if (tr.kind == TunerKind::kFieldRead) reads_recorded_[t] = true;
    }
  for (const TunerCall& c : p.calls) {
    auto [it, fresh] = tuner_index_.try_emplace(c.tuner, keys_.size());
    if (fresh) keys_.emplace_back();
    auto& keys = keys_[it->second];
    if (std::find(keys.begin(), keys.end(), c.key) == keys.end()) keys.push_back(c.key);
  }
  for (const auto& [region, name] : o.fix.locks)
    if (!fix_locks_.count(name)) fix_locks_[name] = std::make_unique<sim::Mutex>(s, name);
  for (const ThreadProgram& tp : p.threads)
    for (const Op& op : tp.ops)
      if ((op.kind == Op::Kind::kLockAcquire || op.kind == Op::Kind::kLockRelease) &&
          !recorded_locks_.count(op.lock))
        recorded_locks_[op.lock] = std::make_unique<sim::Mutex>(s, "recorded lock " + op.lock_name);
  if (o.fix.owner_thread) {
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

std::string World::ThreadName(uint32_t t) const {
  if (t < p_.threads.size()) return p_.threads[t].name;
  return s_.ThreadName(t);
}

TunerState& World::StateFor(uint32_t thread, const TunerCall& c) {
  const size_t ti = tuner_index_.at(c.tuner);
  const uint32_t owner = o_.fix.per_thread_tuner ? thread : UINT32_MAX;
  auto& st = states_[{ti, owner}];
  if (!st) {
    std::string name = fmt::format("Autotuner({})", c.kernel);
    if (owner != UINT32_MAX) name += fmt::format("[thread {}]", owner);
    st = std::make_unique<TunerState>(s_, name, keys_[ti].size());
  }
  return *st;
}

int32_t World::KeyId(const TunerCall& c, const std::string& key) const {
  const auto& keys = keys_[tuner_index_.at(c.tuner)];
  return static_cast<int32_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
}

sim::Mutex* World::LockFor(Region r) {
  const std::string name = o_.fix.LockFor(r);
  return name.empty() ? nullptr : fix_locks_.at(name).get();
}

Nargs World::ReadNargs(TunerState& st, const char* label) {
  AnchorRead(s_.CurrentThread(), traces::TunerField::kNargs);
  if (o_.fix.IsLocal(Field::kNargs)) return st.nargs_local.Get();
  return st.nargs.Read(label);
}

void World::WriteNargs(TunerState& st, Nargs v, const char* label) {
  v.step = s_.step();
  v.writer = s_.CurrentThread();
  if (o_.fix.IsLocal(Field::kNargs)) {
    st.nargs_local.Get() = v;
    return;
  }
  st.nargs.Write(v, label);
}

Copies World::ReadCopies(TunerState& st, const char* label) {
  if (o_.fix.IsLocal(Field::kRestoreCopies)) return st.restore_copies_local.Get();
  return st.restore_copies.Read(label);
}

void World::WriteCopies(TunerState& st, Copies v, const char* label) {
  v.step = s_.step();
  v.writer = s_.CurrentThread();
  if (o_.fix.IsLocal(Field::kRestoreCopies)) {
    st.restore_copies_local.Get() = v;
    return;
  }
  st.restore_copies.Write(v, label);
}

void World::AnchorWrite(uint32_t thread, traces::TunerField field) {
  if (anchors_ == nullptr || thread >= p_.threads.size() || !fields_recorded_[thread]) return;
  Anchor(thread, TunerKind::kFieldWrite, -1, field);
}

void World::AnchorRead(uint32_t thread, traces::TunerField field) {
  if (anchors_ == nullptr || thread >= p_.threads.size() || !reads_recorded_[thread]) return;
  Anchor(thread, TunerKind::kFieldRead, -1, field);
}

void World::CountUnreached(uint32_t thread) {
  if (anchors_ == nullptr || thread >= p_.threads.size()) return;
  const auto& tr = p_.threads[thread].transitions;
  uint64_t n = 0;
  for (size_t c = cursor_[thread]; c < tr.size(); ++c)
    n += tr[c].kind != TunerKind::kError && tr[c].kind != TunerKind::kFieldRead &&
         tr[c].kind != TunerKind::kFieldWrite;
  if (std::getenv("RERACE_DEBUG_ANCHORS"))
    std::fprintf(stderr, "anchor: thread %u ended with %llu recorded transitions unreached\n",
                 thread, static_cast<unsigned long long>(n));
  left_recording_ += n;
}

void World::Anchor(uint32_t thread, TunerKind kind, int32_t config, traces::TunerField field) {
  if (anchors_ == nullptr || thread >= p_.threads.size()) return;
  const auto& tr = p_.threads[thread].transitions;
  size_t& c = cursor_[thread];
  const bool fields = fields_recorded_[thread];
  const bool reads = reads_recorded_[thread];
  auto anchors_on = [fields, reads](const RecordedTransition& t) {
    const TunerKind k = t.kind;
    if (k == TunerKind::kFieldWrite)
      return fields && (t.field == traces::TunerField::kNargs ||
                        t.field == traces::TunerField::kRestoreCopies ||
                        t.field == traces::TunerField::kBestConfig);
    if (k == TunerKind::kFieldRead)
      return reads && (t.field == traces::TunerField::kNargs ||
                       t.field == traces::TunerField::kRestoreCopies);
    return k == TunerKind::kCallBegin || k == TunerKind::kCallEnd || k == TunerKind::kBenchBegin ||
           k == TunerKind::kBenchEnd || k == TunerKind::kPreHook || k == TunerKind::kPostHook ||
           k == TunerKind::kLaunch;
  };
  while (c < tr.size() && !anchors_on(tr[c])) ++c;
  if (c < tr.size() && tr[c].kind == kind && (config < 0 || tr[c].config == config) &&
      (field == traces::TunerField::kNone || tr[c].field == field)) {
    (*anchors_)[thread] = tr[c].seq;
    ++c;
  } else {
    if (left_recording_ < 8 && std::getenv("RERACE_DEBUG_ANCHORS"))
      std::fprintf(stderr, "anchor: thread %u wants %s/%d/%s, recording has %s/%d/%s at %zu of %zu\n",
                   thread, traces::TunerKindName(kind), config, traces::TunerFieldName(field),
                   c < tr.size() ? traces::TunerKindName(tr[c].kind) : "end",
                   c < tr.size() ? tr[c].config : -9,
                   c < tr.size() ? traces::TunerFieldName(tr[c].field) : "-", c, tr.size());
    ++left_recording_;
  }
}

void World::AnchorOp(uint32_t thread, uint64_t seq) {
  if (anchors_ != nullptr && thread < p_.threads.size()) (*anchors_)[thread] = seq;
}

void World::Silent(uint32_t thread, std::string code, std::string words, std::string where,
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
  findings_.push_back(std::move(f));
}

void World::Raise(uint32_t thread, std::string code, std::string type, std::string message,
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
  throw PyError{std::move(f)};
}

void World::Launch(uint32_t device, uint64_t stream, Nanos duration) {
  // A stream runs its launches in order; a device runs one kernel at a time (kernels that
  // fill the GPU; concurrent small kernels would overlap, so this bounds the cost from above).
  Nanos& ready = streams_[{device, stream}];
  Nanos& busy = devices_[device];
  const Nanos start = std::max({ready, busy, s_.Now()});
  ready = busy = start + duration;
  s_.Advance(o_.launch_cpu_ns);
}

void World::Sync(uint32_t device, uint64_t stream, bool whole_device) {
  Nanos until = 0;
  for (const auto& [k, ready] : streams_)
    if (k.first == device && (whole_device || k.second == stream)) until = std::max(until, ready);
  s_.AdvanceTo(until);
}

void World::RunThread(uint32_t t) {
  if (prewarm_thread != UINT32_MAX) s_.Join(prewarm_thread);
  const ThreadProgram& tp = p_.threads[t];
  try {
    for (const Op& op : tp.ops) {
      AnchorOp(t, op.seq);
      switch (op.kind) {
        case Op::Kind::kTunerCall:
          Call(t, op.call);
          break;
        case Op::Kind::kLaunch:
          Launch(op.device, op.stream, op.duration);
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
  CountUnreached(t);
  // Locks the recording shows taken and not released by the end (an exception) are released,
  // as Python's `with` would.
  for (auto& [id, m] : recorded_locks_)
    if (m->owner() == s_.CurrentThread()) m->Unlock("release at thread end");
  if (o_.fix.owner_thread) {
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

void World::RunPrewarm() {
  // Every (tuner, key) once, serially, before the threads start.
  std::set<std::pair<uint64_t, std::string>> done;
  const uint32_t self = s_.CurrentThread();
  for (uint32_t i = 0; i < p_.calls.size(); ++i) {
    if (!done.insert({p_.calls[i].tuner, p_.calls[i].key}).second) continue;
    try {
      TritonRun(self, p_.calls[i], i);
    } catch (PyError& e) {
      findings_.push_back(std::move(e.finding));
    }
  }
}

void World::RunOwner(uint32_t device) {
  Queue& q = *queues_.at(device);
  const uint32_t self = s_.CurrentThread();
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
      TritonRun(self, p_.calls[r->call], r->call);
    } catch (PyError& e) {
      findings_.push_back(std::move(e.finding));
    }
    r->done->SetValue(1, "owner: hand back the result");
  }
}

void World::Call(uint32_t thread, uint32_t call) {
  const TunerCall& c = p_.calls[call];
  if (o_.fix.owner_thread && queues_.count(c.device)) {
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
  Locked(LockFor(Region::kRun), "lock around Autotuner.run", [&] { TritonRun(thread, c, call); });
}

void World::TritonRun(uint32_t thread, const TunerCall& c, uint32_t call) {
  TunerState& st = StateFor(thread, c);
  const int32_t own_key = KeyId(c, c.key);
  Anchor(thread, TunerKind::kCallBegin, -1);
  bool fla_hit = false;
  if (fla_) {
    // FLA's CachedAutotuner.run: its own config cache first, loaded into Triton's cache.
    const int32_t cached = st.fla_cache.ReadWith(
        [&](const std::vector<int32_t>& v) { return v[static_cast<size_t>(own_key)]; }, kFlaCheck);
    if (cached >= 0) {
      fla_hit = true;
      st.cache.Update([&](std::vector<int32_t>& v) { v[static_cast<size_t>(own_key)] = cached; },
                      kFlaLoad);
    }
  }
  AnchorWrite(thread, traces::TunerField::kNargs);
  WriteNargs(st, {static_cast<int32_t>(call), thread, 0, 0}, L_.kRunSetNargs);
  int32_t key = own_key;
  int32_t config = 0;
  if (c.configs.size() > 1) {
    const Nargs n = ReadNargs(st, L_.kRunReadNargs);
    if (n.call < 0) {
      Raise(thread, "nargs-none", L_.none_error_type,
            L_.none_in_run,
            L_.kWhereRun,
            fmt::format("nargs is None while thread {} computes its key: thread {} set it to None "
                        "at step {}",
                        thread, n.writer, n.step),
            n.writer, n.step);
    }
    key = KeyId(c, p_.calls[static_cast<size_t>(n.call)].key);
    Locked(LockFor(Region::kCache), "lock around the cache", [&] {
      const bool hit = st.cache.ReadWith(
          [&](const std::vector<int32_t>& v) { return v[static_cast<size_t>(key)] >= 0; },
          L_.kRunCacheCheck);
      if (hit) return;
      if (!o_.fix.per_key_future) {
        Benchmark(thread, c, st, key);
        return;
      }
      // lock-key-future: the first thread to miss a key tunes it; the others wait for it.
      bool owner = false;
      st.key_lock.Lock("per-key future lock");
      auto& slot = st.future_of[static_cast<size_t>(key)];
      if (!slot) {
        st.futures[static_cast<size_t>(key)] =
            std::make_unique<sim::Promise<int32_t>>(s_, fmt::format("{} key future", c.kernel));
        slot = st.futures[static_cast<size_t>(key)]->GetFuture();
        owner = true;
      }
      sim::Future<int32_t> f = *slot;
      st.key_lock.Unlock("per-key future lock");
      if (owner) {
        std::optional<PyError> err;
        int32_t best = -1;
        try {
          best = Benchmark(thread, c, st, key);
        } catch (PyError& e) {
          err = std::move(e);
        }
        st.futures[static_cast<size_t>(key)]->SetValue(best, "per-key future: set");
        if (err) throw PyError(std::move(*err));
      } else {
        f.Get("per-key future: wait");
      }
    });
    config = st.cache.ReadWith(
        [&](const std::vector<int32_t>& v) { return v[static_cast<size_t>(key)]; }, L_.kRunCacheRead);
    if (config < 0) config = 0;  // a tuning that failed in another thread left no entry
  }
  AnchorWrite(thread, traces::TunerField::kBestConfig);
  st.best_config.Write({config, thread, key}, L_.kBestConfig);
  Anchor(thread, TunerKind::kLaunch, -1);
  if (key != own_key) {
    Silent(thread, "config-mismatch",
           fmt::format("thread {} launched {} with the config tuned for key {} (another thread's "
                       "arguments were in self.nargs when it computed its key), not for its own "
                       "key {}",
                       thread, c.kernel, keys_[tuner_index_.at(c.tuner)][static_cast<size_t>(key)], c.key),
           L_.kWhereRun);
  }
  Launch(c.device, c.stream, c.launch_ns);
  AnchorWrite(thread, traces::TunerField::kNargs);
  WriteNargs(st, {-1, thread, 0, 0}, L_.kRunClearNargs);
  if (fla_ && !fla_hit) {
    const Owned best = st.best_config.Read(kFlaBest);
    if (best.thread != thread && best.key != own_key) {
      Silent(thread, "config-mismatch",
             fmt::format("thread {}'s CachedAutotuner stored thread {}'s best_config (tuned for "
                         "another key) as the config of key {}",
                         thread, best.thread, c.key),
             "fla CachedAutotuner.run");
    }
    st.fla_cache.Update([&](std::vector<int32_t>& v) { v[static_cast<size_t>(own_key)] = best.value; },
                        kFlaStore);
  }
  Anchor(thread, TunerKind::kCallEnd, -1);
}

int32_t World::Benchmark(uint32_t thread, const TunerCall& c, TunerState& st, int32_t key) {
  int32_t best = 0;
  Locked(LockFor(Region::kBenchmark), "lock around benchmark()", [&] {
    Nanos gpu = 0;
    for (size_t i = 0; i < c.configs.size(); ++i) {
      const Nanos before = s_.Now();
      Locked(LockFor(Region::kBench), "lock around _bench", [&] { Bench(thread, c, st, i); });
      gpu += s_.Now() - before;
      if (c.bench_ns[i] != 0 && c.bench_ns[i] < c.bench_ns[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
      if (c.bench_ns[static_cast<size_t>(best)] == 0) best = static_cast<int32_t>(i);
    }
    tunings_[{tuner_index_.at(c.tuner), key}].push_back({thread, gpu});
    st.bench_time.Write({0, thread, key}, L_.kBenchTime);
    st.cache.Update([&](std::vector<int32_t>& v) { v[static_cast<size_t>(key)] = best; }, L_.kCacheWrite);
    const Nargs n = ReadNargs(st, L_.kBenchmarkNargs);
    if (n.call < 0) {
      Raise(thread, "nargs-none", L_.none_error_type,
            L_.none_in_benchmark,
            L_.kWhereBenchmark,
            fmt::format("nargs is None after thread {} benchmarked: thread {} set it to None at "
                        "step {}",
                        thread, n.writer, n.step),
            n.writer, n.step);
    }
    if (!c.reset_to_zero.empty() && n.thread != thread) {
      Silent(thread, "wrong-restore",
             fmt::format("thread {}'s reset-only pre-hook zeroed thread {}'s {} (another thread's "
                         "arguments were in self.nargs)",
                         thread, n.thread, c.arg_names[c.reset_to_zero[0]]),
             L_.where_reset);
    }
    st.configs_timings.Write({0, thread, key}, L_.kConfigsTimings);
  });
  return best;
}

void World::Bench(uint32_t thread, const TunerCall& c, TunerState& st, size_t config) {
  Anchor(thread, TunerKind::kBenchBegin, static_cast<int32_t>(config));
  const Nargs n = ReadNargs(st, L_.kBenchNargs);
  if (n.call < 0) {
    Raise(thread, "nargs-none", L_.none_error_type,
          fmt::format(fmt::runtime(L_.none_in_bench), fmt::arg("config", config)),
          L_.kWhereBench,
          fmt::format("nargs is None while thread {} benchmarks config {}: thread {} set it to "
                      "None at step {}",
                      thread, config, n.writer, n.step),
          n.writer, n.step);
  }
  const uint32_t recorded = std::max<uint32_t>(c.bench_reps[config], 1);
  const uint32_t reps = reps_ == 0 ? recorded : std::min(reps_, recorded);
  const Nanos per_rep = c.bench_ns[config] * recorded / reps;
  const uint64_t all = c.restore_value.size() >= 64 ? ~0ull : (1ull << c.restore_value.size()) - 1;
  for (uint32_t r = 0; r < reps; ++r) {
    Locked(LockFor(Region::kHooks), "lock around the pre-hook", [&] {
      Anchor(thread, TunerKind::kPreHook, static_cast<int32_t>(config));
      if (c.restore_value.empty()) return;
      AnchorWrite(thread, traces::TunerField::kRestoreCopies);
      WriteCopies(st, {all, n.thread, 0, 0}, L_.kPreHookWrite);
    });
    Launch(c.device, c.stream, per_rep);
    Sync(c.device, c.stream, false);
    Locked(LockFor(Region::kHooks), "lock around the post-hook", [&] {
      Anchor(thread, TunerKind::kPostHook, static_cast<int32_t>(config));
      if (c.restore_value.empty()) return;
      for (size_t i = 0; i < c.restore_value.size(); ++i) {
        // One read per in-parameter, as the hook's loop reads self.restore_copies[name].
        AnchorRead(thread, traces::TunerField::kRestoreCopies);
        const Copies rc = ReadCopies(st, L_.kPostHookRead);
        const std::string& name = c.arg_names[c.restore_value[i]];
        if ((rc.present >> i & 1) == 0) {
          Raise(thread, "in-param-not-in-cache", L_.key_error_type,
                fmt::format(fmt::runtime(L_.key_error), fmt::arg("name", name), fmt::arg("index", i)),
                L_.kWherePostHook,
                fmt::format("In-parameter {} is not in the cache: thread {}'s post-hook reset "
                            "restore_copies to {{}} at step {} while thread {} was benchmarking "
                            "config {}",
                            name, rc.writer, rc.step, thread, config),
                rc.writer, rc.step);
        }
        if (rc.owner != n.thread) {
          Silent(thread, "wrong-restore",
                 fmt::format("thread {} restored thread {}'s saved copy of {} (cloned by thread "
                             "{}'s pre-hook at step {}) into {} tensor",
                             thread, rc.owner, name, rc.writer, rc.step,
                             n.thread == thread ? std::string("its own")
                                                : fmt::format("thread {}'s", n.thread)),
                 L_.kWherePostHook, rc.writer, rc.step);
        }
      }
      AnchorWrite(thread, traces::TunerField::kRestoreCopies);
      WriteCopies(st, {0, n.thread, 0, 0}, L_.kPostHookReset);
    });
  }
  Anchor(thread, TunerKind::kBenchEnd, static_cast<int32_t>(config));
}

void World::Finalize(ReplayResult& r) {
  if (r.run.failure) {
    const sim::Failure& f = *r.run.failure;
    Finding x;
    x.code = f.kind == sim::FailureKind::kDeadlock     ? "deadlock"
             : f.kind == sim::FailureKind::kStepBound  ? "step-bound"
             : f.kind == sim::FailureKind::kDivergence ? "divergence"
                                                        : "internal";
    x.thread = f.thread;
    if (f.thread != sim::kNoThread && f.thread < r.run.threads.size())
      x.thread_name = r.run.threads[f.thread].name;
    x.step = f.step;
    x.type = f.type;
    x.message = f.message;
    x.where = f.where.ToString();
    for (const auto& w : f.waits) x.words += (x.words.empty() ? "" : "\n  ") + w;
    if (x.where == "?") x.where.clear();
    findings_.push_back(std::move(x));
  }
  std::stable_sort(findings_.begin(), findings_.end(),
                   [](const Finding& a, const Finding& b) { return a.step < b.step; });
  r.findings = std::move(findings_);
  for (const auto& [k, list] : tunings_) {
    if (list.size() < 2) continue;
    DuplicateTuning d;
    for (const auto& [tuner, idx] : tuner_index_)
      if (idx == k.first)
        for (const TunerCall& c : p_.calls)
          if (c.tuner == tuner) {
            d.kernel = c.kernel;
            break;
          }
    d.key = keys_[k.first][static_cast<size_t>(k.second)];
    d.threads = static_cast<uint32_t>(list.size());
    for (size_t i = 1; i < list.size(); ++i) d.wasted_gpu_ns += list[i].second;
    r.duplicates.push_back(std::move(d));
  }
  r.makespan = r.run.makespan;
  for (const auto& [k, ready] : streams_) r.makespan = std::max(r.makespan, ready);
  r.left_recording = left_recording_;
}

}  // namespace rerace::replay::detail
