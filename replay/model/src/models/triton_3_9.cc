// replay/model/src/models/triton_3_9.cc: Triton 3.9's Autotuner (triton/runtime/autotuner.py of the
// 3.9.0 wheel). Model "triton-3.9"; chosen automatically for recordings of Triton 3.9.x.
//
// 3.8's steps (the post-hook iterates restore_copies.items(): items_post_hook.h; the disk
// cache: disk_cache.h) at 3.9's lines, and what 3.9 adds:
// - `self.restore_copies = {}` in __init__ (line 62): a post-hook that runs before any pre-hook
//   iterates an empty dict (3.8 raised AttributeError there; the world's restore_copies starts
//   as {}, which is 3.9's state);
// - `key`, `reset_to_zero` and `restore_value` names are validated in __init__ (line 56,
//   ValueError): at decoration time, before any call a recording holds, so a 3.9 recording
//   passed it; the model does not repeat it.
// Not modelled, as for 3.8: one pruned config skipping benchmarking (line 247) and the
// autotuning listener (line 268).
//
// The steps of the release (tools/scripts/step-table.py emits them from the wheel and checks
// this block and every label's file:line against it; docs/MODEL.md):
// step-table: triton 3.9.0 triton/runtime/autotuner.py Autotuner
//   __init__:37 W cache
//   __init__:62 W restore_copies
//   __init__._pre_hook:79 W restore_copies
//   __init__._post_hook:93 R restore_copies
//   __init__._post_hook:95 W restore_copies
//   _bench:163 R nargs
//   check_disk_cache:218 M cache
//   check_disk_cache:219 W configs_timings
//   check_disk_cache:228 R configs_timings
//   run:233 W nargs
//   run:236 R nargs
//   run:243 R cache
//   run:249 M cache
//   run:275 R cache
//   run:276 R configs_timings
//   run:277 R bench_time
//   run:281 R cache
//   run:284 W best_config
//   run:287 R bench_time
//   run:287 R best_config
//   run:289 R nargs
//   run:296 W nargs
//   run.benchmark:257 W bench_time
//   run.benchmark:258 M cache
//   run.benchmark:259 R nargs
//   run.benchmark:259 R cache
//   run.benchmark:261 W configs_timings
//   prune_configs:302 R nargs
//   prune_configs:321 R nargs
//   warmup:331 W nargs
//   warmup:339 W nargs
// end step-table
#include "disk_cache.h"
#include "items_post_hook.h"

namespace rerace::replay::detail {

namespace {
const Labels kTriton39Labels = {
    .kRunSetNargs = "autotuner.py:233 Autotuner.run: self.nargs = dict(zip(self.arg_names, args))",
    .kRunReadNargs = "autotuner.py:236 Autotuner.run: all_args = {**self.nargs, **kwargs}",
    .kRunCacheCheck = "autotuner.py:243 Autotuner.run: if key not in self.cache",
    .kBenchNargs = "autotuner.py:163 Autotuner._bench: full_nargs = {**self.nargs, **current}",
    .kPreHookWrite = "autotuner.py:79 _pre_hook: self.restore_copies = {name: kwargs[name].clone() "
                     "... if kwargs[name] is not None}",
    .kPostHookRead = "autotuner.py:93 _post_hook: for name, value in self.restore_copies.items()",
    .kPostHookReset = "autotuner.py:95 _post_hook: self.restore_copies = {}",
    .kBenchTime = "autotuner.py:257 benchmark: self.bench_time = bench_end - bench_start",
    .kCacheWrite = "autotuner.py:258 benchmark: self.cache[key] = builtins.min(timings, key=timings.get)",
    .kBenchmarkNargs = "autotuner.py:259 benchmark: full_nargs = {**self.nargs, **kwargs, "
                       "**self.cache[key].all_kwargs()}",
    .kConfigsTimings = "autotuner.py:261 benchmark: self.configs_timings = timings",
    .kRunCacheRead = "autotuner.py:281 Autotuner.run: config = self.cache[key]",
    .kBestConfig = "autotuner.py:284 Autotuner.run: self.best_config = config",
    .kRunClearNargs = "autotuner.py:296 Autotuner.run: self.nargs = None",
    .kWherePostHook = "triton/runtime/autotuner.py:94 in _post_hook",
    .kWhereBench = "triton/runtime/autotuner.py:163 in _bench",
    .kWhereRun = "triton/runtime/autotuner.py:236 in run",
    .kWhereBenchmark = "triton/runtime/autotuner.py:259 in benchmark",
    .where_reset = "triton/runtime/autotuner.py:77 in _pre_hook",
};

// The windows the GIL makes atomic, per CPython version, from the bytecode of the 3.9.0 wheel's
// autotuner.py (tools/scripts/gil-regions.py; the ctest gil_regions_triton_3_9 checks them).
// BEGIN GIL REGIONS (tools/scripts/gil-regions.py triton_3_9; do not edit by hand)
constexpr GilWindow kTriton39Gil311[] = {
    {.from = 233, .to = 236, .warmup = 7},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 233, .to = 284, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 236, .to = 243, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 204
    {.from = 243, .to = 281, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 516
    {.from = 281, .to = 284, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 284, .to = 296, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1376
    {.from = 257, .to = 258, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 174
    {.from = 258, .to = 259, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 259, .to = 261, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 272
    {.from = 93, .to = 93, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 93, .to = 95, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 42
};
constexpr GilWindow kTriton39Gil312[] = {
    {.from = 233, .to = 236, .warmup = 1},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 233, .to = 284, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 236, .to = 243, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 192
    {.from = 243, .to = 281, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 564
    {.from = 281, .to = 284, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 284, .to = 296, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1514
    {.from = 257, .to = 258, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 228
    {.from = 258, .to = 259, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 259, .to = 261, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 342
    {.from = 93, .to = 93, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 93, .to = 95, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 46
};
constexpr GilTable kTriton39Gil[] = {
    {.python = "3.11", .windows = kTriton39Gil311},
    {.python = "3.12", .windows = kTriton39Gil312},
};
// END GIL REGIONS
const DiskLabels kTriton39Disk = {
    .kGetFile = "autotuner.py:213 check_disk_cache: path = cache.get_file(file_name)",
    .kHitCache = "autotuner.py:218 check_disk_cache: self.cache[tuning_key] = builtins.min(timings, "
                 "key=timings.get)",
    .kHitTimings = "autotuner.py:219 check_disk_cache: self.configs_timings = timings",
    .kPutTimings = "autotuner.py:228 check_disk_cache: [(config.__dict__, timings) for config, "
                   "timings in self.configs_timings.items() if not config.pre_hook]",
    .kPut = "autotuner.py:223 check_disk_cache: cache.put(",
    .kWherePut = "triton/runtime/autotuner.py:228 in check_disk_cache",
    .kWhereGetFile = "triton/runtime/autotuner.py:218 in check_disk_cache",
};
constexpr const char* kWhereMissed = "triton/runtime/autotuner.py:93 in _post_hook";
}  // namespace

const TunerModel& Triton39() {
  static const WithDiskCache<ItemsPostHookModel> model(kTriton39Disk, kTriton39Labels, kWhereMissed,
                                                        kTriton39Gil);
  return model;
}

}  // namespace rerace::replay::detail
