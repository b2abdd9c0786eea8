// replay/report/src/timeline.cc: Chrome trace-event JSON for replays and recorded traces.
#include "rerace/replay/report/timeline.h"

#include <fmt/format.h>

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>

#include "rerace/replay/model/id_bits.h"
#include "rerace/base/output_file.h"
#include "rerace/traces/reader.h"

namespace rerace::replay {

sim::ThreadId StepLog::Pick(const sim::Choice& c) {
  const sim::ThreadId t = inner_.Pick(c);
  if (t < c.pending.size())
    steps_.push_back({c.step, t, c.pending[t], c.pending[t].label ? c.pending[t].label : ""});
  return t;
}

namespace {

// The JSON text, kept whole, or written to `file` a megabyte at a time.
class Json {
 public:
  explicit Json(std::FILE* file = nullptr) : file_(file) {}
  void Event(const std::string& body) {
    out_ += first_ ? "\n" : ",\n";
    first_ = false;
    out_ += "{" + body + "}";
    if (file_ != nullptr && out_.size() >= (1u << 20)) Drain();
  }
  // `tail`: more of the top-level object after "traceEvents" (",\"metadata\":{...}"), or "".
  std::string Finish(const std::string& tail = "") {
    out_ += "\n]" + tail + "}\n";
    if (file_ != nullptr) Drain();
    return std::move(out_);
  }
  uint64_t written() const { return written_; }

 private:
  void Drain() {
    written_ += std::fwrite(out_.data(), 1, out_.size(), file_);
    out_.clear();
  }
  std::FILE* file_;
  std::string out_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first_ = true;
  uint64_t written_ = 0;
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
    const std::string& label = s.label;
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

std::string ShortKernelName(const std::string& name) {
  const std::string full = Demangle(name);
  // Template arguments, at any depth (a lambda's "{lambda(float, float)#1}" inside them too).
  std::string s;
  int angle = 0;
  for (char c : full) {
    if (c == '<') ++angle;
    else if (c == '>' && angle > 0) --angle;
    else if (angle == 0) s += c;
  }
  // The parameter list: the parenthesised group that ends the name.
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      else if (s[i] == '(' && --depth == 0) {
        s.erase(i);
        break;
      }
    }
  }
  // The return type and the namespaces: what follows the last space or "::" outside
  // parentheses ("(anonymous namespace)" is a namespace).
  size_t from = 0;
  int paren = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++paren;
    else if (s[i] == ')' && paren > 0) --paren;
    else if (paren == 0 && s[i] == ' ') from = i + 1;
    else if (paren == 0 && s.compare(i, 2, "::") == 0) from = i + 2;
  }
  s = s.substr(from);
  return s.empty() ? full : s;
}

namespace {

// A recorded trace's timeline, one event at a time. `launch_of` keeps a launch until its
// timed activity comes: only launches that will get one (`Add`'s `timed`), and only until
// then unless it gets two (`twice`).
class TraceTimelineBuilder {
 public:
  TraceTimelineBuilder(Json& j, const traces::Header& header, const std::vector<traces::Thread>& threads)
      : j_(j) {
    // GPU time → CPU time, per device, from the first clock pair.
    for (const traces::ClockPair& c : header.clock_pairs)
      if (!offset_.count(c.device))
        offset_[c.device] = static_cast<int64_t>(c.cpu_ns) - static_cast<int64_t>(c.gpu_ns);
    j_.Event(R"("name":"process_name","ph":"M","pid":1,"args":{"name":"host threads"})");
    for (const traces::Thread& th : threads)
      j_.Event(fmt::format(R"("name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":{}}})", th.id,
                           Q(fmt::format("{} {}", th.id, th.name))));
  }
  void Add(const traces::Event& e, const traces::TunerEvent* te, const traces::Trace& t, bool timed, bool twice);
  // Closes the calls left open; returns the top-level "metadata" for Json::Finish: the kernels
  // table.
  std::string Finish();

