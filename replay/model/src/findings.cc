// replay/model/src/findings.cc: questions about a run's findings (which kinds there are, whether a
// run hits one, the first of a kind, an error that is not a finding) and about races.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "rerace/replay/model/result.h"

namespace rerace::replay {

std::string ReplayResult::Signature() const {
  std::set<std::string> parts;
  for (const Finding& f : findings) parts.insert(f.code + "@" + f.where);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " + ") + p;
  return out;
}

const std::vector<std::string>& FailureKinds() {
  static const std::vector<std::string> kinds = {
      // First: a patch no call entered (python engine) makes every other finding one of code
      // the patch did not change.
      "patch-not-reached",
      "wrong-restore", "missed-restore", "config-mismatch", "in-param-not-in-cache",
      "restore-shape-mismatch", "nargs-none",
      "deadlock", "step-bound"};
  return kinds;
}

bool Hits(const ReplayResult& r, const std::string& kind) {
  // A bug in rerace or a schedule that does not fit always counts: RunError reports it.
  return FirstOf(r, kind) != nullptr || RunError(r).has_value();
}

bool IsExceptionName(const std::string& name) {
  if (name.empty() || name[0] < 'A' || name[0] > 'Z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool Matches(const Finding& f, const std::string& kind) {
  if (kind.empty()) return true;
  const size_t at = kind.find('@');
  const std::string what = kind.substr(0, at);
  // A silent finding raised nothing: no exception name matches it.
  const bool is = IsExceptionName(what) ? !f.silent && f.type == what : f.code == what;
  return is && (at == std::string::npos || f.where.find(kind.substr(at + 1)) != std::string::npos);
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
    if (f.code == "divergence") {
      // The real code's schedule depends on its patches too: this run's are named (a raw rs1:
      // line has no header to say which made it).
      const bool real = r.engine.rfind("python", 0) == 0;
      return Error{fmt::format("the schedule diverges from this program at step {}: {} (it was "
                               "made for another trace, fix, {} or --reps{}: replay it with the "
                               "options its header names)",
                               f.step, f.message, real ? "patch, engine" : "model",
                               real ? "; this run is " + r.engine : ""),
                   kExitDataError};
    }
  }
  return std::nullopt;
}

}  // namespace rerace::replay
