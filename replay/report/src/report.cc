// replay/report/src/report.cc: a run as text for a person (FormatReport, FormatRaces) and as JSON
// (FormatJson, RacesJson); JsonEscape is in replay/model/src/text.cc.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "rerace/base/utf8.h"
#include "rerace/replay/model/result.h"
#include "rerace/replay/report/report.h"

namespace rerace::replay {

namespace {
// The races a user reads: on the program's objects. The real-code engine's `gil-warmup FILE:LINE@OFFSET`
// objects (a cold call site's execution count, docs/ENGINE.md "GIL mode") order its steps for
// DPOR; no data of the program is behind them, so --races does not list them.
std::vector<sim::Race> ProgramRaces(const std::vector<sim::Race>& all) {
  std::vector<sim::Race> out;
  for (const sim::Race& r : all)
    if (r.object_name.rfind("gil-warmup ", 0) != 0) out.push_back(r);
  return out;
}
}  // namespace

std::string RacesJson(const std::vector<sim::Race>& all) {
  const std::vector<sim::Race> races = ProgramRaces(all);
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
  for (const std::string& n : r.notes) out += fmt::format("patch reach: {}\n", n);
  // The real-code engine's clock advances by the recorded kernels only: no step time to show
  // (check prices its fixes with the model; check.h, PriceFix).
  if (r.engine.rfind("python", 0) == 0)
    out += fmt::format("simulated step time: not priced by the real-code engine, whose virtual GPU "
                       "runs only the recorded kernels (rerace check prices a fix with the "
                       "model) ({} steps, {} preemptions)\n",
                       r.run.steps, r.run.preemptions);
  else
    out += fmt::format("simulated step time: {} ({} steps, {} preemptions)\n", Ms(r.makespan),
                       r.run.steps, r.run.preemptions);
  for (const DuplicateTuning& d : r.duplicates)
    out += fmt::format("warning: duplicate-tuning: {} key {} tuned by {} threads; {} of GPU time "
                       "wasted\n",
                       d.kernel, d.key, d.threads, Ms(d.wasted_gpu_ns));
  if (r.left_recording != 0)
    out += fmt::format("note: the model left the recording at {} transitions ({})\n",
                       r.left_recording,
                       p.truncated ? "the trace is truncated: its threads' recorded runs end at "
                                     "the cut, the model's go on"
                                   : "the recorded run took another path");
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

std::string FormatRaces(const std::vector<sim::Race>& all, const std::vector<Finding>& involved) {
  const std::vector<sim::Race> races = ProgramRaces(all);
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

static std::string FindingJson(const Finding& f) {
  // Every key in every finding (docs/JSON.md): what a finding lacks is null. A silent failure
  // raised nothing: no type, no message.
  return fmt::format(
      "{{\"code\":{},\"silent\":{},\"thread\":{},\"thread_name\":{},\"step\":{},"
      "\"type\":{},\"message\":{},\"where\":{},\"words\":{}}}",
      JsonString(f.code), f.silent ? "true" : "false",
      f.thread == sim::kNoThread ? "null" : std::to_string(f.thread),  // a deadlock: no one thread's
      JsonOrNull(f.thread_name), f.step, f.silent ? "null" : JsonString(f.type),
      f.silent ? "null" : JsonString(f.message), JsonString(f.where), JsonString(f.words));
}

std::string FormatJson(const ReplayResult& r, const Program& p, bool with_races) {
  std::string out = "{";
  // The python engine runs no model: "engine" says which ran, "engine_summary" what (the
  // interpreter, Triton, the patches with their hashes). The keys are the same under both
  // engines; what one engine does not give is null (docs/JSON.md).
  const bool python = r.engine.rfind("python", 0) == 0;
  out += fmt::format("\"trace\":{},\"engine\":\"{}\",\"engine_summary\":{},\"model\":{},"
                     "\"fix\":{},\"strategy\":{},",
                     JsonString(p.source), python ? "python" : "model", JsonString(r.engine),
                     python ? "null" : JsonString(r.model), JsonString(r.fix), JsonString(r.strategy));
  out += fmt::format("\"failed\":{},\"steps\":{},\"preemptions\":{},\"makespan_ns\":{},",
                     r.failed() ? "true" : "false", r.run.steps, r.run.preemptions,
                     python ? "null" : std::to_string(r.makespan));
  out += "\"findings\":[";
  for (size_t i = 0; i < r.findings.size(); ++i) out += (i ? "," : "") + FindingJson(r.findings[i]);
  out += "],\"duplicates\":[";
  for (size_t i = 0; i < r.duplicates.size(); ++i) {
    const DuplicateTuning& d = r.duplicates[i];
    out += fmt::format("{}{{\"kernel\":{},\"key\":{},\"threads\":{},\"wasted_gpu_ns\":{}}}",
                       i ? "," : "", JsonString(d.kernel), JsonString(d.key), d.threads,
                       d.wasted_gpu_ns);
  }
  out += fmt::format("],\"schedule\":\"{}\",\"step_mode\":{}", r.run.schedule.Encode(),
                     JsonOrNull(r.steps));
  // Where a patch was entered: the real code's; the model follows no patch (null).
  if (python) {
    out += ",\"patch_reach\":[";
    for (size_t i = 0; i < r.notes.size(); ++i) out += (i ? "," : "") + JsonString(r.notes[i]);
    out += "]";
  } else {
    out += ",\"patch_reach\":null";
  }
  out += ",\"races\":" + (with_races ? RacesJson(r.races) : std::string("null"));
  return out + "}";
}

}  // namespace rerace::replay
