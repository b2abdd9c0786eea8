// replay/src/python_engine_process.cc: the real-code engine's Python process: where its
// package is, how it starts (the program as JSON, the patches, "ready"), and the line protocol.
#include "python_engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

std::string PythonDir() { return PythonEngineDir(); }

constexpr int kSilenceLimitMs = 120'000;

}  // namespace

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

}  // namespace rerace::replay
