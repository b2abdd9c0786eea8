// replay/command/src/engine_choice.cc: --engine auto (the real code when a Triton of the recorded
// version imports here, else the model) and the python engine's start (see
// rerace/replay/command/command.h).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rerace/replay/command/command.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/report/recorded.h"
#include "rerace/replay/model/text.h"

namespace rerace::replay {

namespace {

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

// Where FLA is had: a build tree's environment, or the user's own.
#ifdef RERACE_PY_ROOT
#define kFlaWhere "PYTHONPATH=build/py/fla-core-X.Y.Z"
#else
#define kFlaWhere "pip install fla-core"
#endif
// What auto says when it found no interpreter at all: a build tree names its environments.
#ifdef RERACE_PY_ROOT
constexpr const char* kNoneFound = "none found: give --python-exe, or make build/py";
#else
constexpr const char* kNoneFound =
    "none found: give --python-exe, or activate a virtual environment with Triton installed";
#endif

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

// `name` found on PATH as an executable, "" when not.
std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  const std::string all = path;
  size_t at = 0;
  while (at <= all.size()) {
    const size_t colon = std::min(all.find(':', at), all.size());
    const std::string dir = all.substr(at, colon - at);
    at = colon + 1;
    if (dir.empty()) continue;  // the current directory: never run what a folder holds
    const std::string exe = dir + "/" + name;
    if (access(exe.c_str(), X_OK) == 0) return exe;
  }
  return "";
}

// The interpreters a user has besides --python-exe, in the order --engine auto tries them,
// each with the words that say where it came from: the active virtual environment's, python3
// on PATH, the one beside the rerace binary (a pip install puts the command in the venv's bin),
// all before a build tree's build/py (PyRoots).
std::vector<std::pair<std::string, std::string>> UserPythons() {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const std::string& exe, const std::string& words) {
    if (exe.empty() || access(exe.c_str(), X_OK) != 0) return;
    std::error_code ec;
    const auto real = std::filesystem::weakly_canonical(exe, ec).string();
    for (const auto& [seen, w] : out) {
      std::error_code e2;
      if (std::filesystem::weakly_canonical(seen, e2).string() == real && !ec && !e2) return;
    }
    out.emplace_back(exe, words);
  };
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv != nullptr && *venv != '\0')
    add(std::string(venv) + "/bin/python", "the active virtual environment");
  add(OnPath("python3"), "python3 on PATH");
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) add((self.parent_path() / "python").string(), "the Python rerace was installed with");
  return out;
}

}  // namespace

