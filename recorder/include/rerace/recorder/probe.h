// rerace/recorder/probe.h: announce tuner transitions from C++ code (the native autotuner).
//
// Each call emits one NVTX mark in the recorder's grammar (grammar.h). When no NVTX injection
// is set (no recorder loaded), Emit returns before formatting anything: the cost is one
// predictable branch.
//
//   rerace::probe::TunerMark m;
//   m.kernel = "l2norm_fwd"; m.tuner_class = "rerace.NativeAutotuner";
//   m.event.kind = rerace::traces::TunerKind::kPostHook; m.event.config = 3;
//   rerace::probe::Emit(m);
//
// Safe from any thread. Needs the NVTX v3 headers (the CUDA toolkit's).
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <cstdlib>

#include "rerace/recorder/grammar.h"

namespace rerace::probe {

using recorder::TunerMark;

inline bool Enabled() {
  static const bool on = [] {
    const char* p = std::getenv("NVTX_INJECTION64_PATH");
    return p != nullptr && *p != 0;
  }();
  return on;
}

inline void Emit(const TunerMark& m) {
  if (!Enabled()) return;
  nvtxMarkA(recorder::EncodeTunerMark(m).c_str());
}

}  // namespace rerace::probe
