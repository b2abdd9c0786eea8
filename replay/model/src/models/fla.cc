// replay/model/src/models/fla.cc: FLA's CachedAutotuner (fla/ops/utils/cache.py of fla-core 0.6.0,
// the current release, and 0.5.2, the previous: the same steps for what rerace models) over
// Triton 3.6's Autotuner. Model "fla"; chosen for a recorded tuner class of FLA's.
//
// What the real class does (read from both wheels; an earlier model of an invented
// `config_cache` that stored `self.best_config` was wrong):
// - `run` builds its key (no shared state), then, unless FLA_CACHE_MODE is "disabled" (the
//   default when it is unset), checks `key not in self.cache` (line 372) and seeds
//   `self.cache[key]` with a config from FLA's config files when it finds one (0.5.2 line 396;
//   0.6.0 line 406, after early_config_prune may reject it: `self.cache.pop`, line 399); then
//   `return super().run(*args, **kwargs)`: Triton's steps, and its race.
// - It replaces Triton's default hooks with None-safe ones that still use the shared
//   `self.restore_copies` (lines 353-365): the post-hook iterates `self.restore_copies.items()`
//   (line 362), so, as Triton 3.8's, a copy another thread reset to {} is skipped: no KeyError,
//   a silent missed or wrong restore (items_post_hook.h).
// The model is the default mode (the probe does not record FLA_CACHE_MODE, nor whether FLA's
// config directory holds the kernel's file): no cache seeding; Triton's steps are 3.6's (FLA
// over another Triton release keeps that release's run but FLA's hooks).
// Differential-tested against FLA's real class under the python engine, both releases, every
// FLA_CACHE_MODE with an empty config directory (tests/replay/engine/fla_fidelity_test.cc); with a
// config file for the kernel the real code seeds self.cache and does not tune, which this model
// (following a cold recording) does not do (docs/FIDELITY.md).
//
// The steps of the releases (tools/scripts/step-table.py emits them from the wheels and checks
// these blocks and every cache.py label against both; Triton's labels are 3.6's, checked in
// triton_3_6.cc):
// step-table: fla-core 0.5.2 fla/ops/utils/cache.py CachedAutotuner
//   __init__._pre_hook:358 W restore_copies
//   __init__._post_hook:362 R restore_copies
//   __init__._post_hook:364 W restore_copies
//   should_check_fla_cache:372 R cache
//   maybe_load_cached_config:396 M cache
// end step-table
// step-table: fla-core 0.6.0 fla/ops/utils/cache.py CachedAutotuner
//   __init__._pre_hook:358 W restore_copies
//   __init__._post_hook:362 R restore_copies
//   __init__._post_hook:364 W restore_copies
//   should_check_fla_cache:372 R cache
//   maybe_load_cached_config:399 M cache
//   maybe_load_cached_config:406 M cache
// end step-table
#include "items_post_hook.h"

namespace rerace::replay::detail {

namespace {
constexpr const char* kWhereMissed = "fla/ops/utils/cache.py:362 in _post_hook";
}  // namespace

const TunerModel& Fla() {
  // Triton 3.6's run, FLA's hooks. (Triton36Labels() is constant-initialized.)
  static const Labels labels = [] {
    Labels l = Triton36Labels();
    l.kPreHookWrite = "cache.py:358 _pre_hook: self.restore_copies = {n: kw[n].clone() for n in "
                      "self.restore_value if kw[n] is not None}";
    l.kPostHookRead = "cache.py:362 _post_hook: for n, copy in self.restore_copies.items()";
    l.kPostHookReset = "cache.py:364 _post_hook: self.restore_copies = {}";
    l.kWherePostHook = "fla/ops/utils/cache.py:363 in _post_hook";
    l.where_reset = "fla/ops/utils/cache.py:356 in _pre_hook";
    return l;
  }();
  static const ItemsPostHookModel model(labels, kWhereMissed, Triton36Gil());
  return model;
}

}  // namespace rerace::replay::detail
