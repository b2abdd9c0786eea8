// replay/model/include/rerace/replay/model/tuner_world.h: the world every tuner model acts on, and the model interface
// (private to replay).
//
// A replay run of the C++ engine is a TunerWorld plus one TunerModel. The world owns what
// every model shares: the fix-aware shared fields (shared, per thread, per call; the fix's
// flags are read once, in the constructor), the lock a fix puts around each region, the
// per-key futures, the virtual GPU, the findings, and the recorded-order anchors that
// `--recorded` follows. A model (replay/model/src/models/, one file per tuner release) implements
// `Run` for one tuner call: the steps of that release's source, each read or write of a
// shared field one scheduling point, through the world. Models hold no state of their own
// (only their label tables), so one instance serves every run; the registry
// (models/registry.h) chooses one.
//
// Example: a model's step that reads `self.nargs`
//   const Nargs n = w.ReadNargs(st, labels.kBenchNargs);  // shared, or the thread's copy
//   if (n.call < 0) w.Raise(thread, "nargs-none", ...);   // ends the thread's task
//
// The world is built before the run, so every shared object is registered with the scheduler
// in the same order every time. All methods must be called from the scheduler's fibers of
// that run (a model's `Run` is); none consumes the seeded random stream.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rerace/replay/model/result.h"
#include "rerace/sim/sync.h"
#include "rerace/replay/model/virtual_gpu.h"
#include "rerace/replay/model/tuner_world_gil.h"

namespace rerace::replay::detail {

// self.nargs: whose arguments it holds (a call index and its thread), or None.
struct Nargs {
  int32_t call = -1;  // -1: None
  uint32_t thread = 0;
  uint64_t step = 0;  // when it was written
  uint32_t writer = 0;
};

// self.restore_copies: the saved in-parameters and whose tensors they were cloned from.
struct Copies {
  uint64_t present = 0;  // bit i: restore_value[i] is in the dict; 0 is {}
  uint32_t owner = 0;    // thread whose tensors were cloned
  uint32_t writer = 0;   // thread whose hook wrote the dict
  uint64_t step = 0;
  int32_t call = -1;     // the call whose tensors were cloned (-1: none, unknown)
};

// Something written by a thread (best_config, configs_timings, bench_time).
struct Owned {
  int32_t value = -1;
  uint32_t thread = 0;
  int32_t key = -1;
};

// One tuner object's state.
struct TunerState {
  TunerState(sim::Scheduler& s, const std::string& name, size_t keys);
  sim::Shared<Nargs> nargs;
  sim::ThreadLocal<Nargs> nargs_local;
  sim::Shared<std::vector<int32_t>> own_cache;  // by key id: config, or -1 (see Cache())
  sim::Shared<Copies> restore_copies;
  sim::ThreadLocal<Copies> restore_copies_local;
  sim::Shared<Owned> best_config;
  sim::Shared<Owned> configs_timings;
  sim::Shared<Owned> bench_time;
  // lock-key-future: the futures by key id, guarded by key_lock.
  sim::Mutex key_lock;
  std::vector<std::unique_ptr<sim::Promise<int32_t>>> futures;
  std::vector<std::optional<sim::Future<int32_t>>> future_of;
  // Triton's disk cache (check_disk_cache, from 3.4), when the recording says the tuner used
  // it (the probe's `cache_results`), else null: the file of each key id, the best config it
  // holds (-1: no file), written by `thread` from the timings of `key`. One per recorded tuner
  // (its kernel's cache directory), shared by per-thread copies of the tuner. Starts empty
  // (the recording does not say what the cache directory held).
  sim::Shared<std::vector<Owned>>* disk = nullptr;
  // lock-key-event: the event of a key whose owner is tuning it, by key id, guarded by key_lock.
  std::vector<std::unique_ptr<sim::Promise<int32_t>>> events;
  // What the program shared between tuner objects (Program::cache_home, hooks_home): the state
  // whose cache dict this tuner holds, and the one whose restore_copies its hooks write (a
  // shallow copy's hooks write its original's); null: its own. Set once, by StateFor.
  TunerState* cache_home = nullptr;
  TunerState* copies_home = nullptr;
  // The cache dict this tuner reads and writes: its own, or the one it shares.
  sim::Shared<std::vector<int32_t>>& Cache() { return cache_home ? cache_home->own_cache : own_cache; }
  // The state whose restore_copies this tuner's hooks read and write.
  TunerState& CopiesHome() { return copies_home ? *copies_home : *this; }
};

// The finding a run's scheduler failure stands for (deadlock, step bound, divergence, an
// internal error), or nothing; shared by both engines.
std::optional<Finding> SchedulerFinding(const sim::RunResult& run);

// A thrown Python exception inside a model: ends the calling thread's task.
struct PyError {
  Finding finding;
};

class TunerWorld;

// One tuner's `run`, step by step. Implementations live in replay/model/src/models/, one per file;
// they are stateless and shared by every run (safe to call from any run's fibers).
class TunerModel {
 public:
  virtual ~TunerModel() = default;
  // Executes call `call` (= c) of thread `thread` against `w`. Throws PyError for an
  // exception the real code would raise.
  virtual void Run(TunerWorld& w, uint32_t thread, const TunerCall& c, uint32_t call) const = 0;
  // Per Python version, the windows the GIL makes atomic (tuner_world_gil.h); none for a
  // tuner that is not Python code.
  virtual std::span<const GilTable> GilTables() const { return {}; }
};

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

class TunerWorld {
 public:
  // `prior`: the trial timeline the virtual GPU counts contention against (or null).
  TunerWorld(sim::Scheduler& s, const Program& p, const ReplayOptions& o, uint32_t reps,
             const TunerModel& model, std::vector<uint64_t>* anchors,
             const TrialTimeline* prior = nullptr);

