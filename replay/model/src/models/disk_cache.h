// replay/model/src/models/disk_cache.h: Triton's disk cache of autotuning results (from 3.4) around
// a release's model (private to replay).
//
// With `cache_results` (the decorator's argument or TRITON_CACHE_AUTOTUNING; the probe records
// it), a miss of `self.cache` goes through `check_disk_cache(key, configs, benchmark)`:
//   hit:  `self.cache[key] = min(timings)` and `self.configs_timings = timings` from the file,
//         no benchmarking (no tuning counted, no hooks run);
//   miss: `benchmark()`, then the file is written from `self.configs_timings`: the SHARED
//         field, which another thread's benchmark() may have set in between, so the file of
//         this key can hold another key's timings (`disk-cache-wrong-timings`); a later hit of
//         this key then loads the best config of the other key.
// Without `cache_results` the model is its base release's. Each step is one scheduling
// point, named by the release's DiskLabels.
//
// Example: `WithDiskCache<Triton36Model> model(kDiskLabels, kLabels);`
#pragma once

#include <fmt/format.h>

#include <utility>

#include "triton_3_6.h"

namespace rerace::replay::detail {

// The source lines of one release's check_disk_cache.
struct DiskLabels {
  const char* kGetFile;      // path = cache.get_file(file_name)
  const char* kHitCache;     // self.cache[tuning_key] = builtins.min(timings, key=timings.get)
  const char* kHitTimings;   // self.configs_timings = timings
  const char* kPutTimings;   // cache.put(... self.configs_timings.items() ...)
  const char* kPut;          // cache.put(json.dumps(...), file_name)
  const char* kWherePut;     // "triton/runtime/autotuner.py:LINE in check_disk_cache" (cache.put)
  const char* kWhereGetFile;  // the same, of the hit's self.cache[tuning_key] = ...
};

template <typename Base>
class WithDiskCache final : public Base {
 public:
  template <typename... Args>
  explicit WithDiskCache(const DiskLabels& disk, Args&&... base)
      : Base(std::forward<Args>(base)...), D_(disk) {}

 protected:
  int32_t Miss(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
               int32_t key) const override {
    if (st.disk == nullptr) return Base::Miss(w, thread, c, st, key);
    const auto k = static_cast<size_t>(key);
    const Owned file = st.disk->ReadWith([&](const std::vector<Owned>& v) { return v[k]; },
                                        D_.kGetFile);
    if (file.value >= 0) {
      st.Cache().Update([&](std::vector<int32_t>& v) { v[k] = file.value; }, D_.kHitCache);
      st.configs_timings.Write({0, thread, file.key}, D_.kHitTimings);
      if (file.key != key) {
        w.Silent(thread, "config-mismatch",
                 fmt::format("thread {} loaded the config of key {} from a disk cache file "
                             "that thread {} wrote with the timings of key {}",
                             thread, w.KeyName(c, key), file.thread, w.KeyName(c, file.key)),
                 D_.kWhereGetFile, file.thread);
      }
      return file.value;
    }
    const int32_t best = Base::Miss(w, thread, c, st, key);
    const Owned timings = st.configs_timings.Read(D_.kPutTimings);
    int32_t written = best;
    if (timings.key != key && timings.key >= 0) {
      // The timings of another key: their best is the config that thread tuned for it.
      written = st.Cache().UnsafeRef()[static_cast<size_t>(timings.key)];
      w.Silent(thread, "disk-cache-wrong-timings",
               fmt::format("thread {} wrote thread {}'s timings (tuned for key {}) to the disk "
                           "cache file of key {} (self.configs_timings was shared): a later "
                           "disk hit of key {} loads the best config of key {}",
                           thread, timings.thread, w.KeyName(c, timings.key), w.KeyName(c, key),
                           w.KeyName(c, key), w.KeyName(c, timings.key)),
               D_.kWherePut, timings.thread);
    }
    st.disk->Update([&](std::vector<Owned>& v) { v[k] = {written, thread, timings.key}; }, D_.kPut);
    return best;
  }

 private:
  const DiskLabels& D_;
};

}  // namespace rerace::replay::detail
