// rerace/replay/report/recorded.h: what `replay --recorded` says about itself: whether the replay in
// the recorded order did what the recorded run did.
//
// A recording holds, per thread, the exceptions that left its tuner calls (type, message and
// the innermost frame, as the probe recorded them). The replay in the recorded order holds the
// findings of the model. The comparison takes the workers (threads that call a tuner; not a
// main thread that only launched) one by one: a worker matches when it raised the same
// exceptions in the same order, with the same type, message and place (file:line), or nothing
// in both. Silent findings (the real program raises nothing) are not compared: no recording
// holds them. The replay reproduces the recording when every worker matches and the model
// followed the recorded order to its end (`left_recording` 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rerace/replay/model/program.h"
#include "rerace/replay/model/result.h"
#include "rerace/replay/report/report.h"

namespace rerace::replay {

// One exception as recorded or as replayed: "KeyError: 'y_ptr' at autotuner.py:74".
struct Raised {
  std::string type, message, where;
};

struct WorkerComparison {
  std::string thread;               // the recorded thread's name, "NAME (thread I)" where names repeat
  std::vector<Raised> recorded;     // in the thread's order
  std::vector<Raised> replayed;     // the model's findings that raise, by step
  // What differs, in words: "threads" (raised in one run, not in the other, or a different
  // number of times), "type", "message", "place"; empty when the worker matches.
  std::vector<std::string> differs;
  bool matches() const { return differs.empty(); }
};

struct RecordedComparison {
  std::vector<WorkerComparison> workers;  // in the recording's thread order
  uint64_t left_recording = 0;
  uint32_t recorded_failed = 0;    // workers whose recorded run raised
  uint32_t reproduced = 0;         // of those, the workers that match
  uint32_t matching = 0;           // workers that match (failed or not)
  // The model raised in a thread the recording does not have (a fix's helper thread).
  std::vector<WorkerComparison> extra;
  bool matches() const {
    return left_recording == 0 && extra.empty() && matching == workers.size();
  }
};

// Compares the replay `r` of `p` in the recorded order with what `p` recorded.
RecordedComparison CompareRecorded(const ReplayResult& r, const Program& p);
// "recorded comparison: reproduces the recorded failures: 7 of 7 workers, same type, message
// and place; ... (left_recording 0)", or the worker lines that differ; ends with a newline.
std::string FormatRecordedComparison(const RecordedComparison& c);
// {"matches":..,"workers":..,"recorded_failed":..,"reproduced":..,"per_worker":[..]}
std::string RecordedComparisonJson(const RecordedComparison& c);

}  // namespace rerace::replay
