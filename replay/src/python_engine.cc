// replay/src/python_engine.cc: the real-code engine's process, protocol and proxy fibers.
#include "python_engine.h"

#include "tuner_world.h"

#include <fcntl.h>
#include <poll.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "rerace/base/result.h"

#ifndef RERACE_PYTHON_DIR
#define RERACE_PYTHON_DIR ""
#endif

namespace rerace::replay::detail {

namespace {

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}


uint64_t ToU64(const std::string& s, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0')
    throw EngineError(fmt::format("python engine: {} {:?} is not a number", what, s));
  return v;
}

std::string PythonDir() { return PythonEngineDir(); }

constexpr int kSilenceLimitMs = 120'000;

}  // namespace

std::string ProgramJson(const Program& p) {
  nlohmann::json j;
  j["source"] = p.source;
  auto& threads = j["threads"] = nlohmann::json::array();
  for (const ThreadProgram& t : p.threads) {
    nlohmann::json ops = nlohmann::json::array();
    for (const Op& op : t.ops) {
      switch (op.kind) {
        case Op::Kind::kTunerCall: ops.push_back({"call", op.call}); break;
        case Op::Kind::kLaunch: ops.push_back({"launch", op.duration}); break;
        case Op::Kind::kSync: ops.push_back({"sync"}); break;
        case Op::Kind::kLockAcquire:
        case Op::Kind::kLockRelease: break;  // the patch's own locks run instead (see Start)
      }
    }
    threads.push_back({{"name", t.name}, {"ops", std::move(ops)}});
  }
  auto& meta = j["tuner_meta"] = nlohmann::json::object();
  for (const auto& [tuner, text] : p.tuner_meta) {
    nlohmann::json m = nlohmann::json::parse(text, nullptr, false);
    if (!m.is_discarded()) meta[std::to_string(tuner)] = std::move(m);
  }
  auto& calls = j["calls"] = nlohmann::json::array();
  for (const TunerCall& c : p.calls) {
    calls.push_back({{"tuner", c.tuner},
                     {"tuner_class", c.tuner_class},
                     {"kernel", c.kernel},
                     {"key", c.key},
                     {"configs", c.configs},
                     {"arg_names", c.arg_names},
                     {"restore_value", c.restore_value},
                     {"reset_to_zero", c.reset_to_zero},
                     {"bench_ns", c.bench_ns},
                     {"bench_reps", c.bench_reps},
                     {"launch_ns", c.launch_ns}});
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::unique_ptr<PythonProcess>> PythonProcess::Start(const Program& p,
                                                            const ReplayOptions& o) {
  const std::string dir = PythonDir();
  if (dir.empty() || access((dir + "/rerace_real/serve.py").c_str(), R_OK) != 0)
    return Error{fmt::format("python engine: its package is not at '{}' (set RERACE_PYTHONPATH "
                             "to the folder holding rerace_real)",
                             dir),
                 kExitInternal};
  for (const std::string& patch : o.patches)
    if (access(patch.c_str(), R_OK) != 0)
      return Error{fmt::format("--patch {}: {}", patch, std::strerror(errno)), kExitNoInput};
  signal(SIGPIPE, SIG_IGN);  // a dead engine is an error message, not a killed rerace
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    return Error{fmt::format("python engine: pipe: {}", std::strerror(errno)), kExitInternal};
  std::string pythonpath = dir;
  if (const char* pp = std::getenv("PYTHONPATH"); pp != nullptr && *pp != '\0')
    pythonpath += std::string(":") + pp;
  const std::string exe = o.python_exe.empty() ? "python3" : o.python_exe;
  const pid_t pid = fork();
  if (pid < 0) return Error{fmt::format("python engine: fork: {}", std::strerror(errno)), kExitInternal};
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    setenv("PYTHONPATH", pythonpath.c_str(), 1);
    setenv("PYTHONHASHSEED", "0", 1);
    setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    execlp(exe.c_str(), exe.c_str(), "-m", "rerace_real", static_cast<char*>(nullptr));
    std::fprintf(stderr, "rerace: python engine: cannot run %s: %s\n", exe.c_str(),
                 std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  std::unique_ptr<PythonProcess> py(new PythonProcess());
  py->pid_ = pid;
  py->to_ = in[1];
  py->from_ = out[0];
  nlohmann::json cfg;
  cfg["program"] = nlohmann::json::parse(ProgramJson(p));
  cfg["patches"] = o.patches;
  cfg["mode"] = o.python_mode;
  cfg["reps"] = o.reps;
  cfg["prewarm"] = o.fix.prewarm;
  try {
    py->Send(cfg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    const std::string first = py->Read();
    const auto f = SplitTabs(first);
    if (f[0] == "ready" && f.size() == 2) {
      py->info_ = f[1];
      return py;
    }
    if (f[0] == "error" && f.size() >= 2) {
      const bool data = f[1].find("tuner class") != std::string::npos;
      const bool missing = f[1].find("no such file") != std::string::npos;
      return Error{fmt::format("python engine ({}): {}", exe, f[1]),
                   missing ? kExitNoInput : data ? kExitDataError : kExitInternal};
    }
    return Error{fmt::format("python engine ({}): unexpected first line {:?}", exe, first),
                 kExitInternal};
  } catch (const EngineError& e) {
    return Error{fmt::format("python engine ({}): {}", exe, e.what()), kExitInternal};
  }
}

PythonProcess::~PythonProcess() {
  if (to_ >= 0) {
    static const char kQuit[] = "quit\n";
    [[maybe_unused]] const ssize_t n = write(to_, kQuit, sizeof kQuit - 1);
    close(to_);
  }
  if (from_ >= 0) close(from_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void PythonProcess::Send(const std::string& line) {
  std::string data = line + "\n";
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = write(to_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw EngineError(fmt::format("the Python process stopped reading ({})", std::strerror(errno)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string PythonProcess::Read() {
  for (;;) {
    const size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    // A Python thread that blocks outside rerace's control (on a lock made by code the engine
    // does not watch, say) would hang the run: say so instead.
    pollfd pfd{from_, POLLIN, 0};
    const int ready = poll(&pfd, 1, kSilenceLimitMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0)
      throw EngineError(fmt::format(
          "the Python side has said nothing for {} s: a thread is blocked outside rerace's "
          "control (a lock or wait created by code the engine does not watch?)",
          kSilenceLimitMs / 1000));
    char chunk[65536];
    const ssize_t n = read(from_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int status = 0;
      std::string how = "it closed its output";
      if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
        how = WIFEXITED(status) ? fmt::format("it exited with status {}", WEXITSTATUS(status))
                                : fmt::format("it died of signal {}", WTERMSIG(status));
        pid_ = -1;
      }
      throw EngineError(fmt::format("the Python process ended unexpectedly: {} (its messages are "
                                    "above)",
                                    how));
    }
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

PythonWorld::PythonWorld(sim::Scheduler& s, const Program& p, PythonProcess& py)
    : s_(s), p_(p), py_(py) {
  py_.Send("run");
}

const char* PythonWorld::Label(const std::string& text) {
  auto& slot = labels_[text];
  if (!slot) slot = std::make_unique<std::string>(text);
  return slot->c_str();
}

uint32_t PythonWorld::Object(const std::string& name) {
  auto it = objects_.find(name);
  if (it != objects_.end()) return it->second;
  const uint32_t id = s_.RegisterObject(name);
  objects_.emplace(name, id);
  return id;
}

sim::Mutex& PythonWorld::MutexNamed(const std::string& name) {
  auto& m = mutexes_[name];
  if (!m) m = std::make_unique<sim::Mutex>(s_, name);
  return *m;
}

sim::CondVar& PythonWorld::CondNamed(const std::string& name) {
  auto& c = conds_[name];
  if (!c) c = std::make_unique<sim::CondVar>(s_, name);
  return *c;
}

void PythonWorld::Go(uint32_t t, int value) {
  py_.Send(fmt::format("g\t{}\t{}\t{}", t, s_.step(), value));
}

void PythonWorld::AddFinding(uint32_t t, const std::string& text) {
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
  findings_.push_back(std::move(f));
}

void PythonWorld::RunThread(uint32_t t) {
  try {
    Go(t);
    for (;;) {
      const std::string line = py_.Read();
      const std::vector<std::string> f = SplitTabs(line);
      const std::string& op = f[0];
      auto need = [&](size_t n) {
        if (f.size() < n)
          throw EngineError(fmt::format("python engine: short message {:?} from thread {}", line, t));
      };
      if (op == "p") {
        need(4);
        const sim::Access a = f[1] == "w" ? sim::Access::kWrite
                              : f[1] == "r" ? sim::Access::kRead
                                            : sim::Access::kYield;
        s_.Point({a, Object(f[2]), Label(f[3])});
        Go(t);
      } else if (op == "a") {
        need(3);
        MutexNamed(f[1]).Lock(Label(f[2]));
        Go(t);
      } else if (op == "t") {
        need(3);
        const bool ok = MutexNamed(f[1]).TryLock(Label(f[2]));
        Go(t, ok ? 1 : 0);
      } else if (op == "u") {
        need(3);
        MutexNamed(f[1]).Unlock(Label(f[2]));
        Go(t);
      } else if (op == "w") {
        need(4);
        CondNamed(f[1]).Wait(MutexNamed(f[2]), Label(f[3]));
        Go(t);
      } else if (op == "n") {
        need(4);
        if (f[2] == "1") CondNamed(f[1]).NotifyAll(Label(f[3]));
        else CondNamed(f[1]).NotifyOne(Label(f[3]));
        Go(t);
      } else if (op == "v") {
        need(2);
        s_.Advance(ToU64(f[1], "time"));
      } else if (op == "f") {
        need(2);
        AddFinding(t, f[1]);
      } else if (op == "x") {
        return;
      } else if (op == "!") {
        throw EngineError("python engine: " + (f.size() > 1 ? f[1] : std::string("?")));
      } else {
        throw EngineError(fmt::format("python engine: unexpected message {:?} from thread {}", line, t));
      }
    }
  } catch (const EngineError& e) {
    if (error_.empty()) error_ = e.what();
    throw;
  }
}

void PythonWorld::Finalize(ReplayResult& r) {
  // End the Python run: whichever Python thread is reading now takes "e" and the child exits.
  if (error_.empty()) {
    py_.Send("e");
    for (;;) {
      const auto f = SplitTabs(py_.Read());
      if (f[0] == "done") break;
      if (f[0] == "!" && error_.empty()) error_ = "python engine: " + (f.size() > 1 ? f[1] : "?");
      else if (f[0] == "f" && f.size() > 1) continue;  // late finding of a torn-down run
    }
  }
  if (!error_.empty()) throw EngineError(error_);
  if (auto x = SchedulerFinding(r.run)) findings_.push_back(std::move(*x));
  std::stable_sort(findings_.begin(), findings_.end(),
                   [](const Finding& a, const Finding& b) { return a.step < b.step; });
  r.findings = std::move(findings_);
  r.makespan = r.run.makespan;
}

std::string EngineSummaryOf(const std::string& info_json) {
  const nlohmann::json j = nlohmann::json::parse(info_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "python";
  std::vector<std::string> patches;
  if (j.contains("patches") && j["patches"].is_array())
    for (const auto& p : j["patches"]) {
      std::string f = p.value("file", std::string("?"));
      patches.push_back(f.substr(f.rfind('/') + 1));
    }
  std::string py = j.value("python", std::string("?"));
  py = py.substr(0, py.rfind('.'));  // major.minor: the switch rules' version
  return fmt::format("python: CPython {} ({}), Triton {}, patches {}", py,
                     j.value("mode", std::string("gil")), j.value("triton", std::string("?")),
                     patches.empty() ? std::string("none") : fmt::format("{}", fmt::join(patches, " ")));
}

}  // namespace rerace::replay::detail

namespace rerace::replay {

std::string PythonEngineDir() {
  if (const char* d = std::getenv("RERACE_PYTHONPATH"); d != nullptr && *d != '\0') return d;
  const std::string built = RERACE_PYTHON_DIR;
  if (!built.empty() && access((built + "/rerace_real").c_str(), R_OK) == 0) return built;
  // Installed: PREFIX/bin/rerace and PREFIX/share/rerace/python.
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    return dir + "/../share/rerace/python";
  }
  return built;
}

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
  if (j.contains("patches"))
    for (const auto& p : j["patches"]) {
      const auto changed = p.value("changed", std::vector<std::string>{});
      out += fmt::format("\npatch {}{}: {}", p.value("file", "?"),
                         p.value("recorded", false) ? " (named by the recording, imported)" : "",
                         changed.empty() ? std::string("changed nothing in Autotuner (applied, no effect "
                                                       "on the tuner class)")
                                         : fmt::format("{}", fmt::join(changed, "; ")));
    }
  return out;
}

Result<void> UsePythonFix(const std::string& text, ReplayOptions& o) {
  const std::string dir = PythonEngineDir() + "/rerace_real/fixes/";
  std::vector<std::string> files;
  Fix fix;
  fix.name = text;
  size_t start = 0;
  for (;;) {
    const size_t plus = text.find('+', start);
    const std::string part = text.substr(start, plus == std::string::npos ? plus : plus - start);
    if (part == "prewarm") {
      fix.prewarm = true;
    } else if (part != "none" || text.find('+') != std::string::npos) {
      std::string file = part;
      std::replace(file.begin(), file.end(), '-', '_');
      const bool name_ok = !part.empty() && part.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
      if (!name_ok || access((dir + file + ".py").c_str(), R_OK) != 0) {
        std::string known = "none, prewarm";
        if (DIR* d = opendir(dir.c_str())) {
          std::vector<std::string> names;
          while (dirent* e = readdir(d)) {
            std::string n = e->d_name;
            if (n.size() > 3 && n.ends_with(".py") && n[0] != '_') {
              n.resize(n.size() - 3);
              std::replace(n.begin(), n.end(), '_', '-');
              names.push_back(n);
            }
          }
          closedir(d);
          std::sort(names.begin(), names.end());
          for (const auto& n : names) known += ", " + n;
        }
        return Error{fmt::format("--fix '{}': '{}' is not a fix the python engine has (known: {}; "
                                 "or give your own patch with --patch FILE)",
                                 text, part, known),
                     kExitUsage};
      }
      files.push_back(dir + file + ".py");
    }
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  o.fix = std::move(fix);
  o.patches.insert(o.patches.begin(), files.begin(), files.end());
  return {};
}

}  // namespace rerace::replay
