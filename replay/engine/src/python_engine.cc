// replay/engine/src/python_engine.cc: the real-code engine's proxy fibers (one per recorded thread,
// driving its Python thread step by step) and what the engine says it runs.
#include "python_engine.h"

#include "rerace/replay/model/text.h"
#include "rerace/replay/model/tuner_world.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <set>
#include <nlohmann/json.hpp>

#include "rerace/base/result.h"

namespace rerace::replay::detail {

namespace {

uint64_t ToU64(std::string_view s, const char* what) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || s.empty() || end != s.data() + s.size())
    throw EngineError(fmt::format("python engine: {} {:?} is not a number", what, s));
  return v;
}

sim::Access AccessOf(std::string_view kind) {
  return kind == "w" ? sim::Access::kWrite : kind == "r" ? sim::Access::kRead : sim::Access::kYield;
}

}  // namespace

PythonWorld::PythonWorld(sim::Scheduler& s, const Program& p, PythonProcess& py, EngineSteps& steps,
                         bool here)
    : s_(s), p_(p), py_(py), steps_(steps) {
  // RERACE_ENGINE_PLANS=0: every point waits for its "g", as before plans (to compare).
  const char* plans = std::getenv("RERACE_ENGINE_PLANS");
  plans_ = plans == nullptr || std::string(plans) != "0";
  at_point_.assign(p_.threads.size(), 1);
  py_.Send(here ? "here" : "run");
}

// How many picks a "g" plans at most (Scheduler::Plan): a run's points between two lock
// operations or thread ends are usually fewer.
constexpr uint64_t kPlanPicks = 128;

const char* InternedLabel(const std::string& text) {
  static std::mutex m;
  // Never destroyed: a label may be read while static objects are destroyed at exit.
  static auto* labels = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(m);
  return labels->insert(text).first->c_str();
}

const char* PythonWorld::Label(std::string_view text) {
  auto it = labels_.find(text);
  if (it == labels_.end()) {
    std::string key(text);
    const char* interned = InternedLabel(key);
    it = labels_.emplace(std::move(key), interned).first;
  }
  return it->second;
}

uint32_t PythonWorld::Object(std::string_view name) {
  auto it = objects_.find(name);
  if (it != objects_.end()) return it->second;
  std::string key(name);
  const uint32_t id = s_.RegisterObject(key);
  objects_.emplace(std::move(key), id);
  return id;
}

sim::Mutex& PythonWorld::MutexNamed(std::string_view name) {
  auto it = mutexes_.find(name);
  if (it == mutexes_.end())
    it = mutexes_.emplace(std::string(name), std::make_unique<sim::Mutex>(s_, std::string(name))).first;
  return *it->second;
}

sim::CondVar& PythonWorld::CondNamed(std::string_view name) {
  auto it = conds_.find(name);
  if (it == conds_.end())
    it = conds_.emplace(std::string(name), std::make_unique<sim::CondVar>(s_, std::string(name))).first;
  return *it->second;
}

// Thread t's turn, and with it the plan: the picks of the next points as the strategy will
// make them while nothing but plain points happen ("tid:count" runs, comma-separated), cut at
// the first thread (other than t) that is not waiting at a plain point. The Python threads
// post those points and switch among themselves by it; RunThread takes each as the
// scheduler's step at once. Any other operation waits for its "g" as before.
void PythonWorld::Go(uint32_t t, int value) {
  plan_.clear();
  plan_at_ = 0;
  line_.clear();
  fmt::format_to(std::back_inserter(line_), "g\t{}\t{}\t{}\t", t, s_.step(), value);
  if (plans_) s_.Plan(kPlanPicks, plan_);
  size_t kept = 0;
  for (; kept < plan_.size(); ++kept) {
    const sim::PlannedPicks& run = plan_[kept];
    if (run.thread != t && (run.thread >= at_point_.size() || !at_point_[run.thread])) break;
    fmt::format_to(std::back_inserter(line_), "{}{}:{}", kept == 0 ? "" : ",", run.thread,
                   run.count);
  }
  plan_.resize(kept);
  py_.Send(line_);
}

void PythonWorld::Waited(uint32_t t, int value) {
  if (resumed_by_plan_)
    throw EngineError(fmt::format("python engine: internal: a planned pick resumed thread {} in "
                                  "a lock operation at step {}",
                                  t, s_.step()));
  Go(t, value);
}

bool PythonWorld::TakePlanned(uint32_t& who) {
  if (plan_at_ >= plan_.size()) return false;
  sim::PlannedPicks& run = plan_[plan_at_];
  who = run.thread;
  if (--run.count == 0) ++plan_at_;
  return true;
}

