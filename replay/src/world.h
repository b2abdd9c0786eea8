// replay/src/world.h: the simulated world of one replay run (private to replay).
//
// The World owns the shared state the tuner models act on (one TunerState per tuner object,
// or per thread and tuner under per-thread-tuner), the locks a fix or the recording names,
// the virtual GPU, and the findings. It is built before the run, so every shared object is
// registered with the scheduler in the same order every time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rerace/replay/replay.h"
#include "rerace/sim/sync.h"

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
  sim::Shared<std::vector<int32_t>> cache;  // by key id: config, or -1
  sim::Shared<Copies> restore_copies;
  sim::ThreadLocal<Copies> restore_copies_local;
  sim::Shared<Owned> best_config;
  sim::Shared<Owned> configs_timings;
  sim::Shared<Owned> bench_time;
  sim::Shared<std::vector<int32_t>> fla_cache;  // FLA's own config cache, by key id
  // lock-key-future: the futures by key id, guarded by key_lock.
  sim::Mutex key_lock;
  std::vector<std::unique_ptr<sim::Promise<int32_t>>> futures;
  std::vector<std::optional<sim::Future<int32_t>>> future_of;
};

// The source lines a model's scheduling points stand for, and how its errors are named.
struct Labels {
  const char* kRunSetNargs;
  const char* kRunReadNargs;
  const char* kRunCacheCheck;
  const char* kBenchNargs;
  const char* kPreHookWrite;
  const char* kPostHookRead;
  const char* kPostHookReset;
  const char* kBenchTime;
  const char* kCacheWrite;
  const char* kBenchmarkNargs;
  const char* kConfigsTimings;
  const char* kRunCacheRead;
  const char* kBestConfig;
  const char* kRunClearNargs;
  const char* kWherePostHook;
  const char* kWhereBench;
  const char* kWhereRun;
  const char* kWhereBenchmark;
  const char* key_error_type;   // a missing in-parameter copy
  const char* none_error_type;  // nargs is None
  const char* key_error;           // message; {name} / {index}: the missing in-parameter
  const char* none_in_run;         // messages of nargs-none at the key, after benchmark(),
  const char* none_in_benchmark;   // and in _bench ({config})
  const char* none_in_bench;
  const char* where_reset;         // the reset-only pre-hook that zeroes reset_to_zero
};

// A thrown Python exception inside a model: ends the calling thread's task.
struct PyError {
  Finding finding;
};

class World {
 public:
  // `model`: "triton", "fla" (FLA's CachedAutotuner over Triton's) or "native"
  // (rerace::kernels::Autotuner: Triton's steps with C++ names and messages).
  World(sim::Scheduler& s, const Program& p, const ReplayOptions& o, uint32_t reps,
        const std::string& model, std::vector<uint64_t>* anchors);

  // The body of replay thread `t`.
  void RunThread(uint32_t t);
  void RunPrewarm();
  void RunOwner(uint32_t device);
  void Finalize(ReplayResult& r);
  // --recorded: the recorded transitions a thread did not reach (it raised where the
  // recording went on).
  void CountUnreached(uint32_t thread);

  uint32_t prewarm_thread = UINT32_MAX;
  std::map<uint32_t, uint32_t> owner_thread;  // device → sim thread id

 private:
  TunerState& StateFor(uint32_t thread, const TunerCall& c);
  int32_t KeyId(const TunerCall& c, const std::string& key) const;
  void Call(uint32_t thread, uint32_t call);
  void TritonRun(uint32_t thread, const TunerCall& c, uint32_t call);
  int32_t Benchmark(uint32_t thread, const TunerCall& c, TunerState& st, int32_t key);
  void Bench(uint32_t thread, const TunerCall& c, TunerState& st, size_t config);
  Nargs ReadNargs(TunerState& st, const char* label);
  void WriteNargs(TunerState& st, Nargs v, const char* label);
  Copies ReadCopies(TunerState& st, const char* label);
  void WriteCopies(TunerState& st, Copies v, const char* label);
  sim::Mutex* LockFor(Region r);
  void Anchor(uint32_t thread, traces::TunerKind kind, int32_t config,
              traces::TunerField field = traces::TunerField::kNone);
  // Before a write of a shared field: anchors on the recorded write when the probe recorded
  // field writes (RERACE_PROBE_FIELDS), so the recorded order places every write.
  void AnchorWrite(uint32_t thread, traces::TunerField field);
  void AnchorRead(uint32_t thread, traces::TunerField field);
  void AnchorOp(uint32_t thread, uint64_t seq);
  void Silent(uint32_t thread, std::string code, std::string words, std::string where,
              uint32_t other = UINT32_MAX, uint64_t other_step = UINT64_MAX);
  [[noreturn]] void Raise(uint32_t thread, std::string code, std::string type,
                          std::string message, std::string where, std::string words,
                          uint32_t other = UINT32_MAX, uint64_t other_step = UINT64_MAX);
  void Launch(uint32_t device, uint64_t stream, Nanos duration);
  void Sync(uint32_t device, uint64_t stream, bool whole_device);
  std::string ThreadName(uint32_t t) const;

  sim::Scheduler& s_;
  const Program& p_;
  const ReplayOptions& o_;
  const uint32_t reps_;
  const bool fla_;
  const Labels& L_;
  std::vector<uint64_t>* anchors_;
  std::vector<size_t> cursor_;  // per thread: next recorded transition
  std::vector<bool> fields_recorded_;  // per thread: the recording has field writes
  std::vector<bool> reads_recorded_;   // per thread: the recording has field reads
  uint64_t left_recording_ = 0;

  std::vector<std::vector<std::string>> keys_;  // per tuner index: key strings
  std::map<uint64_t, size_t> tuner_index_;      // tuner identity → index
  std::map<std::pair<size_t, uint32_t>, std::unique_ptr<TunerState>> states_;  // (tuner, owner)
  std::map<std::string, std::unique_ptr<sim::Mutex>> fix_locks_;
  std::map<uint64_t, std::unique_ptr<sim::Mutex>> recorded_locks_;
  std::map<std::pair<uint32_t, uint64_t>, Nanos> streams_;  // (device, stream) → ready
  std::map<uint32_t, Nanos> devices_;                       // device → busy until

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

}  // namespace rerace::replay::detail
