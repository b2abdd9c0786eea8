// rerace/replay/model/fix.h: fixes, as variants of a tuner model.
//
// A fix is what a team would patch into the autotuner, expressed as what it changes in the
// model: which shared fields become thread-local (or call-local), which regions of the
// tuner take which lock, and a few structural changes (a per-key future, a tuner per thread,
// a serial warm-up, one owner thread per GPU). Named fixes stand for real patches; they
// compose ("tls-nargs+lock-run"); a user can describe one ("local=nargs;lock=hooks:L").
//
//   none              the autotuner as shipped
//   lock-run          one global lock around Autotuner.run
//   tls-nargs         self.nargs thread-local (the fix proposed in triton-lang/triton#11494)
//   call-local        per-call state passed explicitly: nargs, restore_copies and the call's
//                     full_nargs live in the call (the design of an unmerged upstream Triton
//                     branch, "call-local": an RLock around cold misses, thread-local
//                     restore_copies, nargs passed into _bench; its PR number is unconfirmed)
//   lock-key-future   a lock plus a per-key future for cache population: one thread tunes a
//                     key, the others wait for its result (as in PR 8437)
//   per-thread-tuner  each thread its own copy of the tuner
//   prewarm           every key tuned serially before the threads start
//   owner-thread      one thread per GPU owns tuning and launches; the others send it work
//   tls-state         nargs and restore_copies thread-local (fixes/tls_state.py)
//   lock-key-event    a lock plus a per-key event around all of Autotuner.run: the first thread
//                     to miss its key runs it (tunes), the others wait for the event, then run
//                     with the key cached (fixes/lock_key_event.py)
//
// Plain value; no thread-safety of its own.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "rerace/base/result.h"

namespace rerace::replay {

// The tuner's shared fields (Triton's names).
enum class Field : uint8_t { kNargs, kCache, kRestoreCopies, kBestConfig, kConfigsTimings, kBenchTime };
const char* FieldName(Field f);

// Regions of the tuner that a fix may put under a lock.
enum class Region : uint8_t {
  kRun,        // all of Autotuner.run
  kBenchmark,  // the benchmark() closure: every config's _bench and the cache update
  kBench,      // one config's _bench
  kHooks,      // each pre and post hook
  kCache,      // the cache check and population
};
const char* RegionName(Region r);

struct Fix {
  std::string name = "none";
  std::set<Field> thread_local_fields;   // one value per thread
  std::vector<std::pair<Region, std::string>> locks;  // region → lock name (same name, same lock)
  bool per_key_future = false;
  bool per_key_event = false;  // lock-key-event
  bool per_thread_tuner = false;
  bool prewarm = false;
  bool owner_thread = false;

  bool IsLocal(Field f) const { return thread_local_fields.count(f) != 0; }
  // Whether the fix changes the tuner at all (false for "none"). A new kind of fix adds its
  // field here too: the fix fuzzer holds every parsed description but "none" to this.
  bool ChangesModel() const {
    return !thread_local_fields.empty() || !locks.empty() || per_key_future || per_key_event ||
           per_thread_tuner || prewarm || owner_thread;
  }
  // The lock name for a region, or "" if none.
  std::string LockFor(Region r) const;
};

// Parses "none", a named fix, several joined by '+', or a description:
//   local=nargs,restore_copies;lock=run:G,hooks:H;future;per-thread;prewarm;owner
// Unknown names give an error that lists the known ones (exit 64).
Result<Fix> ParseFix(const std::string& text);
const std::vector<std::string>& FixNames();
// One line per named fix: the name and the real-world patch it stands for.
std::string DescribeFixes();

}  // namespace rerace::replay
