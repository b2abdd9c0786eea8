// replay/model/src/tuner_world_gil.cc: the Python mode of a replay and the GIL's atomic windows.
#include "rerace/replay/model/tuner_world_gil.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "rerace/replay/model/tuner_world.h"

namespace rerace::replay::detail {

namespace {

// What the probe recorded about the interpreter: "3.12" and whether the GIL was on. Nothing
// when the recording has no metadata (made before the probe wrote it).
struct Recorded {
  std::string python;
  bool known = false;
  bool gil = true;
};

Recorded RecordedPython(const Program& p) {
  Recorded r;
  for (const auto& [tuner, text] : p.tuner_meta) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("python") || !j["python"].is_object()) continue;
    const nlohmann::json& py = j["python"];
    if (py.contains("version") && py["version"].is_string()) {
      const std::string v = py["version"].get<std::string>();
      const size_t dot = v.find('.', v.find('.') + 1);
      r.python = v.substr(0, dot);
    }
    r.known = true;
    if (py.contains("gil") && py["gil"].is_boolean()) r.gil = py["gil"].get<bool>();
    return r;
  }
  return r;
}

}  // namespace

StepMode ResolveStepMode(const Program& p, const ReplayOptions& o, const TunerModel& model,
                         const std::string& model_name) {
  StepMode m;
  const std::span<const GilTable> tables = model.GilTables();
  if (tables.empty()) {
    // Not Python code (the native C++ tuner): truly parallel threads.
    if (o.python_mode == "gil")
      m.why = fmt::format("every access a step: model {} is not Python code (--python gil "
                          "applies to Python tuners)",
                          model_name);
    return m;
  }
  const Recorded rec = RecordedPython(p);
  m.python = o.python_version.empty() ? rec.python : o.python_version;
  const std::string version_from =
      o.python_version.empty() ? "as recorded" : "from --python-version";
  if (o.python_mode == "free-threaded") {
    if (rec.known && rec.gil)
      m.why = fmt::format("every access a step (free-threaded, from --python; the recording ran "
                          "CPython {} with the GIL)",
                          rec.python);
    return m;
  }
  if (o.python_mode == "auto" && rec.known && !rec.gil) return m;  // a free-threaded build
  m.gil = true;
  // A recording that does not say which Python ran it (made before the probe wrote its
  // metadata): the steps are chosen, and said, never silently every access. The H200's
  // interpreter (CPython 3.12 with the GIL) is the evidence: there the prewarm and per-key-event
  // fixes held, which every-access steps contradict (docs/FIDELITY.md).
  if (!rec.known && m.python.empty()) {
    m.python = kAssumedPython;
    m.assumed = true;
  }
  const std::string mode_from = o.python_mode == "gil" ? "from --python" : "as recorded";
  for (const GilTable& t : tables)
    if (m.python == t.python) m.table = &t;
  if (m.assumed) {
    m.assumption = fmt::format("CPython {} with the GIL{}: this recording does not say which "
                        "Python ran it; --python free-threaded checks every access as a step, "
                        "--python-version X.Y another version{}",
                        m.python, o.python_mode == "gil" ? " (--python gil)" : "",
                        m.table == nullptr ? fmt::format(" (model {} has no table of atomic "
                                                         "windows for {}: every access a step)",
                                                         model_name, m.python)
                                           : "");
    m.why = "assumed " + m.assumption;
  } else if (m.python.empty()) {
    m.why = fmt::format("CPython with the GIL ({}), version unknown: no atomic windows, every "
                        "access a step (--python-version X.Y picks one)",
                        mode_from);
  } else if (m.table == nullptr) {
    std::string known;
    for (const GilTable& t : tables) known += std::string(known.empty() ? "" : ", ") + t.python;
    m.why = fmt::format("CPython {} with the GIL ({}, version {}): model {} has no table of "
                        "atomic windows for {} (it has {}; tools/scripts/gil-regions.py makes "
                        "one), every access a step",
                        m.python, mode_from, version_from, model_name, m.python, known);
  } else {
    m.why = fmt::format("CPython {} with the GIL ({}, version {}): the accesses between two "
                        "places where it can hand the GIL over are one step",
                        m.python, mode_from, version_from);
  }
  return m;
}

std::string ModelEngine(const StepMode& m) {
  if (!m.gil) return "model";
  return m.python.empty() ? "model, CPython GIL steps"
                          : fmt::format("model, CPython {} GIL steps", m.python);
}

uint16_t GilSteps::LineOf(const char* label) {
  for (const auto& [l, line] : lines_)
    if (l == label) return line;
  uint16_t line = 0;
  constexpr std::string_view kFile = "autotuner.py:";
  const size_t n = std::strlen(label);
  if (n > kFile.size() && std::string_view(label, kFile.size()) == kFile)
    std::from_chars(label + kFile.size(), label + n, line);
  lines_.push_back({label, line});  // once per label: a model has a few dozen
  return line;
}

bool GilSteps::InStep(sim::ThreadId t, const sim::SchedulingPoint& p) {
  if (last_.size() <= t) last_.resize(t + 1, 0);
  if (p.access != sim::Access::kRead && p.access != sim::Access::kWrite) {
    last_[t] = 0;  // a lock, a wait, a sleep: a hand-over place (conservative)
    return false;
  }
  const uint16_t line = LineOf(p.label);
  const uint16_t from = std::exchange(last_[t], line);
  if (from == 0 || line == 0 || mode_.table == nullptr) return false;
  const std::span<const GilWindow> ws = mode_.table->windows;
  for (size_t i = 0; i < ws.size(); ++i) {
    if (ws[i].from != from || ws[i].to != line) continue;
    if (ws[i].warmup <= 0) return ws[i].warmup == 0;
    if (executions_.size() < ws.size()) executions_.resize(ws.size(), 0);
    // The call between ran now: specialized from the (warmup+1)-th execution on.
    return ++executions_[i] > static_cast<uint32_t>(ws[i].warmup);
  }
  return false;
}

}  // namespace rerace::replay::detail
