// Steps run by tests/python scripts under the probe (the real Triton Autotuner, fake kernel and
// tensors), their marks turned into a trace through the recorder: the path from a Python
// program to a replay, on this CPU. Header only; for tests/replay/engine.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/recorder/recorder.h"
#include "rerace/replay/model/program.h"

#ifndef RERACE_SOURCE_DIR
#define RERACE_SOURCE_DIR "."
#endif
#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay::testing {

struct Step {
  std::vector<std::pair<std::string, std::string>> marks;  // (thread, text), emission order
  std::vector<std::string> errors;
};

// The Python of tools/scripts/python-envs.sh's venv (Triton 3.6), or "" when it is missing.
inline std::string VenvPython() {
  const std::string python = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  return access(python.c_str(), X_OK) == 0 ? python : std::string();
}

// Runs tests/python/`script` `args` with the venv's Python (the probe and test_probe.py on its
// path); an empty step and `why` when it cannot run (no venv, or the script failed).
inline Step RunStep(const std::string& script, const std::string& args, std::string* why) {
  Step s;
  const std::string python = VenvPython();
  if (python.empty()) {
    *why = std::string(RERACE_PY_ROOT) + "/venv/bin/python is missing";
    return s;
  }
  const std::string src = RERACE_SOURCE_DIR;
  const std::string cmd = "PYTHONPATH=" + src + "/recorder/python:" + src + "/tests/python " +
                          python + " " + src + "/tests/python/" + script + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    *why = "cannot run " + cmd;
    return s;
  }
  std::string out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const int rc = pclose(f);
  if (rc != 0) {
    *why = script + " failed: " + out.substr(0, 2000);
    return s;
  }
  size_t at = 0;
  while (at < out.size()) {
    const size_t nl = out.find('\n', at);
    const std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? out.size() : nl + 1;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_array() && j.size() == 2) {
      s.marks.emplace_back(j[0].get<std::string>(), j[1].get<std::string>());
    } else if (j.is_object() && j.contains("errors")) {
      s.errors = j["errors"].get<std::vector<std::string>>();
    }
  }
  return s;
}

// The marks through the recorder, each from an OS thread standing for its Python thread, in
// the order they were emitted (1 us apart). Returns the trace's path.
inline std::string Record(const Step& step, const std::string& tag) {
  const std::string path = ::testing::TempDir() + "rerace-probe-path-" + tag + ".rrt";
  recorder::RecorderOptions o;
  o.path = path;
  o.header.host = "probe_path_test";
  o.flush_period_ms = 5;
  auto rec = recorder::Recorder::Create(o);
  EXPECT_TRUE(rec.ok()) << rec.error().message;
  if (!rec.ok()) return "";
  recorder::Recorder& r = **rec;
  std::map<std::string, std::vector<size_t>> of;
  for (size_t i = 0; i < step.marks.size(); ++i) of[step.marks[i].first].push_back(i);
  std::mutex m;
  std::condition_variable cv;
  size_t next = 0;
  const uint64_t base = recorder::MonotonicNs();
  std::vector<std::thread> threads;
  for (const auto& [name, indices] : of) {
    threads.emplace_back([&, list = indices] {
      for (size_t i : list) {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return next == i; });
        r.Nvtx(base + i * 1000, traces::NvtxKind::kMark, step.marks[i].second.c_str(), 0);
        ++next;
        cv.notify_all();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(r.Stop({}).ok());
  return path;
}

// The step without its synchronization marks: what a probe before them recorded.
inline Step WithoutSyncMarks(Step step) {
  std::erase_if(step.marks, [](const auto& m) { return m.second.rfind("rerace:sync ", 0) == 0; });
  return step;
}

// The step through the recorder, read back as a program; the trace file is removed.
inline Result<Program> ReadRecorded(const Step& step, const std::string& tag) {
  const std::string path = Record(step, tag);
  auto program = ReadProgram(path);
  std::remove(path.c_str());
  return program;
}

}  // namespace rerace::replay::testing
