// replay/src/timeline.cc: Chrome trace-event JSON for replays and recorded traces.
#include "rerace/replay/timeline.h"

#include <fmt/format.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>

namespace rerace::replay {

sim::ThreadId StepLog::Pick(const sim::Choice& c) {
  const sim::ThreadId t = inner_.Pick(c);
  if (t < c.pending.size()) steps_.push_back({c.step, t, c.pending[t]});
  return t;
}

namespace {

class Json {
 public:
  void Event(const std::string& body) {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    out_ += "{" + body + "}";
  }
  std::string Finish() { return "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[" + out_ + "\n]}\n"; }

 private:
  std::string out_;
  bool first_ = true;
};

std::string Q(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }

}  // namespace

std::string ReplayTimeline(const ReplayResult& r, const std::vector<StepLog::Step>& steps) {
  Json j;
  j.Event(R"("name":"process_name","ph":"M","pid":1,"args":{"name":"host threads, 1 us = 1 step"})");
  for (size_t t = 0; t < r.run.threads.size(); ++t)
    j.Event(fmt::format(R"("name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":{}}})", t,
                        Q(fmt::format("{} {}", t, r.run.threads[t].name))));
  for (const StepLog::Step& s : steps) {
    const std::string label = s.point.label ? s.point.label : "";
    std::string name = sim::AccessName(s.point.access);
    const size_t colon = label.find(": ");
    if (colon != std::string::npos) name += " " + label.substr(colon + 2);
    j.Event(fmt::format(R"("name":{},"cat":"step","ph":"X","ts":{},"dur":1,"pid":1,"tid":{},"args":{{"step":{},"source":{}}})",
                        Q(name), s.step, s.thread, s.step, Q(label)));
  }
  uint64_t flow = 1;
  for (const Finding& f : r.findings) {
    const std::string what = f.silent ? f.code : fmt::format("{}: {}", f.type, f.message);
    if (f.thread == sim::kNoThread) {
      j.Event(fmt::format(R"("name":{},"cat":"failure","ph":"i","s":"g","ts":{},"pid":1,"args":{{"words":{}}})",
                          Q(what), f.step, Q(f.words)));
      continue;
    }
    j.Event(fmt::format(R"("name":{},"cat":"failure","ph":"i","s":"t","ts":{},"pid":1,"tid":{},"args":{{"code":{},"where":{},"words":{}}})",
                        Q(what), f.step, f.thread, Q(f.code), Q(f.where), Q(f.words)));
    if (f.other != UINT32_MAX && f.other_step != UINT64_MAX) {
      j.Event(fmt::format(R"("name":"conflict","cat":"race","ph":"s","id":{},"ts":{},"pid":1,"tid":{})",
                          flow, f.other_step, f.other));
      j.Event(fmt::format(R"("name":"conflict","cat":"race","ph":"f","bp":"e","id":{},"ts":{},"pid":1,"tid":{})",
                          flow, f.step, f.thread));
      ++flow;
    }
  }
  return j.Finish();
}

std::string Demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string s = status == 0 && out != nullptr ? std::string(out) : name;
  std::free(out);  // NOLINT: the demangler's buffer is malloc'ed
  return s;
}

