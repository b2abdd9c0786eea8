// replay/model/src/models/native.cc: rerace::kernels::Autotuner (kernels/src/autotuner.cc), the same
// steps as Triton 3.6's Autotuner with C++ names and messages. Model "native".
#include "triton_3_6.h"

namespace rerace::replay::detail {

namespace {
const Labels kNativeLabels = {
    .kRunSetNargs = "autotuner.cc Autotuner::RunHere: nargs_ = call (autotuner.py:213)",
    .kRunReadNargs = "autotuner.cc Autotuner::RunHere: key = KeyOf(*ReadNargs()) (autotuner.py:216)",
    .kRunCacheCheck = "autotuner.cc Autotuner::RunHere: CachedConfig(key) < 0 (autotuner.py:223)",
    .kBenchNargs = "autotuner.cc Autotuner::Bench: n = ReadNargs() (autotuner.py:143)",
    .kPreHookWrite = "autotuner.cc Autotuner::PreHook: restore_copies_ = clones (autotuner.py:63)",
    .kPostHookRead = "autotuner.cc Autotuner::PostHook: CopyInto(arg, restore_copies_[i]) (autotuner.py:74)",
    .kPostHookReset = "autotuner.cc Autotuner::PostHook: restore_copies_ = {} (autotuner.py:75)",
    .kBenchTime = "autotuner.cc Autotuner::Benchmark: bench_time_ = ... (autotuner.py:231)",
    .kCacheWrite = "autotuner.cc Autotuner::Benchmark: cache_[key] = best (autotuner.py:232)",
    .kBenchmarkNargs = "autotuner.cc Autotuner::Benchmark: n = ReadNargs() (autotuner.py:233)",
    .kConfigsTimings = "autotuner.cc Autotuner::Benchmark: configs_timings_ = timings (autotuner.py:235)",
    .kRunCacheRead = "autotuner.cc Autotuner::RunHere: config = cache_[key] (autotuner.py:242)",
    .kBestConfig = "autotuner.cc Autotuner::RunHere: best_config_ = config (autotuner.py:245)",
    .kRunClearNargs = "autotuner.cc Autotuner::RunHere: nargs_ = nullptr (autotuner.py:257)",
    .kWherePostHook = "kernels/src/autotuner.cc Autotuner::PostHook",
    .kWhereBench = "kernels/src/autotuner.cc Autotuner::Bench",
    .kWhereRun = "kernels/src/autotuner.cc Autotuner::Run",
    .kWhereBenchmark = "kernels/src/autotuner.cc Autotuner::Benchmark",
    .where_reset = "kernels/src/autotuner.cc Autotuner::Benchmark",
    .key_error_type = "rerace::kernels::TunerError",
    .none_error_type = "rerace::kernels::TunerError",
    .key_error = "In-parameter input {index} is not in the cache",
    .none_in_run = "nargs is null while computing the key",
    .none_in_benchmark = "nargs is null after benchmarking",
    .none_in_bench = "nargs is null while benchmarking config {config}",
    .pre_hook_writes_empty_copies = false,  // kernels/src/autotuner.cc copies only what it restores
};
}  // namespace

const TunerModel& Native() {
  static const Triton36Model model(kNativeLabels, {});  // C++ threads: no GIL
  return model;
}

}  // namespace rerace::replay::detail
