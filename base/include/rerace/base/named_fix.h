// rerace/base/named_fix.h: the named fixes, one table for every place that knows them.
//
// The replay side (replay/fix.h: what each name does to the model) and the native autotuner
// (kernels/autotuner.h: the switches the real tuner implements) parse the same names from this
// table, so a name cannot exist in one and not the other.
//
//   const NamedFix* f = FindNamedFix("lock-run");  // null for an unknown name
//   switch (f->id) { case NamedFixId::kLockRun: ... }
//
// Header only, no dependencies. Constant data: safe from any thread.
#pragma once

#include <string_view>

namespace rerace {

enum class NamedFixId {
  kNone,
  kLockRun,
  kTlsNargs,
  kCallLocal,
  kLockKeyFuture,
  kPerThreadTuner,
  kPrewarm,
  kOwnerThread,
  kTlsState,
  kLockKeyEvent,
};

struct NamedFix {
  NamedFixId id;
  const char* name;        // as typed after --fix, and in a composition "a+b"
  const char* stands_for;  // one line for --help and `rerace fixes`
};

inline constexpr NamedFix kNamedFixes[] = {
    {.id = NamedFixId::kNone, .name = "none", .stands_for = "the autotuner as shipped (Triton 3.6)"},
    {.id = NamedFixId::kLockRun, .name = "lock-run",
     .stands_for = "one global lock around Autotuner.run"},
    {.id = NamedFixId::kTlsNargs, .name = "tls-nargs",
     .stands_for = "self.nargs thread-local, as proposed in triton-lang/triton issue 11494"},
    {.id = NamedFixId::kCallLocal, .name = "call-local",
     .stands_for = "per-call state passed explicitly (nargs, restore_copies), the design of an "
                   "unmerged upstream Triton branch ('call-local'; no PR number confirmed)"},
    {.id = NamedFixId::kLockKeyFuture, .name = "lock-key-future",
     .stands_for = "a lock plus a per-key future for cache population, as in Triton PR 8437"},
    {.id = NamedFixId::kPerThreadTuner, .name = "per-thread-tuner",
     .stands_for = "each thread its own copy of the autotuner"},
    {.id = NamedFixId::kPrewarm, .name = "prewarm",
     .stands_for = "tune every key serially before the threads start"},
    {.id = NamedFixId::kOwnerThread, .name = "owner-thread",
     .stands_for = "one thread per GPU owns tuning and launches; the others send it work"},
    {.id = NamedFixId::kTlsState, .name = "tls-state",
     .stands_for = "self.nargs and self.restore_copies thread-local by property (the spirit of "
                   "Triton PR 11509; fixes/tls_state.py)"},
    {.id = NamedFixId::kLockKeyEvent, .name = "lock-key-event",
     .stands_for = "a lock plus a per-key event around Autotuner.run: the first thread to miss "
                   "a key tunes it, the others wait, then run with it cached (PR 8437's design; "
                   "fixes/lock_key_event.py)"},
};

// The entry named `name`, or null.
inline const NamedFix* FindNamedFix(std::string_view name) {
  for (const NamedFix& f : kNamedFixes)
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace rerace
