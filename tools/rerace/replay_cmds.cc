// tools/rerace/replay_cmds.cc: `rerace replay`, `rerace fuzz` and `rerace check`.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <limits>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <optional>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "checked.h"
#include "commands.h"
#include "flags.h"
#include "output.h"
#include "rerace/base/output_file.h"
#include "rerace/base/result.h"
#include "rerace/base/utf8.h"
#include "rerace/replay/campaign.h"
#include "rerace/replay/check.h"
#include "rerace/replay/fix.h"
#include "rerace/replay/program.h"
#include "rerace/replay/replay.h"
#include "rerace/replay/recorded.h"
#include "rerace/replay/shrink.h"
#include "rerace/replay/timeline.h"
#include "rerace/sim/random.h"
#include "rerace/sim/schedule.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"

namespace rerace::tools {

using namespace rerace::replay;

namespace {

constexpr uint64_t kDefaultMaxSteps = 2'000'000;

struct Common {
  bool races = false;
  std::string fix = "none";
  std::string model = "auto";
  uint32_t reps = 1;
  uint64_t max_steps = kDefaultMaxSteps;
  sim::StrategySpec strategy;
  bool json = false;
  std::string engine = "model";
  std::vector<std::string> patches;
  std::string python_mode = "auto";
  std::string python_version;
  std::string python_exe = "python3";
  bool allow_recorded_patch = false;
  std::string watchdog = "60s";
  std::string failure;  // --failure KIND
  // The options as parsed: a flag the user gave is told from a default by its count (a
  // schedule file's header fills in what was not given).
  CLI::Option* fix_opt = nullptr;
  CLI::Option* model_opt = nullptr;
  CLI::Option* reps_opt = nullptr;
  CLI::Option* max_steps_opt = nullptr;
  CLI::Option* failure_opt = nullptr;
  CLI::Option* engine_opt = nullptr;
  CLI::Option* python_exe_opt = nullptr;
};

void AddCommon(CLI::App* sub, Common& c, bool with_strategy) {
  c.fix_opt = sub->add_option("--fix", c.fix,
                  "Fix to apply: a name (" + fmt::format("{}", fmt::join(FixNames(), ", ")) +
                      "), names joined by '+', or a description like 'local=nargs;lock=hooks'")
      ->default_val("none");
  std::vector<std::string> models = {"auto"};
  models.insert(models.end(), ModelNames().begin(), ModelNames().end());
  c.model_opt = sub->add_option("--model", c.model,
                                "Tuner model: auto (from the trace's tuner class and Triton "
                                "version; a class rerace does not know is refused), or one of " +
                                    fmt::format("{}", fmt::join(ModelNames(), ", ")) +
                                    " (docs/MODEL.md: triton is Triton 3.6, native rerace's C++ "
                                    "autotuner)")
      ->default_val("auto")
      ->check(CLI::IsMember(models));
  c.engine_opt = sub->add_option("--engine", c.engine,
                  "model: rerace's C++ tuner models (fast, no Python needed); python: the real "
                  "tuner code (the Triton installed for --python-exe, the patches) run one thread "
                  "at a time under rerace's scheduler; auto: python when the recording came from "
                  "Python and a Triton of its version imports with --python-exe (else "
                  "build/py's), else the model, said in one line on standard error")
      ->default_val("model")
      ->check(CLI::IsMember({"model", "python", "auto"}));
  sub->add_option("--patch", c.patches,
                  "With --engine python: a Python file imported before the tuners are built, as "
                  "a training script applies a patch at start-up (repeatable)")
      ->check(CLI::ExistingFile);
  sub->add_option("--python", c.python_mode,
                  "Where a thread can lose the interpreter: gil (only where this CPython can hand "
                  "the GIL over; the model merges the accesses between two such places into one "
                  "step), free-threaded (at every shared access), or auto (as the recorded "
                  "interpreter ran; a recording that does not say is taken as CPython 3.12 with the "
                  "GIL, the H200's, and the verdict says so)")
      ->default_val("auto")
      ->check(CLI::IsMember({"auto", "gil", "free-threaded"}));
  sub->add_option("--python-version", c.python_version,
                  "With --engine model: the CPython version (X.Y) whose GIL hand-over places cut "
                  "the steps, instead of the recorded one")
      ->check([](const std::string& v) {
        const size_t dot = v.find('.');
        const bool ok = dot != std::string::npos && dot > 0 && dot + 1 < v.size() &&
                        v.find_first_not_of("0123456789.") == std::string::npos &&
                        v.find('.', dot + 1) == std::string::npos;
        return ok ? std::string() : "expected a version X.Y such as 3.12, found '" + v + "'";
      });
  c.python_exe_opt = sub->add_option("--python-exe", c.python_exe,
                  "With --engine python: the Python that runs the tuner code (its Triton is the "
                  "one replayed)")
      ->default_val("python3");
  sub->add_flag("--allow-recorded-patch", c.allow_recorded_patch,
                "With --engine python and a patched recording without --patch: import the patch "
                "module the recording names, when it is installed here (site-packages or your "
                "PYTHONPATH; never the current directory or the standard library)");
  sub->add_option("--watchdog", c.watchdog,
                  "With --engine python: a run or set-up with no progress for this long ends as a "
                  "hang naming where each Python thread is (90s, 10m, 1h; at least 1 s)")
      ->default_val("60s")
      ->check(flags::Duration());
  c.reps_opt = sub->add_option("--reps", c.reps,
                  "do_bench repetitions executed per config (0: as recorded); fewer steps, same "
                  "failures")
      ->default_val(1)
      ->check(flags::Count(0, 10000));
  c.max_steps_opt = sub->add_option("--max-steps", c.max_steps, "Step bound of one run")
                        ->default_val(kDefaultMaxSteps)
                        ->check(flags::Count(1, flags::kMaxSteps));
  c.failure_opt = sub->add_option("--failure", c.failure,
                                  "Target one kind of failure (" +
                                      fmt::format("{}", fmt::join(FailureKinds(), ", ")) +
                                      ") or the exception it raised as Python names it "
                                      "(KeyError, TypeError), optionally where it happens "
                                      "(KIND@WHERE, e.g. nargs-none@autotuner.py:233 or "
                                      "KeyError@autotuner.py:74): the report leads with it; "
                                      "fuzz and check count only it")
                      ->check([](const std::string& v) -> std::string {
                        const std::string kind = v.substr(0, v.find('@'));
                        const auto& kinds = FailureKinds();
                        if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return "";
                        if (IsExceptionName(kind)) return "";
                        return fmt::format("'{}' is neither a failure kind ({}) nor an exception's "
                                           "name as Python gives it (KeyError, TypeError)",
                                           kind, fmt::join(kinds, ", "));
                      });
  sub->add_flag("--json", c.json, "Print JSON instead of the text report");
  sub->add_flag("--races", c.races,
                "Detect unordered conflicting accesses to the tuner's fields by happens-before, "
                "also in runs where nothing failed, and print them (text and --json)");
  if (with_strategy) {
    sub->add_option("--strategy", c.strategy.name,
                    "random, pct, pos, surw, timed, round-robin, or portfolio (random, PCT d=2, PCT "
                    "d=3, POS and SURW in turn by seed)")
        ->default_val("random");
    sub->add_option("--pct-depth", c.strategy.pct_depth, "PCT bug depth d")
        ->default_val(2)
        ->check(flags::Count(1, sim::kMaxPctDepth));
  }
}

struct Loaded {
  Program program;
  ReplayOptions options;
};

// A truncated trace is said on the first line of what a command prints (on stderr under
// --json): what follows covers only the events recorded before the cut. `check` refuses one
// unless told otherwise (`refuse_truncated`).
Result<Loaded> Load(const std::string& path, const Common& c, bool refuse_truncated = false) {
  // Streamed: the events are never all in memory, only the programs (replay/program.h).
  traces::Trace trace;
  auto program = ReadProgram(path, &trace);
  if (!program) return program.error();
  if (trace.truncated && refuse_truncated)
    return Error{fmt::format("{}: {}; a verdict on part of a run is not a verdict on the run: "
                             "pass --allow-truncated to check the {} events that are there",
                             path, trace.truncation, trace.event_count),
                 kExitDataError};
  if (trace.truncated)
    std::fprintf(c.json ? stderr : stdout,
                 "warning: TRUNCATED trace %s: %s; what follows covers only the %llu events "
                 "recorded before the cut\n",
                 path.c_str(), trace.truncation.c_str(),
                 static_cast<unsigned long long>(trace.event_count));
  const bool python = c.engine == "python";
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
  Loaded l;
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
    std::fprintf(stderr, "recorded patch reach: %s\n", line.c_str());
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
    auto watchdog = flags::ParseDuration(c.watchdog);
    if (!watchdog) return Error{"--watchdog: " + watchdog.error().message, kExitUsage};
    l.options.watchdog_ms = static_cast<uint32_t>(std::min(*watchdog * 1000, 86'400'000.0));
    for (const std::string& p : c.patches)
      l.options.patches.push_back(std::filesystem::absolute(p).string());
    if (auto u = UsePythonFix(c.fix, l.options); !u) return u.error();
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
  }
  l.options.target = c.failure;
  return l;
}

std::string ShellQuote(const std::string& w);

// --engine auto: the Triton version `exe` imports (with PYTHONPATH as it is now), "" when it
// does not import. Runs the interpreter the user named or build/py's, never one a file names.
std::string ImportedTriton(const std::string& exe) {
  const std::string cmd = "timeout 120 " + ShellQuote(exe) +
                          " -c 'import triton; print(triton.__version__)' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[256] = {0};
  std::string out;
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const bool plain = out.find_first_not_of("0123456789.+abcdefghijklmnopqrstuvwxyz") == std::string::npos;
  return status == 0 && plain ? out : "";
}

// "3.6.0" -> "3.6".
std::string MajorMinor(const std::string& v) {
  const size_t dot = v.find('.', v.find('.') + 1);
  return v.substr(0, dot);
}

// The folder of build/py next to this binary (build/bin/rerace -> build/py), else the one the
// build was configured with.
std::vector<std::string> PyRoots() {
  std::vector<std::string> roots;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back((self.parent_path().parent_path() / "py").string());
#ifdef RERACE_PY_ROOT
  if (roots.empty() || roots.front() != RERACE_PY_ROOT) roots.emplace_back(RERACE_PY_ROOT);
#endif
  return roots;
}

// --engine auto: resolves c.engine to "python" or "model" for the trace at `path`, and says
// which and why in one line on standard error. The real-code engine when the recording came
// from Python (Triton's Autotuner) and a Triton of the recorded version (3.6 when it does not
// say, as the model takes it) imports with --python-exe, or when that is not given with
// build/py's venvs (CPython 3.12 first; another release from build/py/triton-X.Y.Z on
// PYTHONPATH when PYTHONPATH is not set); else the model. `recorded`: --recorded, which only
// the model follows. NB: may set PYTHONPATH for the engine (and so for the hints).
Result<void> ResolveEngine(const std::string& path, Common& c, bool recorded) {
  if (c.engine != "auto") return {};
  auto chosen = [&](const std::string& engine, const std::string& why) -> Result<void> {
    c.engine = engine;
    if (engine == "model") c.python_exe = "python3";  // the model runs no Python
    std::fprintf(stderr, "engine: %s (--engine auto: %s)\n", engine.c_str(), why.c_str());
    return {};
  };
  auto program = ReadProgram(path);
  if (!program) return program.error();
  const std::string model = c.model != "auto" ? c.model : Replayer(*program, ReplayOptions{}).ModelName();
  if (model.rfind("triton", 0) != 0)
    return chosen("model", fmt::format("the recording's tuner is modelled by '{}', which the "
                                       "real-code engine does not run (Triton's Autotuner only)",
                                       model));
  if (recorded) return chosen("model", "--recorded follows the recorded order with the model only");
  if (!c.python_version.empty()) return chosen("model", "--python-version is the model's");
  if (c.fix != "none") {
    ReplayOptions probe;
    if (!UsePythonFix(c.fix, probe))
      return chosen("model", fmt::format("the real-code engine has no patch for --fix '{}'", c.fix));
  }
  bool locks = false;
  for (const ThreadProgram& t : program->threads)
    for (const Op& op : t.ops) locks |= op.kind == Op::Kind::kLockAcquire;
  if (locks && c.patches.empty() && c.fix == "none")
    return chosen("model", "the recording took locks of its own and no --patch says which code "
                           "took them; the model replays the recorded locks");
  std::string recorded_triton = RecordedTritonVersion(*program);
  const std::string wanted = recorded_triton.empty()
                                 ? (model == "triton" ? std::string("3.6") : model.substr(7))
                                 : MajorMinor(recorded_triton);
  const std::string from = recorded_triton.empty()
                               ? fmt::format("Triton {} (the recording does not say; the model's "
                                             "default)",
                                             wanted)
                               : "Triton " + recorded_triton + " (recorded)";
  // Candidates: the interpreter given, else build/py's.
  struct Candidate {
    std::string exe;
    std::string pythonpath;  // set for the engine when not ""
  };
  std::vector<Candidate> candidates;
  const bool exe_given = c.python_exe_opt != nullptr && c.python_exe_opt->count() > 0;
  const char* pp = std::getenv("PYTHONPATH");
  if (exe_given) {
    candidates.push_back({c.python_exe, ""});
  } else {
    for (const std::string& root : PyRoots())
      for (const char* venv : {"venv312", "venv"}) {
        const std::string exe = root + "/" + venv + "/bin/python";
        if (access(exe.c_str(), X_OK) != 0) continue;
        candidates.push_back({exe, ""});
        if (pp == nullptr) {
          std::error_code ec;
          for (const auto& d : std::filesystem::directory_iterator(root, ec)) {
            const std::string name = d.path().filename().string();
            if (name.rfind("triton-", 0) == 0 && MajorMinor(name.substr(7)) == wanted &&
                std::filesystem::exists(d.path() / ".complete"))
              candidates.push_back({exe, d.path().string()});
          }
        }
      }
  }
  std::vector<std::string> tried;
  for (const Candidate& k : candidates) {
    if (!k.pythonpath.empty()) setenv("PYTHONPATH", k.pythonpath.c_str(), 1);
    const std::string v = ImportedTriton(k.exe);
    if (!k.pythonpath.empty()) unsetenv("PYTHONPATH");
    const std::string where = (k.pythonpath.empty() ? "" : "PYTHONPATH=" + k.pythonpath + " ") + k.exe;
    if (!v.empty() && MajorMinor(v) == wanted) {
      if (!k.pythonpath.empty()) setenv("PYTHONPATH", k.pythonpath.c_str(), 1);
      c.python_exe = k.exe;
      return chosen("python", fmt::format("the recording came from Python with {}, and {} imports "
                                          "Triton {}; --engine model for the fast model",
                                          from, where, v));
    }
    tried.push_back(where + (v.empty() ? " (no triton)" : " (Triton " + v + ")"));
  }
  return chosen("model", fmt::format("the recording came from Python with {}, but no Python here "
                                     "imports it ({}); --engine python --python-exe PY runs the "
                                     "real code",
                                     from, tried.empty() ? std::string("none found: give --python-exe, or make build/py") : fmt::format("{}", fmt::join(tried, ", "))));
}

// python engine: starts it and says what runs (versions, switch rules, the patches and what
// each changed), once per command, on standard error.
Result<void> StartEngine(Replayer& rep) {
  auto info = rep.StartEngine();
  if (!info) return info.error();
  if (!info->empty()) std::fprintf(stderr, "%s\n", DescribeEngine(*info).c_str());
  return {};
}

// PCT needs k, the steps of a run, and SURW each thread's steps: measured once per trace.
using Probe = StepShape;

Result<std::unique_ptr<sim::Strategy>> StrategyFor(const sim::StrategySpec& spec, uint64_t seed,
                                                   Replayer& r, std::optional<Probe>* probe) {
  sim::StrategySpec s = spec;
  if (s.name == "pct" || s.name == "surw" || s.name == "portfolio") {
    if (!probe->has_value()) *probe = MeasureShape(r);
    s.pct_steps = (*probe)->steps;
    s.surw_steps = (*probe)->per_thread;
  }
  return sim::MakeStrategy(s, seed);
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
std::string EngineEnvironment(const Common& c) {
  if (c.engine != "python") return "";
  const char* pp = std::getenv("PYTHONPATH");
  return pp == nullptr ? "" : pp;
}

// The replay command for this trace with every option that changes a run (what a hint must
// carry to reproduce what it claims), quoted as a shell reads it, after the environment the
// real-code engine ran in; the caller adds how the schedule is chosen.
std::string Flags(const std::string& trace, const Common& c) {
  const std::string env = EngineEnvironment(c);
  std::string f = (env.empty() ? "" : "PYTHONPATH=" + ShellQuote(env) + " ") + "rerace replay " +
                  ShellQuote(trace);
  if (c.fix != "none") f += " --fix " + ShellQuote(c.fix);
  if (c.model != "auto") f += " --model " + c.model;
  if (c.reps != 1) f += fmt::format(" --reps {}", c.reps);
  if (c.engine != "model") f += " --engine " + c.engine;
  for (const std::string& p : c.patches) f += " --patch " + ShellQuote(p);
  if (c.python_mode != "auto") f += " --python " + c.python_mode;
  if (!c.python_version.empty()) f += " --python-version " + c.python_version;
  if (c.python_exe != "python3") f += " --python-exe " + ShellQuote(c.python_exe);
  if (c.allow_recorded_patch) f += " --allow-recorded-patch";
  if (c.max_steps != kDefaultMaxSteps) f += fmt::format(" --max-steps {}", c.max_steps);
  if (!c.failure.empty()) f += " --failure " + ShellQuote(c.failure);
  return f;
}

// The same, replaying seed `seed` of the strategy.
std::string SeedHint(const std::string& trace, const Common& c, uint64_t seed) {
  std::string f = Flags(trace, c) + " --strategy " + c.strategy.name;
  if (c.strategy.pct_depth != 2) f += fmt::format(" --pct-depth {}", c.strategy.pct_depth);
  return f + fmt::format(" --seed {}", seed);
}

// Refuses an output (flag, path) that names one of the command's inputs (the traces, the
// schedule file, the patches): writing it would destroy what the command reads.
Result<void> RefuseOutputsAreInputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                                    std::vector<std::string> inputs, const Common& c) {
  inputs.insert(inputs.end(), c.patches.begin(), c.patches.end());
  for (const auto& [flag, path] : outputs)
    if (auto r = RefuseOutputIsInput(flag, path, inputs); !r) return r;
  return {};
}

// What a command checked, as every line names it: "fix 'lock-run'", or the patch files by name
// and content hash ("patch my_lock.py (sha256 1a2b3c4d)").
std::string CheckedLabel(const Common& c) { return CheckedWords(c.fix, IdentifyPatches(c.patches)); }

// `"patches":[{"file":...,"sha256":...}],"engine":"python",` for a JSON object.
std::string CheckedJson(const Common& c) {
  std::string patches;
  for (const PatchId& p : IdentifyPatches(c.patches))
    patches += fmt::format("{}{{\"file\":\"{}\",\"sha256\":\"{}\"}}", patches.empty() ? "" : ",",
                           JsonEscape(p.name), p.sha256);
  return fmt::format("\"patches\":[{}],\"engine\":\"{}\",", patches, JsonEscape(c.engine));
}

// A schedule header's "patches": each --patch file's name and full content hash, so that a
// schedule replays only under the patches that made it.
std::string PatchesHeader(const Common& c) {
  std::vector<std::string> parts;
  for (const PatchId& p : IdentifyPatches(c.patches))
    parts.push_back(fmt::format("{} (sha256 {})", p.name, p.sha256.empty() ? "unreadable" : p.sha256));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// `seed`: only for a schedule a seeded strategy made (none for DPOR, the recorded order or a
// schedule file). `failure`: the finding the file is saved for, as "code at where".
Result<void> SaveSchedule(const ReplayResult& r, const std::string& path, const std::string& trace,
                          const Common& c, std::optional<uint64_t> seed, const std::string& failure) {
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
Result<void> ApplyScheduleHeader(const std::string& path, Common& c) {
  const auto meta = ScheduleHeader(path);
  auto take = [&](const char* key, CLI::Option* opt, std::string given, auto set) -> Result<void> {
    auto it = meta.find(key);
    if (it == meta.end()) return {};
    const bool explicit_flag = opt != nullptr && opt->count() > 0;
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
  if (auto r = take("fix", c.fix_opt, c.fix, [&](const std::string& v) -> Result<void> {
        c.fix = v;
        return {};
      }); !r)
    return r;
  const auto engine = meta.find("engine");
  if (auto it = meta.find("model");
      (it != meta.end() && it->second == "python") ||  // written before issue 28
      (it == meta.end() && engine != meta.end() && engine->second.rfind("python", 0) == 0)) {
    c.engine = "python";  // the real-code engine made it; ReplayEngineMatches checks which
  } else if (auto r = take("model", c.model_opt, c.model, [&](const std::string& v) -> Result<void> {
        if (std::find(ModelNames().begin(), ModelNames().end(), v) == ModelNames().end())
          return Error{fmt::format("{}: the header's model '{}' is not one of {}", path, v,
                                   fmt::join(ModelNames(), ", ")),
                       kExitDataError};
        c.model = v;
        return {};
      }); !r)
    return r;
  if (auto r = take("reps", c.reps_opt, std::to_string(c.reps),
                    [&](const std::string& v) { return number("reps", v, c.reps); });
      !r)
    return r;
  if (auto r = take("max-steps", c.max_steps_opt, std::to_string(c.max_steps),
                    [&](const std::string& v) { return number("max-steps", v, c.max_steps); });
      !r)
    return r;
  return {};
}

// ---- replay ----
struct ReplayArgs {
  std::string perfetto;
  Common c;
  std::string trace;
  uint64_t seed = 1;
  bool seed_given = false;
  std::string schedule;
  bool recorded = false;
  bool schedule_given = false;
  std::string save;
};

int RunReplay(const ReplayArgs& a) {
  if (a.schedule_given && a.schedule.empty())
    return ReportError(Error{"--schedule: '' names no file and no schedule", kExitUsage});
  if (auto same = RefuseOutputsAreInputs({{"--perfetto", a.perfetto}, {"--save-schedule", a.save}},
                                         {a.trace, a.schedule}, a.c);
      !same)
    return ReportError(same.error());
  Common c = a.c;
  // --schedule takes a file, or the schedule line itself ("rs1:...", as check prints it).
  const bool inline_schedule = a.schedule.rfind(std::string(sim::kScheduleFormat) + ":", 0) == 0;
  if (!a.schedule.empty() && !inline_schedule)
    if (auto h = ApplyScheduleHeader(a.schedule, c); !h) return ReportError(h.error());
  if (c.engine == "auto" && !a.schedule.empty()) {
    // A schedule replays under the engine that made it: its header says which.
    const auto header = inline_schedule ? std::map<std::string, std::string>{} : ScheduleHeader(a.schedule);
    const auto it = header.find("engine");
    if (it != header.end() && it->second.rfind("model", 0) == 0) c.engine = "model";
  }
  if (auto e = ResolveEngine(a.trace, c, a.recorded); !e) return ReportError(e.error());
  if (a.recorded && c.engine == "python")
    return ReportError(Error{"--recorded follows the recorded order with the C++ tuner models; the "
                             "python engine runs the real code under its own switch points and "
                             "cannot follow it: drop --engine python, or replay a seed or a "
                             "schedule with it",
                             kExitUsage});
  auto l = Load(a.trace, c);
  if (!l) return ReportError(l.error());
  Replayer rep(l->program, l->options);
  if (auto e = StartEngine(rep); !e) return ReportError(e.error());
  if (!a.schedule.empty() && !inline_schedule) {
    // A schedule of the real code replays only under the interpreter, mode, Triton and patches
    // that made it: the scheduling points are theirs.
    const auto header = ScheduleHeader(a.schedule);
    const auto it = header.find("engine");
    const std::string now = rep.EngineSummary();
    if (it != header.end() && it->second != now)
      return ReportError(Error{fmt::format("{} was made with the engine '{}'; this run would use "
                                           "'{}': a schedule replays only under what made it",
                                           a.schedule, it->second, now),
                               kExitUsage});
    const auto patches = header.find("patches");
    const std::string given = PatchesHeader(c);
    if (patches != header.end() && patches->second != given)
      return ReportError(Error{fmt::format("{} was made with the patches {}; this run has {}: a "
                                           "schedule replays only under the patches that made it",
                                           a.schedule, patches->second,
                                           given.empty() ? "none" : given),
                               kExitUsage});
    // The same Triton version can come from other module files: PYTHONPATH is said, both ways.
    const auto pp = header.find("pythonpath");
    if (c.engine == "python" && pp != header.end() && pp->second != EngineEnvironment(c))
      std::fprintf(stderr,
                   "warning: %s was made with PYTHONPATH=%s; this run has PYTHONPATH=%s (the "
                   "engine, Triton and patches match: '%s'; modules found on the path may not)\n",
                   a.schedule.c_str(), ShellQuote(pp->second).c_str(),
                   ShellQuote(EngineEnvironment(c)).c_str(), now.c_str());
  }
  ReplayResult r;
  std::string how;
  std::optional<replay::StepLog> log;
  auto wrap = [&](sim::Strategy& s) -> sim::Strategy& {
    if (a.perfetto.empty()) return s;
    log.emplace(s);
    return *log;
  };
  std::optional<uint64_t> seed;
  if (a.recorded) {
    r = rep.RunRecorded(wrap);
    how = "recorded";
  } else if (!a.schedule.empty()) {
    auto s = inline_schedule ? sim::Schedule::Parse(a.schedule, "--schedule")
                             : sim::Schedule::Load(a.schedule);
    if (!s) return ReportError(s.error());
    sim::ScheduleReplay strategy(std::move(*s));
    r = rep.Run(wrap(strategy));
    how = inline_schedule ? "the schedule given" : "schedule " + a.schedule;
  } else {
    std::optional<Probe> k;
    auto strategy = StrategyFor(c.strategy, a.seed, rep, &k);
    if (!strategy) return ReportError(strategy.error());
    r = rep.Run(wrap(**strategy));
    how = fmt::format("seed {}", a.seed);
    seed = a.seed;
  }
  if (auto e = RunError(r)) {
    Error err = *e;
    err.message = fmt::format("replay {} ({}): {}", a.trace, how, err.message);
    return ReportError(err);
  }
  if (log) {
    if (auto w = WriteFile(a.perfetto, replay::ReplayTimeline(r, log->steps())); !w)
      return ReportError(w.error());
  }
  const Finding* target = FirstOf(r, c.failure);
  std::string hint;
  if (!a.save.empty()) {
    if (auto s = SaveSchedule(r, a.save, a.trace, c, seed, FailureOf(target)); !s)
      return ReportError(s.error());
    hint = fmt::format("schedule saved: replay it with: {} --schedule {}", Flags(a.trace, c),
                       ShellQuote(a.save));
  } else if (r.failed() && seed) {
    hint = fmt::format("replay it (add --save-schedule FILE to keep the schedule): {}",
                       SeedHint(a.trace, c, *seed));
  }
  const bool hit = target != nullptr;
  LeadWith(r, c.failure);
  std::optional<replay::RecordedComparison> compared;
  if (a.recorded) compared = replay::CompareRecorded(r, l->program);
  if (c.json) {
    std::string json = FormatJson(r, l->program, c.races);
    if (compared)  // FormatJson's object, with the comparison before its closing brace
      json.insert(json.size() - 1, fmt::format(",\"left_recording\":{},\"recorded_comparison\":{}",
                                               r.left_recording,
                                               replay::RecordedComparisonJson(*compared)));
    std::printf("%s\n", json.c_str());
  } else {
    if (!c.failure.empty())
      std::printf("%s\n", hit ? fmt::format("--failure {}: found at step {}; listed first", c.failure,
                                               r.findings.front().step)
                                              .c_str()
                                  : fmt::format("--failure {}: not in this schedule", c.failure).c_str());
    std::fputs(Colour(FormatReport(r, l->program, hint)).c_str(), stdout);
    if (c.races) std::fputs(FormatRaces(r.races, r.findings).c_str(), stdout);
    if (compared) std::fputs(replay::FormatRecordedComparison(*compared).c_str(), stdout);
  }
  return r.failed() ? kExitFound : kExitOk;
}

// ---- fuzz ----
struct FuzzArgs {
  Common c;
  std::vector<std::string> traces;
  uint64_t runs = 1000;
  std::string time;
  uint64_t seed = 1;
  std::string save_dir;
  std::string junit;
  std::string shard;  // "K/N" or "auto"
  unsigned jobs = 0;  // 0: the cores available
};

struct Shard {
  uint64_t index = 0;
  uint64_t count = 1;
};

Result<Shard> ParseShard(const std::string& s) {
  if (s.empty()) return Shard{};
  std::string spec = s;
  if (spec == "auto" || spec.rfind("auto/", 0) == 0) {
    const char* idx = std::getenv("JOB_COMPLETION_INDEX");
    if (!idx || !*idx) idx = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* cnt = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (!cnt || !*cnt) cnt = std::getenv("RERACE_SHARDS");
    std::string count = spec.size() > 5 ? spec.substr(5) : (cnt ? cnt : "");
    if (!idx || !*idx || count.empty())
      return Error{"--shard auto: the index comes from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID "
                   "and the count from SLURM_ARRAY_TASK_COUNT, RERACE_SHARDS or --shard auto/N; "
                   "some are not set",
                   kExitUsage};
    spec = std::string(idx) + "/" + count;
  }
  Shard sh;
  const size_t slash = spec.find('/');
  try {
    if (slash == std::string::npos) throw 0;
    if (!flags::CheckCount(spec.substr(0, slash), 0, flags::kMaxRuns).empty() ||
        !flags::CheckCount(spec.substr(slash + 1), 1, flags::kMaxRuns).empty())
      throw 0;
    size_t a = 0, b = 0;
    sh.index = std::stoull(spec.substr(0, slash), &a);
    sh.count = std::stoull(spec.substr(slash + 1), &b);
    if (a != slash || b != spec.size() - slash - 1) throw 0;
  } catch (...) {
    return Error{fmt::format("--shard '{}': expected K/N (0 <= K < N) or auto", s), kExitUsage};
  }
  if (sh.count == 0 || sh.index >= sh.count)
    return Error{fmt::format("--shard '{}': expected 0 <= K < N", s), kExitUsage};
  return sh;
}

// `text`'s second and later lines indented by `indent` (its first line follows a prefix).
std::string Indented(const std::string& text, const std::string& indent) {
  std::string out;
  size_t pos = 0;
  for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    size_t from = nl + 1;
    while (from < text.size() && text[from] == ' ') ++from;  // the words' own indent
    out += text.substr(pos, nl + 1 - pos) + indent;
    nl = from - 1;
  }
  return out + text.substr(pos);
}

std::string XmlEscape(const std::string& raw) {
  const std::string s = ValidUtf8(raw);  // the report says encoding="UTF-8"
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

}  // namespace

// Where a failure signature ("code at where") ranks by harm: docs/MODEL.md's order.
static size_t HarmRank(const std::string& signature) {
  const std::string code = signature.substr(0, signature.find(' '));
  const auto& kinds = FailureKinds();
  return static_cast<size_t>(std::find(kinds.begin(), kinds.end(), code) - kinds.begin());
}

std::string FuzzTrace::Checked() const {
  std::vector<PatchId> ids;
  for (const auto& [file, sha] : patches) {
    PatchId p;
    p.name = file;
    p.sha256 = sha;
    ids.push_back(std::move(p));
  }
  return CheckedWords(fix, ids, false);
}

bool FailureBefore(const FuzzFailure& x, const FuzzFailure& y) {
  return std::make_pair(HarmRank(x.signature), x.signature) <
         std::make_pair(HarmRank(y.signature), y.signature);
}

std::string FuzzJson(const std::vector<FuzzTrace>& all, const std::string& shard) {
  std::string out = fmt::format("{{\"rerace_fuzz\":1,\"shard\":\"{}\",\"traces\":[", JsonEscape(shard));
  for (size_t i = 0; i < all.size(); ++i) {
    const FuzzTrace& t = all[i];
    // The python engine runs no model: "engine" says which ran, "patches" what it loaded.
    std::string patches;
    for (const auto& [file, sha] : t.patches)
      patches += fmt::format("{}{{\"file\":\"{}\",\"sha256\":\"{}\"}}", patches.empty() ? "" : ",",
                             JsonEscape(file), sha);
    out += fmt::format("{}{{\"trace\":\"{}\",\"fix\":\"{}\",\"patches\":[{}],\"engine\":\"{}\",{}\"strategy\":\"{}\",\"runs\":{},\"failing\":{},\"failures\":[",
                       i ? "," : "", JsonEscape(t.trace), JsonEscape(t.fix), patches, JsonEscape(t.engine),
                       t.engine == "python" ? "" : fmt::format("\"model\":\"{}\",", t.model),
                       JsonEscape(t.strategy), t.runs, t.failing);
    for (size_t k = 0; k < t.failures.size(); ++k) {
      const FuzzFailure& f = t.failures[k];
      // "thread_name" only where one thread failed (a deadlock is every thread's).
      out += fmt::format("{}{{\"failure\":\"{}\",\"seed\":{},\"schedule\":\"{}\",\"schedule_file\":\"{}\",{}\"type\":\"{}\",\"message\":\"{}\",\"words\":\"{}\",\"silent\":{},\"first\":{}}}",
                         k ? "," : "", JsonEscape(f.signature), f.seed, f.schedule, JsonEscape(f.schedule_file),
                         f.thread_name.empty() ? "" : fmt::format("\"thread_name\":\"{}\",", JsonEscape(f.thread_name)),
                         JsonEscape(f.type), JsonEscape(f.message), JsonEscape(f.words),
                         f.silent ? "true" : "false", f.first ? "true" : "false");
    }
    out += "]";
    if (!t.races_json.empty()) out += ",\"races\":" + t.races_json;
    out += "}";
  }
  return out + "]}";
}

std::string FuzzJunit(const std::vector<FuzzTrace>& all) {
  // One test case per trace and fix, and one more per distinct failure (with its seed and
  // schedule in the message), so that a CI page lists each failure on its own line.
  size_t tests = 0, failures = 0;
  std::string cases;
  for (const FuzzTrace& t : all) {
    const std::string cls = XmlEscape(t.trace);
    ++tests;
    const std::string checked = XmlEscape(t.Checked());
    cases += fmt::format("    <testcase classname=\"{}\" name=\"{} ({} runs, {})\"", cls, checked, t.runs, XmlEscape(t.strategy));
    if (t.failures.empty()) {
      cases += "/>\n";
    } else {
      ++failures;
      cases += fmt::format(">\n      <failure message=\"{} distinct failure(s) in {} of {} runs\"/>\n    </testcase>\n",
                           t.failures.size(), t.failing, t.runs);
    }
    for (const FuzzFailure& f : t.failures) {
      ++tests;
      ++failures;
      // The replay names the fix and engine; a patch's path and the Python are the run's.
      std::string replay = "rerace replay " + t.trace;
      if (t.fix != "none") replay += " --fix '" + t.fix + "'";
      if (t.engine != "model") replay += " --engine " + t.engine;
      replay += f.schedule_file.empty() ? " --schedule '" + f.schedule + "'" : " --schedule " + f.schedule_file;
      if (!t.patches.empty()) replay += " (with this run's --patch and --python-exe)";
      const std::string msg = fmt::format(
          "{}{}: {}; seed {}; replay: {}", f.silent ? "silent corruption" : f.type + ": " + f.message,
          f.thread_name.empty() ? "" : " in thread " + f.thread_name, f.words, f.seed, replay);
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}: {}\">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                           cls, checked, XmlEscape(f.signature), XmlEscape(msg), XmlEscape(msg));
    }
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"rerace fuzz\" tests=\"{}\" failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
                     tests, failures, cases);
}

namespace {

int RunFuzz(const FuzzArgs& a) {
  if (auto same = RefuseOutputsAreInputs({{"--junit", a.junit}}, a.traces, a.c); !same)
    return ReportError(same.error());
  auto seconds = a.time.empty() ? Result<double>(0.0) : flags::ParseDuration(a.time);
  if (!seconds) return ReportError(seconds.error());
  auto shard = ParseShard(a.shard);
  if (!shard) return ReportError(shard.error());
  if (!a.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.save_dir, ec);
    if (ec)
      return ReportError({fmt::format("{}: cannot create the folder: {}", a.save_dir, ec.message()),
                          kExitIoError});
  }
  const bool progress = isatty(2) && !a.c.json && std::getenv("NO_PROGRESS") == nullptr;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<FuzzTrace> all;
  bool any = false;
  const std::vector<std::string> stems = UniqueStems(a.traces);
  for (const std::string& path : a.traces) {
    const std::string& stem = stems[static_cast<size_t>(&path - a.traces.data())];
    auto l = Load(path, a.c);
    if (!l) return ReportError(l.error());
    Replayer rep(l->program, l->options);
    if (auto e = StartEngine(rep); !e) return ReportError(e.error());
    FuzzTrace ft;
    ft.trace = path;
    ft.fix = a.c.fix;
    ft.model = rep.ModelName();
    ft.engine = a.c.engine;
    for (const PatchId& p : IdentifyPatches(a.c.patches)) ft.patches.emplace_back(p.name, p.sha256);
    ft.strategy = a.c.strategy.name;
    // Seeds: run i of this shard is global run shard.index + i * shard.count; the runs are
    // shared out over --jobs threads and merged as one job gives them (replay/campaign.h).
    CampaignOptions co;
    co.strategy = a.c.strategy;
    co.first_seed = a.seed;
    co.offset = shard->index;
    co.stride = shard->count;
    co.runs = a.runs;
    co.seconds = *seconds;
    co.start = start;  // the budget is the command's, over all its traces
    co.target = a.c.failure;
    co.races = a.c.races;
    co.jobs = a.jobs == 0 ? AvailableCores() : a.jobs;
    auto campaign = RunCampaign(rep, co, [&](const CampaignProgress& p) {
      if (!progress) return;
      const double rate = static_cast<double>(p.runs) / std::max(elapsed(), 1e-9);
      const double left = *seconds > 0 ? *seconds - elapsed()
                                       : static_cast<double>(a.runs - p.runs) / std::max(rate, 1e-9);
      std::fprintf(stderr, "\r%s: %llu runs (%.0f/s), %llu failing, %llu distinct, %.0f s left   ",
                   path.c_str(), static_cast<unsigned long long>(p.runs), rate,
                   static_cast<unsigned long long>(p.failing),
                   static_cast<unsigned long long>(p.distinct), std::max(left, 0.0));
    });
    if (!campaign) return ReportError(campaign.error());
    if (campaign->error) {
      Error err = *campaign->error;
      err.message = fmt::format("fuzz {} seed {}: {} (replay it with: {})", path, campaign->error_seed,
                                err.message, SeedHint(path, a.c, campaign->error_seed));
      return ReportError(err);
    }
    ft.runs = campaign->runs;
    ft.failing = campaign->failing;
    const std::vector<sim::Race>& races = campaign->races;
    const std::vector<Finding>& campaign_findings = campaign->findings;
    std::map<std::string, const ReplayResult*> kept;  // signature → its shrunk run
    for (const CampaignFailure& c : campaign->failures) {
      const Finding& f = c.finding;
      const Shrunk& sh = c.shrunk;
      FuzzFailure x;
      x.signature = c.signature;
      x.seed = c.seed;
      // Shrunk towards this failure being the run's first, so that its schedule file
      // replays to what the listing says (docs/MODEL.md: shrunk before reported or saved).
      x.schedule = sh.result.run.schedule.Encode();
      // As its replay hint will show it: the saved (shrunk) schedule when there is one and
      // it fails first with it, else the seed's run.
      // A saved schedule that fails first with another failure still has this one later: the
      // listing names where it happens there (the thread can differ from the seed's run).
      const Finding* in_saved = nullptr;
      if (!a.save_dir.empty())
        for (const Finding& g : sh.result.findings)
          if (in_saved == nullptr && g.code == f.code && g.where == f.where) in_saved = &g;
      const Finding& shown = !a.save_dir.empty() && sh.first_matches ? sh.result.findings.front()
                             : in_saved != nullptr                   ? *in_saved
                                                                     : f;
      x.thread_name = shown.thread_name;
      x.type = shown.type;
      x.message = shown.message;
      x.words = shown.words;
      x.silent = shown.silent;
      x.first = c.first;
      if (!sh.first_matches && !sh.result.findings.empty()) {
        const Finding& first = sh.result.findings.front();
        x.note = fmt::format("this schedule fails first with {} at step {}; this failure "
                             "follows at step {}",
                             first.code, first.step, f.step);
      }
      kept[c.signature] = &sh.result;
      ft.failures.push_back(std::move(x));
    }
    if (progress) std::fprintf(stderr, "\r\033[K");
    any |= !ft.failures.empty();
    // Listed by harm (docs/MODEL.md: silent corruption, crashes, deadlocks, the step bound),
    // then by signature; the files are numbered as listed.
    std::sort(ft.failures.begin(), ft.failures.end(), FailureBefore);
    if (!a.save_dir.empty()) {
      size_t n = 0;
      for (FuzzFailure& x : ft.failures) {
        x.schedule_file = fmt::format("{}/{}-{}-{}.sched", a.save_dir, stem,
                                      CheckedFileTag(a.c.fix, IdentifyPatches(a.c.patches)), ++n);
        const ReplayResult& keep = *kept.at(x.signature);
        if (auto s = SaveSchedule(keep, x.schedule_file, path, a.c, std::nullopt,
                                  x.signature + (x.note.empty() ? "" : " (" + x.note + ")"));
            !s)
          return ReportError(s.error());
      }
    }
    if (a.c.races) ft.races_json = RacesJson(races);
    if (!a.c.json) {
      std::printf("fuzz %s (%s %s, %s, strategy %s%s%s): %llu runs, %llu failing, %zu distinct "
                  "failure(s)\n",
                  path.c_str(), ft.engine == "python" ? "engine" : "model",
                  ft.engine == "python" ? "python" : ft.model.c_str(), ft.Checked().c_str(),
                  a.c.strategy.name.c_str(),
                  a.c.failure.empty() ? "" : (", failure " + a.c.failure).c_str(),
                  a.shard.empty() ? "" : fmt::format(", shard {}/{}", shard->index, shard->count).c_str(),
                  static_cast<unsigned long long>(ft.runs), static_cast<unsigned long long>(ft.failing),
                  ft.failures.size());
      size_t n = 0;
      for (const FuzzFailure& f : ft.failures) {
        // A deadlock has no thread of its own: its words say what each thread waits for. The
        // label is what its replay shows: a saved (shrunk) schedule, found by a seed.
        std::printf("  [%zu] %s: %s, %s%s %llu%s\n", ++n, f.signature.c_str(),
                    f.silent ? "silent corruption" : (f.type + ": " + f.message).c_str(),
                    f.thread_name.empty() ? "found" : ("first in " + f.thread_name).c_str(),
                    f.schedule_file.empty() ? " with seed" : " in its saved schedule (found with seed",
                    static_cast<unsigned long long>(f.seed), f.schedule_file.empty() ? "" : ")");
        if (!f.words.empty()) std::printf("      %s\n", Indented(f.words, "      ").c_str());
        if (!f.note.empty() && !f.schedule_file.empty()) std::printf("      note: %s\n", f.note.c_str());
        // A failure that is not its schedule's first: --failure makes the replay lead with it.
        Common hc = a.c;
        const bool leads = f.schedule_file.empty() ? f.first : f.note.empty();
        if (!leads) {
          const size_t sp = f.signature.find(" at ");
          hc.failure = sp == std::string::npos ? f.signature
                                               : f.signature.substr(0, sp) + "@" + f.signature.substr(sp + 4);
        }
        if (!f.schedule_file.empty())
          std::printf("      replay: %s --schedule %s\n", Flags(path, hc).c_str(),
                      ShellQuote(f.schedule_file).c_str());
        else
          std::printf("      replay: %s\n", SeedHint(path, hc, f.seed).c_str());
      }
    }
    if (a.c.races && !a.c.json) std::fputs(FormatRaces(races, campaign_findings).c_str(), stdout);
    all.push_back(std::move(ft));
  }
  const std::string shard_text = a.shard.empty() ? "" : fmt::format("{}/{}", shard->index, shard->count);
  if (a.c.json) std::printf("%s\n", FuzzJson(all, shard_text).c_str());
  if (!a.junit.empty())
    if (auto w = WriteFile(a.junit, FuzzJunit(all)); !w) return ReportError(w.error());
  return any ? kExitFound : kExitOk;
}

// ---- check ----
struct CheckArgs {
  int64_t bound = -1;
  bool naive = false;
  uint64_t max_runs = 200'000;
  std::string perfetto;
  Common c;
  std::string trace;
  uint64_t runs = 3000;
  uint64_t seed = 1;
  std::string save;
  bool allow_truncated = false;
  CLI::Option* runs_opt = nullptr;
  CLI::Option* max_runs_opt = nullptr;
};

// --save-schedule: the counterexample's schedule (text and --json alike); without one, a note
// on stderr that nothing was written, rather than silence and no file.
Result<void> SaveCounterexample(const CheckArgs& a, const Verdict& v, std::optional<uint64_t> seed) {
  if (a.save.empty()) return {};
  if (!v.counterexample) {
    std::fprintf(stderr, "note: no counterexample was found, so there is no schedule to save: %s "
                         "was not written\n", a.save.c_str());
    return {};
  }
  return SaveSchedule(*v.counterexample, a.save, a.trace, a.c, seed,
                      FailureOf(FirstOf(*v.counterexample, a.c.failure)));
}

int RunCheck(const CheckArgs& a) {
  if (auto same = RefuseOutputsAreInputs({{"--perfetto", a.perfetto}, {"--save-schedule", a.save}},
                                         {a.trace}, a.c);
      !same)
    return ReportError(same.error());
  auto l = Load(a.trace, a.c, !a.allow_truncated);
  if (!l) return ReportError(l.error());
  if (l->options.engine == "python") {
    Replayer probe(l->program, l->options);
    if (auto e = StartEngine(probe); !e) return ReportError(e.error());
  }
  CheckRequest request;
  if (a.bound >= 0) request.bound = static_cast<uint32_t>(a.bound);
  request.naive = a.naive;
  request.runs = a.runs;
  request.runs_given = a.runs_opt->count() > 0;
  request.max_runs = a.max_runs;
  request.max_runs_given = a.max_runs_opt->count() > 0;
  request.seed = a.seed;
  // Progress on a terminal, as fuzz shows it (standard error; quiet when piped or --json).
  const bool progress = isatty(2) && !a.c.json && std::getenv("NO_PROGRESS") == nullptr;
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  const CheckPlan check_plan = PlanCheck(request, l->options.engine);
  CheckProgress show;
  if (progress)
    show = [&](uint64_t runs, const char* phase) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(250)) return;
      last = now;
      const double secs = std::chrono::duration<double>(now - start).count();
      const bool sampled = std::string_view(phase) == "sampled";
      std::fprintf(stderr, "\r\033[K%s: %s at bound %u: %llu of at most %llu schedules (%.0f s)",
                   a.trace.c_str(), phase, check_plan.bound, static_cast<unsigned long long>(runs),
                   static_cast<unsigned long long>(sampled ? check_plan.sampled_runs : check_plan.max_runs),
                   secs);
    };
  CheckOutcome outcome = CheckFix(l->program, l->options, check_plan, show);
  if (progress) std::fprintf(stderr, "\r\033[K");
  // The interpreter the model's steps assumed, when the recording does not name one: said right
  // under the verdict (and in JSON), since the verdict depends on it (docs/FIDELITY.md).
  const std::string assumed = Replayer(l->program, l->options).StepAssumption();
  const std::string assumed_line = assumed.empty() ? "" : "verdict assumes " + assumed + "\n";
  const CheckPlan& plan = outcome.plan;
  const BoundedVerdict& systematic = outcome.systematic;
  Verdict& v = outcome.verdict;
  const bool automatic = plan.automatic;
  if (v.holds && v.explored == 0)
    return ReportError({fmt::format("{}: no schedule was explored (--runs {}, --max-runs {}): "
                                    "that is not a verdict; give at least one run",
                                    a.trace, a.runs, a.max_runs),
                        kExitUsage});
  const std::optional<uint64_t> seed = outcome.seed;
  // --bound 0 never preempts a thread: it cannot reach a race, so "holds" would certify nothing.
  const bool no_preemption = !automatic && a.bound == 0;
  // A systematic search its budget stopped certifies nothing either: "holds" only when it was
  // exhausted.
  const bool inconclusive = v.holds && (no_preemption || !systematic.exhausted);
  const int holds_exit = inconclusive ? kExitInconclusive : kExitOk;
  const std::string against = a.c.failure.empty() ? "" : " against " + a.c.failure;
  std::string shrink_note;
  if (!v.holds) {
    if (auto e = RunError(*v.counterexample)) {
      Error err = *e;
      err.message = fmt::format("check {} ({}): {}", a.trace, CheckedLabel(a.c), err.message);
      return ReportError(err);
    }
    Replayer rep(l->program, l->options);
    Shrunk sh = ShrinkFailure(rep, *v.counterexample, a.c.failure);
    shrink_note = DescribeShrink(sh);
    sh.result.strategy = v.counterexample->strategy + ", shrunk";
    v.counterexample = std::move(sh.result);
    LeadWith(*v.counterexample, a.c.failure);
  }
  auto ms = [](Nanos n) { return static_cast<double>(n) / 1e6; };
  if (!a.c.patches.empty()) v.cost.fix = CheckedLabel(a.c);  // the cost names what the verdict does
  if (auto s = SaveCounterexample(a, v, seed); !s) return ReportError(s.error());
  if (a.c.json) {
    std::printf("{\"trace\":\"%s\",\"fix\":\"%s\",%s\"failure\":\"%s\",\"verdict\":\"%s\",\"explored\":%llu,"
                "\"search\":{\"method\":\"%s\",\"bound\":%u,\"runs\":%llu,\"max_runs\":%llu,"
                "\"exhausted\":%s,\"sampled\":%llu,\"probed\":%llu},"
                "\"makespan_fix_ns\":%llu,\"makespan_none_ns\":%llu,\"makespan_recorded_ns\":%llu,"
                "\"cost\":%s,\"counterexample\":%s%s%s}\n",
                JsonEscape(a.trace).c_str(), JsonEscape(a.c.fix).c_str(), CheckedJson(a.c).c_str(),
                JsonEscape(a.c.failure).c_str(), !v.holds ? "fails" : inconclusive ? "inconclusive" : "holds",
                static_cast<unsigned long long>(v.explored),
                systematic.naive ? "bounded-dfs" : "dpor", systematic.bound,
                static_cast<unsigned long long>(systematic.verdict.explored),
                static_cast<unsigned long long>(plan.max_runs), systematic.exhausted ? "true" : "false",
                static_cast<unsigned long long>(v.explored - systematic.verdict.explored - outcome.probed),
                static_cast<unsigned long long>(outcome.probed),
                static_cast<unsigned long long>(v.makespan_fix),
                static_cast<unsigned long long>(v.makespan_none),
                static_cast<unsigned long long>(v.makespan_recorded),
                v.holds ? CostJson(v.cost).c_str() : "null",
                v.counterexample ? FormatJson(*v.counterexample, l->program).c_str() : "null",
                a.c.races ? (",\"races\":" + RacesJson(v.races)).c_str() : "",
                assumed.empty() ? "" : (",\"assumed\":\"" + JsonEscape(assumed) + "\"").c_str());
    return v.holds ? holds_exit : kExitFound;
  }
  if (!v.holds) {
    std::string hint;
    if (!a.save.empty()) {
      hint = fmt::format("counterexample saved: replay it with: {} --schedule {}",
                         Flags(a.trace, a.c), ShellQuote(a.save));
    } else {
      hint = fmt::format("replay it (add --save-schedule FILE to keep it): {} --schedule {}",
                         Flags(a.trace, a.c), ShellQuote(v.counterexample->run.schedule.Encode()));
    }
    if (!a.perfetto.empty()) {
      Replayer rep(l->program, l->options);
      sim::ScheduleReplay again(v.counterexample->run.schedule);
      replay::StepLog log(again);
      const ReplayResult r = rep.Run(log);
      if (auto w = WriteFile(a.perfetto, replay::ReplayTimeline(r, log.steps())); !w)
        return ReportError(w.error());
    }
    const auto& found = v.counterexample->findings;
    if (!found.empty() && found.front().code == "patch-not-reached")
      // Its own words: no schedule checked the patch, which never ran (docs/ENGINE.md).
      std::fputs(Colour(fmt::format("verdict: {} FAILS{}: the patch never ran (patch-not-reached): "
                                    "{}, after {} schedules ({})\n",
                                    CheckedLabel(a.c), against, found.front().message, v.explored,
                                    v.counterexample->strategy))
                     .c_str(),
                 stdout);
    else
      std::fputs(Colour(fmt::format("verdict: {} FAILS{}: counterexample found after {} schedules ({})\n",
                                    CheckedLabel(a.c), against, v.explored, v.counterexample->strategy))
                     .c_str(),
                 stdout);
    std::fputs(assumed_line.c_str(), stdout);
    std::fputs(Colour(FormatReport(*v.counterexample, l->program, hint)).c_str(), stdout);
    std::printf("%s\n", shrink_note.c_str());
  } else {
    const std::string systematic_text = fmt::format(
        "{} with at most {} preemption{} ({} explored, {} pruned; {})",
        systematic.naive ? "every interleaving a bounded depth-first search ran"
                         : "every interleaving that DPOR distinguishes",
        systematic.bound, systematic.bound == 1 ? "" : "s", systematic.verdict.explored,
        systematic.pruned,
        systematic.exhausted ? "search exhausted"
                             : fmt::format("stopped at the budget of {} runs{}", plan.max_runs,
                                           automatic ? "" : " (--max-runs)")) +
        (outcome.probed > 0 ? fmt::format(", after {} sampled schedules found nothing", outcome.probed)
                            : std::string());
    if (no_preemption) {
      std::printf("verdict: inconclusive: %s did not fail%s in %llu schedule(s) without "
                  "preemption, but --bound 0 never preempts a thread, so it cannot reach a race: "
                  "this certifies nothing. Use --bound 1 or more, or no --bound.\n",
                  CheckedLabel(a.c).c_str(), against.c_str(), static_cast<unsigned long long>(v.explored));
    } else if (inconclusive) {
      // Stopped by its budget: say what was run and what was not, never "holds".
      std::fputs(Colour(fmt::format(
                     "verdict: inconclusive: no counterexample to {}{} in {} schedules, but the "
                     "{} search at bound {} was not exhausted (stopped at the budget of {} runs{}){}: "
                     "this is not a 'holds'. Give --max-runs more runs, or a lower --bound.\n",
                     CheckedLabel(a.c), against, v.explored, systematic.naive ? "bounded depth-first" : "DPOR",
                     systematic.bound, plan.max_runs, a.max_runs_opt->count() > 0 ? ", --max-runs" : "",
                     v.explored > systematic.verdict.explored
                         ? fmt::format("; {} sampled schedules found nothing either",
                                       v.explored - systematic.verdict.explored)
                         : std::string()))
                     .c_str(),
                 stdout);
    } else if (!automatic) {
      std::fputs(Colour(fmt::format("verdict: {} holds{} for {}\n", CheckedLabel(a.c), against, systematic_text)).c_str(),
                 stdout);
    } else {
      std::fputs(Colour(fmt::format("verdict: {} holds{} for {}, and for every schedule "
                                    "sampled after it: {} (random walk, PCT d=2 and d=3 over k={} "
                                    "steps, seeds {}..{}). Chosen without --bound: bound {}, "
                                    "{} sampled runs; --bound B --max-runs N explores further.\n",
                                    CheckedLabel(a.c), against, systematic_text, plan.sampled_runs,
                                    v.pct_steps, plan.seed + plan.probe_runs,
                                    plan.seed + plan.probe_runs + plan.sampled_runs - 1,
                                    plan.bound, plan.sampled_runs))
                     .c_str(),
                 stdout);
    }
  }
  if (v.holds) std::fputs(assumed_line.c_str(), stdout);
  // The patch it checked was on the path (a failing verdict's report has its own lines).
  if (v.holds)
    for (const std::string& line : v.reach) std::printf("patch reach: %s\n", line.c_str());
  if (a.c.races) std::fputs(FormatRaces(v.races, v.counterexample ? v.counterexample->findings
                                                                   : std::vector<Finding>{})
                                .c_str(),
                            stdout);
  // A fix that fails has its failure, not a cost.
  if (v.holds) std::printf("%s\n", FormatCost(v.cost).c_str());
  for (const DuplicateTuning& d : v.duplicates_fix)
    std::printf("warning: duplicate-tuning under this fix: %s key %s tuned by %u threads (%.3f ms "
                "of GPU time wasted)\n",
                d.kernel.c_str(), d.key.c_str(), d.threads, ms(d.wasted_gpu_ns));
  return v.holds ? holds_exit : kExitFound;
}

}  // namespace