void PythonWorld::Resumed(uint32_t t) {
  if (!resumed_by_plan_) {
    Go(t);
    return;
  }
  if (planned_pick_ != t)
    throw EngineError(fmt::format("python engine: internal: the plan sent to the Python threads "
                                  "picked thread {} at step {}, the scheduler picked thread {}",
                                  planned_pick_, s_.step(), t));
}

void PythonWorld::AddFinding(uint32_t t, std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw EngineError(fmt::format("python engine: a finding that is not JSON: {}", text));
  Finding f;
  f.code = j.value("code", "exception");
  f.silent = j.value("silent", false);
  f.thread = t;
  f.thread_name = p_.threads[t].name;
  f.step = s_.step();
  f.type = f.silent ? "(none: silent corruption)" : j.value("type", "");
  f.message = j.value("message", "");
  f.where = j.value("where", "");
  f.words = j.value("words", "");
  const int64_t other = j.value("other", int64_t{-1});
  const int64_t other_step = j.value("other_step", int64_t{-1});
  if (other >= 0) f.other = static_cast<uint32_t>(other);
  if (other_step >= 0) f.other_step = static_cast<uint64_t>(other_step);
  // The report's last steps of both threads are those up to this moment (the thread goes on).
  s_.KeepHistory(t);
  if (f.other != UINT32_MAX) s_.KeepHistory(f.other);
  findings_.push_back(std::move(f));
}

void PythonWorld::AddReach(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw EngineError(fmt::format("python engine: a reach report that is not JSON: {}", text));
  ++reach_calls_;
  if (j.contains("entered") && j["entered"].is_array())
    for (const auto& i : j["entered"])
      if (i.is_number_unsigned()) ++reach_entered_[i.get<size_t>()];
  if (j.contains("bypass") && j["bypass"].is_object())
    for (const auto& [k, v] : j["bypass"].items())
      if (v.is_string()) reach_bypass_.emplace(ToU64(k, "replacement"), v.get<std::string>());
  if (j.contains("hidden") && j["hidden"].is_object())
    for (const auto& [k, v] : j["hidden"].items())
      if (v.is_string()) reach_hidden_.emplace(ToU64(k, "replacement"), v.get<std::string>());
}

void PythonWorld::ReportReach(ReplayResult& r) {
  const nlohmann::json info = nlohmann::json::parse(py_.info(), nullptr, false);
  if (info.is_discarded() || !info.is_object() || !info.contains("reach") ||
      !info["reach"].is_array())
    return;
  const auto& replaced = info["reach"];
  // The patches (by the file or module whose import made the change) some of whose
  // replacements a call entered. A replacement of such a patch that no call entered, and that
  // nothing went around (no call reached what it replaced, and every replayed tuner class
  // resolves its name to it), is a part of a patch that ran which this recording's calls do
  // not use (tls-state's restore_copies where no hook restores): a note, not
  // patch-not-reached, which says the patch never ran.
  auto source_of = [](const nlohmann::json& x) {
    std::string s = x.value("source", std::string());
    if (s.empty()) s = x.value("patch", std::string("?"));
    return s;
  };
  std::set<std::string> ran;
  for (size_t i = 0; i < replaced.size(); ++i)
    if (reach_entered_.count(i)) ran.insert(source_of(replaced[i]));
  std::vector<Finding> missed;
  for (size_t i = 0; i < replaced.size(); ++i) {
    const auto& x = replaced[i];
    const std::string name = x.value("name", std::string("?"));
    const std::string patch = x.value("patch", std::string("?"));
    const auto e = reach_entered_.find(i);
    const uint32_t entered = e == reach_entered_.end() ? 0 : e->second;
    // How calls went around it: a bypass chain seen, or (entered by none) a class hiding it.
    const std::string* around = nullptr;
    if (auto b = reach_bypass_.find(i); b != reach_bypass_.end()) around = &b->second;
    else if (auto h = reach_hidden_.find(i); h != reach_hidden_.end() && entered == 0)
      around = &h->second;
    const std::string head =
        fmt::format("your {} {} ({}) was entered by {} of {} threads' calls", name,
                    x.value("kind", std::string("replacement")), patch, entered, reach_calls_);
    if (entered == 0 && reach_calls_ > 0 && around == nullptr && ran.count(source_of(x))) {
      r.notes.push_back(fmt::format("{}; no call reached what it replaced either ({}): this "
                                    "recording does not use it (the rest of the patch ran)",
                                    head, x.value("target", name)));
    } else if (entered == 0 && reach_calls_ > 0) {
      Finding f;
      f.code = "patch-not-reached";
      f.thread = sim::kNoThread;
      f.step = s_.step();
      f.type = "(none: the patch never ran)";
      f.message = head;
      f.where = patch;
      f.words = around != nullptr
                    ? *around
                    : fmt::format("no call went through it, nor through what it replaced: {}",
                                  x.value("target", name));
      missed.push_back(std::move(f));
    } else if (reach_calls_ > 0) {
      r.notes.push_back(around != nullptr ? fmt::format("{}; {}", head, *around) : head);
    }
  }
  r.findings.insert(r.findings.begin(), missed.begin(), missed.end());
}

