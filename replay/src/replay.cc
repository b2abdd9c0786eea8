// replay/src/replay.cc: Replayer (one run of the programs under a strategy), the recorded
// order as a strategy, and the reports.
#include "rerace/base/utf8.h"
#include "rerace/replay/replay.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "python_engine.h"
#include "tuner_world_gil.h"
#include "rerace/sim/stack_pool.h"
#include "models/registry.h"
#include "tuner_world.h"

namespace rerace::replay {

namespace {

// The recorded interleaving: the runnable thread whose pending point belongs to the earliest
// recorded transition runs; a thread keeps running while its next point belongs to the same
// transition. Consumes no randomness.
class RecordedOrder final : public sim::Strategy {
 public:
  explicit RecordedOrder(const std::vector<uint64_t>& anchors) : anchors_(anchors) {}
  sim::ThreadId Pick(const sim::Choice& c) override {
    auto anchor = [&](sim::ThreadId t) { return t < anchors_.size() ? anchors_[t] : UINT64_MAX; };
    sim::ThreadId best = c.runnable.front();
    for (sim::ThreadId t : c.runnable) {
      if (anchor(t) < anchor(best)) best = t;
    }
    if (c.previous != sim::kNoThread && anchor(c.previous) == anchor(best) &&
        std::binary_search(c.runnable.begin(), c.runnable.end(), c.previous))
      return c.previous;
    return best;
  }
  std::string Name() const override { return "recorded"; }

 private:
  const std::vector<uint64_t>& anchors_;
};

}  // namespace

std::string ReplayResult::Signature() const {
  std::set<std::string> parts;
  for (const Finding& f : findings) parts.insert(f.code + "@" + f.where);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " + ") + p;
  return out;
}

Replayer::Replayer(const Program& program, ReplayOptions options)
    : program_(program), options_(std::move(options)), pool_(std::make_unique<sim::StackPool>()) {}

Replayer::~Replayer() = default;

Result<std::string> Replayer::StartEngine() {
  if (options_.engine != "python") return std::string();
  if (!py_) {
    auto py = detail::PythonProcess::Start(program_, options_);
    if (!py) return py.error();
    py_ = std::move(*py);
  }
  return py_->info();
}

std::string Replayer::EngineSummary() {
  if (options_.engine != "python") return detail::ModelEngine(Steps());
  auto info = StartEngine();
  return info ? detail::EngineSummaryOf(*info) : std::string();
}

const detail::StepMode& Replayer::Steps() {
  if (!steps_) {
    const std::string name = ModelName();
    const detail::TunerModel* model = detail::FindModel(name);
    steps_ = std::make_shared<const detail::StepMode>(
        model == nullptr ? detail::StepMode{}
                         : detail::ResolveStepMode(program_, options_, *model, name));
  }
  return *steps_;
}

std::string Replayer::ModelName() const {
  if (options_.engine == "python") return "python";
  if (options_.model != "auto") return options_.model;
  return detail::AutoModel(program_);
}

ReplayResult Replayer::Run(sim::Strategy& strategy) {
  return RunWith(strategy, nullptr, options_.reps);
}

ReplayResult Replayer::RunRecorded() {
  return RunRecorded([](sim::Strategy& s) -> sim::Strategy& { return s; });
}

ReplayResult Replayer::RunRecorded(const std::function<sim::Strategy&(sim::Strategy&)>& wrap) {
  std::vector<uint64_t> anchors;
  RecordedOrder strategy(anchors);
  return RunWith(wrap(strategy), &anchors, 0);
}

ReplayResult Replayer::RunWith(sim::Strategy& strategy, std::vector<uint64_t>* anchors,
                               uint32_t reps) {
  sim::Scheduler::Options so;
  so.max_steps = options_.max_steps;
  sim::RaceDetector detector;
  if (options_.detect_races) so.races = &detector;
  // --recorded follows the recording's own interleaving (the probe's marks are Python code,
  // places where the recorded run could switch): every access a step there.
  static const detail::StepMode kEveryAccess;
  const detail::StepMode& steps =
      options_.engine == "python" || anchors != nullptr ? kEveryAccess : Steps();
  detail::GilSteps merge(steps);
  if (steps.gil) so.merge = &merge;
  sim::Scheduler sched(strategy, so, pool_.get());
  if (options_.engine == "python") {
    if (anchors != nullptr)
      throw detail::EngineError("the python engine cannot follow the recorded order (--recorded): "
                                "use --engine model");
    if (auto started = StartEngine(); !started) throw detail::EngineError(started.error().message);
    detail::PythonWorld world(sched, program_, *py_);
    for (uint32_t t = 0; t < program_.threads.size(); ++t)
      sched.Spawn(program_.threads[t].name, [&world, t] { world.RunThread(t); });
    ReplayResult r;
    r.strategy = strategy.Name();
    r.fix = options_.fix.name;
    r.model = ModelName();
    r.engine = detail::EngineSummaryOf(py_->info());
    r.run = sched.Run();
    world.Finalize(r);
    r.races = detector.races();
    return r;
  }
  const std::string name = ModelName();
  const detail::TunerModel* model = detail::FindModel(name);
  if (model == nullptr)
    throw detail::EngineError(fmt::format("no tuner model is named '{}' (one of {})", name,
                                          fmt::join(ModelNames(), ", ")));
  detail::TunerWorld world(sched, program_, options_, reps, *model, anchors);
  world.Spawn();
  ReplayResult r;
  r.strategy = strategy.Name();
  r.fix = options_.fix.name;
  r.model = name;
  r.engine = detail::ModelEngine(steps);
  r.steps = steps.why;
  r.run = sched.Run();
  world.Finalize(r);
  r.races = detector.races();
  return r;
}

