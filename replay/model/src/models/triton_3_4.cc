// replay/model/src/models/triton_3_4.cc: Triton 3.4's Autotuner (triton/runtime/autotuner.py of the
// 3.4.0 wheel). Model "triton-3.4"; chosen automatically for recordings of Triton 3.4.x.
//
// 3.6's steps at 3.4's lines, and the disk cache (disk_cache.h) that 3.4 introduced: with
// `cache_results` a miss goes through check_disk_cache (lines 166-209): a disk hit sets
// self.cache and self.configs_timings without benchmarking; a miss benchmarks, then writes the
// shared self.configs_timings to the file of its key (line 207), another key's when another
// thread's benchmark() set it in between. (3.4's `cache_results` is `cache_results or
// (knobs.autotuning.cache and not interpret)`, 3.6's `(... or ...) and not interpret`: the
// probe records the value, so the model follows the recording either way.)
//
// The steps of the release (tools/scripts/step-table.py emits them from the wheel and checks
// this block and every label's file:line against it; docs/MODEL.md):
// step-table: triton 3.4.0 triton/runtime/autotuner.py Autotuner
//   __init__:33 W cache
//   __init__._pre_hook:59 W restore_copies
//   __init__._post_hook:70 R restore_copies
//   __init__._post_hook:71 W restore_copies
//   _bench:139 R nargs
//   check_disk_cache:197 M cache
//   check_disk_cache:198 W configs_timings
//   check_disk_cache:207 R configs_timings
//   run:212 W nargs
//   run:215 R nargs
//   run:222 R cache
//   run:241 R cache
//   run:244 W best_config
//   run:247 R bench_time
//   run:247 R best_config
//   run:249 R nargs
//   run:256 W nargs
//   run.benchmark:230 W bench_time
//   run.benchmark:231 M cache
//   run.benchmark:232 R nargs
//   run.benchmark:232 R cache
//   run.benchmark:234 W configs_timings
//   prune_configs:262 R nargs
//   prune_configs:274 R nargs
//   warmup:284 W nargs
//   warmup:292 W nargs
// end step-table
#include "disk_cache.h"

namespace rerace::replay::detail {

namespace {
const Labels kTriton34Labels = {
    .kRunSetNargs = "autotuner.py:212 Autotuner.run: self.nargs = dict(zip(self.arg_names, args))",
    .kRunReadNargs = "autotuner.py:215 Autotuner.run: all_args = {**self.nargs, **kwargs}",
    .kRunCacheCheck = "autotuner.py:222 Autotuner.run: if key not in self.cache",
    .kBenchNargs = "autotuner.py:139 Autotuner._bench: full_nargs = {**self.nargs, **current}",
    .kPreHookWrite = "autotuner.py:59 _pre_hook: self.restore_copies = {name: kwargs[name].clone() ...}",
    .kPostHookRead = "autotuner.py:70 _post_hook: kwargs[name].copy_(self.restore_copies[name])",
    .kPostHookReset = "autotuner.py:71 _post_hook: self.restore_copies = {}",
    .kBenchTime = "autotuner.py:230 benchmark: self.bench_time = bench_end - bench_start",
    .kCacheWrite = "autotuner.py:231 benchmark: self.cache[key] = builtins.min(timings, key=timings.get)",
    .kBenchmarkNargs = "autotuner.py:232 benchmark: full_nargs = {**self.nargs, **kwargs, "
                       "**self.cache[key].all_kwargs()}",
    .kConfigsTimings = "autotuner.py:234 benchmark: self.configs_timings = timings",
    .kRunCacheRead = "autotuner.py:241 Autotuner.run: config = self.cache[key]",
    .kBestConfig = "autotuner.py:244 Autotuner.run: self.best_config = config",
    .kRunClearNargs = "autotuner.py:256 Autotuner.run: self.nargs = None",
    .kWherePostHook = "triton/runtime/autotuner.py:70 in _post_hook",
    .kWhereBench = "triton/runtime/autotuner.py:139 in _bench",
    .kWhereRun = "triton/runtime/autotuner.py:215 in run",
    .kWhereBenchmark = "triton/runtime/autotuner.py:232 in benchmark",
    .where_reset = "triton/runtime/autotuner.py:57 in _pre_hook",
};

// The windows the GIL makes atomic, per CPython version, from the bytecode of the 3.4.0 wheel's
// autotuner.py (tools/scripts/gil-regions.py; the ctest gil_regions_triton_3_4 checks them).
// BEGIN GIL REGIONS (tools/scripts/gil-regions.py triton_3_4; do not edit by hand)
constexpr GilWindow kTriton34Gil311[] = {
    {.from = 212, .to = 215, .warmup = 7},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 212, .to = 244, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 215, .to = 222, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 202
    {.from = 222, .to = 241, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 512
    {.from = 241, .to = 244, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 244, .to = 256, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1006
    {.from = 230, .to = 231, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 174
    {.from = 231, .to = 232, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 232, .to = 234, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 272
    {.from = 70, .to = 70, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 70, .to = 71, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 86
};
constexpr GilWindow kTriton34Gil312[] = {
    {.from = 212, .to = 215, .warmup = 1},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 212, .to = 244, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 215, .to = 222, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 192
    {.from = 222, .to = 241, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 562
    {.from = 241, .to = 244, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 244, .to = 256, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1126
    {.from = 230, .to = 231, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 228
    {.from = 231, .to = 232, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 232, .to = 234, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 342
    {.from = 70, .to = 70, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 70, .to = 71, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 90
};
constexpr GilTable kTriton34Gil[] = {
    {.python = "3.11", .windows = kTriton34Gil311},
    {.python = "3.12", .windows = kTriton34Gil312},
};
// END GIL REGIONS
const DiskLabels kTriton34Disk = {
    .kGetFile = "autotuner.py:192 check_disk_cache: path = cache.get_file(file_name)",
    .kHitCache = "autotuner.py:197 check_disk_cache: self.cache[tuning_key] = builtins.min(timings, "
                 "key=timings.get)",
    .kHitTimings = "autotuner.py:198 check_disk_cache: self.configs_timings = timings",
    .kPutTimings = "autotuner.py:207 check_disk_cache: [(config.__dict__, timings) for config, "
                   "timings in self.configs_timings.items() if not config.pre_hook]",
    .kPut = "autotuner.py:202 check_disk_cache: cache.put(",
    .kWherePut = "triton/runtime/autotuner.py:207 in check_disk_cache",
    .kWhereGetFile = "triton/runtime/autotuner.py:197 in check_disk_cache",
};
}  // namespace

const TunerModel& Triton34() {
  static const WithDiskCache<Triton36Model> model(kTriton34Disk, kTriton34Labels, kTriton34Gil);
  return model;
}

}  // namespace rerace::replay::detail
