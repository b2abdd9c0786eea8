// replay/model/src/tuner_world_anchors.cc: the recorded order (`replay --recorded`), kept by the
// TunerWorld as the models reach their steps. Each recorded thread has a cursor into its
// recorded tuner transitions; a model's step that matches the next one moves the thread's
// anchor to that transition's position in the trace (the RecordedOrder strategy runs the thread
// with the earliest anchor); a step that matches nothing counts as leaving the recording.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "rerace/replay/model/tuner_world.h"

namespace rerace::replay::detail {

using traces::TunerKind;

void TunerWorld::AnchorWrite(uint32_t thread, traces::TunerField field) {
  if (anchors_ == nullptr || thread >= p_.threads.size() || !fields_recorded_[thread]) return;
  Anchor(thread, TunerKind::kFieldWrite, -1, field);
}

void TunerWorld::AnchorRead(uint32_t thread, traces::TunerField field) {
  if (anchors_ == nullptr || thread >= p_.threads.size() || !reads_recorded_[thread]) return;
  Anchor(thread, TunerKind::kFieldRead, -1, field);
}

void TunerWorld::CountUnreached(uint32_t thread) {
  if (anchors_ == nullptr || thread >= p_.threads.size()) return;
  const auto& tr = p_.threads[thread].transitions;
  uint64_t n = 0;
  for (size_t c = cursor_[thread]; c < tr.size(); ++c)
    n += tr[c].kind != TunerKind::kError && tr[c].kind != TunerKind::kFieldRead &&
         tr[c].kind != TunerKind::kFieldWrite;
  if (std::getenv("RERACE_DEBUG_ANCHORS"))
    std::fprintf(stderr, "anchor: thread %u ended with %llu recorded transitions unreached\n",
                 thread, static_cast<unsigned long long>(n));
  left_recording_ += n;
}

void TunerWorld::Anchor(uint32_t thread, TunerKind kind, int32_t config, traces::TunerField field) {
  if (anchors_ == nullptr || thread >= p_.threads.size()) return;
  const bool hook = kind == TunerKind::kPreHook || kind == TunerKind::kPostHook;
  if (hook && !hooks_recorded_) return;  // hooks the probe did not see (tuner_world.h)
  const auto& tr = p_.threads[thread].transitions;
  size_t& c = cursor_[thread];
  const bool fields = fields_recorded_[thread];
  const bool reads = reads_recorded_[thread];
  auto anchors_on = [fields, reads](const RecordedTransition& t) {
    const TunerKind k = t.kind;
    if (k == TunerKind::kFieldWrite)
      return fields && (t.field == traces::TunerField::kNargs ||
                        t.field == traces::TunerField::kRestoreCopies ||
                        t.field == traces::TunerField::kBestConfig);
    if (k == TunerKind::kFieldRead)
      return reads && (t.field == traces::TunerField::kNargs ||
                       t.field == traces::TunerField::kRestoreCopies);
    return k == TunerKind::kCallBegin || k == TunerKind::kCallEnd || k == TunerKind::kBenchBegin ||
           k == TunerKind::kBenchEnd || k == TunerKind::kPreHook || k == TunerKind::kPostHook ||
           k == TunerKind::kLaunch;
  };
  while (c < tr.size() && !anchors_on(tr[c])) ++c;
  if (c < tr.size() && tr[c].kind == kind && (config < 0 || tr[c].config == config) &&
      (field == traces::TunerField::kNone || tr[c].field == field)) {
    (*anchors_)[thread] = tr[c].seq;
    ++c;
  } else {
    if (left_recording_ < 8 && std::getenv("RERACE_DEBUG_ANCHORS"))
      std::fprintf(stderr, "anchor: thread %u wants %s/%d/%s, recording has %s/%d/%s at %zu of %zu\n",
                   thread, traces::TunerKindName(kind), config, traces::TunerFieldName(field),
                   c < tr.size() ? traces::TunerKindName(tr[c].kind) : "end",
                   c < tr.size() ? tr[c].config : -9,
                   c < tr.size() ? traces::TunerFieldName(tr[c].field) : "-", c, tr.size());
    if (std::getenv("RERACE_DEBUG_ANCHORS"))
      for (size_t i = c > 6 ? c - 6 : 0; i < std::min(tr.size(), c + 4); ++i)
        std::fprintf(stderr, "  %s[%zu] %s/%d/%s\n", i == c ? ">" : " ", i,
                     traces::TunerKindName(tr[i].kind), tr[i].config,
                     traces::TunerFieldName(tr[i].field));
    ++left_recording_;
  }
}

void TunerWorld::AnchorOp(uint32_t thread, uint64_t seq) {
  if (anchors_ != nullptr && thread < p_.threads.size()) (*anchors_)[thread] = seq;
}

}  // namespace rerace::replay::detail
