// replay/src/findings.cc: questions about a run's findings (which kinds there are, whether a
// run hits one, the first of a kind, an error that is not a finding) and about races.
#include <fmt/format.h>

#include <algorithm>

#include "rerace/replay/replay.h"

namespace rerace::replay {

const std::vector<std::string>& FailureKinds() {
  static const std::vector<std::string> kinds = {
      "wrong-restore", "missed-restore", "config-mismatch", "in-param-not-in-cache",
      "restore-shape-mismatch", "nargs-none",
      "deadlock", "step-bound"};
  return kinds;
}

bool Hits(const ReplayResult& r, const std::string& kind) {
  // A bug in rerace or a schedule that does not fit always counts: RunError reports it.
  return FirstOf(r, kind) != nullptr || RunError(r).has_value();
}

bool Matches(const Finding& f, const std::string& kind) {
  if (kind.empty()) return true;
  const size_t at = kind.find('@');
  if (at == std::string::npos) return f.code == kind;
  return f.code == kind.substr(0, at) && f.where.find(kind.substr(at + 1)) != std::string::npos;
}

const Finding* FirstOf(const ReplayResult& r, const std::string& kind) {
  for (const Finding& f : r.findings)
    if (Matches(f, kind)) return &f;
  return nullptr;
}

uint32_t WorkerThreads(const Program& p) {
  uint32_t n = 0;
  for (const ThreadProgram& t : p.threads)
    n += std::any_of(t.ops.begin(), t.ops.end(),
                     [](const Op& op) { return op.kind == Op::Kind::kTunerCall; });
  return n;
}

void MergeRaces(std::vector<sim::Race>& into, const std::vector<sim::Race>& from) {
  for (const sim::Race& r : from) {
    const bool seen = std::any_of(into.begin(), into.end(), [&](const sim::Race& x) {
      return x.object_name == r.object_name && x.first.label == r.first.label &&
             x.second.label == r.second.label;
    });
    if (!seen) into.push_back(r);
  }
}

std::optional<Error> RunError(const ReplayResult& r) {
  for (const Finding& f : r.findings) {
    if (f.code == "internal")
      return Error{fmt::format("internal error: an exception escaped the {} model in thread {} ({}) "
                               "at step {}: {}: {}{} (a bug in rerace: please report it with the "
                               "trace and the command)",
                               r.model, f.thread, f.thread_name, f.step, f.type, f.message,
                               f.where.empty() ? "" : " at " + f.where),
                   kExitInternal};
    if (f.code == "divergence")
      return Error{fmt::format("the schedule diverges from this program at step {}: {} (it was "
                               "made for another trace, fix, model or --reps: replay it with the "
                               "options its header names)",
                               f.step, f.message),
                   kExitDataError};
  }
  return std::nullopt;
}

}  // namespace rerace::replay
