// ReadProgram builds the programs BuildProgram builds from ReadTrace, and says what was read.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "rerace/replay/model/program.h"
#include "rerace/replay/report/timeline.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/writer.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

// Every field of the programs, as text.
std::string Describe(const Program& p) {
  std::string s = p.source + (p.truncated ? " truncated" : "") + " span " +
                  std::to_string(p.recorded_span_ns) + (p.gil ? " gil" : "") + " step_start " +
                  std::to_string(p.step_start_ns) + " contention " +
                  std::to_string(p.trial_contention_ppm) + " " + p.trial_contention_from + " cold " +
                  std::to_string(p.cold_ns) + "\n";
  for (uint32_t d : p.overlapping_devices) s += "overlapping " + std::to_string(d) + "\n";
  for (uint64_t t : p.cache_results) s += "cache_results " + std::to_string(t) + "\n";
  for (const std::string& c : p.tuner_classes) s += "class " + c + "\n";
  for (const auto& [id, m] : p.tuner_meta) s += "meta " + std::to_string(id) + " " + m + "\n";
  for (const TunerCall& c : p.calls) {
    s += "call " + std::to_string(c.tuner) + " " + c.tuner_class + " " + c.kernel + " " + c.key +
         " launch " + std::to_string(c.launch_ns) + " dev " + std::to_string(c.device) + " stream " +
         std::to_string(c.stream) + " configs " + std::to_string(c.configs.size()) + " args " +
         std::to_string(c.arg_names.size()) + " rv " + std::to_string(c.restore_value.size()) +
         " rz " + std::to_string(c.reset_to_zero.size()) + " bench";
    for (size_t i = 0; i < c.bench_ns.size(); ++i)
      s += " " + std::to_string(c.bench_ns[i]) + "x" + std::to_string(c.bench_reps[i]);
    s += " trials";
    for (size_t i = 0; i < c.trial_gpu_ns.size(); ++i)
      s += " " + std::to_string(c.trial_gpu_ns[i]) + "+" + std::to_string(c.trial_cpu_ns[i]);
    s += " call_cpu " + std::to_string(c.call_cpu_ns) + (c.time_budgeted ? " budgeted" : "") +
         (c.trial_device_sync ? " device-sync" : "") + "\n";
  }
  for (const ThreadProgram& t : p.threads) {
    s += "thread " + std::to_string(t.thread) + " " + t.name + " start " + std::to_string(t.start_ns) +
         (t.worker ? " worker" : "") + "\n";
    for (const Op& o : t.ops)
      s += " op " + std::to_string(static_cast<int>(o.kind)) + " " + std::to_string(o.seq) + " " +
           std::to_string(o.call) + " " + std::to_string(o.device) + " " + std::to_string(o.stream) +
           " " + std::to_string(o.duration) + " " + o.kernel + " " + std::to_string(o.lock) + " " +
           o.lock_name + " " + std::to_string(static_cast<int>(o.sync)) + " cpu " +
           std::to_string(o.cpu_before_ns) + "\n";
    for (const RecordedTransition& r : t.transitions)
      s += " tr " + std::to_string(static_cast<int>(r.kind)) + " " + std::to_string(r.config) + " " +
           std::to_string(r.seq) + " " + std::to_string(static_cast<int>(r.field)) + "\n";
    for (const RecordedFailure& f : t.failures)
      s += " failure " + std::to_string(f.seq) + " " + f.type + " " + f.message + " " + f.where + "\n";
  }
  return s;
}

