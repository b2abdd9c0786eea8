// A fix's cost against the real step on the H200 (issue 18; docs/PERFORMANCE.md "A fix's cost
// against the real step"): rerace's estimate from a recording, `rerace check --runs 10`'s,
// within 15% of the median real step measured on the H200 for the same fix, for the rows the
// table gives as within. The real medians are the logs' (docs/gpu-logs/h200-cost*-2026-12-04.log).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "rerace/replay/search/check.h"
#include "rerace/replay/model/fix.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

struct Row {
  const char* sample;  // under traces/samples; a .rrt.xz is decompressed first
  const char* fix;
  const char* model;   // "auto", or a model for a trace without tuner calls
  double real_ms;      // the H200's median step
  const char* where;   // which log, which runs
};

std::ostream& operator<<(std::ostream& o, const Row& r) { return o << r.sample << " --fix " << r.fix; }

// The test's name: the sample and the fix, with every other character an underscore.
std::string RowName(const ::testing::TestParamInfo<Row>& i) {
  std::string n = std::string(i.param.sample) + "_" + i.param.fix;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

// rerace check --runs 10's step estimate for the row's sample and fix, in ms.
double Estimate(const Row& row) {
  std::string path = testing::SamplePath(row.sample);
  std::string unpacked;
  if (path.ends_with(".xz")) {
    if (std::system("xz --version >/dev/null 2>&1") != 0) {
      ADD_FAILURE() << "xz is not installed (Debian: xz-utils)";
      return -1;
    }
    unpacked = ::testing::TempDir() + "/cost-fidelity-" + std::to_string(getpid()) + ".rrt";
    const std::string cmd = "xz -dc '" + path + "' > '" + unpacked + "'";
    if (std::system(cmd.c_str()) != 0) {
      ADD_FAILURE() << cmd;
      return -1;
    }
    path = unpacked;
  }
  auto t = traces::ReadTrace(path);
  if (!unpacked.empty()) std::remove(unpacked.c_str());
  if (!t.ok()) {
    ADD_FAILURE() << t.error().message;
    return -1;
  }
  auto p = BuildProgram(*t, path);
  if (!p.ok()) {
    ADD_FAILURE() << p.error().message;
    return -1;
  }
  ReplayOptions o;
  o.fix = *ParseFix(row.fix);
  o.model = row.model;
  const Verdict v = CheckFix(*p, o, 10, 1);
  if (!v.cost.priced) {
    ADD_FAILURE() << "not priced: " << v.cost.failure;
    return -1;
  }
  std::printf("%s --fix %s: %s\n", row.sample, row.fix, FormatCost(v.cost).c_str());
  return static_cast<double>(v.cost.step_ns) / 1e6;
}

class CostAgainstTheH200 : public ::testing::TestWithParam<Row> {};

TEST_P(CostAgainstTheH200, EstimateWithin15PercentOfTheRealStep) {
  const Row& row = GetParam();
  const double estimate = Estimate(row);
  EXPECT_NEAR(estimate, row.real_ms, 0.15 * row.real_ms) << "real: " << row.where;
}

INSTANTIATE_TEST_SUITE_P(
    BufferPerThreadRecorder, CostAgainstTheH200,
    ::testing::Values(
        // The native step, 8 threads (docs/gpu-logs/h200-cost-2026-12-04.log, 8 runs per fix, step 0).
        Row{"native-none-cost-h200.rrt", "lock-run", "auto", 66.8, "session 1, lock-run"},
        Row{"native-none-cost-h200.rrt", "call-local", "auto", 453.5, "session 1, call-local"},
        Row{"native-none-cost-h200.rrt", "per-thread-tuner", "auto", 470.6, "session 1, per-thread-tuner"},
        Row{"native-none-cost-h200.rrt", "owner-thread", "auto", 66.0, "session 1, owner-thread"},
        Row{"native-lock-run-cost-h200.rrt", "lock-run", "auto", 66.8, "session 1, lock-run"},
        // Not native-call-local-cost-h200.rrt (--fix call-local, 526.7 ms, +16.1 %): that recording
        // ran 30 % slow (589.7 ms; a CUPTI buffer per thread, docs/RECORDER.md), and the estimate
        // is within 11 % of it; session 6's recordings of call-local are below.
        Row{"native-rank0-lock-run-cost-h200.rrt", "lock-run", "auto", 155.2, "session 1, two ranks, rank 0"},
        Row{"native-rank1-lock-run-cost-h200.rrt", "lock-run", "auto", 134.0, "session 1, two ranks, rank 1"},
        Row{"torch-two-streams-h200.rrt", "none", "triton", 27.7, "session 1, two_streams.py"},
        // The brief's Triton experiment, cold (a fresh process each; docs/gpu-logs/h200-cost3-2026-12-04.log,
        // 6 runs per row; the recordings of the same machine start).
        Row{"cost3/triton-none-t8-cost3-h200.rrt.xz", "lock-run", "auto", 2020, "session 3, lock-run 8 threads"},
        Row{"cost3/triton-none-t8-cost3-h200.rrt.xz", "call-local", "auto", 2803, "session 3, tls-state 8 threads"},
        Row{"cost3/triton-lock-run-t8-cost3-h200.rrt.xz", "lock-run", "auto", 2020, "session 3, lock-run 8 threads"},
        Row{"cost3/triton-tls-state-t8-cost3-h200.rrt.xz", "call-local", "auto", 2803, "session 3, tls-state 8 threads"},
        Row{"cost3/triton-tls-state-t2-cost3-h200.rrt.xz", "call-local", "auto", 2518, "session 3, tls-state 2 threads"},
        // An older recording of the unpatched experiment against session 2's cold medians
        // (docs/gpu-logs/h200-cost2-2026-12-04.log, 8 fresh processes).
        Row{"triton-none-h200.rrt", "lock-run", "auto", 1948, "session 2, cold lock-run"},
        Row{"triton-none-h200.rrt", "call-local", "auto", 2614, "session 2, cold tls-state"}),
    RowName);

// Session 6 (docs/gpu-logs/h200-cost6-2026-12-04.log): the recorder with one CUPTI activity buffer, zeroed
// by the recorder; each recording against the median of the unrecorded runs of its machine start
// (16 per native fix, 12 for call-local and lock-run, 8 per Triton variant). The third lock-run
// recording has a worker's 23.5 ms wait for the global lock before its acquire mark (87.4 ms,
// +22 %, while that wait was charged as CPU time; Cost.ALocksWaitBeforeItsAcquireMarkIsNotCpuTime).
INSTANTIATE_TEST_SUITE_P(
    OneBufferRecorder, CostAgainstTheH200,
    ::testing::Values(
        Row{"cost6/native-per-thread-tuner-r1-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 416.95, "session 6"},
        Row{"cost6/native-per-thread-tuner-r2-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 416.95, "session 6"},
        Row{"cost6/native-per-thread-tuner-r3-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 416.95, "session 6"},
        Row{"cost6/native-per-thread-tuner-r4-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 416.95, "session 6"},
        Row{"cost6/native-owner-thread-r1-cost6-h200.rrt.xz", "owner-thread", "auto", 65.22, "session 6"},
        Row{"cost6/native-owner-thread-r2-cost6-h200.rrt.xz", "owner-thread", "auto", 65.22, "session 6"},
        Row{"cost6/native-owner-thread-r3-cost6-h200.rrt.xz", "owner-thread", "auto", 65.22, "session 6"},
        Row{"cost6/native-owner-thread-r4-cost6-h200.rrt.xz", "owner-thread", "auto", 65.22, "session 6"},
        Row{"cost6/native-call-local-r1-cost6-h200.rrt.xz", "call-local", "auto", 434.1, "session 6"},
        Row{"cost6/native-call-local-r2-cost6-h200.rrt.xz", "call-local", "auto", 434.1, "session 6"},
        Row{"cost6/native-call-local-r3-cost6-h200.rrt.xz", "call-local", "auto", 434.1, "session 6"},
        Row{"cost6/native-lock-run-r1-cost6-h200.rrt.xz", "lock-run", "auto", 71.5, "session 6"},
        Row{"cost6/native-lock-run-r2-cost6-h200.rrt.xz", "lock-run", "auto", 71.5, "session 6"},
        Row{"cost6/native-lock-run-r3-cost6-h200.rrt.xz", "lock-run", "auto", 71.5, "session 6"},
        // The Triton experiment, 8 cold runs per variant and one recording each (a later start).
        Row{"cost6/triton-lock-run-t8-cost8-h200.rrt.xz", "lock-run", "auto", 2084, "session 6, lock-run 8 threads"},
        Row{"cost6/triton-tls-state-t8-cost8-h200.rrt.xz", "call-local", "auto", 2993.5, "session 6, tls-state 8 threads"},
        Row{"cost6/triton-tls-state-t2-cost8-h200.rrt.xz", "call-local", "auto", 2694, "session 6, tls-state 2 threads"}),
    RowName);

// The model against what it was given: the estimate from a recording of the fix itself within
// 10% of the step that recording took (the step rerace-train-step printed under `rerace
// record`). Session 4's recordings (docs/gpu-logs/h200-cost4-2026-12-04.log) ran 6-36% slower than the
// unrecorded runs of their machine start (a CUPTI buffer per thread, docs/RECORDER.md), session
// 6's 2-12% (docs/gpu-logs/h200-cost6-2026-12-04.log); what is asserted here is that the cost model
// reproduces the recorded step, which the recorder's overhead does not excuse.
class CostAgainstItsRecording : public ::testing::TestWithParam<Row> {};

TEST_P(CostAgainstItsRecording, EstimateWithin10PercentOfTheRecordedStep) {
  const Row& row = GetParam();
  const double estimate = Estimate(row);
  EXPECT_NEAR(estimate, row.real_ms, 0.10 * row.real_ms) << "recorded: " << row.where;
}

INSTANTIATE_TEST_SUITE_P(
    BufferPerThreadRecorder, CostAgainstItsRecording,
    ::testing::Values(
        Row{"cost4/native-per-thread-tuner-r1-cost4-h200.rrt.xz", "per-thread-tuner", "auto", 530.720, "round 1"},
        Row{"cost4/native-per-thread-tuner-r2-cost4-h200.rrt.xz", "per-thread-tuner", "auto", 538.699, "round 2"},
        Row{"cost4/native-per-thread-tuner-r3-cost4-h200.rrt.xz", "per-thread-tuner", "auto", 541.759, "round 3"},
        Row{"cost4/native-owner-thread-r1-cost4-h200.rrt.xz", "owner-thread", "auto", 92.376, "round 1"},
        Row{"cost4/native-owner-thread-r2-cost4-h200.rrt.xz", "owner-thread", "auto", 72.169, "round 2"},
        Row{"cost4/native-owner-thread-r3-cost4-h200.rrt.xz", "owner-thread", "auto", 83.652, "round 3"}),
    RowName);

INSTANTIATE_TEST_SUITE_P(
    OneBufferRecorder, CostAgainstItsRecording,
    ::testing::Values(
        Row{"cost6/native-per-thread-tuner-r1-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 445.257, "round 1"},
        Row{"cost6/native-per-thread-tuner-r2-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 457.974, "round 2"},
        Row{"cost6/native-per-thread-tuner-r3-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 424.170, "round 3"},
        Row{"cost6/native-per-thread-tuner-r4-cost6-h200.rrt.xz", "per-thread-tuner", "auto", 465.058, "round 4"},
        Row{"cost6/native-call-local-r1-cost6-h200.rrt.xz", "call-local", "auto", 480.577, "round 1"},
        Row{"cost6/native-call-local-r2-cost6-h200.rrt.xz", "call-local", "auto", 450.392, "round 2"},
        Row{"cost6/native-call-local-r3-cost6-h200.rrt.xz", "call-local", "auto", 484.870, "round 3"}),
    RowName);

}  // namespace
}  // namespace rerace::replay
