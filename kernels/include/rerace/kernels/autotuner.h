// rerace/kernels/autotuner.h: a native C++ autotuner with Triton's design, shared state included.
//
// Overview. `Autotuner` tunes one kernel (a `KernelSpec`: its configs, argument names, key,
// restore_value and reset_to_zero) the way triton/runtime/autotuner.py (3.6) does, on purpose
// keeping the per-call state on the tuner object, where every thread calling it shares it:
//
//   nargs            the current call's arguments (set at the start of Run, read while tuning,
//                    cleared at the end)
//   cache            key → best config index
//   restore_copies   saved copies of the in-parameters a benchmarked config overwrites, keyed
//                    by in-parameter index; the pre-hook fills it, the post-hook copies them
//                    back and resets it to {}
//   best_config, configs_timings, bench_time
//
// so concurrent cold-cache calls fail the way Triton's do: a post-hook that finds its saved
// copy gone (another thread's post-hook reset the dict) throws
// `TunerError: In-parameter input 0 is not in the cache`. Each access to a shared field is atomic
// (under one mutex, as the GIL makes each Python attribute access atomic), never more: the
// interleavings between accesses are the program's.
//
// Every transition is announced to an `Announcer` in the recorder's mark grammar
// (recorder/grammar.h): call-begin/end, bench-begin/end, the hooks, the final launch, errors,
// and every read and write of nargs and restore_copies (writes of best_config and cache too),
// each inside the field's critical section, so that a recording orders them as they happened.
// With the recorder loaded, `NvtxAnnouncer` (kernels/cuda.h) sends them as NVTX marks.
//
// A `TunerFix` (the names of replay's fixes) changes the tuner at run time, so a recorded run
// can be checked against rerace's model of the same fix.
//
// Work on the device goes through a `Backend` (CUDA: kernels/cuda.h; CPU: tests), so the
// tuner's logic needs no GPU.
//
// Threads: Run may be called from any thread (that is the point). The Backend and Announcer
// must outlive the tuner and be safe from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/traces/trace.h"

namespace rerace::kernels {

using Stream = void*;  // cudaStream_t on the GPU; opaque to the tuner

// A kernel argument: a tensor (data != nullptr: device memory of `bytes`) or an integer.
struct Arg {
  void* data = nullptr;
  size_t bytes = 0;
  int64_t value = 0;
};

// One call: the arguments, and where it runs.
struct Call {
  std::vector<Arg> args;
  int device = 0;
  Stream stream = nullptr;
};

struct KernelSpec {
  std::string name;                     // "l2norm_fwd"
  std::vector<std::string> arg_names;   // one per Arg
  std::vector<std::string> configs;     // "BLOCK=128 ROWS=2"
  std::vector<uint32_t> key;            // argument indices whose values form the key
  std::vector<uint32_t> restore_value;  // tensor arguments saved before and restored after a trial
  std::vector<uint32_t> reset_to_zero;  // tensor arguments zeroed before a trial
  // Launches config `config` with `call.args` on `call.stream`. Called from any thread.
  std::function<void(size_t config, const Call& call)> launch;
};

// What the tuner needs from a device. Safe to call from any thread.
class Backend {
 public:
  virtual ~Backend() = default;
  // A copy of `t`, made on `s` after the work already queued there (the pre-hook's clone).
  virtual Arg Clone(const Arg& t, int device, Stream s) = 0;
  // Copies `src` into `dst` on `s` (the post-hook's restore).
  virtual void CopyInto(const Arg& dst, const Arg& src, Stream s) = 0;
  // Frees a clone once the work on `s` that uses it is done.
  virtual void Free(const Arg& t, int device) = 0;
  virtual void Zero(const Arg& t, Stream s) = 0;
  // Runs `launch` between two timing points on `s`, waits for it, returns the milliseconds.
  virtual double Time(const std::function<void()>& launch, int device, Stream s) = 0;
};

// Where the tuner's marks go. Safe to call from any thread.
class Announcer {
 public:
  virtual ~Announcer() = default;
  virtual bool Enabled() const = 0;
  virtual void Mark(const std::string& text) = 0;
};

// An Announcer that drops everything.
class Silent final : public Announcer {
 public:
  bool Enabled() const override { return false; }
  void Mark(const std::string&) override {}
};

// The named fixes (rerace/base/named_fix.h, the table replay/fix.h parses too), as the native
// tuner implements them:
//   none, lock-run (one process-wide lock around Run, announced as a lock), tls-nargs,
//   call-local (nargs and restore_copies per call), lock-key-future, per-thread-tuner and
//   prewarm (the workload's: a tuner per thread; every key tuned before the threads start),
//   owner-thread (one thread per device runs every tuner call for it: `Owners`).
// Composed with '+'.
struct TunerFix {
  std::string name = "none";
  bool lock_run = false;
  bool tls_nargs = false;
  bool call_local = false;
  bool key_future = false;
  bool per_thread_tuner = false;
  bool prewarm = false;
  bool owner_thread = false;
};
// Unknown names: an error listing the known ones (exit 64).
[[nodiscard]] Result<TunerFix> ParseTunerFix(const std::string& text);
const std::vector<std::string>& TunerFixNames();

// What a failing tuner call throws (as Triton raises KeyError / TypeError).
class TunerError : public std::runtime_error {
 public:
  TunerError(std::string message, std::string where)
      : std::runtime_error(message), where_(std::move(where)) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

// The error type and places as the marks (and rerace's native model) name them.
inline constexpr const char* kTunerErrorType = "rerace::kernels::TunerError";
inline constexpr const char* kWherePostHook = "kernels/src/autotuner.cc Autotuner::PostHook";
inline constexpr const char* kWhereRun = "kernels/src/autotuner.cc Autotuner::Run";
inline constexpr const char* kWhereBench = "kernels/src/autotuner.cc Autotuner::Bench";
inline constexpr const char* kWhereBenchmark = "kernels/src/autotuner.cc Autotuner::Benchmark";
inline constexpr const char* kTunerClass = "rerace.kernels.Autotuner";

// One thread per device that runs the tuner calls sent to it (fix owner-thread). Owned by the
// workload; outlives every tuner that uses it. Submit is safe from any thread.
class Owners {
 public:
  Owners() = default;
  ~Owners();
  Owners(const Owners&) = delete;
  Owners& operator=(const Owners&) = delete;
  // Runs `work` on `device`'s owner thread and waits; rethrows what it threw.
  void Submit(int device, const std::function<void()>& work);

