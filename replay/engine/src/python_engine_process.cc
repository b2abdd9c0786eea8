// replay/engine/src/python_engine_process.cc: the real-code engine's Python process: where its
// package is, how it starts (the program as JSON, the patches, "ready"), and the line protocol.
#include "python_engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>

#include "rerace/base/result.h"
#include "rerace/replay/model/text.h"

#ifndef RERACE_PYTHON_DIR
#define RERACE_PYTHON_DIR ""
#endif
#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay::detail {

namespace {

std::string PythonDir() { return PythonEngineDir(); }

constexpr int kDumpFd = 3;         // faulthandler's stacks, in the Python process
constexpr int kQuitWaitMs = 2'000;  // how long a quitting engine may take before it is killed

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

// The environment the engine runs with: this process's, with the engine's own settings.
// Made before fork: another job's thread may hold the allocator's locks when this one forks,
// so the child only calls what is async-signal-safe.
std::vector<std::string> EngineEnvironment(const std::string& pythonpath) {
  static const char* const kOwn[] = {"PYTHONPATH", "PYTHONSAFEPATH", "PYTHONHASHSEED",
                                     "PYTHONDONTWRITEBYTECODE", "PYTHONSTARTUP"};
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    const bool own = std::any_of(std::begin(kOwn), std::end(kOwn), [&](const char* k) {
      const std::string_view key(k);
      return v.size() > key.size() && v.substr(0, key.size()) == key && v[key.size()] == '=';
    });
    if (!own) out.emplace_back(v);
  }
  out.push_back("PYTHONPATH=" + pythonpath);
  out.push_back("PYTHONSAFEPATH=1");
  out.push_back("PYTHONHASHSEED=0");
  out.push_back("PYTHONDONTWRITEBYTECODE=1");
  return out;
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

// The file exec would run for `exe` (a path, or a name looked up on PATH), or "".
std::string FindExecutable(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return access(exe.c_str(), X_OK) == 0 ? exe : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string f = (d.empty() ? "." : d) + "/" + exe;
    struct stat st {};
    if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

// The Python environments of the build tree rerace runs from (RERACE_PY_ROOT: build/py), as
// paths relative to the current directory where they lie below it; none when rerace runs
// installed.
std::vector<std::string> BuildTreePythons() {
  std::vector<std::string> out;
  const std::string root = RERACE_PY_ROOT;
  std::error_code ec;
  if (root.empty() || PythonEngineDir() != RERACE_PYTHON_DIR) return out;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    const std::filesystem::path py = e.path() / "bin" / "python";
    if (access(py.c_str(), X_OK) != 0) continue;
    out.push_back(detail::ShownPath(py.string()));
  }
  // As --engine auto tries them: venv312 (CPython 3.12, the H200's interpreter) first.
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    const bool a312 = a.find("/venv312/") != std::string::npos;
    const bool b312 = b.find("/venv312/") != std::string::npos;
    return a312 != b312 ? a312 : a < b;
  });
  return out;
}

// The user's PYTHONPATH without empty entries (an empty entry means the current directory,
// which the engine never searches).
std::vector<std::string> UserPythonPath() {
  std::vector<std::string> out;
  const char* pp = std::getenv("PYTHONPATH");
  if (pp == nullptr) return out;
  std::stringstream in(pp);
  for (std::string e; std::getline(in, e, ':');)
    if (!e.empty()) out.push_back(e);
  return out;
}