 private:
  struct Launch {
    uint32_t shape, thread;
  };
  // A kernel as the events name it: short (ShortKernelName, as Nsight Systems shows it), with
  // its number in the "metadata" table, which has its full and raw names; the first event that
  // names it carries its full name too (a C++ kernel's is often kilobytes long, and it would be
  // in every event otherwise).
  struct Kernel {
    size_t id;
    std::string name, full, raw;
  };
  const Kernel& KernelOf(const std::string& raw) {
    auto [it, added] = kernel_ids_.try_emplace(raw, kernels_.size());
    if (added) kernels_.push_back({kernels_.size(), ShortKernelName(raw), Demangle(raw), raw});
    return kernels_[it->second];
  }
  // `"kernel":N` for an event's args, and the kernel's full name on the first event that names
  // it where that is longer than its short name (not a Triton kernel's).
  std::string KernelArgs(const Kernel& k) {
    const bool first = k.id >= named_kernels_;
    named_kernels_ = std::max(named_kernels_, k.id + 1);
    if (!first || k.full == k.name) return fmt::format(R"("kernel":{})", k.id);
    return fmt::format(R"("kernel":{},"full_name":{})", k.id, Q(k.full));
  }
  std::string Us(uint64_t ns) const {
    return fmt::format("{:.3f}", static_cast<double>(ns - std::min(ns, t0_)) / 1e3);
  }
  Json& j_;
  uint64_t t0_ = 0;
  bool started_ = false;
  std::map<uint32_t, int64_t> offset_;
  std::map<uint32_t, Launch> launch_of_;  // correlation → launch
  std::map<std::pair<uint32_t, uint64_t>, bool> named_;
  std::map<uint32_t, std::vector<std::string>> open_calls_;  // thread → calls begun, not ended
  std::map<uint32_t, uint64_t> last_ns_;                     // thread → its last event's time
  std::map<std::string, size_t> kernel_ids_;                 // raw name → its number
  std::vector<Kernel> kernels_;                              // by number, as first named
  size_t named_kernels_ = 0;                                 // kernels named by an event so far
};

void TraceTimelineBuilder::Add(const traces::Event& e, const traces::TunerEvent* te,
                               const traces::Trace& t, bool timed, bool twice) {
  using traces::EventKind;
  using traces::TunerKind;
  if (!started_) t0_ = e.cpu_ns;
  started_ = true;
  auto us = [this](uint64_t ns) { return Us(ns); };
  Json& j = j_;
  switch (e.kind) {
    case EventKind::kLaunch: {
      if (timed) launch_of_[e.correlation] = {e.shape, e.thread};
      const auto& sh = t.shapes[e.shape];
      const Kernel& k = KernelOf(t.Str(sh.kernel));
      j.Event(fmt::format(R"("name":{},"cat":"launch","ph":"i","s":"t","ts":{},"pid":1,"tid":{},"args":{{"stream":{},"grid":"{}x{}x{}","block":"{}x{}x{}",{}}})",
                          Q("launch " + k.name), us(e.cpu_ns), e.thread, sh.stream,
                          sh.grid[0], sh.grid[1], sh.grid[2], sh.block[0], sh.block[1], sh.block[2],
                          KernelArgs(k)));
      break;
    }
    case EventKind::kActivity: {
      auto it = launch_of_.find(e.correlation);
      if (it == launch_of_.end() || e.gpu_start_ns == 0) break;
      const Launch launch = it->second;
      if (!twice) launch_of_.erase(it);
      const auto& sh = t.shapes[launch.shape];
      const int64_t off = offset_.count(sh.device) ? offset_[sh.device] : 0;
      const auto start = static_cast<uint64_t>(static_cast<int64_t>(e.gpu_start_ns) + off);
      const uint32_t pid = 100 + sh.device;
      if (!named_[{pid, sh.stream}]) {
        named_[{pid, sh.stream}] = true;
        j.Event(fmt::format(R"("name":"process_name","ph":"M","pid":{},"args":{{"name":"GPU {}"}})", pid, sh.device));
        j.Event(fmt::format(R"("name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"stream {}"}})",
                            pid, sh.stream, sh.stream));
      }
      const Kernel& k = KernelOf(t.Str(sh.kernel));
      j.Event(fmt::format(R"("name":{},"cat":"kernel","ph":"X","ts":{},"dur":{:.3f},"pid":{},"tid":{},"args":{{"thread":{},{}}})",
                          Q(k.name), us(start),
                          static_cast<double>(e.gpu_end_ns - e.gpu_start_ns) / 1e3, pid, sh.stream,
                          launch.thread, KernelArgs(k)));
      break;
    }
    case EventKind::kTuner: {
      // Every B gets its E: a call ends with its end, or with an exception (whichever comes
      // first), or, if the trace records neither, at the thread's last event (Finish).
      if (te->kind == TunerKind::kCallBegin) {
        j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"B","ts":{},"pid":1,"tid":{},"args":{{"key":{}}})",
                            Q("Autotuner.run " + t.Str(te->kernel)), us(e.cpu_ns), e.thread,
                            Q(te->key)));
        open_calls_[e.thread].push_back("Autotuner.run " + t.Str(te->kernel));
      } else if (te->kind == TunerKind::kCallEnd) {
        if (!open_calls_[e.thread].empty()) {
          j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"E","ts":{},"pid":1,"tid":{},"args":{{"key":{}}})",
                              Q(open_calls_[e.thread].back()), us(e.cpu_ns), e.thread, Q(te->key)));
          open_calls_[e.thread].pop_back();
        }
      } else if (te->kind == TunerKind::kError) {
        j.Event(fmt::format(R"("name":{},"cat":"failure","ph":"i","s":"t","ts":{},"pid":1,"tid":{},"args":{{"where":{}}})",
                            Q(te->error_type + ": " + te->error_message), us(e.cpu_ns), e.thread,
                            Q(te->error_where)));
        // The call ends with the exception.
        if (!open_calls_[e.thread].empty()) {
          j.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"E","ts":{},"pid":1,"tid":{})",
                              Q(open_calls_[e.thread].back()), us(e.cpu_ns), e.thread));
          open_calls_[e.thread].pop_back();
        }
      } else {
        std::string name = traces::TunerKindName(te->kind);
        if (te->field != traces::TunerField::kNone) name += std::string(" ") + traces::TunerFieldName(te->field);
        if (te->config >= 0) name += fmt::format(" config {}", te->config);
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
  last_ns_[e.thread] = e.cpu_ns;
}