void RegisterReplayCommands(CLI::App& app, CommandTable& table) {
  auto ra = std::make_shared<ReplayArgs>();
  CLI::App* r = app.add_subcommand(
      "replay", "Replay a trace once: under a seeded strategy, a saved schedule, or the recorded "
                "interleaving (exit 1 when it fails)");
  r->add_option("trace", ra->trace, "Trace file")->required();
  auto* seed = r->add_option("--seed", ra->seed, "Seed of the strategy")
                   ->default_val(1)
                   ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  auto* sched = r->add_option("--schedule", ra->schedule,
                              "Replay a saved schedule (no seed needed): a file written by "
                              "--save-schedule (its header gives the fix, model and reps), or the "
                              "schedule line itself (rs1:..., as check prints it)");
  auto* rec = r->add_flag("--recorded", ra->recorded,
                          "Replay the recorded interleaving: reproduce what happened on the GPU");
  sched->excludes(rec);
  rec->excludes(sched);
  (void)seed;
  r->add_option("--save-schedule", ra->save, "Save this run's schedule to a file");
  r->add_option("--perfetto", ra->perfetto,
                "Write the run as a timeline for ui.perfetto.dev / chrome://tracing (1 us = 1 step)");
  AddCommon(r, ra->c, true);
  table.Add(r, [ra, sched] {
    ra->schedule_given = sched->count() > 0;
    return RunReplay(*ra);
  });

  auto fa = std::make_shared<FuzzArgs>();
  CLI::App* f = app.add_subcommand(
      "fuzz", "Replay traces under many seeds; report each distinct failure once, with its seed "
              "and schedule (exit 1 when any fails)");
  f->add_option("traces", fa->traces, "Trace files")->required();
  auto* runs = f->add_option("--runs", fa->runs, "Runs per trace; with --shard, runs of this shard (N shards of --runs R cover N*R seeds)")
                   ->default_val(1000)
                   ->check(flags::Count(1, flags::kMaxRuns));
  auto* time = f->add_option("--time", fa->time, "Time budget instead of --runs (90s, 10m, 1h)")
                   ->check(flags::Duration());
  runs->excludes(time);
  f->add_option("--seed", fa->seed, "First seed; run i uses seed + i")
      ->default_val(1)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  f->add_option("--save-failures", fa->save_dir, "Folder for one schedule file per distinct failure");
  f->add_option("--junit", fa->junit, "Write a JUnit XML report (one case per trace and fix, one per distinct failure)");
  f->add_option("--shard", fa->shard,
                "Run only shard K of N (K/N): run i of the campaign belongs to shard i mod N, so N jobs "
                "cover the seeds once. 'auto' reads K from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID "
                "and N from SLURM_ARRAY_TASK_COUNT or RERACE_SHARDS ('auto/N' gives N)")
      ->check(flags::ShardSpec());
  f->add_option("--jobs", fa->jobs,
                "Worker threads, each running its share of the seeds; the report is the one a "
                "single job gives for the same seeds (0: the cores available). With the python "
                "engine each job runs a Python process of its own")
      ->default_val(0)
      ->check(flags::Count(0, 4096));
  AddCommon(f, fa->c, true);
  table.Add(f, [fa] {
    if (!fa->traces.empty())
      if (auto e = ResolveEngine(fa->traces.front(), fa->c, false); !e) return ReportError(e.error());
    return RunFuzz(*fa);
  });

  auto ca = std::make_shared<CheckArgs>();
  CLI::App* c = app.add_subcommand(
      "check", "Check a fix: a counterexample schedule, or 'holds' with how many schedules were "
               "explored; and the fix's cost in simulated step time (exit 1 when it fails; exit 3, "
               "'inconclusive', when the systematic search stopped at its budget before it was "
               "exhausted: that is never a 'holds')\n"
               "Named fixes:\n" + DescribeFixes());
  c->add_option("trace", ca->trace, "Trace file")->required();
  ca->runs_opt = c->add_option("--runs", ca->runs,
                 "Without --bound: schedules sampled after DPOR at bound 1 (random walk, PCT d=2, "
                 "PCT d=3 in turn); with --engine python 100 unless given")
      ->default_val(3000)
      ->check(flags::Count(0, flags::kMaxRuns));
  c->add_option("--seed", ca->seed, "First seed")
      ->default_val(1)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  auto* bound = c->add_option("--bound", ca->bound,
                "Explore systematically every interleaving with at most B preemptions that DPOR "
                "(source sets, sleep sets) distinguishes; without it, DPOR at bound 1 (at most "
                "20000 runs) and then --runs sampled schedules. --bound 0 never preempts: it cannot reach "
                "a race and gives no verdict")
      ->check(flags::Count(0, 100));
  c->add_flag("--allow-truncated", ca->allow_truncated,
              "Check a truncated trace (no footer, or cut short): the verdict then covers only the "
              "events recorded before the cut");
  c->add_flag("--naive", ca->naive, "With --bound: a plain bounded depth-first search (no reduction)")
      ->needs(bound);
  ca->max_runs_opt = c->add_option("--max-runs", ca->max_runs,
                                   "Stop the systematic search after this many runs (without "
                                   "--bound: 20000, with --engine python 200, unless given)")
      ->default_val(200000)
      ->check(flags::Count(1, flags::kMaxRuns));
  c->add_option("--save-schedule", ca->save, "Save the counterexample's schedule here");
  c->add_option("--perfetto", ca->perfetto, "Write the counterexample as a Perfetto timeline");
  AddCommon(c, ca->c, false);
  table.Add(c, [ca] {
    if (auto e = ResolveEngine(ca->trace, ca->c, false); !e) return ReportError(e.error());
    return RunCheck(*ca);
  });
}

}  // namespace rerace::tools
