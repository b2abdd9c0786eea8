// The whole path of a step whose threads call shallow copies of one tuner (issue 53), on this
// CPU: the real Triton Autotuner under the probe (tests/python/copies_step.py: fake kernel and
// tensors, field marks on), its marks turned into a trace by the recorder (one thread per
// Python thread, in the order they were emitted), then both engines. On the GPU the same step
// raised KeyError: 'y_ptr' in 7 of 8 threads; here the real code raises it in this process too.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/search/check.h"
#include "rerace/testing/programs.h"
#include "../samples.h"
#include "probe_steps.h"

namespace rerace::replay {
namespace {

using testing::Record;
using testing::RunStep;
using testing::Step;

TEST(ProbePath, CopiesOfARealTunerRecordedThroughTheRecorderFailUnderBothEngines) {
  std::string why;
  const Step step = RunStep("copies_step.py", "8 copies", &why);
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
  Replayer real(*p, rerace::replay::testing::EngineOptions(testing::VenvPython(), "", "none"));
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

// The same path with one tuner that every thread calls: the recorded order is followed.
TEST(ProbePath, OneTunerRecordedThroughTheRecorderReplaysItsRaisers) {
  std::string why;
  const Step step = RunStep("copies_step.py", "8 one", &why);
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