std::string JsonEscape(const std::string& raw) {
  const std::string s = ValidUtf8(raw);  // JSON text is UTF-8: invalid bytes become U+FFFD
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += ch;
    }
  }
  return out;
}

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

std::string RacesJson(const std::vector<sim::Race>& races) {
  std::string out = "[";
  for (size_t i = 0; i < races.size(); ++i) {
    const sim::Race& r = races[i];
    out += fmt::format(
        "{}{{\"object\":\"{}\",\"first\":{{\"access\":\"{}\",\"thread\":{},\"step\":{},"
        "\"label\":\"{}\"}},\"second\":{{\"access\":\"{}\",\"thread\":{},\"step\":{},"
        "\"label\":\"{}\"}}}}",
        i ? "," : "", JsonEscape(r.object_name), sim::AccessName(r.first.access), r.first.thread,
        r.first.step, JsonEscape(r.first.label), sim::AccessName(r.second.access),
        r.second.thread, r.second.step, JsonEscape(r.second.label));
  }
  return out + "]";
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

namespace {
std::string Ms(Nanos ns) { return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6); }
}  // namespace

std::string FormatReport(const ReplayResult& r, const Program& p, const std::string& replay_hint) {
  std::string out;
  if (r.engine.rfind("python", 0) == 0)
    out += fmt::format("replay of {} (engine {}; fix {}, strategy {})\n", p.source, r.engine, r.fix,
                       r.strategy);
  else
    out += fmt::format("replay of {} (model {}, fix {}, strategy {})\n", p.source, r.model, r.fix,
                     r.strategy);
  if (!r.steps.empty()) out += fmt::format("steps: {}\n", r.steps);
  if (r.findings.empty()) {
    out += "ok: no failure in this schedule\n";
  } else {
    std::set<uint32_t> involved;
    const Finding& first = r.findings.front();
    if (first.thread == sim::kNoThread) {
      out += fmt::format("FAILED: {} at step {}\n", first.code, first.step);
    } else {
      out += fmt::format("FAILED: {} in thread {} ({}) at step {}\n", first.code, first.thread,
                         first.thread_name, first.step);
    }
    if (first.silent) {
      out += "  the real program raises nothing (silent corruption)\n";
    } else {
      out += fmt::format("  {}: {}\n", first.type, first.message);
    }
    if (!first.where.empty()) out += fmt::format("    at {}\n", first.where);
    if (!first.words.empty()) out += fmt::format("  {}\n", first.words);
    // Findings are listed by step. When silent corruption comes first, say so, and name the
    // first error the real program raised (what a user saw on the GPU).
    if (first.silent) {
      auto raised = std::find_if(r.findings.begin(), r.findings.end(), [](const Finding& f) {
        return !f.silent && f.thread != sim::kNoThread;
      });
      if (raised != r.findings.end())
        out += fmt::format("  first by step, and first by harm (silent corruption ranks before "
                           "crashes, docs/MODEL.md); the first error raised: {}: {} ({}) in "
                           "thread {} ({}) at step {}\n",
                           raised->type, raised->message, raised->code, raised->thread,
                           raised->thread_name, raised->step);
    }
    if (first.thread != sim::kNoThread) involved.insert(first.thread);
    if (first.other != UINT32_MAX) involved.insert(first.other);
    constexpr size_t kAlso = 8;
    for (size_t i = 1; i < r.findings.size() && i <= kAlso; ++i) {
      const Finding& f = r.findings[i];
      out += fmt::format("also: {} in thread {} ({}) at step {}: {}\n", f.code, f.thread,
                         f.thread_name, f.step,
                         f.silent ? f.words : fmt::format("{}: {}", f.type, f.message));
    }
    if (r.findings.size() > kAlso + 1)
      out += fmt::format("also: {} more (--json lists them all)\n", r.findings.size() - kAlso - 1);
    // Count crashes per code, as the H200 table counts them ("7 of 8 threads raised").
    // Out of the threads that call a tuner (a main thread that only launched is not one), and
    // any helper thread of a fix (prewarm, a GPU's owner) that failed.
    std::map<std::string, std::set<uint32_t>> by_code;
    std::set<uint32_t> counted;
    for (uint32_t t = 0; t < p.threads.size(); ++t)
      for (const Op& op : p.threads[t].ops)
        if (op.kind == Op::Kind::kTunerCall) counted.insert(t);
    for (const Finding& f : r.findings)
      if (f.thread != sim::kNoThread) {
        by_code[f.code].insert(f.thread);
        counted.insert(f.thread);
      }
    if (!by_code.empty()) {
      out += "summary:";
      for (const auto& [code, threads] : by_code)
        out += fmt::format(" {} in {} of {} threads;", code, threads.size(), counted.size());
      out += "\n";
    }
    if (!involved.empty()) out += "last steps of the threads involved (oldest first):\n";
    for (uint32_t t : involved) {
      if (t >= r.run.threads.size()) continue;
      const auto& th = r.run.threads[t];
      out += fmt::format("  thread {} ({}):\n", t, th.name);
      for (const auto& s : th.last_steps) out += fmt::format("    step {:>7}  {}\n", s.step, s.text);
    }
  }
  out += fmt::format("simulated step time: {} ({} steps, {} preemptions)\n", Ms(r.makespan),
                     r.run.steps, r.run.preemptions);
  for (const DuplicateTuning& d : r.duplicates)
    out += fmt::format("warning: duplicate-tuning: {} key {} tuned by {} threads; {} of GPU time "
                       "wasted\n",
                       d.kernel, d.key, d.threads, Ms(d.wasted_gpu_ns));
  if (r.left_recording != 0)
    out += fmt::format("note: the model left the recording at {} transitions (the recorded run "
                       "took another path)\n",
                       r.left_recording);
  if (!replay_hint.empty()) out += replay_hint + "\n";
  return out;
}

