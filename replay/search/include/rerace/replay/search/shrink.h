// rerace/replay/search/shrink.h: reduce a failing schedule before it is saved and reported.
//
// A failing schedule is cut to the shortest prefix that, followed by a run without preemption
// (the running thread goes on while it can; then the lowest-numbered runnable thread), still
// gives the same first failure (code and source line). The result has preemptions only in
// that prefix, and usually far fewer. Each candidate is one replay; the search tries every
// prefix length from the shortest, so it costs at most one replay per step of the original.
//
// Deterministic; single-threaded.
#pragma once

#include <functional>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"

namespace rerace::replay {

struct Shrunk {
  ReplayResult result;      // the shrunk run (the original if nothing shorter fails alike)
  uint64_t preemptions_before = 0, preemptions_after = 0;
  uint64_t steps_before = 0, steps_after = 0;  // steps up to the first failure
  uint64_t tries = 0;
  // Whether `result`'s first failure is the one asked for (false only when that failure was
  // not the first in `failing` and no shorter prefix made it first: `result` is then `failing`).
  bool first_matches = true;
  // Whether `stop` ended the search before it was done (a time budget): `result` is then the
  // shortest found so far, or `failing`.
  bool stopped = false;
};

// Shrinks towards the first finding of `kind` in `failing` (its first finding when `kind` is
// empty) becoming the run's first failure: what fuzz saves for each distinct failure and what
// `--failure KIND` asks for.
Shrunk ShrinkFailure(Replayer& replayer, const ReplayResult& failing, const std::string& kind = "");
// The first finding of `code` at `where` in `failing`, made the first failure where a prefix can.
// `stop`, when given, is asked before each try; true ends the search where it is (fuzz --time:
// the budget is the command's, shrinking included).
Shrunk ShrinkTo(Replayer& replayer, const ReplayResult& failing, const Finding& target,
                const std::function<bool()>& stop = {});
std::string DescribeShrink(const Shrunk& s);

}  // namespace rerace::replay