std::string TraceTimeline(const traces::Trace& t) {
  using traces::EventKind;
  using traces::TunerKind;
  Json j;
  const uint64_t t0 = t.events.empty() ? 0 : t.events.front().cpu_ns;
  auto us = [t0](uint64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns - std::min(ns, t0)) / 1e3); };
  // GPU time → CPU time, per device, from the first clock pair.
  std::map<uint32_t, int64_t> offset;
  for (const traces::ClockPair& c : t.header.clock_pairs)
    if (!offset.count(c.device))
      offset[c.device] = static_cast<int64_t>(c.cpu_ns) - static_cast<int64_t>(c.gpu_ns);
  j.Event(R"("name":"process_name","ph":"M","pid":1,"args":{"name":"host threads"})");
  for (const traces::Thread& th : t.threads)
    j.Event(fmt::format(R"("name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":{}}})", th.id,
                        Q(fmt::format("{} {}", th.id, th.name))));
  std::map<uint32_t, const traces::Event*> launch_of;  // correlation → launch
  std::map<std::pair<uint32_t, uint64_t>, bool> named;
  std::map<uint32_t, std::vector<std::string>> open_calls;  // thread → calls begun, not ended
  std::map<uint32_t, uint64_t> last_ns;                     // thread → its last event's time
  for (const traces::Event& e : t.events) {
    switch (e.kind) {
      case EventKind::kLaunch: {
        launch_of[e.correlation] = &e;
        const auto& sh = t.shapes[e.shape];
        j.Event(fmt::format(R"("name":{},"cat":"launch","ph":"i","s":"t","ts":{},"pid":1,"tid":{},"args":{{"stream":{},"grid":"{}x{}x{}","block":"{}x{}x{}"}})",
                            Q("launch " + Demangle(t.Str(sh.kernel))), us(e.cpu_ns), e.thread, sh.stream,
                            sh.grid[0], sh.grid[1], sh.grid[2], sh.block[0], sh.block[1], sh.block[2]));
        break;
      }
      case EventKind::kActivity: {
        auto it = launch_of.find(e.correlation);
        if (it == launch_of.end() || e.gpu_start_ns == 0) break;
        const auto& sh = t.shapes[it->second->shape];
        const int64_t off = offset.count(sh.device) ? offset[sh.device] : 0;
        const auto start = static_cast<uint64_t>(static_cast<int64_t>(e.gpu_start_ns) + off);
        const uint32_t pid = 100 + sh.device;
        if (!named[{pid, sh.stream}]) {
          named[{pid, sh.stream}] = true;
          j.Event(fmt::format(R"("name":"process_name","ph":"M","pid":{},"args":{{"name":"GPU {}"}})", pid, sh.device));
          j.Event(fmt::format(R"("name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"stream {}"}})",
                              pid, sh.stream, sh.stream));
        }
        const std::string& raw = t.Str(sh.kernel);
        const std::string name = Demangle(raw);
        j.Event(fmt::format(R"("name":{},"cat":"kernel","ph":"X","ts":{},"dur":{:.3f},"pid":{},"tid":{},"args":{{"thread":{}{}}})",
                            Q(name), us(start),
                            static_cast<double>(e.gpu_end_ns - e.gpu_start_ns) / 1e3, pid, sh.stream,
                            it->second->thread, name == raw ? "" : ",\"mangled\":" + Q(raw)));
        break;
      }
      case EventKind::kTuner: {
        const traces::TunerEvent& te = t.tuner_events[e.tuner];
        // Every B gets its E: a call ends with its end, or with an exception (whichever comes
        // first), or, if the trace records neither, at the thread's last event (below).
        if (te.kind == TunerKind::kCallBegin) {
          j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"B","ts":{},"pid":1,"tid":{},"args":{{"key":{}}})",
                              Q("Autotuner.run " + t.Str(te.kernel)), us(e.cpu_ns), e.thread,
                              Q(te.key)));
          open_calls[e.thread].push_back("Autotuner.run " + t.Str(te.kernel));
        } else if (te.kind == TunerKind::kCallEnd) {
          if (!open_calls[e.thread].empty()) {
            j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"E","ts":{},"pid":1,"tid":{},"args":{{"key":{}}})",
                                Q(open_calls[e.thread].back()), us(e.cpu_ns), e.thread, Q(te.key)));
            open_calls[e.thread].pop_back();
          }
        } else if (te.kind == TunerKind::kError) {
          j.Event(fmt::format(R"("name":{},"cat":"failure","ph":"i","s":"t","ts":{},"pid":1,"tid":{},"args":{{"where":{}}})",
                              Q(te.error_type + ": " + te.error_message), us(e.cpu_ns), e.thread,
                              Q(te.error_where)));
          // The call ends with the exception.
          if (!open_calls[e.thread].empty()) {
            j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"E","ts":{},"pid":1,"tid":{})",
                                Q(open_calls[e.thread].back()), us(e.cpu_ns), e.thread));
            open_calls[e.thread].pop_back();
          }
        } else {
          std::string name = traces::TunerKindName(te.kind);
          if (te.field != traces::TunerField::kNone) name += std::string(" ") + traces::TunerFieldName(te.field);
          if (te.config >= 0) name += fmt::format(" config {}", te.config);
          j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"i","s":"t","ts":{},"pid":1,"tid":{})",
                              Q(name), us(e.cpu_ns), e.thread));
        }
        break;
      }
      case EventKind::kLock:
        j.Event(fmt::format(R"("name":{},"cat":"lock","ph":"i","s":"t","ts":{},"pid":1,"tid":{})",
                            Q(std::string(e.lock == traces::LockKind::kAcquire ? "acquire " : "release ") + t.Str(e.text)),
                            us(e.cpu_ns), e.thread));
        break;
      case EventKind::kSync:
        j.Event(fmt::format(R"("name":{},"cat":"sync","ph":"i","s":"t","ts":{},"pid":1,"tid":{})",
                            Q(traces::SyncKindName(e.sync)), us(e.cpu_ns), e.thread));
        break;
      case EventKind::kNvtx:
        j.Event(fmt::format(R"("name":{},"cat":"nvtx","ph":"i","s":"t","ts":{},"pid":1,"tid":{})",
                            Q(t.Str(e.text)), us(e.cpu_ns), e.thread));
        break;
      case EventKind::kMemOp:
        break;
    }
    last_ns[e.thread] = e.cpu_ns;
  }
  for (auto& [thread, names] : open_calls)
    for (auto it = names.rbegin(); it != names.rend(); ++it)
      j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"E","ts":{},"pid":1,"tid":{},"args":{{"note":"the trace records no end of this call"}})",
                          Q(*it), us(last_ns[thread]), thread));
  return j.Finish();
}

}  // namespace rerace::replay
