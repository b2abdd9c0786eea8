// replay/src/models/fla.cc: FLA's CachedAutotuner over Triton 3.6's Autotuner. Model "fla".
//
// CachedAutotuner.run looks its key up in its own config cache and, on a hit, loads the config
// into Triton's cache; then `super().run()` (Triton 3.6's steps); then it stores the
// best_config Triton left on the shared object as the config of its own key.
#include <fmt/format.h>

#include "triton_3_6.h"

namespace rerace::replay::detail {

using traces::TunerKind;

namespace {
constexpr const char* kFlaCheck = "fla CachedAutotuner.run: if key in self.config_cache";
constexpr const char* kFlaLoad = "fla CachedAutotuner.run: self.cache[key] = cached config";
constexpr const char* kFlaBest = "fla CachedAutotuner.run: best = self.best_config";
constexpr const char* kFlaStore = "fla CachedAutotuner.run: self.config_cache[key] = best";

class FlaModel final : public Triton36Model {
 public:
  FlaModel() : Triton36Model(Triton36Labels()) {}

  void Run(TunerWorld& w, uint32_t thread, const TunerCall& c, uint32_t call) const override {
    TunerState& st = w.StateFor(thread, c);
    const auto own_key = static_cast<size_t>(w.KeyId(c, c.key));
    w.Anchor(thread, TunerKind::kCallBegin, -1);
    const int32_t cached = st.fla_cache.ReadWith(
        [&](const std::vector<int32_t>& v) { return v[own_key]; }, kFlaCheck);
    const bool hit = cached >= 0;
    if (hit) st.cache.Update([&](std::vector<int32_t>& v) { v[own_key] = cached; }, kFlaLoad);
    RunBody(w, thread, c, call, st);
    if (!hit) {
      const Owned best = st.best_config.Read(kFlaBest);
      if (best.thread != thread && best.key != static_cast<int32_t>(own_key)) {
        w.Silent(thread, "config-mismatch",
                 fmt::format("thread {}'s CachedAutotuner stored thread {}'s best_config (tuned "
                             "for another key) as the config of key {}",
                             thread, best.thread, c.key),
                 "fla CachedAutotuner.run");
      }
      st.fla_cache.Update([&](std::vector<int32_t>& v) { v[own_key] = best.value; }, kFlaStore);
    }
    w.Anchor(thread, TunerKind::kCallEnd, -1);
  }
};
}  // namespace

const TunerModel& Fla() {
  static const FlaModel model;
  return model;
}

}  // namespace rerace::replay::detail
