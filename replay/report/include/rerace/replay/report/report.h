// rerace/replay/report/report.h: one run's report, as `rerace replay` prints it: the text
// (the failure first, as Python raised it, then in rerace's words; each involved thread's last
// steps; the simulated step time; warnings; how to replay it) and the JSON, and the races a
// run's happens-before detection found.
//
// Plain functions of their arguments: safe to call from any thread; no seeded randomness.
#pragma once

#include <string>
#include <vector>

#include "rerace/replay/model/program.h"
#include "rerace/replay/model/result.h"
#include "rerace/sim/race_detector.h"

namespace rerace::replay {

// The text report: the failure first (as Python raised it, then in rerace's words), each
// involved thread's last steps, the simulated step time, warnings, how to replay it.
std::string FormatReport(const ReplayResult& r, const Program& p, const std::string& replay_hint);
// With `with_races`, "races" is an array (RacesJson), else null. The object has the same keys
// under both engines (docs/JSON.md); a command that prints it at the top adds JsonHeader.
std::string FormatJson(const ReplayResult& r, const Program& p, bool with_races = false);
std::string RacesJson(const std::vector<sim::Race>& races);
// The races of a run, one per line, each with the failures of `involved` that touch either
// access's source line.
std::string FormatRaces(const std::vector<sim::Race>& races, const std::vector<Finding>& involved);

}  // namespace rerace::replay
