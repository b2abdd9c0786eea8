// replay/model/src/models/triton_3_6.cc: Triton 3.6's Autotuner (triton/runtime/autotuner.py of the
// 3.6.0 wheel, read from the installed package; the KeyError at line 74 is the one the H200
// measured). Model "triton".
//
// The steps of the release (tools/scripts/step-table.py emits them from the wheel and checks
// this block and every label's file:line against it; docs/MODEL.md):
// step-table: triton 3.6.0 triton/runtime/autotuner.py Autotuner
//   __init__:37 W cache
//   __init__._pre_hook:63 W restore_copies
//   __init__._post_hook:74 R restore_copies
//   __init__._post_hook:75 W restore_copies
//   _bench:143 R nargs
//   check_disk_cache:198 M cache
//   check_disk_cache:199 W configs_timings
//   check_disk_cache:208 R configs_timings
//   run:213 W nargs
//   run:216 R nargs
//   run:223 R cache
//   run:242 R cache
//   run:245 W best_config
//   run:248 R bench_time
//   run:248 R best_config
//   run:250 R nargs
//   run:257 W nargs
//   run.benchmark:231 W bench_time
//   run.benchmark:232 M cache
//   run.benchmark:233 R nargs
//   run.benchmark:233 R cache
//   run.benchmark:235 W configs_timings
//   prune_configs:263 R nargs
//   prune_configs:278 R nargs
//   warmup:288 W nargs
//   warmup:296 W nargs
// end step-table
#include "triton_3_6.h"

#include "disk_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace rerace::replay::detail {

using traces::TunerKind;