std::string TraceTimelineBuilder::Finish() {
  for (auto& [thread, names] : open_calls_)
    for (auto it = names.rbegin(); it != names.rend(); ++it)
      j_.Event(fmt::format(R"("name":{},"cat":"tuner","ph":"E","ts":{},"pid":1,"tid":{},"args":{{"note":"the trace records no end of this call"}})",
                           Q(*it), Us(last_ns_[thread]), thread));
  // The trace-event format keeps the top level's other keys as the trace's metadata.
  std::string table;
  for (const Kernel& k : kernels_)
    table += fmt::format(R"({}{{"kernel":{},"name":{},"full_name":{},"mangled":{}}})", table.empty() ? "" : ",\n",
                         k.id, Q(k.name), Q(k.full), Q(k.raw));
  return R"(,"metadata":{"kernels":[)" + table + "]}";
}

// The first pass of the streamed export: what the reader checks (the whole file is read before
// anything is written), the threads' final names, and which launches get one GPU time or more.
struct TimelineSurvey {
  traces::Trace read;  // without events
  detail::IdBits timed, twice;
};

Result<TimelineSurvey> SurveyTimeline(const std::string& path) {
  auto stream = traces::TraceStream::Open(path);
  if (!stream) return stream.error();
  TimelineSurvey s;
  std::vector<traces::Event> events;
  std::vector<traces::TunerEvent> tuners;
  while (true) {
    auto more = stream->Next(events, tuners);
    if (!more) return more.error();
    if (!*more) break;
    for (const traces::Event& e : events) {
      if (e.kind != traces::EventKind::kActivity || e.gpu_start_ns == 0) continue;
      if (s.timed.Test(e.correlation)) s.twice.Set(e.correlation);
      s.timed.Set(e.correlation);
    }
  }
  s.read = stream->trace();
  return s;
}

}  // namespace

std::string TraceTimeline(const traces::Trace& t) {
  Json j;
  TraceTimelineBuilder b(j, t.header, t.threads);
  for (const traces::Event& e : t.events)
    b.Add(e, e.kind == traces::EventKind::kTuner ? &t.tuner_events[e.tuner] : nullptr, t, true, true);
  return j.Finish(b.Finish());
}

Result<uint64_t> WriteTraceTimeline(const std::string& trace_path, const std::string& out_path,
                                    traces::Trace* read) {
  auto survey = SurveyTimeline(trace_path);
  if (!survey) return survey.error();
  auto stream = traces::TraceStream::Open(trace_path);
  if (!stream) return stream.error();
  auto place = OutputPlace::Open(out_path);
  if (!place) return place.error();
  std::FILE* f = std::fopen(place->write_path().c_str(), "wb");
  if (f == nullptr)
    return Error{fmt::format("{}: cannot write: {}", out_path, std::strerror(errno)), kExitIoError};
  Json j(f);
  TraceTimelineBuilder b(j, stream->trace().header, survey->read.threads);
  std::vector<traces::Event> events;
  std::vector<traces::TunerEvent> tuners;
  Result<bool> more = true;
  while (more.ok() && *more) {
    more = stream->Next(events, tuners);
    if (!more || !*more) break;
    for (const traces::Event& e : events) {
      if (e.thread >= survey->read.threads.size()) {
        more = Error{fmt::format("{}: the file changed while it was read (event {} names thread {})",
                                 trace_path, e.seq, e.thread),
                     kExitDataError};
        break;
      }
      const bool timed = e.kind == traces::EventKind::kLaunch && survey->timed.Test(e.correlation);
      const bool twice = e.kind == traces::EventKind::kActivity && survey->twice.Test(e.correlation);
      b.Add(e, e.kind == traces::EventKind::kTuner ? &tuners[e.tuner] : nullptr, stream->trace(), timed, twice);
    }
  }
  if (more.ok()) j.Finish(b.Finish());
  const bool wrote = more.ok() && std::ferror(f) == 0;
  const bool flushed = std::fflush(f) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!more) return more.error();
  if (!wrote || !flushed || !closed)
    return Error{fmt::format("{}: cannot write: {}", out_path, std::strerror(err != 0 ? err : EIO)),
                 kExitIoError};
  if (auto c = place->Commit(); !c) return c.error();
  if (read != nullptr) *read = std::move(survey->read);
  return j.written();
}

}  // namespace rerace::replay