// --engine auto: resolves c.engine to "python" or "model" for the trace at `path`, and says
// which and why in one line on standard error. The real-code engine when the recording came
// from Python (Triton's Autotuner) and a Triton of the recorded version (3.6 when it does not
// say, as the model takes it) imports with --python-exe, or when that is not given with
// build/py's venvs (CPython 3.12 first; another release from build/py/triton-X.Y.Z on
// PYTHONPATH when PYTHONPATH is not set); else the model. `recorded`: --recorded, which only
// the model follows. NB: may set PYTHONPATH for the engine (and so for the hints).
Result<EngineChoice> ResolveEngine(const std::string& path, CommandOptions& c, bool recorded) {
  // A --patch that is not there is missing input (66), whichever engine would run it.
  for (const std::string& patch : c.patches) {
    std::error_code ec;
    if (!std::filesystem::exists(patch, ec))
      return Error{fmt::format("--patch {}: no such file", patch), kExitNoInput};
  }
  if (c.engine != "auto") return EngineChoice{};
  // `unavailable`: the model was chosen for want of a Python with the Triton (exit 69 when a
  // --patch needed the real code), not for what the recording or the flags are (exit 64).
  auto chosen = [&](const std::string& engine, const std::string& why,
                    bool unavailable = false) -> Result<EngineChoice> {
    if (engine == "model" && (!c.patches.empty() || c.allow_recorded_patch))
      return Error{fmt::format("{}: {} runs only under the real-code engine, and --engine auto "
                               "chose the model: {}",
                               path, c.patches.empty() ? "--allow-recorded-patch" : "--patch", why),
                   unavailable ? kExitUnavailable : kExitUsage};
    c.engine = engine;
    if (engine == "model") c.python_exe = "python3";  // the model runs no Python
    return EngineChoice{"engine: " + engine + " (--engine auto: " + why + ")\n", why};
  };
  auto program = ReadProgram(path);
  if (!program) return program.error();
  const std::string model = c.model != "auto" ? c.model : Replayer(*program, ReplayOptions{}).ModelName();
  if (c.model != "auto" && c.model.rfind("triton", 0) != 0)
    return chosen("model", fmt::format("--model {} names one of rerace's C++ tuner models", c.model));
  if (model == "fla")
    // The engine runs FLA's real CachedAutotuner when asked (FLA on PYTHONPATH); auto does not
    // look for an FLA release to import, so it runs the model, and says how to get the other.
    return chosen("model", "the recording's tuner is FLA's CachedAutotuner, modelled by 'fla'; "
                           "--engine python --python-exe PY with FLA importable (" kFlaWhere
                           ") runs its real code");
  if (model.rfind("triton", 0) != 0)
    return chosen("model", fmt::format("the recording's tuner is modelled by '{}', which the "
                                       "real-code engine does not run (Python tuner classes only)",
                                       model));
  if (recorded) return chosen("model", "--recorded follows the recorded order with the model only");
  if (!c.python_version.empty()) return chosen("model", "--python-version is the model's");
  if (c.fix != "none") {
    // A fix no engine knows is the error itself, not a reason to choose the model.
    if (auto f = ParseFix(c.fix); !f) return f.error();
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
  const bool exe_given = c.python_exe_given;
  const char* pp = std::getenv("PYTHONPATH");
  std::map<std::string, std::string> said_as;  // a user's interpreter: where it came from
  if (exe_given) {
    candidates.push_back({c.python_exe, ""});
  } else {
    for (const auto& [exe, words] : UserPythons()) {
      candidates.push_back({exe, ""});
      said_as[exe] = words;
    }
    for (const std::string& root : PyRoots())
      for (const char* venv : {"venv312", "venv"}) {
        const std::string exe = detail::ShownPath(root + "/" + venv + "/bin/python");
        if (access(exe.c_str(), X_OK) != 0) continue;
        candidates.push_back({exe, ""});
        if (pp == nullptr) {
          std::error_code ec;
          for (const auto& d : std::filesystem::directory_iterator(root, ec)) {
            const std::string name = d.path().filename().string();
            if (name.rfind("triton-", 0) == 0 && MajorMinor(name.substr(7)) == wanted &&
                std::filesystem::exists(d.path() / ".complete"))
              candidates.push_back({exe, detail::ShownPath(d.path().string())});
          }
        }
      }
  }
  std::vector<std::string> tried;
  for (const Candidate& k : candidates) {
    if (!k.pythonpath.empty()) setenv("PYTHONPATH", k.pythonpath.c_str(), 1);
    const std::string v = ImportedTriton(k.exe);
    if (!k.pythonpath.empty()) unsetenv("PYTHONPATH");
    const auto as = said_as.find(k.exe);
    const std::string where = (k.pythonpath.empty() ? "" : "PYTHONPATH=" + k.pythonpath + " ") +
                              k.exe + (as != said_as.end() ? " (" + as->second + ")" : "");
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
                                     from, tried.empty() ? std::string(kNoneFound) : fmt::format("{}", fmt::join(tried, ", "))),
                true);
}

// python engine: starts it and says what runs (versions, switch rules, the patches and what
// each changed), once per command, on standard error.
Result<std::string> StartEngine(Replayer& rep, const Notes& notes, const std::string& choice) {
  auto info = rep.StartEngine();
  if (!info) return info.error();
  std::string said = choice + (info->empty() ? "" : DescribeEngine(*info) + "\n");
  if (!said.empty()) notes(said);
  return said;
}

// PCT needs k, the steps of a run, and SURW each thread's steps: measured once per trace.

}  // namespace rerace::replay