TEST(ReadProgram, BuildsWhatBuildProgramBuildsFromTheWholeTrace) {
  std::vector<std::string> files;
  for (const char* dir : {"traces/samples", "tests/data"})
    for (const auto& e : std::filesystem::directory_iterator(testing::SamplePath("../../") + dir))
      if (e.path().extension() == ".rrt") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 30u);
  size_t built = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    auto whole = traces::ReadTrace(f);
    Result<Program> expected = whole.ok() ? BuildProgram(*whole, f) : Result<Program>(whole.error());
    traces::Trace read;
    auto streamed = ReadProgram(f, &read);
    ASSERT_EQ(streamed.ok(), expected.ok()) << (expected.ok() ? streamed.error().message : expected.error().message);
    if (!expected.ok()) {
      EXPECT_EQ(streamed.error().exit_code, expected.error().exit_code);
      EXPECT_EQ(streamed.error().message, expected.error().message);
      continue;
    }
    ++built;
    EXPECT_EQ(Describe(*streamed), Describe(*expected));
    EXPECT_EQ(read.event_count, whole->events.size());
    EXPECT_EQ(read.truncated, whole->truncated);
    EXPECT_EQ(read.truncation, whole->truncation);
  }
  EXPECT_GE(built, 13u);
}

// A trace whose GPU times come late: the activity records of a call's benchmark launches and
// of its final launch after the call has ended, of a launch outside any call after further
// launches, on a device with two streams that overlap. The streamed build (each launch's time
// resolved when its activity comes) gives the whole-trace build's programs; so does the
// fallback, for a trace that gives one launch two timings and for one whose memory operation
// shares a launch's correlation id.
std::string LateActivityTrace(const std::string& path, int variant) {
  traces::Header h;
  auto w = traces::TraceWriter::Create(path, h);
  EXPECT_TRUE(w.ok());
  traces::TraceWriter& tw = **w;
  const uint32_t t0 = tw.AddThread(100, "MainThread");
  const uint32_t t1 = tw.AddThread(101, "worker");
  traces::LaunchShape a;
  a.kernel = tw.String("kernel_a");
  a.stream = 7;
  traces::LaunchShape b = a;
  b.kernel = tw.String("kernel_b");
  b.stream = 8;
  const uint32_t sa = tw.Shape(a), sb = tw.Shape(b);
  traces::TunerEvent begin;
  begin.tuner = 0x51;
  begin.tuner_class = tw.String("triton.runtime.autotuner.Autotuner");
  begin.kernel = tw.String("kernel_a");
  begin.key = "k";
  begin.configs = {"c0", "c1"};
  auto tuner = [&](uint32_t th, uint64_t ns, traces::TunerKind k, int32_t config) {
    traces::TunerEvent te = begin;
    te.kind = k;
    te.config = config;
    if (k == traces::TunerKind::kBenchEnd) {
      te.timings_ms = {0.5};
      te.repetitions = 3;
    }
    tw.AppendTuner(th, ns, te);
  };
  tw.AppendLaunch(t1, 900, sb, 1);  // outside any call, on the other stream
  tuner(t0, 1000, traces::TunerKind::kCallBegin, -1);
  tuner(t0, 1100, traces::TunerKind::kBenchBegin, 0);
  tw.AppendLaunch(t0, 1200, sa, 2);
  tw.AppendLaunch(t0, 1300, sa, 3);
  tuner(t0, 2000, traces::TunerKind::kBenchEnd, 0);
  tuner(t0, 2100, traces::TunerKind::kBenchBegin, 1);
  tw.AppendLaunch(t0, 2200, sa, 4);
  (void)tw.Flush();  // the activities in later chunks
  tuner(t0, 3000, traces::TunerKind::kBenchEnd, 1);
  tuner(t0, 3100, traces::TunerKind::kLaunch, 1);
  tw.AppendLaunch(t0, 3200, sa, 5);
  tuner(t0, 3300, traces::TunerKind::kCallEnd, -1);
  tw.AppendLaunch(t1, 3400, sb, 6);
  tw.AppendActivity(t0, 3500, 4, 50'000, 52'000);
  tw.AppendActivity(t0, 3500, 2, 10'000, 10'400);
  (void)tw.Flush();
  tw.AppendActivity(t0, 3600, 3, 11'000, 11'900);
  tw.AppendActivity(t0, 3600, 5, 60'000, 60'700);
  tw.AppendActivity(t1, 3600, 1, 10'100, 10'300);  // overlaps launch 2 on the other stream
  tw.AppendActivity(t1, 3600, 6, 0, 0);            // no timing
  if (variant == 1) tw.AppendActivity(t1, 3700, 1, 20'000, 20'050);  // a second timing
  if (variant == 2) {
    traces::Event mem;
    mem.kind = traces::EventKind::kMemOp;
    mem.thread = t1;
    mem.cpu_ns = 3800;
    mem.correlation = 3;  // launch 3's, which has a GPU time
    mem.bytes = 64;
    tw.Append(mem);
  }
  EXPECT_TRUE(tw.Finish(traces::Footer{}).ok());
  return path;
}