  // Spawns the run's fibers: one per recorded thread, then the fix's prewarm thread and one
  // owner per GPU (prewarm, owner-thread). Call once, before the scheduler runs.
  void Spawn();
  // After the scheduler has run: the findings, duplicate tunings, makespan.
  void Finalize(ReplayResult& r);

  // --- For the models. ---
  sim::Scheduler& sched() { return s_; }
  const Program& program() const { return p_; }
  // do_bench repetitions to execute of a config recorded with `recorded` (--reps, 0: all).
  uint32_t Reps(uint32_t recorded) const;
  Nanos launch_cpu_ns() const { return o_.launch_cpu_ns; }

  // The state of the tuner object `c` runs on (per thread under per-thread-tuner).
  TunerState& StateFor(uint32_t thread, const TunerCall& c);
  // The state of tuner index `ti` for fiber `owner` (UINT32_MAX: the one shared object), with
  // the homes the recording shares (StateFor's work; also for hooks' owners with no call).
  TunerState& StateAt(size_t ti, uint32_t owner);
  // The id of `key` among the keys recorded for `c`'s tuner; KeyName is the reverse.
  int32_t KeyId(const TunerCall& c, const std::string& key) const;
  const std::string& KeyName(const TunerCall& c, int32_t key) const;

  // The fix-aware fields: shared, or the calling thread's own copy.
  Nargs ReadNargs(TunerState& st, const char* label);
  void WriteNargs(TunerState& st, Nargs v, const char* label);
  Copies ReadCopies(TunerState& st, const char* label);
  void WriteCopies(TunerState& st, Copies v, const char* label);

  // The lock the fix puts around `r`, or null.
  sim::Mutex* LockFor(Region r) const { return region_locks_[static_cast<size_t>(r)]; }
  // A cache miss of `key`: runs `benchmark` (returns the best config), or under
  // lock-key-future, runs it in the first thread to miss the key while the others wait.
  template <typename F>
  void TuneMiss(const TunerCall& c, TunerState& st, int32_t key, F&& benchmark);
  // Counts a tuning of `key` (duplicates are reported) and the GPU time it took.
  void CountTuning(const TunerCall& c, int32_t key, uint32_t thread, Nanos gpu);

  // The recorded order: the model reached a transition of `kind` (of `config`, or any when
  // negative; of `field` for field reads and writes).
  void Anchor(uint32_t thread, traces::TunerKind kind, int32_t config,
              traces::TunerField field = traces::TunerField::kNone);
  // Before a write / read of a shared field: anchors on the recorded write / read when the
  // probe recorded them (RERACE_PROBE_FIELDS), so the recorded order places every one.
  void AnchorWrite(uint32_t thread, traces::TunerField field);
  void AnchorRead(uint32_t thread, traces::TunerField field);

  // Findings: a silent corruption (the first of each code per thread), or a raised exception.
  void Silent(uint32_t thread, std::string code, std::string words, std::string where,
              uint32_t other = UINT32_MAX, uint64_t other_step = UINT64_MAX);
  [[noreturn]] void Raise(uint32_t thread, std::string code, std::string type,
                          std::string message, std::string where, std::string words,
                          uint32_t other = UINT32_MAX, uint64_t other_step = UINT64_MAX);

  // The virtual GPU and CPU (virtual_gpu.h): a launch outside benchmarks (the final launch),
  // a synchronization, and one do_bench repetition of `config` (of `reps` executed): its
  // calibrated CPU time, its GPU work, the wait for it.
  void Launch(uint32_t device, uint64_t stream, Nanos duration);
  void Sync(uint32_t device, uint64_t stream, bool whole_device);
  void Trial(const TunerCall& c, size_t config, uint32_t reps);

