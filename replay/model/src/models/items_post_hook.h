// replay/model/src/models/items_post_hook.h: the default post-hook of Triton 3.8 and later (private
// to replay), shared by the models of those releases.
//
// From 3.8 `_post_hook` iterates `self.restore_copies.items()`: one read of the dict, and a
// copy another thread's post-hook reset to {} is skipped: no KeyError, the in-parameter keeps
// what the benchmark wrote (`missed-restore`, at the loop's line), or another thread's copy is
// restored (`wrong-restore`, at the copy's line: the Labels' kWherePostHook).
#pragma once

#include "triton_3_6.h"

namespace rerace::replay::detail {

class ItemsPostHookModel : public Triton36Model {
 public:
  // `where_missed`: "triton/runtime/autotuner.py:LINE in _post_hook", LINE the loop's.
  ItemsPostHookModel(const Labels& labels, const char* where_missed,
                     std::span<const GilTable> gil = {})
      : Triton36Model(labels, gil), where_missed_(where_missed) {}

 protected:
  void PostHook(TunerWorld& w, uint32_t thread, const TunerCall& c, TunerState& st,
                size_t config, const Nargs& n) const override;

 private:
  const char* where_missed_;
};

}  // namespace rerace::replay::detail
