// replay/command/src/command.cc: what replay, fuzz and check share: loading a trace for a command, the
// hints that reproduce a finding, schedule files' headers (see rerace/replay/command/command.h).
#include "rerace/replay/command/command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <type_traits>

#include "rerace/base/output_file.h"
#include "rerace/replay/report/checked.h"
#include "rerace/replay/model/fix.h"
#include "rerace/traces/reader.h"
#include "rerace/replay/model/text.h"

namespace rerace::replay {

using detail::Sprintf;

// A truncated trace is said on the first line of what a command prints (on stderr under
// --json): what follows covers only the events recorded before the cut. `check` refuses one
// unless told otherwise (`refuse_truncated`).
Result<LoadedTrace> LoadTrace(const std::string& path, const CommandOptions& c, std::string& out,
                              bool refuse_truncated) {
  // Streamed: the events are never all in memory, only the programs (replay/program.h).
  traces::Trace trace;
  auto program = ReadProgram(path, &trace);
  if (!program) return program.error();
  if (trace.truncated && refuse_truncated)
    return Error{fmt::format("{}: {}; a verdict on part of a run is not a verdict on the run: "
                             "pass --allow-truncated to check the {} events that are there",
                             path, trace.truncation, trace.event_count),
                 kExitDataError};
  if (trace.truncated) {
    const std::string warning =
        Sprintf("warning: TRUNCATED trace %s: %s; what follows covers only the %llu events "
                "recorded before the cut\n",
                path.c_str(), trace.truncation.c_str(),
                static_cast<unsigned long long>(trace.event_count));
    if (c.json)
      c.notes(warning);
    else
      out += warning;
  }
  std::string order_note;
  const bool python = c.engine == "python";
  // Recorded locks order their calls in the replay too: only a recording without any is told.
  bool recorded_locks = false;
  for (const ThreadProgram& t : program->threads)
    for (const Op& op : t.ops) recorded_locks |= op.kind == Op::Kind::kLockAcquire;
  // Nor one whose patches run: their own locks (re-executed) may be what ordered the calls.
  const bool runs_patches = !c.patches.empty() || !PatchedParts(*program).empty();
  // Said only where the threads' first calls did not all overlap (a serial warm-up, a main
  // thread's call before the workers start): later calls of many also miss each other by chance.
  size_t serial = 0;
  if (!recorded_locks && !runs_patches && !program->sync_recorded) {
    std::set<uint32_t> first;
    for (const ThreadProgram& t : program->threads)
      for (const Op& op : t.ops)
        if (op.kind == Op::Kind::kTunerCall) {
          first.insert(op.call);
          break;
        }
    for (const auto& [a, b] : SerialCalls(*program)) serial += first.count(a) && first.count(b);
  }
  if (c.order_from_timing) {
    OrderFromTiming(*program);
  } else if (serial != 0) {
    // The recording cannot say why those calls did not overlap: the program's own
    // synchronization (an Event, a join, a queue) or chance. Said once, on standard error with
    // the engine's line.
    const std::string note = fmt::format(
        "note: this recording holds no synchronization of the program: calls it ordered may be "
        "replayed as concurrent ({} time{} a thread's first call began after another thread's "
        "first call had ended); --order-from-timing keeps calls that never overlapped in their "
        "recorded order\n",
        serial, serial == 1 ? "" : "s");
    order_note = note;
  }
  if (program->sync_recorded) {
    uint32_t orders = 0;
    std::vector<std::string> kinds;
    for (const auto& [what, n] : program->sync_orders) {
      orders += n;
      kinds.push_back(fmt::format("{} {}", what, n));
    }
    if (orders != 0)
      order_note += fmt::format(
          "note: replayed in the order of the program's own synchronization, as recorded: {} "
          "wait{} ordered a tuner call after another thread's ({})\n",
          orders, orders == 1 ? "" : "s", fmt::join(kinds, ", "));
    if (program->sync_overflowed)
      order_note += "note: the probe stopped recording the program's synchronization at its "
                    "bound (rerace_probe/sync.py MAX_MARKS): calls ordered by later waits may be "
                    "replayed as concurrent\n";
  }
  // Sharing between tuner objects: replayed as recorded, and said; a recording that cannot say
  // (an older probe) and has two tuner objects or more is told once.
  std::set<uint64_t> tuner_objects;
  for (const TunerCall& call : program->calls) tuner_objects.insert(call.tuner);
  if (tuner_objects.size() >= 2 && !program->identity_recorded) {
    order_note += fmt::format(
        "note: this recording does not say what its {} tuner objects share (recorded by a "
        "probe before identity records): each replays with its own cache dict and hooks, so "
        "tuners that shared them (shallow copies of one tuner, a cache dict handed to several) "
        "replay as independent\n",
        tuner_objects.size());
  }
  for (const std::string& line : SharingLines(*program))
    order_note += "note: replayed as recorded: " + line + "\n";
  if (!c.only.empty()) {
    auto threads = ParseOnly(c.only);
    if (!threads) return threads.error();
    auto sub = SubProgram(*program, *threads);
    if (!sub) return sub.error();
    program = std::move(*sub);
  }
  auto fix = python ? Result<Fix>(Fix{}) : ParseFix(c.fix);
  if (!fix) return fix.error();
  if (!python && (!c.patches.empty() || c.python_exe != "python3" || c.allow_recorded_patch))
    return Error{"--patch, --python-exe and --allow-recorded-patch need --engine python", kExitUsage};
  if (python && !c.python_version.empty())
    return Error{"--python-version is for --engine model (the python engine runs the version of "
                 "--python-exe)",
                 kExitUsage};
  if (!python && c.model == "auto")
    if (auto cls = UnknownTunerClass(*program))
      return Error{fmt::format("{}: the tuner class '{}' is not one rerace models (Triton's "
                               "triton.* Autotuner, FLA's CachedAutotuner, rerace.kernels.*): "
                               "pass --model {} to model it as one of those",
                               path, *cls, fmt::join(ModelNames(), ", ")),
                   kExitDataError};
  // Without tuner calls there is no race to find, but the step can still be priced (the
  // kernels, copies, synchronizations and CPU time): with an explicit --model.
  if (program->calls.empty() && (python || c.model == "auto"))
    return Error{fmt::format("{}: the trace has no tuner calls: nothing for a tuner model to "
                             "replay (was it recorded with --probe?); --model NAME prices its "
                             "step all the same",
                             path),
                 kExitDataError};
  LoadedTrace l;
  l.note = std::move(order_note);
  l.program = std::move(*program);
  l.options.fix = std::move(*fix);
  l.options.model = c.model;
  l.options.reps = c.reps;
  l.options.max_steps = c.max_steps;
  l.options.detect_races = c.races;
  l.options.python_mode = c.python_mode;
  l.options.python_version = c.python_version;
  // What the probe saw on the GPU: a patch never on the path there (issue 29).
  for (const std::string& line : RecordedReach(l.program))
    c.notes("recorded patch reach: " + line + "\n");
  const std::vector<std::string> patched = PatchedParts(l.program);
  if (!python && !patched.empty() && c.fix == "none")
    return Error{fmt::format("{}: the recorded program was patched ({}): the C++ model would check "
                             "stock Triton, which never ran; check the real code with --engine "
                             "python (give the patch with --patch FILE; rerace's own fixes load by "
                             "themselves, an installed module with --allow-recorded-patch), or say "
                             "which fix it stands for with --fix",
                             path, fmt::join(patched, "; ")),
                 kExitUsage};
  if (python) {
    l.options.engine = "python";
    l.options.python_mode = c.python_mode;
    l.options.python_exe = c.python_exe;
    l.options.allow_recorded_patch = c.allow_recorded_patch;
    l.options.watchdog_ms = static_cast<uint32_t>(std::min(c.watchdog_seconds * 1000, 86'400'000.0));
    for (const std::string& p : c.patches)
      l.options.patches.push_back(std::filesystem::absolute(p).string());
    if (auto u = UsePythonFix(c.fix, l.options); !u) return u.error();
    l.options.price_as = c.price_as;
    // A recording whose program took locks of its own was patched: the real code must run the
    // patch, or it checks stock code that never ran.
    std::set<std::string> locks;
    for (const ThreadProgram& t : l.program.threads)
      for (const Op& op : t.ops)
        if (op.kind == Op::Kind::kLockAcquire) locks.insert(op.lock_name);
    if (!locks.empty() && l.options.patches.empty())
      return Error{fmt::format("{}: the recorded program took locks of its own ({}): it was "
                               "patched; give the patch with --patch FILE (or --fix NAME), or "
                               "check the recorded locks with --engine model",
                               path, fmt::join(locks, ", ")),
                   kExitUsage};
    // The real code takes the locks its patch takes: the recorded ones are not replayed (the
    // model, which runs no patch, keeps them). Said, so that a verdict is read as that of the
    // given patch in place of the recorded one, not on top of it.
    if (!locks.empty())
      c.notes(fmt::format("recorded locks not replayed: {} took {} (its patch's); the real code "
                          "runs the patch given here in its place, not on top of it "
                          "(--engine model keeps the recorded locks)\n",
                          path, fmt::join(locks, ", ")));
  }
  l.options.target = c.failure;
  return l;
}

// One word as a POSIX shell reads it: as is when it holds nothing the shell interprets, else
// in single quotes, a quote inside written '\''.
std::string ShellQuote(const std::string& w) {
  const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                                       "QRSTUVWXYZ0123456789_@%+=:,./-") ==
                                       std::string::npos;
  if (plain) return w;
  std::string q = "'";
  for (char ch : w) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// The environment that changed what the real-code engine ran (PYTHONPATH picks the Triton and
// the modules it imports): what a hint and a saved schedule must carry. Empty for the model.
std::string EngineEnvironment(const CommandOptions& c) {
  if (c.engine != "python") return "";
  const char* pp = std::getenv("PYTHONPATH");
  return pp == nullptr ? "" : pp;
}

// The replay command for this trace with every option that changes a run (what a hint must
// carry to reproduce what it claims), quoted as a shell reads it, after the environment the
// real-code engine ran in; the caller adds how the schedule is chosen.
std::string ReplayCommandLine(const std::string& trace, const CommandOptions& c) {
  const std::string env = EngineEnvironment(c);
  std::string f = (env.empty() ? "" : "PYTHONPATH=" + ShellQuote(env) + " ") + ShellQuote(c.program) +
                  " replay " + ShellQuote(trace);
  if (c.fix != "none") f += " --fix " + ShellQuote(c.fix);
  if (c.model != "auto") f += " --model " + c.model;
  if (c.reps != 1) f += fmt::format(" --reps {}", c.reps);
  f += " --engine " + c.engine;  // named always: the default (auto) may choose another here
  for (const std::string& p : c.patches) f += " --patch " + ShellQuote(p);
  if (c.python_mode != "auto") f += " --python " + c.python_mode;
  if (!c.python_version.empty()) f += " --python-version " + c.python_version;
  if (c.python_exe != "python3") f += " --python-exe " + ShellQuote(c.python_exe);
  if (c.allow_recorded_patch) f += " --allow-recorded-patch";
  if (c.max_steps != kDefaultMaxSteps) f += fmt::format(" --max-steps {}", c.max_steps);
  if (!c.failure.empty()) f += " --failure " + ShellQuote(c.failure);
  if (!c.only.empty()) f += " --only " + c.only;
  if (c.order_from_timing) f += " --order-from-timing";
  return f;
}

Result<std::vector<uint32_t>> ParseOnly(const std::string& text) {
  std::vector<uint32_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string word = text.substr(at, comma - at);
    if (word.empty() || word.size() > 9 || word.find_first_not_of("0123456789") != std::string::npos)
      return Error{fmt::format("--only '{}': expected thread indices separated by commas (1,3), "
                               "as reports number the threads",
                               text),
                   kExitUsage};
    out.push_back(static_cast<uint32_t>(std::stoul(word)));
    at = comma + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The same, replaying seed `seed` of the strategy.
std::string SeedCommandLine(const std::string& trace, const CommandOptions& c, uint64_t seed) {
  std::string f = ReplayCommandLine(trace, c) + " --strategy " + c.strategy.name;
  if (c.strategy.pct_depth != 2) f += fmt::format(" --pct-depth {}", c.strategy.pct_depth);
  return f + fmt::format(" --seed {}", seed);
}

// Refuses an output (flag, path) that names one of the command's inputs (the traces, the
// schedule file, the patches): writing it would destroy what the command reads.
Result<void> RefuseOutputsAreInputs(
    const std::vector<std::pair<std::string, std::string>>& outputs, std::vector<std::string> inputs,
    const CommandOptions& c) {
  inputs.insert(inputs.end(), c.patches.begin(), c.patches.end());
  for (const auto& [flag, path] : outputs)
    if (auto r = RefuseOutputIsInput(flag, path, inputs); !r) return r;
  // Two outputs of one command at one file: the second would replace the first. (A device or a
  // FIFO, such as /dev/stdout, is written in place: two outputs may share it.)
  auto same_file = [](const std::string& a, const std::string& b) {
    std::error_code ea, eb;
    const auto pa = std::filesystem::weakly_canonical(a, ea), pb = std::filesystem::weakly_canonical(b, eb);
    if (ea || eb || pa != pb) return false;
    struct stat st {};
    return ::stat(a.c_str(), &st) != 0 || S_ISREG(st.st_mode);
  };
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (!outputs[i].second.empty() && !outputs[j].second.empty() &&
          same_file(outputs[i].second, outputs[j].second))
        return Error{fmt::format("{} {} and {} {} name one file (the second would replace the "
                                 "first); name two files",
                                 outputs[i].first, outputs[i].second, outputs[j].first,
                                 outputs[j].second),
                     kExitUsage};
  return {};
}

// What a command checked, as every line names it: "fix 'lock-run'", or the patch files by name
// and content hash ("patch my_lock.py (sha256 1a2b3c4d)").
std::string CheckedLabel(const CommandOptions& c) { return CheckedWords(c.fix, IdentifyPatches(c.patches)); }

// A schedule header's "patches": each --patch file's name and full content hash, so that a
// schedule replays only under the patches that made it.
std::string PatchesHeader(const CommandOptions& c) {
  std::vector<std::string> parts;
  for (const PatchId& p : IdentifyPatches(c.patches))
    parts.push_back(fmt::format("{} (sha256 {})", p.name, p.sha256.empty() ? "unreadable" : p.sha256));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::string> PatchNames(const std::string& header) {
  std::vector<std::string> names;
  size_t at = 0;
  while (at < header.size()) {
    const size_t open = header.find(" (sha256 ", at);
    if (open == std::string::npos) break;
    names.push_back(header.substr(at, open - at));
    const size_t close = header.find(')', open);
    if (close == std::string::npos) break;
    at = close + 1;
    if (header.compare(at, 2, ", ") == 0) at += 2;
  }
  return names;
}

// `seed`: only for a schedule a seeded strategy made (none for DPOR, the recorded order or a
// schedule file). `failure`: the finding the file is saved for, as "code at where".
Result<void> SaveSchedule(const ReplayResult& r, const std::string& path, const std::string& trace,
                          const CommandOptions& c, std::optional<uint64_t> seed, const std::string& failure) {
  std::vector<std::pair<std::string, std::string>> meta = {{"trace", trace}, {"fix", c.fix}};
  // The python engine ran no model: its header names the engine (and the patches) alone.
  if (c.engine != "python") meta.emplace_back("model", r.model);
  meta.emplace_back("engine", r.engine);
  if (!c.patches.empty()) meta.emplace_back("patches", PatchesHeader(c));
  meta.insert(meta.end(), {{"reps", std::to_string(c.reps)},
                           {"max-steps", std::to_string(c.max_steps)},
                           {"strategy", r.strategy}});
  if (seed) meta.emplace_back("seed", std::to_string(*seed));
  if (c.engine == "python") meta.emplace_back("pythonpath", EngineEnvironment(c));
  if (!c.only.empty()) meta.emplace_back("only", c.only);
  if (c.order_from_timing) meta.emplace_back("order", "timing");
  meta.emplace_back("failure", failure);
  return r.run.schedule.Save(path, meta);
}

// --failure KIND: the first finding of that kind moves to the front, so that the report leads
// with it (the others keep their order by step).
void LeadWith(ReplayResult& r, const std::string& kind) {
  const Finding* f = kind.empty() ? nullptr : FirstOf(r, kind);
  if (f == nullptr || f == &r.findings.front()) return;
  const auto at = r.findings.begin() + (f - r.findings.data());
  std::rotate(r.findings.begin(), at, at + 1);
}

std::string FailureOf(const Finding* f) {
  return f == nullptr ? "none" : f->code + (f->where.empty() ? "" : " at " + f->where);
}

// The `# key: value` lines at the top of a schedule file (Schedule::Load has read it already;
// this reads at most its first lines).
std::map<std::string, std::string> ScheduleHeader(const std::string& path) {
  std::map<std::string, std::string> meta;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return meta;
  char line[4096];
  for (int i = 0; i < 64 && std::fgets(line, sizeof line, f) != nullptr && line[0] == '#'; ++i) {
    std::string l(line);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    const size_t colon = l.find(": ");
    if (colon == std::string::npos || colon < 2) continue;
    meta[l.substr(2, colon - 2)] = l.substr(colon + 2);
  }
  std::fclose(f);
  return meta;
}

// A schedule replays only under the fix, model, reps and step bound it was made with: take
// them from its header where the user gave none; refuse a flag that contradicts it.
Result<void> ApplyScheduleHeader(const std::string& path, CommandOptions& c) {
  const auto meta = ScheduleHeader(path);
  auto take = [&](const char* key, bool given_flag, std::string given, auto set) -> Result<void> {
    auto it = meta.find(key);
    if (it == meta.end()) return {};
    const bool explicit_flag = given_flag;
    if (explicit_flag && given != it->second && !(std::string(key) == "model" && given == "auto"))
      return Error{fmt::format("--{} '{}' does not match the schedule {}, made with {} '{}': a "
                               "schedule replays only under what it was made with; drop --{} or "
                               "pass --{} '{}'",
                               key, given, path, key, it->second, key, key, it->second),
                   kExitUsage};
    if (!explicit_flag || (std::string(key) == "model" && given == "auto")) return set(it->second);
    return {};
  };
  auto number = [&](const char* key, const std::string& v, auto& into) -> Result<void> {
    try {
      size_t pos = 0;
      const unsigned long long n = std::stoull(v, &pos);
      if (pos != v.size() || n > std::numeric_limits<std::remove_reference_t<decltype(into)>>::max())
        throw 0;
      into = static_cast<std::remove_reference_t<decltype(into)>>(n);
      return {};
    } catch (...) {
      return Error{fmt::format("{}: the header's {} '{}' is not a number", path, key, v),
                   kExitDataError};
    }
  };
  if (auto r = take("fix", c.fix_given, c.fix, [&](const std::string& v) -> Result<void> {
        c.fix = v;
        return {};
      }); !r)
    return r;
  const auto engine = meta.find("engine");
  const auto it = meta.find("model");
  if ((it != meta.end() && it->second == "python") ||  // written before issue 28
      (it == meta.end() && engine != meta.end() && engine->second.rfind("python", 0) == 0)) {
    c.engine = "python";  // the real-code engine made it; ReplayEngineMatches checks which
  } else {
    // Under auto, a schedule the model made replays under the model.
    if (c.engine == "auto" && engine != meta.end() && engine->second.rfind("model", 0) == 0)
      c.engine = "model";
    if (auto r = take("model", c.model_given, c.model, [&](const std::string& v) -> Result<void> {
          if (std::find(ModelNames().begin(), ModelNames().end(), v) == ModelNames().end())
            return Error{fmt::format("{}: the header's model '{}' is not one of {}", path, v,
                                     fmt::join(ModelNames(), ", ")),
                         kExitDataError};
          c.model = v;
          return {};
        });
        !r)
      return r;
  }
  if (auto it_order = meta.find("order"); it_order != meta.end() && it_order->second == "timing")
    c.order_from_timing = true;  // made under the recorded timing's order: replayed under it
  if (auto r = take("only", c.only_given, c.only, [&](const std::string& v) -> Result<void> {
        c.only = v;
        return {};
      }); !r)
    return r;
  if (auto r = take("reps", c.reps_given, std::to_string(c.reps),
                    [&](const std::string& v) { return number("reps", v, c.reps); });
      !r)
    return r;
  if (auto r = take("max-steps", c.max_steps_given, std::to_string(c.max_steps),
                    [&](const std::string& v) { return number("max-steps", v, c.max_steps); });
      !r)
    return r;
  return {};
}

std::vector<std::string> UniqueStems(const std::vector<std::string>& paths) {
  std::vector<std::string> stems;
  std::map<std::string, int> uses;
  for (const std::string& p : paths) {
    stems.push_back(std::filesystem::path(p).stem().string());
    ++uses[stems.back()];
  }
  for (size_t i = 0; i < stems.size(); ++i)
    if (uses[stems[i]] > 1) stems[i] += fmt::format(".{}", i + 1);
  return stems;
}

}  // namespace rerace::replay
