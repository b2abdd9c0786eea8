// replay/src/program.cc: trace → programs.
#include "rerace/replay/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

namespace rerace::replay {

using namespace rerace::traces;

namespace {
Nanos MsToNs(double ms) {
  if (!(ms > 0)) return 0;  // also NaN and inf (a config that failed to compile)
  const double ns = ms * 1e6;
  return ns > 1e15 ? static_cast<Nanos>(1e15) : static_cast<Nanos>(ns);
}
}  // namespace

Result<Program> BuildProgram(const Trace& trace, const std::string& source) {
  Program p;
  p.source = source;
  p.truncated = trace.truncated;
  if (!trace.events.empty())
    p.recorded_span_ns = trace.events.back().cpu_ns - trace.events.front().cpu_ns;

  // Kernel durations by correlation id.
  std::unordered_map<uint32_t, Nanos> duration;
  for (const Event& e : trace.events)
    if (e.kind == EventKind::kActivity && e.gpu_start_ns != 0)
      duration[e.correlation] = e.gpu_end_ns - e.gpu_start_ns;

  // One program per recorded thread, in the trace's thread order: replay's thread ids are the
  // trace's (what `rerace show` prints). A thread that did nothing replay models just ends.
  for (const Thread& t : trace.threads) {
    ThreadProgram tp;
    tp.thread = t.id;
    tp.name = t.name;
    p.threads.push_back(std::move(tp));
  }
  auto program_of = [&](uint32_t t) -> ThreadProgram& { return p.threads[t]; };

  std::vector<int64_t> open_call(trace.threads.size(), -1);  // per thread: call being recorded
  auto bad = [&](const Event& e, const std::string& what) {
    return Error{fmt::format("{}: event {} (thread {}): {}", source, e.seq, e.thread, what),
                 kExitDataError};
  };

  for (const Event& e : trace.events) {
    switch (e.kind) {
      case EventKind::kTuner: {
        const TunerEvent& te = trace.tuner_events[e.tuner];
        ThreadProgram& tp = program_of(e.thread);
        tp.transitions.push_back({te.kind, te.config, e.seq, te.field});
        if (te.kind == TunerKind::kCallBegin) {
          if (te.configs.empty()) return bad(e, "a tuner call with no configs");
          if (!te.detail.empty() && te.detail.front() == '{') p.tuner_meta.try_emplace(te.tuner, te.detail);
          TunerCall c;
          c.tuner = te.tuner;
          c.tuner_class = trace.Str(te.tuner_class);
          c.kernel = trace.Str(te.kernel);
          c.key = te.key;
          c.configs = te.configs;
          c.arg_names = te.arg_names;
          c.restore_value = te.restore_value;
          c.reset_to_zero = te.reset_to_zero;
          c.bench_ns.assign(c.configs.size(), 0);
          c.bench_reps.assign(c.configs.size(), 0);
          if (std::find(p.tuner_classes.begin(), p.tuner_classes.end(), c.tuner_class) ==
              p.tuner_classes.end())
            p.tuner_classes.push_back(c.tuner_class);
          open_call[e.thread] = static_cast<int64_t>(p.calls.size());
          Op op;
          op.kind = Op::Kind::kTunerCall;
          op.seq = e.seq;
          op.call = static_cast<uint32_t>(p.calls.size());
          tp.ops.push_back(op);
          p.calls.push_back(std::move(c));
          break;
        }
        if (open_call[e.thread] < 0) {
          // Field accesses outside a call: the tuner's constructor (self.cache = {}).
          if (te.kind == TunerKind::kFieldRead || te.kind == TunerKind::kFieldWrite) break;
          if (te.kind == TunerKind::kError) {
            tp.failures.push_back({e.seq, te.error_type, te.error_message, te.error_where});
            break;
          }
          return bad(e, fmt::format("tuner transition '{}' outside any call (no call-begin before it)",
                                    TunerKindName(te.kind)));
        }
        TunerCall& c = p.calls[static_cast<size_t>(open_call[e.thread])];
        if (te.config >= static_cast<int32_t>(c.configs.size()) && te.kind != TunerKind::kPrune)
          return bad(e, fmt::format("config index {} of a call with {} configs", te.config,
                                    c.configs.size()));
        if (te.kind == TunerKind::kBenchEnd && te.config >= 0) {
          const auto i = static_cast<size_t>(te.config);
          if (!te.timings_ms.empty()) c.bench_ns[i] = MsToNs(te.timings_ms[0]);
          c.bench_reps[i] = te.repetitions;
        }
        if (te.kind == TunerKind::kError) {
          tp.failures.push_back({e.seq, te.error_type, te.error_message, te.error_where});
          open_call[e.thread] = -1;
        }
        if (te.kind == TunerKind::kCallEnd) open_call[e.thread] = -1;
        break;
      }
      case EventKind::kLaunch: {
        const LaunchShape& sh = trace.shapes[e.shape];
        ThreadProgram& tp = program_of(e.thread);
        const auto it = duration.find(e.correlation);
        const Nanos d = it == duration.end() ? 0 : it->second;
        if (open_call[e.thread] >= 0) {
          // A launch inside a call: the final launch's time, and the call's device and stream.
          TunerCall& c = p.calls[static_cast<size_t>(open_call[e.thread])];
          c.device = sh.device;
          c.stream = sh.stream;
          if (!tp.transitions.empty() && tp.transitions.back().kind == TunerKind::kLaunch)
            c.launch_ns = d;
          break;
        }
        Op op;
        op.kind = Op::Kind::kLaunch;
        op.seq = e.seq;
        op.device = sh.device;
        op.stream = sh.stream;
        op.duration = d;
        op.kernel = trace.Str(sh.kernel);
        tp.ops.push_back(op);
        break;
      }
      case EventKind::kSync: {
        if (e.sync == SyncKind::kEventRecord || e.sync == SyncKind::kStreamWaitEvent) break;
        if (open_call[e.thread] >= 0) break;  // do_bench's own synchronizations
        Op op;
        op.kind = Op::Kind::kSync;
        op.seq = e.seq;
        op.sync = e.sync;
        op.device = e.device;
        op.stream = e.stream;
        program_of(e.thread).ops.push_back(op);
        break;
      }
      case EventKind::kLock: {
        Op op;
        op.kind = e.lock == LockKind::kAcquire ? Op::Kind::kLockAcquire : Op::Kind::kLockRelease;
        op.seq = e.seq;
        op.lock = e.handle;
        op.lock_name = trace.Str(e.text);
        program_of(e.thread).ops.push_back(op);
        break;
      }
      case EventKind::kActivity:
      case EventKind::kMemOp:
      case EventKind::kNvtx:
        break;
    }
  }
  // Configs a thread never benchmarked itself (it found the key tuned) take the time another
  // thread measured for the same tuner, key and config, so that a schedule in which this
  // thread does benchmark has a cost.
  std::map<std::tuple<uint64_t, std::string, size_t>, std::pair<Nanos, uint32_t>> measured;
  for (const TunerCall& c : p.calls)
    for (size_t i = 0; i < c.configs.size(); ++i)
      if (c.bench_ns[i] != 0) measured[{c.tuner, c.key, i}] = {c.bench_ns[i], c.bench_reps[i]};
  for (TunerCall& c : p.calls) {
    for (size_t i = 0; i < c.configs.size(); ++i) {
      if (c.bench_ns[i] != 0) continue;
      auto it = measured.find({c.tuner, c.key, i});
      if (it != measured.end()) {
        c.bench_ns[i] = it->second.first;
        c.bench_reps[i] = it->second.second;
      }
    }
    if (c.launch_ns == 0) {
      // No timing for the final launch: the fastest measured config's time.
      Nanos best = 0;
      for (Nanos n : c.bench_ns)
        if (n != 0 && (best == 0 || n < best)) best = n;
      c.launch_ns = best;
    }
  }
  return p;
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

}  // namespace rerace::replay
