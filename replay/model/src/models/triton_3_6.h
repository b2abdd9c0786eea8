// replay/model/src/models/triton_3_6.h: Triton 3.6's Autotuner as a tuner model (private to replay).
//
// Triton36Model follows triton/runtime/autotuner.py of the 3.6.0 wheel (= 3.7.1): `run`, `_bench`,
// `benchmark()`, the default pre and post hooks (`reset_to_zero`, `restore_value`). Its steps
// are named by a Labels table, so a tuner with the same steps and other names (rerace's native
// C++ autotuner) is this model with another table. Models of tuners built on it (FLA's
// CachedAutotuner calls `super().run()`; a later release changes a hook) derive from it and
// override what differs: `Run` around `RunBody`, or `PostHook`.
#pragma once

#include <optional>
#include <string>

#include "rerace/replay/model/tuner_world.h"

namespace rerace::replay::detail {

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
  const char* where_reset;  // the reset-only pre-hook that zeroes reset_to_zero
  // How the errors are named: Triton's words (every release's, from `{**self.nargs, ...}` on
  // None and `self.restore_copies[name]` on a missing key) unless a table says otherwise.
  const char* key_error_type = "KeyError";   // a missing in-parameter copy
  const char* none_error_type = "TypeError";  // nargs is None
  const char* key_error = "'{name}'";  // message; {name} / {index}: the missing in-parameter
  // Messages of nargs-none at the key, after benchmark(), and in _bench ({config}).
  const char* none_in_run = "'NoneType' object is not a mapping";
  const char* none_in_benchmark = "'NoneType' object is not a mapping";
  const char* none_in_bench = "'NoneType' object is not a mapping";
  // Whether the default pre-hook writes `self.restore_copies` when there is nothing to restore
  // (reset_to_zero only): Triton's `_pre_hook` (3.2 to 3.9) and FLA's None-safe one are defined
  // when reset_to_zero or restore_value is non-empty, and every call with reset_only=False
  // assigns `self.restore_copies = {name: ... for name in self.restore_value}`, an empty dict
  // when restore_value is empty: a write of the shared field all the same. rerace's native
  // tuner writes no copies then.
  bool pre_hook_writes_empty_copies = true;
};

// Triton 3.6's own table (autotuner.py of the 3.6.0 wheel), and its GIL windows.
const Labels& Triton36Labels();
std::span<const GilTable> Triton36Gil();

// What torch raises when the post-hook copies restore_value entry `i` of call `from_call`'s
// tensors into call `into_call`'s (`kwargs[name].copy_(saved)`: the saved copy broadcast to the
// destination), from the shapes the probe recorded; nothing when it broadcasts or a shape was
// not recorded. "The size of tensor a (512) must match the size of tensor b (1024) at
// non-singleton dimension 1", as ATen's infer_size words it.
std::optional<std::string> CopyError(const Program& p, int32_t from_call, int32_t into_call,
                                     size_t i);

class Triton36Model : public TunerModel {
 public:
  // `gil`: the model's GIL windows per Python version (none: every access a step).
  explicit Triton36Model(const Labels& labels, std::span<const GilTable> gil = {})
      : L_(labels), gil_(gil) {}
  void Run(TunerWorld& w, uint32_t thread, const TunerCall& c, uint32_t call) const override;
  std::span<const GilTable> GilTables() const override { return gil_; }

 protected:
  // Autotuner.run from `self.nargs = ...` to `self.nargs = None`, on state `st`.
  void RunBody(TunerWorld& w, uint32_t thread, const TunerCall& c, uint32_t call,
               TunerState& st) const;
  // A miss of `key` in self.cache: Benchmark here; a release with a disk cache checks it first
  // (disk_cache.h). Returns the best config.
  virtual int32_t Miss(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
                       int32_t key) const {
    return Benchmark(w, thread, c, st, key);
  }
  // The benchmark() closure for `key`: every config's _bench, the cache update. Returns the
  // best config.
  int32_t Benchmark(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
                    int32_t key) const;
  // One config's _bench: do_bench's repetitions, each with its pre and post hook.
  void Bench(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
             size_t config) const;
  // The restore_value post-hook of one repetition of `config`; `n` is the nargs _bench read.
  // 3.6: one read of self.restore_copies per in-parameter, KeyError on a missing one.
  virtual void PostHook(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
                        size_t config, const Nargs& n) const;
  // The post-hook copied `rc`, another call's saved copy of restore_value entry `i`, into this
  // call's tensor (`n`: the nargs _bench read): torch raises when the shapes do not broadcast
  // (restore-shape-mismatch), and the restore is wrong either way (wrong-restore). Every
  // release's hook ends in this copy; they differ in how they find the copy.
  void RestoredAnothersCopy(TunerWorld& w, uint32_t thread, const TunerCall& c, const Copies& rc,
                            const Nargs& n, size_t i) const;

  const Labels& L_;
  const std::span<const GilTable> gil_;
};

}  // namespace rerace::replay::detail
