// replay/src/models/triton_3_8.cc: Triton 3.8's Autotuner (triton/runtime/autotuner.py of the
// 3.8.0 wheel). Model "triton-3.8"; chosen automatically for recordings of Triton 3.8.x.
//
// What differs from 3.6 for the steps rerace models:
// - the post-hook iterates `self.restore_copies.items()` (line 78): one read of the dict, and a
//   copy another thread's post-hook reset to {} is skipped: no KeyError, the in-parameter keeps
//   what the benchmark wrote (`missed-restore`), or another thread's copy is restored
//   (`wrong-restore`, line 79);
// - the pre-hook clones only in-parameters that are not None (line 64; a recording's are not);
// - every line moved (run 218-281, _bench 148, benchmark() 242-246).
// Not modelled (the recording does not carry them): `prune_configs` leaving one config, which
// skips benchmarking (line 232; the recorded configs are the benchmarked ones), and the
// autotuning listener reading configs_timings and bench_time (line 255, off unless set).
#include <fmt/format.h>

#include "triton_3_6.h"

namespace rerace::replay::detail {

namespace {
const Labels kTriton38Labels = {
    .kRunSetNargs = "autotuner.py:218 Autotuner.run: self.nargs = dict(zip(self.arg_names, args))",
    .kRunReadNargs = "autotuner.py:221 Autotuner.run: all_args = {**self.nargs, **kwargs}",
    .kRunCacheCheck = "autotuner.py:228 Autotuner.run: if key not in self.cache",
    .kBenchNargs = "autotuner.py:148 Autotuner._bench: full_nargs = {**self.nargs, **current}",
    .kPreHookWrite = "autotuner.py:64 _pre_hook: self.restore_copies = {name: kwargs[name].clone() "
                     "... if kwargs[name] is not None}",
    .kPostHookRead = "autotuner.py:78 _post_hook: for name, value in self.restore_copies.items()",
    .kPostHookReset = "autotuner.py:80 _post_hook: self.restore_copies = {}",
    .kBenchTime = "autotuner.py:242 benchmark: self.bench_time = bench_end - bench_start",
    .kCacheWrite = "autotuner.py:243 benchmark: self.cache[key] = builtins.min(timings, key=timings.get)",
    .kBenchmarkNargs = "autotuner.py:244 benchmark: full_nargs = {**self.nargs, **kwargs, "
                       "**self.cache[key].all_kwargs()}",
    .kConfigsTimings = "autotuner.py:246 benchmark: self.configs_timings = timings",
    .kRunCacheRead = "autotuner.py:266 Autotuner.run: config = self.cache[key]",
    .kBestConfig = "autotuner.py:269 Autotuner.run: self.best_config = config",
    .kRunClearNargs = "autotuner.py:281 Autotuner.run: self.nargs = None",
    .kWherePostHook = "triton/runtime/autotuner.py:79 in _post_hook",
    .kWhereBench = "triton/runtime/autotuner.py:148 in _bench",
    .kWhereRun = "triton/runtime/autotuner.py:221 in run",
    .kWhereBenchmark = "triton/runtime/autotuner.py:244 in benchmark",
    .key_error_type = "KeyError",  // never raised: the hook skips a missing copy
    .none_error_type = "TypeError",
    .key_error = "'{name}'",
    .none_in_run = "'NoneType' object is not a mapping",
    .none_in_benchmark = "'NoneType' object is not a mapping",
    .none_in_bench = "'NoneType' object is not a mapping",
    .where_reset = "triton/runtime/autotuner.py:62 in _pre_hook",
};
constexpr const char* kWhereMissed = "triton/runtime/autotuner.py:78 in _post_hook";

class Triton38Model final : public Triton36Model {
 public:
  Triton38Model() : Triton36Model(kTriton38Labels) {}

 protected:
  void PostHook(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
                size_t config, const Nargs& n) const override {
    // One read: the loop iterates the dict it found.
    w.AnchorRead(thread, traces::TunerField::kRestoreCopies);
    const Copies rc = w.ReadCopies(st, L_.kPostHookRead);
    for (size_t i = 0; i < c.restore_value.size(); ++i) {
      const std::string& name = c.arg_names[c.restore_value[i]];
      if ((rc.present >> i & 1) == 0) {
        w.Silent(thread, "missed-restore",
                 fmt::format("thread {}'s post-hook found no saved copy of {} (thread {}'s "
                             "post-hook reset restore_copies to {{}} at step {}) and skipped it: "
                             "{} keeps what thread {}'s benchmark of config {} wrote",
                             thread, name, rc.writer, rc.step, name, thread, config),
                 kWhereMissed, rc.writer, rc.step);
        continue;
      }
      if (rc.owner != n.thread) {
        w.Silent(thread, "wrong-restore",
                 fmt::format("thread {} restored thread {}'s saved copy of {} (cloned by thread "
                             "{}'s pre-hook at step {}) into {} tensor",
                             thread, rc.owner, name, rc.writer, rc.step,
                             n.thread == thread ? std::string("its own")
                                                : fmt::format("thread {}'s", n.thread)),
                 L_.kWherePostHook, rc.writer, rc.step);
      }
    }
  }
};
}  // namespace

const TunerModel& Triton38() {
  static const Triton38Model model;
  return model;
}

}  // namespace rerace::replay::detail
