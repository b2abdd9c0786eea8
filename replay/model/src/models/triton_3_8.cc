// replay/model/src/models/triton_3_8.cc: Triton 3.8's Autotuner (triton/runtime/autotuner.py of the
// 3.8.0 wheel). Model "triton-3.8"; chosen automatically for recordings of Triton 3.8.x.
//
// What differs from 3.6 for the steps rerace models:
// - the post-hook iterates `self.restore_copies.items()` (line 78; items_post_hook.h): no
//   KeyError, a silent missed restore, or another thread's copy restored (line 79);
// - the pre-hook clones only in-parameters that are not None (line 64; a recording's are not);
// - every line moved (run 218-281, _bench 148, benchmark() 242-246).
// Not modelled (the recording does not carry them): `prune_configs` leaving one config, which
// skips benchmarking (line 232; the recorded configs are the benchmarked ones), and the
// autotuning listener reading configs_timings and bench_time (line 255, off unless set).
//
// The steps of the release (tools/scripts/step-table.py emits them from the wheel and checks
// this block and every label's file:line against it; docs/MODEL.md):
// step-table: triton 3.8.0 triton/runtime/autotuner.py Autotuner
//   __init__:37 W cache
//   __init__._pre_hook:64 W restore_copies
//   __init__._post_hook:78 R restore_copies
//   __init__._post_hook:80 W restore_copies
//   _bench:148 R nargs
//   check_disk_cache:203 M cache
//   check_disk_cache:204 W configs_timings
//   check_disk_cache:213 R configs_timings
//   run:218 W nargs
//   run:221 R nargs
//   run:228 R cache
//   run:234 M cache
//   run:260 R cache
//   run:261 R configs_timings
//   run:262 R bench_time
//   run:266 R cache
//   run:269 W best_config
//   run:272 R bench_time
//   run:272 R best_config
//   run:274 R nargs
//   run:281 W nargs
//   run.benchmark:242 W bench_time
//   run.benchmark:243 M cache
//   run.benchmark:244 R nargs
//   run.benchmark:244 R cache
//   run.benchmark:246 W configs_timings
//   prune_configs:287 R nargs
//   prune_configs:302 R nargs
//   warmup:312 W nargs
//   warmup:320 W nargs
// end step-table
#include "disk_cache.h"
#include "items_post_hook.h"

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
    .where_reset = "triton/runtime/autotuner.py:62 in _pre_hook",
};

// The windows the GIL makes atomic, per CPython version, from the bytecode of the 3.8.0 wheel's
// autotuner.py (tools/scripts/gil-regions.py; the ctest gil_regions_triton_3_8 checks them).
// BEGIN GIL REGIONS (tools/scripts/gil-regions.py triton_3_8; do not edit by hand)
constexpr GilWindow kTriton38Gil311[] = {
    {.from = 218, .to = 221, .warmup = 7},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 218, .to = 269, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 221, .to = 228, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 204
    {.from = 228, .to = 266, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 516
    {.from = 266, .to = 269, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 269, .to = 281, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1376
    {.from = 242, .to = 243, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 174
    {.from = 243, .to = 244, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 244, .to = 246, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 272
    {.from = 78, .to = 78, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 78, .to = 80, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 42
};
constexpr GilWindow kTriton38Gil312[] = {
    {.from = 218, .to = 221, .warmup = 1},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 218, .to = 269, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 221, .to = 228, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 192
    {.from = 228, .to = 266, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 564
    {.from = 266, .to = 269, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 269, .to = 281, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1514
    {.from = 242, .to = 243, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 228
    {.from = 243, .to = 244, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 244, .to = 246, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 342
    {.from = 78, .to = 78, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 78, .to = 80, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 46
};
constexpr GilTable kTriton38Gil[] = {
    {.python = "3.11", .windows = kTriton38Gil311},
    {.python = "3.12", .windows = kTriton38Gil312},
};
// END GIL REGIONS
constexpr const char* kWhereMissed = "triton/runtime/autotuner.py:78 in _post_hook";
}  // namespace

const DiskLabels kTriton38Disk = {
    .kGetFile = "autotuner.py:198 check_disk_cache: path = cache.get_file(file_name)",
    .kHitCache = "autotuner.py:203 check_disk_cache: self.cache[tuning_key] = builtins.min(timings, "
                 "key=timings.get)",
    .kHitTimings = "autotuner.py:204 check_disk_cache: self.configs_timings = timings",
    .kPutTimings = "autotuner.py:213 check_disk_cache: [(config.__dict__, timings) for config, "
                   "timings in self.configs_timings.items() if not config.pre_hook]",
    .kPut = "autotuner.py:208 check_disk_cache: cache.put(",
    .kWherePut = "triton/runtime/autotuner.py:213 in check_disk_cache",
    .kWhereGetFile = "triton/runtime/autotuner.py:203 in check_disk_cache",
};

const TunerModel& Triton38() {
  // With the recorded cache_results, check_disk_cache (disk_cache.h) as 3.4's.
  static const WithDiskCache<ItemsPostHookModel> model(kTriton38Disk, kTriton38Labels, kWhereMissed,
                                                        kTriton38Gil);
  return model;
}

}  // namespace rerace::replay::detail
