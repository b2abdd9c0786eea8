// replay/model/src/models/items_post_hook.cc: the post-hook that iterates restore_copies.items()
// (Triton 3.8 and later).
#include "items_post_hook.h"

#include <fmt/format.h>

namespace rerace::replay::detail {

void ItemsPostHookModel::PostHook(TunerWorld& w, uint32_t thread, const TunerCall& c,
                                  TunerState& st, size_t config, const Nargs& n) const {
  // One read: the loop iterates the dict it found.
  w.AnchorRead(thread, traces::TunerField::kRestoreCopies);
  const Copies rc = w.ReadCopies(st, L_.kPostHookRead);
  for (size_t i = 0; i < c.restore_value.size(); ++i) {
    const std::string& name = c.arg_names[c.restore_value[i]];
    if ((rc.present >> i & 1) == 0) {
      w.Silent(thread, "missed-restore",
               fmt::format("thread {}'s post-hook found no saved copy of {} (thread {}'s "
                           "post-hook reset restore_copies to {{}} at step {}) and skipped it: "
                           "{} keeps what thread {}'s benchmark of config {} wrote",
                           thread, name, rc.writer, rc.step, name, thread, config),
               where_missed_, rc.writer, rc.step);
      continue;
    }
    if (rc.owner != n.thread) RestoredAnothersCopy(w, thread, c, rc, n, i);
  }
}

}  // namespace rerace::replay::detail