void PythonWorld::RunThread(uint32_t t) {
  try {
    at_point_[t] = 0;
    Resumed(t);
    // The message's fields are views of py_'s buffer: each is used before anything that can
    // switch fibers (another fiber's Read reuses the buffer), never after.
    std::vector<std::string_view> f;
    for (;;) {
      const std::string_view line = py_.Read();
      SplitTabs(line, f);
      const std::string_view op = f[0];
      auto need = [&](size_t n) {
        if (f.size() < n)
          throw EngineError(fmt::format("python engine: short message {:?} from thread {}", line, t));
      };
      const char code = op.size() == 1 ? op[0] : '\0';
      if (code != 'p' && code != 'm' && code != 'v' && code != 'f' && code != 'r') {
        // A message the controller answers, or the thread's end: the plan ends (the Python
        // side reads a "g" for it), and the pick that resumes a thread now is not planned.
        plan_.clear();
        plan_at_ = 0;
        resumed_by_plan_ = false;
      }
      if (code == 'p') {
        need(4);
        // Planned or not is decided before the point; the thread the pick resumes (t or
        // another fiber, back from its own point) reads resumed_by_plan_.
        uint32_t pick = 0;
        resumed_by_plan_ = TakePlanned(pick);
        planned_pick_ = pick;
        at_point_[t] = 1;
        s_.Point({AccessOf(f[1]), Object(f[2]), Label(f[3])});
        at_point_[t] = 0;
        Resumed(t);
      } else if (code == 'm') {
        need(4);
        steps_.merging = true;
        s_.Point({AccessOf(f[1]), Object(f[2]), Label(f[3])});
        steps_.merging = false;
      } else if (code == 'a') {
        need(3);
        MutexNamed(f[1]).Lock(Label(f[2]));
        Waited(t);
      } else if (code == 't') {
        need(3);
        const bool ok = MutexNamed(f[1]).TryLock(Label(f[2]));
        Waited(t, ok ? 1 : 0);
      } else if (code == 'u') {
        need(3);
        MutexNamed(f[1]).Unlock(Label(f[2]));
        Waited(t);
      } else if (code == 'w') {
        need(4);
        CondNamed(f[1]).Wait(MutexNamed(f[2]), Label(f[3]));
        Waited(t);
      } else if (code == 'n') {
        need(4);
        if (f[2] == "1") CondNamed(f[1]).NotifyAll(Label(f[3]));
        else CondNamed(f[1]).NotifyOne(Label(f[3]));
        Waited(t);
      } else if (code == 'v') {
        need(2);
        s_.Advance(ToU64(f[1], "time"));
      } else if (code == 'f') {
        need(2);
        AddFinding(t, f[1]);
      } else if (code == 'r') {
        need(2);
        AddReach(f[1]);
      } else if (code == 'x') {
        return;
      } else if (op == "done") {
        // The replay child ended before the run did, and not by rerace's way out: the
        // program's code (a patch's os._exit(0)) ended it.
        throw EngineError(fmt::format("python engine: the program ended the replay process in "
                                      "the middle of a run (exit status {}: os._exit, or a C "
                                      "extension's exit, in a patch or the tuner code); the run "
                                      "cannot be replayed to its end",
                                      f.size() > 1 ? f[1] : std::string_view("?")),
                          kExitDataError);
      } else if (code == '!') {
        throw EngineError(fmt::format("python engine: {}", f.size() > 1 ? f[1] : std::string_view("?")));
      } else if (code == 'q') {
        // The program (not rerace) ended the replay process: the user's to see, exit 65.
        throw EngineError(fmt::format("python engine: {}", f.size() > 1 ? f[1] : std::string_view("?")),
                          kExitDataError);
      } else {
        throw EngineError(fmt::format("python engine: unexpected message {:?} from thread {}", line, t));
      }
    }
  } catch (const EngineError& e) {
    if (error_.empty()) {
      error_ = e.what();
      error_code_ = e.exit_code();
    }
    throw;
  }
}

