// replay/engine/src/python_engine_protocol.cc: the line protocol with the engine's Python side:
// the program as JSON, a line out, a line in (its session token checked, the watchdog armed).
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "python_engine.h"

namespace rerace::replay::detail {

void SplitTabs(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  for (;;) {
    const size_t tab = line.find('\t');
    out.push_back(line.substr(0, tab));
    if (tab == std::string_view::npos) return;
    line.remove_prefix(tab + 1);
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
  for (size_t i = 0; i < p.calls.size(); ++i) {
    const TunerCall& c = p.calls[i];
    // The calls this one begins after (the program's recorded synchronization, or
    // --order-from-timing): the engine's threads wait for them as the model's do.
    const std::vector<uint32_t> none;
    const std::vector<uint32_t>& after = i < p.call_after.size() ? p.call_after[i] : none;
    calls.push_back({{"tuner", c.tuner},
                     {"after", after},
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

void PythonProcess::Send(std::string_view line) {
  out_.assign(line);
  out_.push_back('\n');
  const char* p = out_.data();
  size_t left = out_.size();
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

std::string_view PythonProcess::Read() {
  for (;;) {
    const size_t nl = buf_.find('\n', buf_at_);
    if (nl != std::string::npos) {
      const std::string_view line(buf_.data() + buf_at_, nl - buf_at_);
      buf_at_ = nl + 1;
      if (line.size() > token_.size() && line.starts_with(token_) && line[token_.size()] == ' ')
        return line.substr(token_.size() + 1);
      // Before "ready", what an interpreter prints at start-up (a sitecustomize) is passed on;
      // after it, a line without the token was written by someone else (a patch).
      if (!ready_) {
        fmt::print(stderr, "{}\n", line);
        continue;
      }
      throw EngineError(fmt::format("python engine: a line on its channel that the engine did not "
                                    "write (a patch writing to the engine's descriptors?): {:?}",
                                    line.substr(0, 120)),
                        kExitDataError);
    }
    // Every line handed out has been used (the views are valid until this call): drop them.
    buf_.erase(0, buf_at_);
    buf_at_ = 0;
    pollfd pfd{from_, POLLIN, 0};
    const int ready = poll(&pfd, 1, watchdog_ms_);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) Hang();
    char chunk[65536];
    const ssize_t n = read(from_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string how = EndGroup(kQuitWaitMs);
      if (!ready_ && started_)
        // The engine ran: what its set-up imports ended the process.
        throw EngineError(fmt::format("the Python process ended during the engine's set-up "
                                      "(importing Triton, the tuners' modules{}): {}{}",
                                      has_patches_ ? " and the --patch files" : "",
                                      how.empty() ? "it closed its output" : how,
                                      has_patches_ ? "; a patch that ends its process at import "
                                                     "(os._exit, sys.exit) does this"
                                                   : " (its messages are above)"),
                          has_patches_ ? kExitDataError : kExitInternal);
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
