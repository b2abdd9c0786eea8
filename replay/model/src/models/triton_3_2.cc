// replay/model/src/models/triton_3_2.cc: Triton 3.2's Autotuner (triton/runtime/autotuner.py of the
// 3.2.0 wheel). Model "triton-3.2"; chosen automatically for recordings of Triton 3.2.x.
//
// The steps are 3.6's (the same hooks, the same `self.nargs` and `self.restore_copies`) at
// 3.2's lines, with what differs for a model:
// - no benchmark() closure: `run` benchmarks inline (lines 185-192), so the read of self.nargs
//   after the benchmarks (line 190) raises "in run", not "in benchmark";
// - no check_disk_cache (no `cache_results` before 3.4);
// - `do_bench` is resolved eagerly in `__init__` (line 130), not a cached_property on the first
//   _bench, and _bench catches no PTXASError (line 167): neither is a shared-state step, and a
//   recording carries no failed compilation.
//
// The steps of the release (tools/scripts/step-table.py emits them from the wheel and checks
// this block and every label's file:line against it; docs/MODEL.md):
// step-table: triton 3.2.0 triton/runtime/autotuner.py Autotuner
//   __init__:46 W cache
//   __init__._pre_hook:71 W restore_copies
//   __init__._post_hook:82 R restore_copies
//   __init__._post_hook:83 W restore_copies
//   _bench:145 R nargs
//   run:171 W nargs
//   run:174 R nargs
//   run:181 R cache
//   run:188 W bench_time
//   run:189 M cache
//   run:190 R nargs
//   run:190 R cache
//   run:192 W configs_timings
//   run:193 R cache
//   run:196 W best_config
//   run:199 R bench_time
//   run:199 R best_config
//   run:201 R nargs
//   run:208 W nargs
//   prune_configs:214 R nargs
//   prune_configs:222 R nargs
//   warmup:232 W nargs
//   warmup:240 W nargs
// end step-table
#include "triton_3_6.h"

namespace rerace::replay::detail {

namespace {
const Labels kTriton32Labels = {
    .kRunSetNargs = "autotuner.py:171 Autotuner.run: self.nargs = dict(zip(self.arg_names, args))",
    .kRunReadNargs = "autotuner.py:174 Autotuner.run: all_args = {**self.nargs, **kwargs}",
    .kRunCacheCheck = "autotuner.py:181 Autotuner.run: if key not in self.cache",
    .kBenchNargs = "autotuner.py:145 Autotuner._bench: full_nargs = {**self.nargs, **current}",
    .kPreHookWrite = "autotuner.py:71 _pre_hook: self.restore_copies = {name: kwargs[name].clone() ...}",
    .kPostHookRead = "autotuner.py:82 _post_hook: kwargs[name].copy_(self.restore_copies[name])",
    .kPostHookReset = "autotuner.py:83 _post_hook: self.restore_copies = {}",
    .kBenchTime = "autotuner.py:188 Autotuner.run: self.bench_time = bench_end - bench_start",
    .kCacheWrite = "autotuner.py:189 Autotuner.run: self.cache[key] = builtins.min(timings, key=timings.get)",
    .kBenchmarkNargs = "autotuner.py:190 Autotuner.run: full_nargs = {**self.nargs, **kwargs, "
                       "**self.cache[key].all_kwargs()}",
    .kConfigsTimings = "autotuner.py:192 Autotuner.run: self.configs_timings = timings",
    .kRunCacheRead = "autotuner.py:193 Autotuner.run: config = self.cache[key]",
    .kBestConfig = "autotuner.py:196 Autotuner.run: self.best_config = config",
    .kRunClearNargs = "autotuner.py:208 Autotuner.run: self.nargs = None",
    .kWherePostHook = "triton/runtime/autotuner.py:82 in _post_hook",
    .kWhereBench = "triton/runtime/autotuner.py:145 in _bench",
    .kWhereRun = "triton/runtime/autotuner.py:174 in run",
    .kWhereBenchmark = "triton/runtime/autotuner.py:190 in run",
    .where_reset = "triton/runtime/autotuner.py:69 in _pre_hook",
};

// The windows the GIL makes atomic, per CPython version, from the bytecode of the 3.2.0 wheel's
// autotuner.py (tools/scripts/gil-regions.py; the ctest gil_regions_triton_3_2 checks them).
// BEGIN GIL REGIONS (tools/scripts/gil-regions.py triton_3_2; do not edit by hand)
constexpr GilWindow kTriton32Gil311[] = {
    {.from = 171, .to = 174, .warmup = 7},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 171, .to = 196, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 174, .to = 181, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 200
    {.from = 181, .to = 193, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 510
    {.from = 193, .to = 196, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 196, .to = 208, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 962
    {.from = 188, .to = 189, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 692
    {.from = 189, .to = 190, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 190, .to = 192, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 790
    {.from = 82, .to = 82, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 82, .to = 83, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 86
};
constexpr GilWindow kTriton32Gil312[] = {
    {.from = 171, .to = 174, .warmup = 1},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 171, .to = 196, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 174, .to = 181, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 182
    {.from = 181, .to = 193, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 552
    {.from = 193, .to = 196, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 196, .to = 208, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1074
    {.from = 188, .to = 189, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 786
    {.from = 189, .to = 190, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 190, .to = 192, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 900
    {.from = 82, .to = 82, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 82, .to = 83, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 90
};
constexpr GilTable kTriton32Gil[] = {
    {.python = "3.11", .windows = kTriton32Gil311},
    {.python = "3.12", .windows = kTriton32Gil312},
};
// END GIL REGIONS
}  // namespace

const TunerModel& Triton32() {
  static const Triton36Model model(kTriton32Labels, kTriton32Gil);
  return model;
}

}  // namespace rerace::replay::detail