 private:
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::packaged_task<void()>> work;
    bool stop = false;
    std::thread thread;
  };
  std::mutex mu_;
  std::map<int, std::unique_ptr<Queue>> queues_;  // guarded by mu_
};

class Autotuner {
 public:
  struct Options {
    TunerFix fix;
    uint32_t reps = 5;           // timed repetitions per config (do_bench's)
    Owners* owners = nullptr;    // required with fix owner-thread
  };
  // REQUIRES: spec.configs not empty; restore/reset/key indices < arg_names.size().
  Autotuner(KernelSpec spec, Backend& backend, Announcer& announcer, Options options);
  ~Autotuner();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  // Tunes (if the key is new) and launches. Throws TunerError as Triton would raise.
  // Safe from any thread.
  void Run(const Call& call);

  const KernelSpec& spec() const { return spec_; }
  // The key of `call` as Triton prints it: "(4096, 1024)".
  std::string KeyOf(const Call& call) const;
  // The tuned config of `key`, or -1. Safe from any thread.
  int CachedConfig(const std::string& key);

 private:
  struct Copies;  // restore_copies: clones by in-parameter index
  using Nargs = std::shared_ptr<const Call>;
  void RunHere(const Call& call);
  int Benchmark(const Call& call, const std::string& key);
  double Bench(const Call& call, size_t config, uint32_t* reps_done);
  void PreHook(const Nargs& n, const Call& call, size_t config);
  void PostHook(const Nargs& n, const Call& call, size_t config);
  Nargs ReadNargs();
  void WriteNargs(Nargs v);
  std::shared_ptr<Copies> ReadCopies();
  void WriteCopies(std::shared_ptr<Copies> v);
  void Mark(traces::TunerKind kind, int config = -1, const std::string& key = "",
            traces::TunerField field = traces::TunerField::kNone, std::vector<double> timings = {},
            uint32_t reps = 0);
  void MarkError(const std::string& key, const TunerError& e);
  void MarkLock(const char* kind);

  const KernelSpec spec_;
  Backend& backend_;
  Announcer& announce_;
  const Options options_;
  // The shared fields, each access under mu_ (the GIL of this model).
  std::mutex mu_;
  Nargs nargs_;
  std::map<std::string, int> cache_;
  std::shared_ptr<Copies> restore_copies_;
  int best_config_ = -1;
  std::vector<double> configs_timings_;
  double bench_time_ = 0;
  // lock-key-future: one future per key being tuned, under key_mu_.
  std::mutex key_mu_;
  std::map<std::string, std::shared_future<int>> key_futures_;
};

}  // namespace rerace::kernels
