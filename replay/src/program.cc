// replay/src/program.cc: trace → programs.
#include "rerace/replay/program.h"

#include "calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <unordered_map>

#include "rerace/traces/reader.h"

namespace rerace::replay {

using namespace rerace::traces;

namespace {
Nanos MsToNs(double ms) {
  if (!(ms > 0)) return 0;  // also NaN and inf (a config that failed to compile)
  const double ns = ms * 1e6;
  return ns > 1e15 ? static_cast<Nanos>(1e15) : static_cast<Nanos>(ns);
}
// Per thread, while building: what the calibration of the virtual CPU needs.
struct Clock {
  uint64_t last_end = 0;       // when the thread's previous op ended (its CPU time after it)
  bool charge = false;         // whether the time since last_end was the thread's own CPU
  uint64_t call_begin = 0;
  uint64_t bench_begin = 0;
  bool in_bench = false;
  Nanos bench_gpu = 0;         // GPU work launched inside the current benchmark
  Nanos bench_walls = 0;       // wall time of the current call's benchmarks
  Nanos Gap(const Event& e) const { return charge && e.cpu_ns > last_end ? e.cpu_ns - last_end : 0; }
  void End(const Event& e, bool own_cpu_after) {
    last_end = e.cpu_ns;
    charge = own_cpu_after;
  }
};
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
  p.overlapping_devices = detail::OverlappingDevices(trace);

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
  std::vector<Clock> clock(trace.threads.size());
  // Per call, per config: the benchmark's recorded wall time and GPU work (0: not benchmarked);
  // per call: its CPU time outside benchmarks (UINT64_MAX: the call did not end).
  std::vector<std::vector<std::pair<Nanos, Nanos>>> bench_seen;
  std::vector<Nanos> call_cpu;
  auto gpu_of = [&](uint32_t correlation) {
    const auto it = duration.find(correlation);
    return it == duration.end() ? Nanos{0} : it->second;
  };
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
          TunerCall c;
          if (!te.detail.empty() && te.detail.front() == '{') {
            const nlohmann::json j = nlohmann::json::parse(te.detail, nullptr, false);
            // The metadata of the tuner's first call; every call's restore_value shapes.
            if (!j.is_object() || j.contains("v")) p.tuner_meta.try_emplace(te.tuner, te.detail);
            if (j.is_object() && j.contains("restore_shapes") && j["restore_shapes"].is_array())
              for (const auto& s : j["restore_shapes"]) {
                std::vector<int64_t> shape;
                if (s.is_array())
                  for (const auto& d : s)
                    if (d.is_number_integer()) shape.push_back(d.get<int64_t>());
                c.restore_shapes.push_back(std::move(shape));
              }
          }
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
          op.cpu_before_ns = clock[e.thread].Gap(e);
          clock[e.thread].call_begin = e.cpu_ns;
          clock[e.thread].bench_walls = 0;
          clock[e.thread].in_bench = false;
          bench_seen.emplace_back(c.configs.size(), std::pair<Nanos, Nanos>{0, 0});
          call_cpu.push_back(UINT64_MAX);
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
        Clock& ck = clock[e.thread];
        const auto ci = static_cast<size_t>(open_call[e.thread]);
        if (te.kind == TunerKind::kBenchBegin) {
          ck.bench_begin = e.cpu_ns;
          ck.bench_gpu = 0;
          ck.in_bench = true;
        }
        if (te.kind == TunerKind::kBenchEnd && te.config >= 0) {
          const auto i = static_cast<size_t>(te.config);
          if (!te.timings_ms.empty()) c.bench_ns[i] = MsToNs(te.timings_ms[0]);
          c.bench_reps[i] = te.repetitions;
          if (ck.in_bench && e.cpu_ns >= ck.bench_begin) {
            bench_seen[ci][i] = {e.cpu_ns - ck.bench_begin, ck.bench_gpu};
            ck.bench_walls += e.cpu_ns - ck.bench_begin;
          }
          ck.in_bench = false;
        }
        if (te.kind == TunerKind::kError) {
          tp.failures.push_back({e.seq, te.error_type, te.error_message, te.error_where});
          open_call[e.thread] = -1;
          ck.End(e, true);
        }
        if (te.kind == TunerKind::kCallEnd) {
          open_call[e.thread] = -1;
          const Nanos wall = e.cpu_ns > ck.call_begin ? e.cpu_ns - ck.call_begin : 0;
          call_cpu[ci] = wall > ck.bench_walls ? wall - ck.bench_walls : 0;
          ck.End(e, true);
        }
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
          if (clock[e.thread].in_bench) clock[e.thread].bench_gpu += d;
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
        op.cpu_before_ns = clock[e.thread].Gap(e);
        clock[e.thread].End(e, true);  // the launch's own CPU time is in the next gap
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
        op.cpu_before_ns = clock[e.thread].Gap(e);
        clock[e.thread].End(e, false);  // recorded at entry: what follows was waiting
        program_of(e.thread).ops.push_back(op);
        break;
      }
      case EventKind::kLock: {
        Op op;
        op.kind = e.lock == LockKind::kAcquire ? Op::Kind::kLockAcquire : Op::Kind::kLockRelease;
        op.seq = e.seq;
        op.lock = e.handle;
        op.lock_name = trace.Str(e.text);
        op.cpu_before_ns = clock[e.thread].Gap(e);
        clock[e.thread].End(e, e.lock != LockKind::kAcquire);  // an acquire may have waited
        program_of(e.thread).ops.push_back(op);
        break;
      }
      case EventKind::kMemOp: {
        const Nanos d = gpu_of(e.correlation);
        if (open_call[e.thread] >= 0) {
          // do_bench's clones, copies and fills: part of the trial's GPU work.
          if (clock[e.thread].in_bench) clock[e.thread].bench_gpu += d;
          break;
        }
        if (d == 0) break;  // a host-side or untimed operation: in the CPU gaps
        Op op;
        op.kind = Op::Kind::kLaunch;
        op.seq = e.seq;
        op.device = e.device;
        op.stream = e.stream;
        op.duration = d;
        op.kernel = "(memory operation)";
        op.cpu_before_ns = clock[e.thread].Gap(e);
        clock[e.thread].End(e, false);  // a copy may wait for the device: the gap after it too
        program_of(e.thread).ops.push_back(op);
        break;
      }
      case EventKind::kActivity:
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
  detail::Calibrate(p, bench_seen, call_cpu);
  // Each thread starts at its recorded time (its first op's cpu_before_ns is 0).
  std::unordered_map<uint64_t, uint64_t> cpu_of;
  for (const Event& e : trace.events) cpu_of[e.seq] = e.cpu_ns;
  const uint64_t first = trace.events.empty() ? 0 : trace.events.front().cpu_ns;
  // Threads that call a tuner (workers) start together, at the first one's recorded start (a
  // later worker's first recorded event may come after it waited for a lock). A trace without
  // tuner calls makes every thread with ops a worker, but the process's first thread (which
  // starts the others) when others have ops.
  Nanos any = UINT64_MAX, worker = UINT64_MAX;
  size_t with_ops = 0;
  for (ThreadProgram& tp : p.threads) {
    if (tp.ops.empty()) continue;
    ++with_ops;
    const uint64_t at = cpu_of[tp.ops.front().seq];
    tp.start_ns = at > first ? at - first : 0;
    for (const Op& op : tp.ops) tp.worker |= op.kind == Op::Kind::kTunerCall;
    if (tp.worker) worker = std::min(worker, tp.start_ns);
  }
  for (size_t i = 0; i < p.threads.size(); ++i)
    if (!p.threads[i].ops.empty() && (i != 0 || with_ops == 1))
      any = std::min(any, p.threads[i].start_ns);
  p.step_start_ns = worker != UINT64_MAX ? worker : any != UINT64_MAX ? any : 0;
  for (size_t i = 0; i < p.threads.size(); ++i) {
    ThreadProgram& tp = p.threads[i];
    if (worker == UINT64_MAX) tp.worker = !tp.ops.empty() && (i != 0 || with_ops == 1);
    if (tp.worker && worker != UINT64_MAX) tp.start_ns = worker;
    if (tp.worker) continue;
    // Another thread (the one that starts and joins the workers): what it does during the step
    // is not CPU time of the step (its recorded gaps span the join, which is not recorded).
    for (Op& op : tp.ops)
      if (cpu_of[op.seq] >= first + p.step_start_ns) op.cpu_before_ns = 0;
  }
  return p;
}

// Not streamed yet: BuildProgram needs each launch's and memory operation's GPU time when it
// meets the launch (the calibration of the virtual GPU and CPU, OverlappingDevices), and the
// activity record comes later in the trace; streaming it needs a first pass for those times.
Result<Program> ReadProgram(const std::string& path, traces::Trace* read) {
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