namespace {
// "autotuner.py:74" from "autotuner.py:74 _post_hook: ...".
std::string SourceLine(const std::string& label) {
  const size_t sp = label.find(' ');
  return sp == std::string::npos ? label : label.substr(0, sp);
}
}  // namespace

std::string FormatRaces(const std::vector<sim::Race>& races, const std::vector<Finding>& involved) {
  std::string out = fmt::format("races (happens-before, {} distinct):\n", races.size());
  for (const sim::Race& race : races) {
    std::set<std::string> codes;
    const std::string a = SourceLine(race.first.label), b = SourceLine(race.second.label);
    for (const Finding& f : involved)
      if ((!a.empty() && f.where.find(a) != std::string::npos) ||
          (!b.empty() && f.where.find(b) != std::string::npos))
        codes.insert(f.code);
    std::string inv;
    for (const auto& c : codes) inv += (inv.empty() ? "" : ", ") + c;
    out += fmt::format("  {}: {} by thread {} at step {} ({}) and {} by thread {} at step {} ({}); {}\n",
                       race.object_name, sim::AccessName(race.first.access), race.first.thread,
                       race.first.step, race.first.label, sim::AccessName(race.second.access),
                       race.second.thread, race.second.step, race.second.label,
                       inv.empty() ? "no failure seen involves it" : "involved in: " + inv);
  }
  return out;
}

std::string FormatJson(const ReplayResult& r, const Program& p, bool with_races) {
  std::string out = "{";
  out += fmt::format("\"trace\":\"{}\",\"model\":\"{}\",\"fix\":\"{}\",\"strategy\":\"{}\",",
                     JsonEscape(p.source), r.model, JsonEscape(r.fix), JsonEscape(r.strategy));
  out += fmt::format("\"failed\":{},\"steps\":{},\"preemptions\":{},\"makespan_ns\":{},",
                     r.failed() ? "true" : "false", r.run.steps, r.run.preemptions, r.makespan);
  out += "\"findings\":[";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    out += fmt::format(
        "{}{{\"code\":\"{}\",\"silent\":{},\"thread\":{},\"thread_name\":\"{}\",\"step\":{},"
        "\"type\":\"{}\",\"message\":\"{}\",\"where\":\"{}\",\"words\":\"{}\"}}",
        i ? "," : "", f.code, f.silent ? "true" : "false",
        f.thread == sim::kNoThread ? -1 : static_cast<int64_t>(f.thread), JsonEscape(f.thread_name),
        f.step, JsonEscape(f.type), JsonEscape(f.message), JsonEscape(f.where), JsonEscape(f.words));
  }
  out += "],\"duplicates\":[";
  for (size_t i = 0; i < r.duplicates.size(); ++i) {
    const DuplicateTuning& d = r.duplicates[i];
    out += fmt::format("{}{{\"kernel\":\"{}\",\"key\":\"{}\",\"threads\":{},\"wasted_gpu_ns\":{}}}",
                       i ? "," : "", JsonEscape(d.kernel), JsonEscape(d.key), d.threads,
                       d.wasted_gpu_ns);
  }
  out += fmt::format("],\"schedule\":\"{}\"", r.run.schedule.Encode());
  if (with_races) out += ",\"races\":" + RacesJson(r.races);
  return out + "}";
}

}  // namespace rerace::replay
