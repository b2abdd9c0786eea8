// replay/model/src/program.cc: trace → programs.
#include "rerace/replay/model/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "rerace/replay/model/calibrate.h"
#include "rerace/replay/model/id_bits.h"
#include "program_builder.h"

#include "rerace/traces/reader.h"

namespace rerace::replay {

using namespace rerace::traces;

namespace {

// Memory operations with a correlation id kept by the first pass before it gives up streaming.
constexpr size_t kMaxMemOpIds = size_t{1} << 20;

// ReadProgram's first pass: the final threads, which launches get a GPU time, each stream's
// window (program_builder.h), and whether the trace fits the deferred build.
struct Survey {
  std::vector<Thread> threads;
  detail::IdBits timed;                   // launches with a timed activity
  detail::StreamWindows windows;
  bool fits = true;
};

// Per device with GPU work on two streams or more, per stream: the span of the other streams'
// work (the first start, the last end), from each stream's span.
detail::StreamWindows WindowsOf(const std::map<std::pair<uint32_t, uint64_t>, std::pair<uint64_t, uint64_t>>& spans) {
  detail::StreamWindows out;
  for (const auto& [key, span] : spans) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& [other, o] : spans) {
      if (other.first != key.first || other.second == key.second) continue;
      lo = std::min(lo, o.first);
      hi = std::max(hi, o.second);
    }
    if (lo < hi) out[key] = {lo, hi};
  }
  return out;
}

Result<Survey> SurveyTrace(const std::string& path) {
  Survey s;
  detail::IdBits launched;
  std::unordered_set<uint32_t> memops;
  // Launches whose timed activity has not come: correlation → device, stream; the GPU work's
  // span per device and stream.
  std::unordered_map<uint32_t, std::pair<uint32_t, uint64_t>> waiting;
  std::map<std::pair<uint32_t, uint64_t>, std::pair<uint64_t, uint64_t>> spans;
  auto read = ForEachChunk(path, [&](const Trace& meta, const std::vector<Event>& events,
                                     const std::vector<TunerEvent>&) -> Result<void> {
    if (!s.fits) return {};  // read on for the reader's checks only
    for (const Event& e : events) {
      if (e.kind == EventKind::kLaunch) {
        launched.Set(e.correlation);
        if (memops.count(e.correlation) != 0) s.fits = false;
        const LaunchShape& sh = meta.shapes[e.shape];
        waiting[e.correlation] = {sh.device, sh.stream};
      } else if (e.kind == EventKind::kMemOp) {
        if (launched.Test(e.correlation)) s.fits = false;
        memops.insert(e.correlation);
        if (memops.size() > kMaxMemOpIds) s.fits = false;
      } else if (e.kind == EventKind::kActivity && e.gpu_start_ns != 0) {
        if (s.timed.Test(e.correlation)) s.fits = false;  // a second timing: the last one counts
        s.timed.Set(e.correlation);
        const auto it = waiting.find(e.correlation);
        if (it == waiting.end()) continue;
        if (e.gpu_end_ns > e.gpu_start_ns) {
          auto [span, fresh] = spans.try_emplace(it->second, e.gpu_start_ns, e.gpu_end_ns);
          span->second.first = std::min(span->second.first, e.gpu_start_ns);
          span->second.second = std::max(span->second.second, e.gpu_end_ns);
        }
        waiting.erase(it);
      }
    }
    if (!s.fits) {
      memops.clear();
      waiting.clear();
    }
    return {};
  });
  if (!read) return read.error();
  s.threads = std::move(read->threads);
  s.windows = WindowsOf(spans);
  return s;
}

// The whole trace in memory, as before streaming: for a trace the deferred build does not fit.
Result<Program> ReadWhole(const std::string& path, traces::Trace* read) {
  auto trace = traces::ReadTrace(path);
  if (!trace) return trace.error();
  auto program = BuildProgram(*trace, path);
  if (read != nullptr) {
    trace->events.clear();
    trace->events.shrink_to_fit();
    trace->tuner_events.clear();
    trace->tuner_events.shrink_to_fit();
    *read = std::move(*trace);
  }
  return program;
}

}  // namespace

Result<Program> BuildProgram(const Trace& trace, const std::string& source) {
  std::unordered_map<uint32_t, Nanos> duration;  // kernel durations by correlation id
  for (const Event& e : trace.events)
    if (e.kind == EventKind::kActivity && e.gpu_start_ns != 0)
      duration[e.correlation] = e.gpu_end_ns - e.gpu_start_ns;
  detail::ProgramBuilder b(source, trace.threads, &duration, {});
  for (const Event& e : trace.events) {
    auto r = b.Add(e, e.kind == EventKind::kTuner ? &trace.tuner_events[e.tuner] : nullptr, trace, false);
    if (!r) return r.error();
  }
  return b.Finish(trace.truncated, detail::OverlappingDevices(trace));
}

