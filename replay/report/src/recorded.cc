// replay/report/src/recorded.cc: the recorded run against its replay in the recorded order
// (rerace/replay/report/recorded.h).
#include "rerace/replay/report/recorded.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace rerace::replay {

namespace {

// "file:line" from "triton/runtime/autotuner.py:74 _post_hook" or "... :74 in _post_hook":
// the recording names the innermost frame's function one way, the model another.
std::string Place(const std::string& where) {
  const size_t sp = where.find(' ');
  return sp == std::string::npos ? where : where.substr(0, sp);
}

std::string Describe(const Raised& e) {
  return fmt::format("{}: {}{}", e.type, e.message, e.where.empty() ? "" : " at " + e.where);
}

std::string DescribeAll(const std::vector<Raised>& v) {
  if (v.empty()) return "nothing";
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "; " : "") + Describe(v[i]);
  return out;
}

void Diff(WorkerComparison& w) {
  if (w.recorded.size() != w.replayed.size()) {
    w.differs.push_back("threads");
    return;
  }
  bool type = false, message = false, place = false;
  for (size_t i = 0; i < w.recorded.size(); ++i) {
    type |= w.recorded[i].type != w.replayed[i].type;
    message |= w.recorded[i].message != w.replayed[i].message;
    place |= Place(w.recorded[i].where) != Place(w.replayed[i].where);
  }
  if (type) w.differs.push_back("type");
  if (message) w.differs.push_back("message");
  if (place) w.differs.push_back("place");
}

std::string Plural(uint32_t n, const char* one) {
  return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s");
}

}  // namespace

RecordedComparison CompareRecorded(const ReplayResult& r, const Program& p) {
  RecordedComparison c;
  c.left_recording = r.left_recording;
  // By replay thread index, not name: the threads of a Python program are often all named
  // after the process ("python3"), and each must be held against its own recorded run.
  std::map<uint32_t, std::pair<std::string, std::vector<Raised>>> replayed;
  for (const Finding& f : r.findings)
    if (!f.silent && f.thread != sim::kNoThread) {
      auto& [name, raised] = replayed[f.thread];
      name = f.thread_name;
      raised.push_back({f.type, f.message, f.where});
    }
  std::map<std::string, uint32_t> named;  // how many recorded threads bear each name
  for (const ThreadProgram& t : p.threads) ++named[t.name];
  for (uint32_t i = 0; i < p.threads.size(); ++i) {
    const ThreadProgram& t = p.threads[i];
    const bool worker = std::any_of(t.ops.begin(), t.ops.end(),
                                    [](const Op& op) { return op.kind == Op::Kind::kTunerCall; });
    if (!worker && t.failures.empty()) {
      replayed.erase(i);  // a thread the model ran that calls no tuner raises nothing
      continue;
    }
    WorkerComparison w;
    w.thread = named[t.name] > 1 ? fmt::format("{} (thread {})", t.name, i) : t.name;
    for (const RecordedFailure& f : t.failures) w.recorded.push_back({f.type, f.message, f.where});
    if (auto it = replayed.find(i); it != replayed.end()) {
      w.replayed = std::move(it->second.second);
      replayed.erase(it);
    }
    Diff(w);
    c.recorded_failed += !w.recorded.empty();
    c.reproduced += !w.recorded.empty() && w.matches();
    c.matching += w.matches();
    c.workers.push_back(std::move(w));
  }
  for (auto& [index, named_raised] : replayed) {
    WorkerComparison w;
    w.thread = named_raised.first;
    w.replayed = std::move(named_raised.second);
    w.differs.push_back("threads");
    c.extra.push_back(std::move(w));
  }
  return c;
}

std::string FormatRecordedComparison(const RecordedComparison& c) {
  const auto n = static_cast<uint32_t>(c.workers.size());
  const uint32_t ok = n - c.recorded_failed;
  std::string out = "recorded comparison: ";
  if (c.matches()) {
    if (c.recorded_failed == 0)
      out += fmt::format("reproduces the recorded run: {} of {} ok, as recorded", n,
                         Plural(n, "worker"));
    else
      out += fmt::format("reproduces the recorded failures: {} of {}, same type, message and "
                         "place{}",
                         c.reproduced, Plural(c.recorded_failed, "worker"),
                         ok ? fmt::format("; the other {} ok in both", Plural(ok, "worker")) : "");
    if (c.left_recording)
      out += fmt::format("; the model left the recording at {} transitions", c.left_recording);
    return out + "\n";
  }
  out += fmt::format("differs from the recording: {} of {} match", c.matching, Plural(n, "worker"));
  if (c.recorded_failed)
    out += fmt::format(" ({} of {} that raised reproduced)", c.reproduced, c.recorded_failed);
  if (c.left_recording)
    out += fmt::format("; the model left the recording at {} transitions", c.left_recording);
  out += "\n";
  auto line = [&](const WorkerComparison& w, const char* what) {
    std::string d;
    for (const std::string& x : w.differs) d += (d.empty() ? "" : ", ") + x;
    out += fmt::format("  differs: {} {} ({}): recorded {}; replayed {}\n", what, w.thread, d,
                       DescribeAll(w.recorded), DescribeAll(w.replayed));
  };
  for (const WorkerComparison& w : c.workers)
    if (!w.matches()) line(w, "worker");
  for (const WorkerComparison& w : c.extra) line(w, "thread not in the recording");
  return out;
}

std::string RecordedComparisonJson(const RecordedComparison& c) {
  auto list = [](const std::vector<Raised>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i)
      out += fmt::format("{}{{\"type\":\"{}\",\"message\":\"{}\",\"where\":\"{}\"}}", i ? "," : "",
                         JsonEscape(v[i].type), JsonEscape(v[i].message), JsonEscape(v[i].where));
    return out + "]";
  };
  auto worker = [&](const WorkerComparison& w, bool recorded) {
    std::string d;
    for (size_t i = 0; i < w.differs.size(); ++i) d += fmt::format("{}\"{}\"", i ? "," : "", w.differs[i]);
    return fmt::format("{{\"thread\":\"{}\",\"in_recording\":{},\"matches\":{},\"differs\":[{}],"
                       "\"recorded\":{},\"replayed\":{}}}",
                       JsonEscape(w.thread), recorded ? "true" : "false",
                       w.matches() ? "true" : "false", d, list(w.recorded), list(w.replayed));
  };
  std::string out = fmt::format(
      "{{\"matches\":{},\"workers\":{},\"matching\":{},\"recorded_failed\":{},\"reproduced\":{},"
      "\"per_worker\":[",
      c.matches() ? "true" : "false", c.workers.size(), c.matching, c.recorded_failed, c.reproduced);
  bool first = true;
  for (const WorkerComparison& w : c.workers) {
    out += (first ? "" : ",") + worker(w, true);
    first = false;
  }
  for (const WorkerComparison& w : c.extra) {
    out += (first ? "" : ",") + worker(w, false);
    first = false;
  }
  return out + "]}";
}

}  // namespace rerace::replay