void PythonWorld::Finalize(ReplayResult& r) {
  // End the Python run: whichever Python thread is reading now takes "e" and the child exits.
  if (error_.empty()) {
    py_.Send("e");
    std::vector<std::string_view> f;
    for (;;) {
      SplitTabs(py_.Read(), f);
      if (f[0] == "done") break;
      if ((f[0] == "!" || f[0] == "q") && error_.empty()) {
        error_ = fmt::format("python engine: {}", f.size() > 1 ? f[1] : std::string_view("?"));
        if (f[0] == "q") error_code_ = kExitDataError;
      }
      else if ((f[0] == "f" || f[0] == "r") && f.size() > 1) continue;  // late, of a torn-down run
    }
  }
  if (!error_.empty()) throw EngineError(error_, error_code_);
  if (auto x = SchedulerFinding(r.run)) findings_.push_back(std::move(*x));
  std::stable_sort(findings_.begin(), findings_.end(),
                   [](const Finding& a, const Finding& b) { return a.step < b.step; });
  r.findings = std::move(findings_);
  // A patch never on the path leads: every other finding of the run is of code it did not change.
  ReportReach(r);
  r.makespan = r.run.makespan;
}

std::string EngineSummaryOf(const std::string& info_json) {
  const nlohmann::json j = nlohmann::json::parse(info_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "python";
  std::vector<std::string> patches;
  if (j.contains("patches") && j["patches"].is_array())
    for (const auto& p : j["patches"]) {
      std::string f = p.value("file", std::string("?"));
      f = f.substr(f.rfind('/') + 1);
      // Named by content too: two versions of one file are two patches (issue 28).
      const std::string sha = p.value("sha256", std::string());
      patches.push_back(sha.empty() ? f : fmt::format("{} (sha256 {})", f, sha.substr(0, 8)));
    }
  std::string py = j.value("python", std::string("?"));
  py = py.substr(0, py.rfind('.'));  // major.minor: the switch rules' version
  return fmt::format("python: CPython {} ({}), Triton {}, patches {}", py,
                     j.value("mode", std::string("gil")), j.value("triton", std::string("?")),
                     patches.empty() ? std::string("none") : fmt::format("{}", fmt::join(patches, " ")));
}

}  // namespace rerace::replay::detail

namespace rerace::replay {

std::string DescribeEngine(const std::string& info_json) {
  const nlohmann::json j = nlohmann::json::parse(info_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "engine: python (" + info_json + ")";
  std::string file = j.value("triton_file", "");
  if (const size_t cut = file.rfind("triton/"); cut != std::string::npos) file = file.substr(cut);
  std::string out = fmt::format(
      "engine: the real tuner code: Python {}, Triton {} ({}); switch points: {}; replaced: {}",
      j.value("python", "?"), j.value("triton", "?"), file, j.value("rules", "?"),
      fmt::join(j.value("replaced", std::vector<std::string>{}), ", "));
  for (const auto& t : j.value("tuners", std::vector<std::string>{})) out += "\ntuner " + t;
  if (j.value("triton_differs", false))
    out += fmt::format("\nNB: the step was recorded with Triton {}; this replays Triton {} (put the "
                       "recorded release first on PYTHONPATH to replay it)",
                       fmt::join(j.value("recorded_triton", std::vector<std::string>{}), ", "),
                       j.value("triton", std::string("?")));
  if (j.value("python_differs", false))
    out += fmt::format(
        "\nNB: the step was recorded with Python {}; these switch points are those of the Python "
        "running here: to check the recorded interpreter, give --python-exe a Python of that "
        "version",
        fmt::join(j.value("recorded_python", std::vector<std::string>{}), ", "));
  if (const auto fake = j.value("fake_torch", std::vector<std::string>{}); !fake.empty())
    out += fmt::format("\nNB: this Python has no torch: {} imported with rerace's minimal fake torch "
                       "(replay/engine/python/rerace_real/fake_torch.py: torch.cuda.is_available() is False, "
                       "nothing else), its packages' __init__ not run",
                       fmt::join(fake, ", "));
  if (j.contains("imported_alone") && j["imported_alone"].is_array())
    for (const auto& a : j["imported_alone"])
      if (a.is_array() && a.size() == 2 && a[0].is_string() && a[1].is_string())
        out += fmt::format("\nNB: {} imported alone, its packages' __init__ not run: they import {}, "
                           "which this Python does not have",
                           a[0].get<std::string>(), a[1].get<std::string>());
  if (j.contains("patches"))
    for (const auto& p : j["patches"]) {
      const auto changed = p.value("changed", std::vector<std::string>{});
      const std::string sha = p.value("sha256", std::string());
      out += fmt::format("\npatch {}{}{}: {}", detail::ShownPath(p.value("file", "?")),
                         sha.empty() ? "" : " (sha256 " + sha.substr(0, 8) + ")",
                         p.value("recorded", false) ? " (named by the recording, imported)" : "",
                         changed.empty() ? std::string("changed nothing in Autotuner or the recorded "
                                                       "tuner classes (applied, no effect on the "
                                                       "tuner class)")
                                         : fmt::format("{}", fmt::join(changed, "; ")));
    }
  return out;
}

}  // namespace rerace::replay