 private:
  // The bodies of the run's fibers: a recorded thread, the prewarm thread, a GPU's owner.
  void RunThread(uint32_t t);
  void RunPrewarm();
  void RunOwner(uint32_t device);
  void Call(uint32_t thread, uint32_t call);
  // --order-from-timing: waits for the calls `call` comes after; marks a call ended.
  void WaitForEarlierCalls(uint32_t call);
  void EndCall(uint32_t call);
  // lock-key-event: the patch's run around the model's (tuner_world_event.cc).
  void CallWithKeyEvent(uint32_t thread, const TunerCall& c, uint32_t call);
  void AnchorOp(uint32_t thread, uint64_t seq);
  // --recorded: the recorded transitions a thread did not reach (it raised where the
  // recording went on).
  void CountUnreached(uint32_t thread);
  std::string ThreadName(uint32_t t) const;

  sim::Scheduler& s_;
  const Program& p_;
  const ReplayOptions& o_;
  const uint32_t reps_;
  const TunerModel& model_;
  // The fix, read once.
  const bool local_nargs_;
  const bool local_copies_;
  const bool per_key_future_;
  const bool per_key_event_;
  const bool per_thread_tuner_;
  const bool owner_thread_;
  const bool prewarm_;
  uint32_t prewarm_thread_ = UINT32_MAX;
  std::vector<sim::Mutex*> region_locks_;  // by Region

  std::vector<uint64_t>* anchors_;
  std::vector<size_t> cursor_;  // per thread: next recorded transition
  std::vector<bool> fields_recorded_;  // per thread: the recording has field writes
  std::vector<bool> reads_recorded_;   // per thread: the recording has field reads
  // The recording has hook marks (pre-hook, post-hook) in some thread. A tuner class that
  // installs its own hooks after Triton's __init__ (FLA's CachedAutotuner) replaces the
  // probe's wrappers, and its recording has none: the model's hooks then anchor on nothing.
  bool hooks_recorded_ = false;
  uint64_t left_recording_ = 0;

  std::vector<std::vector<std::string>> keys_;  // per tuner index: key strings
  std::map<uint64_t, size_t> tuner_index_;      // tuner identity → index
  // Per tuner index: its identity, its kernel's name, and the indices of the tuners whose cache
  // dict and restore_copies it uses (SIZE_MAX: its own; ShareRecorded). A hooks' owner that no
  // recorded call used gets an index past the called tuners'.
  std::vector<uint64_t> tokens_;
  std::vector<std::string> kernels_;
  std::vector<size_t> cache_home_;
  std::vector<size_t> copies_home_;
  size_t called_tuners_ = 0;
  void ShareRecorded();
  std::map<std::pair<size_t, uint32_t>, std::unique_ptr<TunerState>> states_;  // (tuner, owner)
  std::map<size_t, std::unique_ptr<sim::Shared<std::vector<Owned>>>> disks_;  // tuner → disk
  std::map<std::string, std::unique_ptr<sim::Mutex>> fix_locks_;
  std::map<uint64_t, std::unique_ptr<sim::Mutex>> recorded_locks_;
  // --order-from-timing (Program::call_after): per call, a promise its end fulfils, and
  // whether it was; empty without an order.
  std::vector<sim::Promise<int>> call_done_;
  std::vector<bool> call_ended_;
  VirtualGpu gpu_;

  std::vector<Finding> findings_;
  std::map<std::pair<size_t, int32_t>, std::vector<std::pair<uint32_t, Nanos>>> tunings_;

  // owner-thread: one queue per device.
  struct Request {
    uint32_t thread;
    uint32_t call;
    std::unique_ptr<sim::Promise<int>> done;
  };
  struct Queue {
    Queue(sim::Scheduler& s, const std::string& name);
    sim::Mutex m;
    sim::CondVar cv;
    std::vector<Request*> pending;
    uint32_t clients = 0;
  };
  std::map<uint32_t, std::unique_ptr<Queue>> queues_;
};

template <typename F>
void TunerWorld::TuneMiss(const TunerCall& c, TunerState& st, int32_t key, F&& benchmark) {
  if (!per_key_future_) {
    benchmark();
    return;
  }
  // lock-key-future: the first thread to miss a key tunes it; the others wait for it.
  bool owner = false;
  st.key_lock.Lock("per-key future lock");
  auto& slot = st.future_of[static_cast<size_t>(key)];
  if (!slot) {
    st.futures[static_cast<size_t>(key)] =
        std::make_unique<sim::Promise<int32_t>>(s_, c.kernel + " key future");
    slot = st.futures[static_cast<size_t>(key)]->GetFuture();
    owner = true;
  }
  sim::Future<int32_t> f = *slot;
  st.key_lock.Unlock("per-key future lock");
  if (owner) {
    std::optional<PyError> err;
    int32_t best = -1;
    try {
      best = benchmark();
    } catch (PyError& e) {
      err = std::move(e);
    }
    st.futures[static_cast<size_t>(key)]->SetValue(best, "per-key future: set");
    if (err) throw PyError(std::move(*err));
  } else {
    f.Get("per-key future: wait");
  }
}

}  // namespace rerace::replay::detail
