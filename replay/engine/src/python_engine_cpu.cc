// replay/engine/src/python_engine_cpu.cc: the controller thread bound to one CPU for an
// engine's life, as RERACE_ENGINE_CPU says (python_engine.h, "CPU"), and given its CPUs back.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "python_engine.h"

namespace rerace::replay::detail {

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

}  // namespace rerace::replay::detail
