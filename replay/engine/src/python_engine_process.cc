// replay/engine/src/python_engine_process.cc: the real-code engine's Python process, its start
// (the interpreter exec'd in its own process group, the program as JSON, the patches, "ready")
// and its end (the whole group, also at exit). The line protocol is python_engine_protocol.cc,
// the watchdog python_engine_watchdog.cc, the CPU binding python_engine_cpu.cc, where the
// interpreter and the package are python_environment.cc.
#include "python_engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <mutex>

#include "python_environment.h"
#include "rerace/base/result.h"

namespace rerace::replay::detail {

namespace {

std::string PythonDir() { return PythonEngineDir(); }

constexpr int kDumpFd = 3;         // faulthandler's stacks, in the Python process

// How the engine starts: no current directory on sys.path (`-c` puts "" first; PYTHONSAFEPATH
// keeps 3.11+ from adding it), then the package's __main__.
constexpr char kBootstrap[] =
    "import sys\n"
    "if sys.path and sys.path[0] == '': del sys.path[0]\n"
    "import rerace_real.__main__\n";

// The process groups of the engines alive: ended at exit whatever the path out (an exit()
// that skips the destructors included). Several jobs start and end engines at once (fuzz
// --jobs): guarded by LiveGroupsMutex.
std::mutex& LiveGroupsMutex() {
  static std::mutex m;
  return m;
}

std::vector<pid_t>& LiveGroups() {
  static std::vector<pid_t> groups;
  return groups;
}

void AddLiveGroup(pid_t g) {
  std::lock_guard<std::mutex> lock(LiveGroupsMutex());
  LiveGroups().push_back(g);
}

void RemoveLiveGroup(pid_t g) {
  std::lock_guard<std::mutex> lock(LiveGroupsMutex());
  auto& live = LiveGroups();
  live.erase(std::remove(live.begin(), live.end(), g), live.end());
}

void EndLiveGroups() {
  std::lock_guard<std::mutex> lock(LiveGroupsMutex());
  for (const pid_t g : LiveGroups()) kill(-g, SIGKILL);
}

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

std::string SessionToken() {
  unsigned char bytes[12] = {};
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool got = false;
  if (fd >= 0) {
    got = read(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
    close(fd);
  }
  if (!got) {
    const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                       (static_cast<uint64_t>(getpid()) << 32);
    std::memcpy(bytes, &t, sizeof t);
  }
  std::string out = "rr";
  for (const unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

}  // namespace

Result<std::unique_ptr<PythonProcess>> PythonProcess::Start(const Program& p,
                                                            const ReplayOptions& o) {
  const std::string dir = PythonDir();
  if (dir.empty() || access((dir + "/rerace_real/serve.py").c_str(), R_OK) != 0)
    return Error{fmt::format("python engine: its package is not at '{}' (set RERACE_PYTHONPATH "
                             "to the folder holding rerace_real)",
                             dir),
                 kExitConfig};
  for (const std::string& patch : o.patches) {
    struct stat st {};
    if (stat(patch.c_str(), &st) != 0)
      return Error{fmt::format("--patch {}: {}", patch, std::strerror(errno)), kExitNoInput};
    if (!S_ISREG(st.st_mode))
      return Error{fmt::format("--patch {}: not a regular file", patch), kExitNoInput};
    if (access(patch.c_str(), R_OK) != 0)
      return Error{fmt::format("--patch {}: {}", patch, std::strerror(errno)), kExitNoInput};
  }
  const std::string exe = o.python_exe.empty() ? "python3" : o.python_exe;
  const std::string found = FindExecutable(exe);
  if (found.empty())
    return Error{fmt::format("--python-exe {}: no such program{}", exe,
                             exe.find('/') == std::string::npos ? " on PATH" : ""),
                 kExitConfig};
  auto bound = BindCpu();
  if (!bound) return bound.error();
  // Until the process object owns it (below): the thread's CPUs back on every way out.
  struct Unbinder {
    CpuBinding* b;
    ~Unbinder() {
      if (b != nullptr) Unbind(*b);
    }
  } unbinder{&*bound};
  signal(SIGPIPE, SIG_IGN);  // a dead engine is an error message, not a killed rerace
  int in[2], out[2], dump[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(dump, O_CLOEXEC) != 0)
    return Error{fmt::format("python engine: pipe: {}", std::strerror(errno)), kExitInternal};
  std::string pythonpath = dir;
#ifdef RERACE_PYTHON_ACCEL_DIR
  // The build tree's C hooks (_rerace_gil) for the source tree's engine; an installed engine
  // has them beside rerace_real.
  if (dir == RERACE_PYTHON_DIR && access(RERACE_PYTHON_ACCEL_DIR "/_rerace_gil.abi3.so", R_OK) == 0)
    pythonpath += std::string(":") + RERACE_PYTHON_ACCEL_DIR;
#endif
  const std::vector<std::string> user_path = UserPythonPath();
  for (const std::string& e : user_path) pythonpath += ":" + e;
  static const bool registered = std::atexit(EndLiveGroups) == 0;
  (void)registered;
  const std::vector<std::string> env = EngineEnvironment(pythonpath);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* argv[] = {exe.c_str(), "-c", kBootstrap, nullptr};
  const std::string cannot_run = fmt::format("rerace: python engine: cannot run {}: ", exe);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return Error{fmt::format("python engine: fork: {}", std::strerror(errno)), kExitInternal};
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec (other jobs' threads: see EngineEnvironment).
    setpgid(0, 0);                          // its own group: ended whole, forks of a patch too
    prctl(PR_SET_PDEATHSIG, SIGKILL);       // and never outlives rerace
    if (getppid() != parent) _exit(127);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(dump[1], kDumpFd);
    execve(found.c_str(), const_cast<char* const*>(argv), envp.data());
    const int err = errno;
    [[maybe_unused]] ssize_t n = write(2, cannot_run.data(), cannot_run.size());
    const char* why = strerrordesc_np(err);
    if (why != nullptr) n = write(2, why, std::strlen(why));
    n = write(2, "\n", 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no window where a signal to the group misses it
  AddLiveGroup(pid);
  close(in[0]);
  close(out[1]);
  close(dump[1]);
  std::unique_ptr<PythonProcess> py(new PythonProcess());
  py->cpu_ = std::move(*bound);
  unbinder.b = nullptr;
  py->pid_ = pid;
  py->to_ = in[1];
  py->from_ = out[0];
  py->dump_ = dump[0];
  py->watchdog_ms_ = static_cast<int>(std::min<uint32_t>(o.watchdog_ms, 24u * 3600 * 1000));
  py->token_ = SessionToken();
  nlohmann::json cfg;
  cfg["program"] = nlohmann::json::parse(ProgramJson(p));
  cfg["patches"] = o.patches;
  cfg["mode"] = o.python_mode;
  cfg["reps"] = o.reps;
  cfg["prewarm"] = o.fix.prewarm;
  cfg["token"] = py->token_;
  cfg["user_pythonpath"] = user_path;
  cfg["allow_recorded_patch"] = o.allow_recorded_patch;
  try {
    py->Send(cfg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    py->has_patches_ = !o.patches.empty();
    std::string first(py->Read());
    if (first == "started") {
      py->started_ = true;
      first = py->Read();
    }
    std::vector<std::string_view> f;
    SplitTabs(first, f);
    if (f[0] == "ready" && f.size() == 2) {
      py->info_ = f[1];
      py->ready_ = true;
      return py;
    }
    if (f[0] == "error" && f.size() >= 3) {
      const std::string_view kind = f[1];
      std::string message = fmt::format("python engine ({}): {}", exe, f[2]);
      int code = kExitInternal;
      if (kind == "env") {
        code = kExitUnavailable;
        std::vector<std::string> others = BuildTreePythons();
        others.erase(std::remove(others.begin(), others.end(), exe), others.end());
        if (!others.empty())
          message += fmt::format(" (give --python-exe {}{})", others.front(),
                                 others.size() > 1 ? fmt::format("; also here: {}",
                                                                 fmt::join(others.begin() + 1, others.end(), ", "))
                                                   : std::string());
        else
          message += " (give --python-exe a Python that has Triton)";
      } else if (kind == "data") {
        code = kExitDataError;
      } else if (kind == "nofile") {
        code = kExitNoInput;
      } else if (kind == "usage") {
        code = kExitUsage;
      }
      return Error{message, code};
    }
    return Error{fmt::format("python engine ({}): unexpected first line {:?}", exe, first),
                 kExitInternal};
  } catch (const EngineError& e) {
    if (e.exit_code() == kExitConfig)
      return Error{fmt::format("--python-exe {}: {}", exe, e.what()), kExitConfig};
    return Error{fmt::format("python engine ({}): {}", exe, e.what()), e.exit_code()};
  }
}

PythonProcess::~PythonProcess() {
  if (to_ >= 0) {
    static const char kQuit[] = "quit\n";
    [[maybe_unused]] const ssize_t n = write(to_, kQuit, sizeof kQuit - 1);
    close(to_);
    to_ = -1;
  }
  EndGroup(kQuitWaitMs);
  if (from_ >= 0) close(from_);
  if (dump_ >= 0) close(dump_);
  Unbind(cpu_);
}

std::string PythonProcess::EndGroup(int wait_ms) {
  if (pid_ <= 0) return "";
  // The leader is waited for with WNOWAIT: unreaped, its pid and so its group id stay reserved
  // until the whole group is killed.
  siginfo_t si{};
  for (int waited = 0;; waited += 10) {
    si.si_pid = 0;
    if (waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOHANG | WNOWAIT) != 0) break;
    if (si.si_pid == pid_ || waited >= wait_ms) break;
    SleepMs(10);
  }
  kill(-pid_, SIGKILL);
  int status = 0;
  std::string how = "it was ended";
  if (waitpid(pid_, &status, 0) == pid_ && si.si_pid == pid_)
    how = WIFEXITED(status) ? fmt::format("it exited with status {}", WEXITSTATUS(status))
                            : fmt::format("it died of signal {}", WTERMSIG(status));
  RemoveLiveGroup(pid_);
  pid_ = -1;
  return how;
}

}  // namespace rerace::replay::detail