namespace {
const Labels kTriton36Labels = {
    .kRunSetNargs = "autotuner.py:213 Autotuner.run: self.nargs = dict(zip(self.arg_names, args))",
    .kRunReadNargs = "autotuner.py:216 Autotuner.run: all_args = {**self.nargs, **kwargs}",
    .kRunCacheCheck = "autotuner.py:223 Autotuner.run: if key not in self.cache",
    .kBenchNargs = "autotuner.py:143 Autotuner._bench: full_nargs = {**self.nargs, **current}",
    .kPreHookWrite = "autotuner.py:63 _pre_hook: self.restore_copies = {name: kwargs[name].clone() ...}",
    .kPostHookRead = "autotuner.py:74 _post_hook: kwargs[name].copy_(self.restore_copies[name])",
    .kPostHookReset = "autotuner.py:75 _post_hook: self.restore_copies = {}",
    .kBenchTime = "autotuner.py:231 benchmark: self.bench_time = bench_end - bench_start",
    .kCacheWrite = "autotuner.py:232 benchmark: self.cache[key] = builtins.min(timings, key=timings.get)",
    .kBenchmarkNargs = "autotuner.py:233 benchmark: full_nargs = {**self.nargs, **kwargs, "
                       "**self.cache[key].all_kwargs()}",
    .kConfigsTimings = "autotuner.py:235 benchmark: self.configs_timings = timings",
    .kRunCacheRead = "autotuner.py:242 Autotuner.run: config = self.cache[key]",
    .kBestConfig = "autotuner.py:245 Autotuner.run: self.best_config = config",
    .kRunClearNargs = "autotuner.py:257 Autotuner.run: self.nargs = None",
    .kWherePostHook = "triton/runtime/autotuner.py:74 in _post_hook",
    .kWhereBench = "triton/runtime/autotuner.py:143 in _bench",
    .kWhereRun = "triton/runtime/autotuner.py:216 in run",
    .kWhereBenchmark = "triton/runtime/autotuner.py:233 in benchmark",
    .where_reset = "triton/runtime/autotuner.py:61 in _pre_hook",
};

// The windows the GIL makes atomic, per CPython version, from the bytecode of the 3.6.0 wheel's
// autotuner.py (tools/scripts/gil-regions.py; the ctest gil_regions_triton_3_6 checks them).
// BEGIN GIL REGIONS (tools/scripts/gil-regions.py triton_3_6; do not edit by hand)
constexpr GilWindow kTriton36Gil311[] = {
    {.from = 213, .to = 216, .warmup = 7},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 213, .to = 245, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 216, .to = 223, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 202
    {.from = 223, .to = 242, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 512
    {.from = 242, .to = 245, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 245, .to = 257, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1006
    {.from = 231, .to = 232, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 174
    {.from = 232, .to = 233, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 233, .to = 235, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 272
    {.from = 74, .to = 74, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 74, .to = 75, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 86
};
constexpr GilWindow kTriton36Gil312[] = {
    {.from = 213, .to = 216, .warmup = 1},  // RunSetNargs -> RunReadNargs: atomic once warm: CALL (len/isinstance/type)
    {.from = 213, .to = 245, .warmup = -1},  // RunSetNargs -> BestConfig: split: CALL (len/isinstance/type)
    {.from = 216, .to = 223, .warmup = -1},  // RunReadNargs -> RunCacheCheck: split: CALL at offset 192
    {.from = 223, .to = 242, .warmup = -1},  // RunCacheCheck -> RunCacheRead: split: CALL at offset 562
    {.from = 242, .to = 245, .warmup = 0},  // RunCacheRead -> BestConfig: atomic
    {.from = 245, .to = 257, .warmup = -1},  // BestConfig -> RunClearNargs: split: CALL at offset 1126
    {.from = 231, .to = 232, .warmup = -1},  // BenchTime -> CacheWrite: split: CALL at offset 228
    {.from = 232, .to = 233, .warmup = 0},  // CacheWrite -> BenchmarkNargs: atomic
    {.from = 233, .to = 235, .warmup = -1},  // BenchmarkNargs -> ConfigsTimings: split: CALL at offset 342
    {.from = 74, .to = 74, .warmup = -1},  // PostHookRead -> PostHookRead: split: another function or a backward jump
    {.from = 74, .to = 75, .warmup = -1},  // PostHookRead -> PostHookReset: split: CALL at offset 90
};
constexpr GilTable kTriton36Gil[] = {
    {.python = "3.11", .windows = kTriton36Gil311},
    {.python = "3.12", .windows = kTriton36Gil312},
};
// END GIL REGIONS
}  // namespace

const Labels& Triton36Labels() { return kTriton36Labels; }
std::span<const GilTable> Triton36Gil() { return kTriton36Gil; }

std::optional<std::string> CopyError(const Program& p, int32_t from_call, int32_t into_call,
                                     size_t i) {
  if (from_call < 0 || into_call < 0) return std::nullopt;
  const auto& from = p.calls[static_cast<size_t>(from_call)].restore_shapes;
  const auto& into = p.calls[static_cast<size_t>(into_call)].restore_shapes;
  if (i >= from.size() || i >= into.size() || from[i].empty() || into[i].empty())
    return std::nullopt;  // not recorded: a wrong restore, silent as far as the model knows
  const std::vector<int64_t>& a = into[i];  // torch: self.copy_(src) broadcasts src to self
  const std::vector<int64_t>& b = from[i];
  // ATen's infer_size: right-aligned, from the last dimension down.
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t k = n; k-- > 0;) {
    const size_t off = n - 1 - k;
    const int64_t sa = off < a.size() ? a[a.size() - 1 - off] : 1;
    const int64_t sb = off < b.size() ? b[b.size() - 1 - off] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return fmt::format("The size of tensor a ({}) must match the size of tensor b ({}) at "
                         "non-singleton dimension {}",
                         sa, sb, k);
    out[k] = sa == 1 ? sb : sa;
  }
  if (out != a)
    return fmt::format("output with shape [{}] doesn't match the broadcast shape [{}]",
                       fmt::join(a, ", "), fmt::join(out, ", "));
  return std::nullopt;
}

const DiskLabels kTriton36Disk = {
    .kGetFile = "autotuner.py:193 check_disk_cache: path = cache.get_file(file_name)",
    .kHitCache = "autotuner.py:198 check_disk_cache: self.cache[tuning_key] = builtins.min(timings, "
                 "key=timings.get)",
    .kHitTimings = "autotuner.py:199 check_disk_cache: self.configs_timings = timings",
    .kPutTimings = "autotuner.py:208 check_disk_cache: [(config.__dict__, timings) for config, "
                   "timings in self.configs_timings.items() if not config.pre_hook]",
    .kPut = "autotuner.py:203 check_disk_cache: cache.put(",
    .kWherePut = "triton/runtime/autotuner.py:208 in check_disk_cache",
    .kWhereGetFile = "triton/runtime/autotuner.py:198 in check_disk_cache",
};

const TunerModel& Triton36() {
  // With the recorded cache_results, check_disk_cache (disk_cache.h) as 3.4's.
  static const WithDiskCache<Triton36Model> model(kTriton36Disk, kTriton36Labels, kTriton36Gil);
  return model;
}

void Triton36Model::Run(TunerWorld& w, uint32_t thread, const TunerCall& c, uint32_t call) const {
  TunerState& st = w.StateFor(thread, c);
  w.Anchor(thread, TunerKind::kCallBegin, -1);
  RunBody(w, thread, c, call, st);
  w.Anchor(thread, TunerKind::kCallEnd, -1);
}

void Triton36Model::RunBody(TunerWorld& w, uint32_t thread, const TunerCall& c, uint32_t call,
                            TunerState& st) const {
  const int32_t own_key = w.KeyId(c, c.key);
  w.AnchorWrite(thread, traces::TunerField::kNargs);
  w.WriteNargs(st, {static_cast<int32_t>(call), thread, 0, 0}, L_.kRunSetNargs);
  int32_t key = own_key;
  int32_t config = 0;
  if (c.configs.size() > 1) {
    const Nargs n = w.ReadNargs(st, L_.kRunReadNargs);
    if (n.call < 0) {
      w.Raise(thread, "nargs-none", L_.none_error_type, L_.none_in_run, L_.kWhereRun,
              fmt::format("nargs is None while thread {} computes its key: thread {} set it to "
                          "None at step {}",
                          thread, n.writer, n.step),
              n.writer, n.step);
    }
    key = w.KeyId(c, w.program().calls[static_cast<size_t>(n.call)].key);
    Locked(w.LockFor(Region::kCache), "lock around the cache", [&] {
      const bool hit = st.Cache().ReadWith(
          [&](const std::vector<int32_t>& v) { return v[static_cast<size_t>(key)] >= 0; },
          L_.kRunCacheCheck);
      if (hit) return;
      w.TuneMiss(c, st, key, [&] { return Miss(w, thread, c, st, key); });
    });
    config = st.Cache().ReadWith(
        [&](const std::vector<int32_t>& v) { return v[static_cast<size_t>(key)]; },
        L_.kRunCacheRead);
    if (config < 0) config = 0;  // a tuning that failed in another thread left no entry
  }
  w.AnchorWrite(thread, traces::TunerField::kBestConfig);
  st.best_config.Write({config, thread, key}, L_.kBestConfig);
  w.Anchor(thread, TunerKind::kLaunch, -1);
  if (key != own_key) {
    w.Silent(thread, "config-mismatch",
             fmt::format("thread {} launched {} with the config tuned for key {} (another "
                         "thread's arguments were in self.nargs when it computed its key), not "
                         "for its own key {}",
                         thread, c.kernel, w.KeyName(c, key), c.key),
             L_.kWhereRun);
  }
  w.Launch(c.device, c.stream, c.launch_ns);
  w.AnchorWrite(thread, traces::TunerField::kNargs);
  w.WriteNargs(st, {-1, thread, 0, 0}, L_.kRunClearNargs);
}

int32_t Triton36Model::Benchmark(TunerWorld& w, uint32_t thread, const TunerCall& c,
                                 TunerState& st, int32_t key) const {
  int32_t best = 0;
  Locked(w.LockFor(Region::kBenchmark), "lock around benchmark()", [&] {
    sim::Scheduler& s = w.sched();
    Nanos gpu = 0;
    for (size_t i = 0; i < c.configs.size(); ++i) {
      const Nanos before = s.Now();
      Locked(w.LockFor(Region::kBench), "lock around _bench", [&] { Bench(w, thread, c, st, i); });
      gpu += s.Now() - before;
      const auto b = static_cast<size_t>(best);
      if (c.bench_ns[i] != 0 && c.bench_ns[i] < c.bench_ns[b]) best = static_cast<int32_t>(i);
      if (c.bench_ns[static_cast<size_t>(best)] == 0) best = static_cast<int32_t>(i);
    }
    w.CountTuning(c, key, thread, gpu);
    st.bench_time.Write({0, thread, key}, L_.kBenchTime);
    st.Cache().Update([&](std::vector<int32_t>& v) { v[static_cast<size_t>(key)] = best; },
                    L_.kCacheWrite);
    const Nargs n = w.ReadNargs(st, L_.kBenchmarkNargs);
    if (n.call < 0) {
      w.Raise(thread, "nargs-none", L_.none_error_type, L_.none_in_benchmark, L_.kWhereBenchmark,
              fmt::format("nargs is None after thread {} benchmarked: thread {} set it to None at "
                          "step {}",
                          thread, n.writer, n.step),
              n.writer, n.step);
    }
    if (!c.reset_to_zero.empty() && n.thread != thread) {
      w.Silent(thread, "wrong-restore",
               fmt::format("thread {}'s reset-only pre-hook zeroed thread {}'s {} (another "
                           "thread's arguments were in self.nargs)",
                           thread, n.thread, c.arg_names[c.reset_to_zero[0]]),
               L_.where_reset);
    }
    st.configs_timings.Write({0, thread, key}, L_.kConfigsTimings);
  });
  return best;
}

void Triton36Model::Bench(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
                          size_t config) const {
  w.Anchor(thread, TunerKind::kBenchBegin, static_cast<int32_t>(config));
  const Nargs n = w.ReadNargs(st, L_.kBenchNargs);
  if (n.call < 0) {
    w.Raise(thread, "nargs-none", L_.none_error_type,
            fmt::format(fmt::runtime(L_.none_in_bench), fmt::arg("config", config)),
            L_.kWhereBench,
            fmt::format("nargs is None while thread {} benchmarks config {}: thread {} set it to "
                        "None at step {}",
                        thread, config, n.writer, n.step),
            n.writer, n.step);
  }
  const uint32_t recorded = std::max<uint32_t>(c.bench_reps[config], 1);
  const uint32_t reps = w.Reps(recorded);
  const uint64_t all = c.restore_value.size() >= 64 ? ~0ull : (1ull << c.restore_value.size()) - 1;
  for (uint32_t r = 0; r < reps; ++r) {
    Locked(w.LockFor(Region::kHooks), "lock around the pre-hook", [&] {
      w.Anchor(thread, TunerKind::kPreHook, static_cast<int32_t>(config));
      // reset_to_zero alone: the hook still assigns the (empty) dict of copies.
      const bool writes = !c.restore_value.empty() ||
                          (L_.pre_hook_writes_empty_copies && !c.reset_to_zero.empty());
      if (!writes) return;
      w.AnchorWrite(thread, traces::TunerField::kRestoreCopies);
      w.WriteCopies(st, {all, n.thread, 0, 0, n.call}, L_.kPreHookWrite);
    });
    w.Trial(c, config, reps);
    Locked(w.LockFor(Region::kHooks), "lock around the post-hook", [&] {
      w.Anchor(thread, TunerKind::kPostHook, static_cast<int32_t>(config));
      if (c.restore_value.empty()) return;
      PostHook(w, thread, c, st, config, n);
      w.AnchorWrite(thread, traces::TunerField::kRestoreCopies);
      w.WriteCopies(st, {0, n.thread, 0, 0}, L_.kPostHookReset);
    });
  }
  w.Anchor(thread, TunerKind::kBenchEnd, static_cast<int32_t>(config));
}

void Triton36Model::PostHook(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
                             size_t config, const Nargs& n) const {
  for (size_t i = 0; i < c.restore_value.size(); ++i) {
    // One read per in-parameter, as the hook's loop reads self.restore_copies[name].
    w.AnchorRead(thread, traces::TunerField::kRestoreCopies);
    const Copies rc = w.ReadCopies(st, L_.kPostHookRead);
    const std::string& name = c.arg_names[c.restore_value[i]];
    if ((rc.present >> i & 1) == 0) {
      w.Raise(thread, "in-param-not-in-cache", L_.key_error_type,
              fmt::format(fmt::runtime(L_.key_error), fmt::arg("name", name), fmt::arg("index", i)),
              L_.kWherePostHook,
              fmt::format("In-parameter {} is not in the cache: thread {}'s post-hook reset "
                          "restore_copies to {{}} at step {} while thread {} was benchmarking "
                          "config {}",
                          name, rc.writer, rc.step, thread, config),
              rc.writer, rc.step);
    }
    if (rc.owner != n.thread) RestoredAnothersCopy(w, thread, c, rc, n, i);
  }
}

void Triton36Model::RestoredAnothersCopy(TunerWorld& w, uint32_t thread, const TunerCall& c,
                                         const Copies& rc, const Nargs& n, size_t i) const {
  const std::string& name = c.arg_names[c.restore_value[i]];
  const std::string into =
      n.thread == thread ? std::string("its own") : fmt::format("thread {}'s", n.thread);
  // `kwargs[name].copy_(value)` of another call's copy of another shape: torch raises.
  if (auto error = CopyError(w.program(), rc.call, n.call, i)) {
    w.Raise(thread, "restore-shape-mismatch", "RuntimeError", *error, L_.kWherePostHook,
            fmt::format("thread {} restored thread {}'s saved copy of {} (cloned by thread {}'s "
                        "pre-hook at step {}) into {} tensor of another shape",
                        thread, rc.owner, name, rc.writer, rc.step, into),
            rc.writer, rc.step);
  }
  w.Silent(thread, "wrong-restore",
           fmt::format("thread {} restored thread {}'s saved copy of {} (cloned by thread {}'s "
                       "pre-hook at step {}) into {} tensor",
                       thread, rc.owner, name, rc.writer, rc.step, into),
           L_.kWherePostHook, rc.writer, rc.step);
}

}  // namespace rerace::replay::detail
