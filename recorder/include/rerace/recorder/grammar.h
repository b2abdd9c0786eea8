// rerace/recorder/grammar.h: tuner transitions as NVTX mark text.
//
// Probes (the C++ probe.h, the Python probe for Triton) announce tuner state transitions as
// NVTX marks; the recorder parses them into trace TunerEvents. The grammar is one line of
// space-separated key=value fields after a fixed prefix:
//
//   rerace:tuner kind=bench-end tuner=0x7f3a12 class=triton.runtime.autotuner.Autotuner
//                kernel=l2norm_fwd_kernel key=(4096,) config=3 timings=0.021,0.020,0.023 reps=14
//
// Keys: kind (a TunerKindName: call-begin, call-end, read, write, bench-begin, bench-end,
// pre-hook, post-hook, launch, error, prune, disk-cache), tuner (hex or decimal), class,
// kernel, field (a TunerFieldName), key, config, detail, configs (list), args (list),
// restore (list of indices), reset (list of indices), timings (list of ms), reps,
// etype, emsg, ewhere. Lists separate items with '|' (indices and timings with ',').
// Values escape '%', ' ', '|', '=' and control bytes as %XX. Unknown keys are ignored (a newer
// probe); a missing or unknown kind is an error. Marks without the prefix are free NVTX marks.
//
// Pure functions; safe from any thread. Encode allocates (probes, not the recorder's hot path).
#pragma once

#include <string>
#include <string_view>

#include "rerace/base/result.h"
#include "rerace/traces/trace.h"

namespace rerace::recorder {

inline constexpr std::string_view kTunerPrefix = "rerace:tuner ";

// A parsed mark: the TunerEvent with its strings by value (ids are assigned by the writer).
struct TunerMark {
  traces::TunerEvent event;  // tuner_class / kernel ids unset
  std::string tuner_class;
  std::string kernel;
};

// Two more marks, from the probes: a thread's name as the program knows it (Python thread
// names), and a lock taken through the probe's lock wrapper.
//   rerace:thread name=ThreadPoolExecutor-0_3
//   rerace:lock kind=acquire lock=0x7f3a12 name=autotune
inline constexpr std::string_view kThreadPrefix = "rerace:thread ";
inline constexpr std::string_view kLockPrefix = "rerace:lock ";

struct LockMark {
  traces::LockKind kind = traces::LockKind::kAcquire;
  uint64_t lock = 0;
  std::string name;
};

bool IsThreadMark(std::string_view text);
bool IsLockMark(std::string_view text);
Result<std::string> ParseThreadMark(std::string_view text);
Result<LockMark> ParseLockMark(std::string_view text);

bool IsTunerMark(std::string_view text);
std::string EncodeTunerMark(const TunerMark& m);
// Error (exit 65) names the field and what was expected.
Result<TunerMark> ParseTunerMark(std::string_view text);

}  // namespace rerace::recorder
