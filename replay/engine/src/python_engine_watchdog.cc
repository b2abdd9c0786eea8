// replay/engine/src/python_engine_watchdog.cc: the watchdog's end of a run that made no
// progress: every Python thread's stack (faulthandler, on a pipe of its own), where each one is
// in the user's code, the engine's process group ended, a hang reported.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "python_engine.h"

namespace rerace::replay::detail {

namespace {

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

}  // namespace rerace::replay::detail