// Streamed, in two passes over the file (program_builder.h): the first reads the threads'
// final names and which launches get a GPU time, the second builds the programs; memory: the
// programs, what the reader keeps, and the launches whose activity has not come yet.
Result<Program> ReadProgram(const std::string& path, traces::Trace* read) {
  auto survey = SurveyTrace(path);
  if (!survey) return survey.error();
  if (!survey->fits) return ReadWhole(path, read);
  detail::ProgramBuilder b(path, survey->threads, nullptr, std::move(survey->windows));
  auto streamed = ForEachChunk(path, [&](const Trace& meta, const std::vector<Event>& events,
                                         const std::vector<TunerEvent>& tuners) -> Result<void> {
    for (const Event& e : events) {
      if (e.thread >= survey->threads.size())
        return Error{fmt::format("{}: the file changed while it was read (event {} names thread {})",
                                 path, e.seq, e.thread),
                     kExitDataError};
      auto r = b.Add(e, e.kind == EventKind::kTuner ? &tuners[e.tuner] : nullptr, meta,
                     e.kind == EventKind::kLaunch && survey->timed.Test(e.correlation));
      if (!r) return r.error();
    }
    return {};
  });
  if (!streamed) return streamed.error();
  const bool truncated = streamed->truncated;
  if (read != nullptr) *read = std::move(*streamed);
  return b.Finish(truncated, {});
}

std::vector<std::string> PatchedParts(const Program& p) {
  auto stock = [](const std::string& module) {
    return module.rfind("triton.", 0) == 0 || module.rfind("fla.", 0) == 0 ||
           module == "rerace_probe" || module == "functools" || module == "builtins";
  };
  auto where = [](const nlohmann::json& f) {
    std::string s = f.value("module", std::string("?")) + "." + f.value("qualname", std::string("?"));
    if (f.contains("file") && f["file"].is_string())
      s += fmt::format(" ({}:{})", f["file"].get<std::string>(), f.value("line", 0));
    return s;
  };
  std::set<std::string> out;
  for (const auto& [tuner, text] : p.tuner_meta) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    for (const auto& [field, label] : {std::pair{"run", "run"}, std::pair{"autotuner_run", "Autotuner.run"},
                                       std::pair{"bench", "_bench"}}) {
      if (!j.contains(field) || !j[field].is_object()) continue;
      const nlohmann::json& f = j[field];
      const std::string module = f.value("module", std::string());
      if (!module.empty() && !stock(module))
        out.insert(fmt::format("{} resolved to {}", label, where(f)));
    }
    if (j.contains("fields") && j["fields"].is_object())
      for (const auto& [field, d] : j["fields"].items()) {
        if (!d.is_object()) continue;
        std::string how = d.value("kind", std::string("descriptor"));
        if (d.contains("fget") && d["fget"].is_object()) how += " " + where(d["fget"]);
        out.insert(fmt::format("self.{} is a {}", field, how));
      }
  }
  return {out.begin(), out.end()};
}

std::vector<TunerCall::Reach> ReachOfDetail(const std::string& detail) {
  std::vector<TunerCall::Reach> out;
  if (detail.empty() || detail.front() != '{') return out;
  const nlohmann::json j = nlohmann::json::parse(detail, nullptr, false);
  if (!j.is_object() || !j.contains("reach") || !j["reach"].is_object()) return out;
  for (const auto& [name, r] : j["reach"].items()) {
    if (!r.is_object()) continue;
    TunerCall::Reach x;
    x.name = name;
    x.patch = r.value("patch", std::string("?"));
    x.by = r.value("by", std::string("?"));
    x.on_stack = r.value("on_stack", false);
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<std::string> ReachLines(const std::vector<TunerCall::Reach>& entries) {
  struct Count {
    uint32_t calls = 0;
    uint32_t on_stack = 0;
    std::string bypass;  // the first call's caller that went around it
  };
  std::map<std::pair<std::string, std::string>, Count> by;
  for (const TunerCall::Reach& r : entries) {
    Count& n = by[{r.name, r.patch}];
    ++n.calls;
    if (r.on_stack) ++n.on_stack;
    else if (n.bypass.empty()) n.bypass = r.by;
  }
  std::vector<std::string> out;
  for (const auto& [k, n] : by) {
    std::string line = fmt::format("your {} replacement ({}) was on the stack of {} of {} recorded "
                                   "calls", k.first, k.second, n.on_stack, n.calls);
    if (!n.bypass.empty())
      line += fmt::format(": {} reached {} without it", n.bypass, k.first);
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> RecordedReach(const Program& p) {
  std::vector<TunerCall::Reach> all;
  for (const TunerCall& c : p.calls) all.insert(all.end(), c.reach.begin(), c.reach.end());
  return ReachLines(all);
}

}  // namespace rerace::replay