TEST(ReadProgram, LateActivitiesGiveTheWholeTracesTimes) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    const std::string f = LateActivityTrace(::testing::TempDir() + "/late.rrt", variant);
    auto whole = traces::ReadTrace(f);
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    auto expected = BuildProgram(*whole, f);
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    auto streamed = ReadProgram(f);
    ASSERT_TRUE(streamed.ok()) << streamed.error().message;
    EXPECT_EQ(Describe(*streamed), Describe(*expected));
    if (variant != 0) continue;
    // What the whole-trace build gives, spelled out: the times reached the right places.
    ASSERT_EQ(expected->calls.size(), 1u);
    EXPECT_EQ(expected->calls[0].launch_ns, 700u);
    EXPECT_EQ(expected->calls[0].trial_gpu_ns, (std::vector<Nanos>{400 + 900, 2000}));
    ASSERT_EQ(expected->threads[1].ops.size(), 2u);
    EXPECT_EQ(expected->threads[1].ops[0].duration, 200u);
    EXPECT_EQ(expected->threads[1].ops[1].duration, 0u);
    EXPECT_EQ(expected->overlapping_devices, (std::set<uint32_t>{0}));
  }
}

std::vector<std::string> TraceFiles() {
  std::vector<std::string> files;
  for (const char* dir : {"traces/samples", "tests/data"})
    for (const auto& e : std::filesystem::directory_iterator(testing::SamplePath("../../") + dir))
      if (e.path().extension() == ".rrt") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// `rerace export`, streamed: the text TraceTimeline makes from the whole trace, byte for byte,
// or the same error (and no file); also for kernels timed late or twice. The recordings of
// more than a megabyte but one are left out (time: they are all of one kind).
TEST(ReadProgram, StreamedExportWritesWhatTheWholeTraceGives) {
  std::vector<std::string> files;
  for (const std::string& f : TraceFiles())
    if (std::filesystem::file_size(f) < (1u << 20) || f.ends_with("/triton-none-h200.rrt")) files.push_back(f);
  for (int variant = 0; variant < 2; ++variant)
    files.push_back(LateActivityTrace(::testing::TempDir() + "/late" + std::to_string(variant) + ".rrt", variant));
  const std::string out = ::testing::TempDir() + "/timeline.json";
  size_t written = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::filesystem::remove(out);
    auto whole = traces::ReadTrace(f);
    traces::Trace read;
    auto bytes = WriteTraceTimeline(f, out, &read);
    ASSERT_EQ(bytes.ok(), whole.ok()) << (whole.ok() ? bytes.error().message : whole.error().message);
    if (!whole.ok()) {
      EXPECT_EQ(bytes.error().exit_code, whole.error().exit_code);
      EXPECT_EQ(bytes.error().message, whole.error().message);
      EXPECT_FALSE(std::filesystem::exists(out));
      continue;
    }
    ++written;
    std::ifstream in(out, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string expected = TraceTimeline(*whole);
    EXPECT_EQ(text.str(), expected);
    EXPECT_EQ(*bytes, expected.size());
    EXPECT_EQ(read.truncation, whole->truncation);
  }
  EXPECT_GE(written, 15u);
}

}  // namespace
}  // namespace rerace::replay
