// replay/model/src/sub_program.cc: the program of some of the recorded threads (SubProgram).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "rerace/replay/model/program.h"

namespace rerace::replay {

Result<Program> SubProgram(const Program& p, const std::vector<uint32_t>& threads) {
  if (threads.empty()) return Error{"a sub-program needs at least one thread", kExitUsage};
  std::vector<uint32_t> keep = threads;
  std::sort(keep.begin(), keep.end());
  if (std::adjacent_find(keep.begin(), keep.end()) != keep.end())
    return Error{"a thread is named twice in the sub-program's threads", kExitUsage};
  for (uint32_t t : keep) {
    if (t >= p.threads.size())
      return Error{fmt::format("{}: there is no thread {} (the recording replays threads 0..{})",
                               p.source, t, p.threads.size() - 1),
                   kExitUsage};
    if (!p.threads[t].worker)
      return Error{fmt::format("{}: thread {} ({}) calls no tuner: a sub-program is made of "
                               "worker threads",
                               p.source, t, p.threads[t].name),
                   kExitUsage};
  }
  Program sub;
  sub.source = p.source;
  sub.tuner_classes = p.tuner_classes;
  sub.recorded_span_ns = p.recorded_span_ns;
  sub.truncated = p.truncated;
  sub.gil = p.gil;
  sub.overlapping_devices = p.overlapping_devices;
  sub.tuner_meta = p.tuner_meta;
  sub.cache_results = p.cache_results;
  sub.cache_home = p.cache_home;
  sub.hooks_home = p.hooks_home;
  sub.identity_recorded = p.identity_recorded;
  sub.sync_recorded = p.sync_recorded;
  sub.sync_overflowed = p.sync_overflowed;
  sub.sync_orders = p.sync_orders;
  sub.trial_contention_ppm = p.trial_contention_ppm;
  sub.trial_contention_from = p.trial_contention_from;
  sub.cold_ns = p.cold_ns;
  // The kept threads' calls, renumbered in the order the threads make them (a fix that runs
  // every call, prewarm, sees only these).
  std::map<uint32_t, uint32_t> renumber;
  Nanos start = UINT64_MAX;
  for (uint32_t t : keep) {
    ThreadProgram tp = p.threads[t];
    for (Op& op : tp.ops) {
      if (op.kind != Op::Kind::kTunerCall) continue;
      auto [it, added] = renumber.emplace(op.call, static_cast<uint32_t>(sub.calls.size()));
      if (added) sub.calls.push_back(p.calls[op.call]);
      op.call = it->second;
    }
    start = std::min(start, tp.start_ns);
    sub.threads.push_back(std::move(tp));
  }
  sub.step_start_ns = start != UINT64_MAX ? start : p.step_start_ns;
  if (!p.call_after.empty()) {
    sub.call_after.assign(sub.calls.size(), {});
    for (const auto& [old_call, new_call] : renumber)
      for (uint32_t before : p.call_after[old_call])
        if (auto it = renumber.find(before); it != renumber.end())
          sub.call_after[new_call].push_back(it->second);
  }
  return sub;
}

}  // namespace rerace::replay
