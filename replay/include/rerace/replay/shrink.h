// rerace/replay/shrink.h: reduce a failing schedule before it is saved and reported.
//
// A failing schedule is cut to the shortest prefix that, followed by a run without preemption
// (the running thread goes on while it can; then the lowest-numbered runnable thread), still
// gives the same first failure (code and source line). The result has preemptions only in
// that prefix, and usually far fewer. Each candidate is one replay; the search tries every
// prefix length from the shortest, so it costs at most one replay per step of the original.
//
// Deterministic; single-threaded.
#pragma once

#include "rerace/replay/replay.h"

namespace rerace::replay {

struct Shrunk {
  ReplayResult result;      // the shrunk run (the original if nothing shorter fails alike)
  uint64_t preemptions_before = 0, preemptions_after = 0;
  uint64_t steps_before = 0, steps_after = 0;  // steps up to the first failure
  uint64_t tries = 0;
};

Shrunk ShrinkFailure(Replayer& replayer, const ReplayResult& failing);
std::string DescribeShrink(const Shrunk& s);

}  // namespace rerace::replay