// Where each thread is, from faulthandler's dump: per thread its innermost frame outside
// rerace's package, threading.py and importlib ("file:line in function"); threads with none are waiting
// for their turn in rerace and are counted. At most 16 threads are named.
std::string WhereThreadsAre(const std::string& dump) {
  std::vector<std::string> threads;
  size_t waiting = 0;
  std::stringstream in(dump);
  std::string line, chosen;
  bool in_thread = false;
  auto flush = [&] {
    if (in_thread) {
      if (chosen.empty()) ++waiting;
      else threads.push_back(chosen);
    }
    chosen.clear();
  };
  while (std::getline(in, line)) {
    if (line.find("hread 0x") != std::string::npos) {
      flush();
      in_thread = true;
      continue;
    }
    const size_t file = line.find("File \"");
    if (!in_thread || file == std::string::npos || !chosen.empty()) continue;
    const size_t close_quote = line.find('"', file + 6);
    const size_t at = close_quote == std::string::npos ? close_quote : line.find(", line ", close_quote);
    if (at == std::string::npos) continue;
    std::string where = line.substr(file + 6, close_quote - file - 6);
    // rerace's own frames, threading's, importlib's and the engine's `-c` bootstrap.
    if (where.find("rerace_real/") != std::string::npos || where.ends_with("/threading.py") ||
        where.starts_with("<frozen") || where == "<string>")
      continue;
    if (const size_t sp = where.rfind("site-packages/"); sp != std::string::npos) where = where.substr(sp + 14);
    chosen = where + ":" + line.substr(at + 7);
  }
  flush();
  if (threads.empty() && waiting == 0) return "no thread's stack could be read";
  std::string out;
  for (size_t i = 0; i < threads.size() && i < 16; ++i)
    out += fmt::format("{}{}", i == 0 ? "" : "; ", threads[i]);
  if (threads.size() > 16) out += fmt::format("; {} more", threads.size() - 16);
  if (waiting > 0)
    out += fmt::format("{}{} thread{} waiting for {} turn in rerace", out.empty() ? "" : "; ", waiting,
                       waiting == 1 ? "" : "s", waiting == 1 ? "its" : "their");
  return out;
}

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
    const std::string first = py->Read();
    const auto f = SplitTabs(first);
    if (f[0] == "ready" && f.size() == 2) {
      py->info_ = f[1];
      py->ready_ = true;
      return py;
    }
    if (f[0] == "error" && f.size() >= 3) {
      const std::string& kind = f[1];
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

Result<PythonProcess::CpuBinding> PythonProcess::BindCpu() {
  CpuBinding b;
  const char* env = std::getenv("RERACE_ENGINE_CPU");
  const std::string want = env != nullptr ? env : "";
  if (want == "off") return b;
  cpu_set_t before;
  CPU_ZERO(&before);
  // The CPUs to choose from: the process's, as the first engine found them (a thread started
  // by a bound one, a fuzz job's, inherits that one CPU: it must not be all it can choose).
  static const std::optional<cpu_set_t> process_cpus = [] {
    cpu_set_t s;
    CPU_ZERO(&s);
    return sched_getaffinity(0, sizeof s, &s) == 0 ? std::optional<cpu_set_t>(s) : std::nullopt;
  }();
  if (!process_cpus || sched_getaffinity(0, sizeof before, &before) != 0) {
    if (want.empty()) return b;  // cannot tell which CPUs: left alone
    return Error{fmt::format("RERACE_ENGINE_CPU={}: cannot read this thread's CPUs: {}", want,
                             std::strerror(errno)),
                 kExitConfig};
  }
  const cpu_set_t& allowed = *process_cpus;
  std::vector<size_t> cpus;
  for (size_t c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  size_t cpu = CPU_SETSIZE;  // none yet
  if (!want.empty()) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(want.c_str(), &end, 10);
    if (errno == 0 && end != want.c_str() && *end == '\0' && n >= 0 && n < CPU_SETSIZE &&
        CPU_ISSET(static_cast<size_t>(n), &allowed))
      cpu = static_cast<size_t>(n);
    if (cpu == CPU_SETSIZE)
      return Error{fmt::format("RERACE_ENGINE_CPU={}: neither 'off' nor a CPU this process may run "
                               "on ({})",
                               want, fmt::join(cpus, ",")),
                   kExitConfig};
  } else {
    if (cpus.size() < 2) return b;  // one CPU already
    // Round robin from a place of this process's own (its pid), so that two rerace processes
    // side by side (ctest -j, two fuzz commands) do not both start on the first CPU.
    static std::atomic<unsigned> started{static_cast<unsigned>(getpid())};
    cpu = cpus[started.fetch_add(1, std::memory_order_relaxed) % cpus.size()];
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    if (want.empty()) return b;  // not allowed here (a container's policy): left alone
    return Error{fmt::format("RERACE_ENGINE_CPU={}: cannot bind to CPU {}: {}", want, cpu,
                             std::strerror(errno)),
                 kExitConfig};
  }
  b.tid = gettid();
  const auto* bytes = reinterpret_cast<const unsigned char*>(&before);
  b.before.assign(bytes, bytes + sizeof allowed);
  return b;
}

void PythonProcess::Unbind(CpuBinding& b) {
  // Only from the bound thread: another thread's id may be gone, or reused by now.
  if (b.tid == 0 || b.tid != gettid()) return;
  cpu_set_t before;
  std::memcpy(&before, b.before.data(), std::min(sizeof before, b.before.size()));
  // The thread may have ended (ESRCH): nothing to give back then.
  [[maybe_unused]] const int r = sched_setaffinity(b.tid, sizeof before, &before);
  b.tid = 0;
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

void PythonProcess::Hang() {
  // faulthandler in the Python process(es) writes every thread's stack to the dump pipe.
  kill(-pid_, SIGUSR1);
  std::string dump;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
  for (bool got = false;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          until - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd pfd{dump_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(got ? std::min<long>(left, 200) : left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char chunk[16384];
    const ssize_t n = read(dump_, chunk, sizeof chunk);
    if (n <= 0) break;
    dump.append(chunk, static_cast<size_t>(n));
    got = true;
  }
  EndGroup(0);
  throw EngineError(
      fmt::format("hang: the Python side made no progress for {} s (the watchdog; --watchdog "
                  "SECONDS sets it){}; where its threads are: {}; every process of the engine was "
                  "ended",
                  watchdog_ms_ / 1000.0, ready_ ? "" : " while setting up (importing Triton and "
                  "the patches, building the tuners)", WhereThreadsAre(dump)),
      kExitDataError);
}

void PythonProcess::Send(const std::string& line) {
  std::string data = line + "\n";
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = write(to_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (!ready_) {
        const std::string how = EndGroup(kQuitWaitMs);
        throw EngineError(fmt::format("it ended without starting rerace's engine ({}): is it a "
                                      "Python 3.8 or later? (its messages are above)",
                                      how.empty() ? "it stopped reading" : how),
                          kExitConfig);
      }
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
      if (line.size() > token_.size() && line.compare(0, token_.size(), token_) == 0 &&
          line[token_.size()] == ' ')
        return line.substr(token_.size() + 1);
      // Before "ready", what an interpreter prints at start-up (a sitecustomize) is passed on;
      // after it, a line without the token was written by someone else (a patch).
      if (!ready_) {
        std::fprintf(stderr, "%s\n", line.c_str());
        continue;
      }
      throw EngineError(fmt::format("python engine: a line on its channel that the engine did not "
                                    "write (a patch writing to the engine's descriptors?): {:?}",
                                    line.substr(0, 120)),
                        kExitDataError);
    }
    pollfd pfd{from_, POLLIN, 0};
    const int ready = poll(&pfd, 1, watchdog_ms_);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) Hang();
    char chunk[65536];
    const ssize_t n = read(from_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string how = EndGroup(kQuitWaitMs);
      if (!ready_)
        throw EngineError(fmt::format("it ended without starting rerace's engine ({}): is it a "
                                      "Python 3.8 or later? (its messages are above)",
                                      how.empty() ? "it closed its output" : how),
                          kExitConfig);
      throw EngineError(fmt::format("the Python process ended unexpectedly: {} (its messages are "
                                    "above)",
                                    how.empty() ? "it closed its output" : how));
    }
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace rerace::replay::detail

namespace rerace::replay {

std::string PythonEngineDir() {
  if (const char* d = std::getenv("RERACE_PYTHONPATH"); d != nullptr && *d != '\0') return d;
  // Installed (PREFIX/bin/rerace beside PREFIX/share/rerace/python) before the source tree the
  // binary was built from: an installed rerace never runs a source tree's engine.
  const std::string built = RERACE_PYTHON_DIR;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string installed;
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    installed = dir + "/../share/rerace/python";
    if (access((installed + "/rerace_real").c_str(), R_OK) == 0) return installed;
  }
  if (!built.empty() && access((built + "/rerace_real").c_str(), R_OK) == 0) return built;
  return installed.empty() ? built : installed;
}

}  // namespace rerace::replay
