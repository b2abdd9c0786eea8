// The whole path of a step whose threads call shallow copies of one tuner (issue 53), on this
// CPU: the real Triton Autotuner under the probe (tests/python/copies_step.py: fake kernel and
// tensors, field marks on), its marks turned into a trace by the recorder (one thread per
// Python thread, in the order they were emitted), then both engines. On the GPU the same step
// raised KeyError: 'y_ptr' in 7 of 8 threads; here the real code raises it in this process too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rerace/recorder/recorder.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/search/check.h"
#include "rerace/testing/programs.h"
#include "../samples.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif
#ifndef RERACE_SOURCE_DIR
#define RERACE_SOURCE_DIR "."
#endif

namespace rerace::replay {
namespace {

struct Step {
  std::vector<std::pair<std::string, std::string>> marks;  // (thread, text), emission order
  std::vector<std::string> errors;
};

// Runs copies_step.py with `python`; an empty step and `why` when it cannot run.
Step RunStep(const std::string& python, int threads, const std::string& mode, std::string* why) {
  Step s;
  const std::string src = RERACE_SOURCE_DIR;
  const std::string cmd = "PYTHONPATH=" + src + "/recorder/python:" + src + "/tests/python " +
                          python + " " + src + "/tests/python/copies_step.py " +
                          std::to_string(threads) + " " + mode + " 2>&1";
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
    *why = "copies_step.py failed: " + out.substr(0, 2000);
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
std::string Record(const Step& step, const std::string& tag) {
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

TEST(ProbePath, CopiesOfARealTunerRecordedThroughTheRecorderFailUnderBothEngines) {
  const std::string python = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << python << " is missing";
  std::string why;
  const Step step = RunStep(python, 8, "copies", &why);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_FALSE(step.marks.empty());
  const std::string path = Record(step, "copies");
  auto p = ReadProgram(path);
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::set<uint64_t> tuners;
  for (const TunerCall& c : p->calls) tuners.insert(c.tuner);
  ASSERT_EQ(tuners.size(), 8u);
  EXPECT_TRUE(p->identity_recorded);
  ASSERT_EQ(p->hooks_home.size(), 8u);
  const uint64_t original = p->hooks_home.begin()->second;
  EXPECT_FALSE(tuners.count(original));  // the original made no call
  for (const auto& [t, h] : p->hooks_home) EXPECT_EQ(h, original);
  EXPECT_EQ(p->cache_home.size(), 7u);
  // The model: fails, and the recorded order raises the KeyError in the threads that raised.
  const BoundedVerdict v = CheckFixBounded(*p, rerace::testing::WithFix("none"), 2, 20000, false);
  EXPECT_FALSE(v.verdict.holds);
  std::set<uint32_t> recorded_raisers;
  for (uint32_t t = 0; t < p->threads.size(); ++t)
    if (!p->threads[t].failures.empty()) recorded_raisers.insert(t);
  EXPECT_EQ(recorded_raisers.size(), step.errors.size());
  Replayer model(*p, rerace::testing::WithFix("none"));
  const ReplayResult rec = model.RunRecorded();
  std::set<uint32_t> raised;
  for (const Finding& f : rec.findings)
    if (f.code == "in-param-not-in-cache") raised.insert(f.thread);
  EXPECT_EQ(raised, recorded_raisers);
  // The real code, replayed: the KeyError.
  Replayer real(*p, rerace::replay::testing::EngineOptions(python, "", "none"));
  auto info = real.StartEngine();
  ASSERT_TRUE(info.ok()) << info.error().message;
  bool key_error = false;
  for (uint64_t seed = 1; seed <= 20 && !key_error; ++seed) {
    sim::RandomWalk w(seed);
    for (const Finding& f : real.Run(w).findings)
      key_error |= f.code == "in-param-not-in-cache" && f.type == "KeyError";
  }
  EXPECT_TRUE(key_error);
  if (::testing::Test::HasFailure()) std::printf("the trace is kept: %s\n", path.c_str());
  else std::remove(path.c_str());
}

}  // namespace
}  // namespace rerace::replay

namespace rerace::replay {
namespace {

// The same path with one tuner that every thread calls: the recorded order is followed.
TEST(ProbePath, OneTunerRecordedThroughTheRecorderReplaysItsRaisers) {
  const std::string python = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << python << " is missing";
  std::string why;
  const Step step = RunStep(python, 8, "one", &why);
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string path = Record(step, "one");
  auto p = ReadProgram(path);
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::set<uint32_t> recorded_raisers;
  for (uint32_t t = 0; t < p->threads.size(); ++t)
    if (!p->threads[t].failures.empty()) recorded_raisers.insert(t);
  Replayer model(*p, rerace::testing::WithFix("none"));
  const ReplayResult rec = model.RunRecorded();
  std::set<uint32_t> raised;
  for (const Finding& f : rec.findings)
    if (f.code == "in-param-not-in-cache") raised.insert(f.thread);
  EXPECT_EQ(raised, recorded_raisers);
  if (::testing::Test::HasFailure()) std::printf("the trace is kept: %s\n", path.c_str());
  else std::remove(path.c_str());
}

}  // namespace
}  // namespace rerace::replay
