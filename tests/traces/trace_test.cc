#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fixtures.h"
#include "rerace/traces/format.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/synth.h"
#include "rerace/traces/writer.h"

namespace rerace::traces {
namespace {

using testing::MakeFixtures;
using testing::SmallTrace;

std::string SourceDir() {
  const char* s = std::getenv("RERACE_SOURCE");
  return s ? s : ".";
}

TEST(Trace, EveryEventKindRoundTrips) {
  const auto bytes = SmallTrace();
  auto t = ParseTrace(bytes, "small");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_FALSE(t->truncated) << t->truncation;
  EXPECT_TRUE(t->has_footer);
  EXPECT_EQ(t->chunks, 2u);
  EXPECT_EQ(t->header.host, "test");
  EXPECT_EQ(t->header.pid, 42u);
  ASSERT_EQ(t->header.gpus.size(), 1u);
  EXPECT_EQ(t->header.gpus[0].name, "GPU zero");
  EXPECT_EQ(t->header.clock_pairs[0], (ClockPair{0, 100, 200}));
  ASSERT_EQ(t->threads.size(), 2u);
  EXPECT_EQ(t->threads[1].name, "ThreadPoolExecutor-0_1");  // renamed
  EXPECT_EQ(t->threads[1].os_tid, 101u);

  ASSERT_EQ(t->events.size(), 9u);
  const Event& launch = t->events[0];
  EXPECT_EQ(launch.kind, EventKind::kLaunch);
  EXPECT_EQ(launch.cpu_ns, 1000u);
  EXPECT_EQ(launch.correlation, 10u);
  const LaunchShape& sh = t->shapes[launch.shape];
  EXPECT_EQ(t->Str(sh.kernel), "l2norm_fwd_kernel");
  EXPECT_EQ(sh.grid[0], 128u);
  EXPECT_EQ(sh.block[0], 256u);
  EXPECT_EQ(sh.shared_bytes, 1024u);
  EXPECT_EQ(sh.stream, 3u);

  EXPECT_EQ(t->events[1].kind, EventKind::kActivity);
  EXPECT_EQ(t->events[1].gpu_start_ns, 50000u);
  EXPECT_EQ(t->events[1].gpu_end_ns, 51000u);
  EXPECT_EQ(t->events[2].kind, EventKind::kSync);
  EXPECT_EQ(t->events[2].sync, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t->events[2].handle, 77u);
  EXPECT_EQ(t->events[3].kind, EventKind::kMemOp);
  EXPECT_EQ(t->events[3].mem, MemKind::kDtoH);
  EXPECT_EQ(t->events[3].bytes, 4096u);
  EXPECT_EQ(t->events[3].seq, 3u);

  ASSERT_EQ(t->tuner_events.size(), 3u);
  const TunerEvent& begin = t->tuner_events[t->events[4].tuner];
  EXPECT_EQ(begin.kind, TunerKind::kCallBegin);
  EXPECT_EQ(begin.key, "(4096,)");
  EXPECT_EQ(begin.configs.size(), 2u);
  EXPECT_EQ(begin.arg_names[begin.restore_value[0]], "y_ptr");
  const TunerEvent& bench = t->tuner_events[t->events[5].tuner];
  EXPECT_EQ(bench.timings_ms, (std::vector<double>{0.02, 0.019, 0.021}));
  EXPECT_EQ(bench.repetitions, 100u);
  const TunerEvent& err = t->tuner_events[t->events[6].tuner];
  EXPECT_EQ(err.error_type, "KeyError");
  EXPECT_EQ(err.error_where, "triton/runtime/autotuner.py:74 _post_hook");

  EXPECT_EQ(t->events[7].kind, EventKind::kLock);
  EXPECT_EQ(t->events[7].lock, LockKind::kRelease);
  EXPECT_EQ(t->Str(t->events[7].text), "autotune_lock");
  EXPECT_EQ(t->events[8].kind, EventKind::kNvtx);
  EXPECT_EQ(t->events[8].nvtx, NvtxKind::kRangePush);
  EXPECT_EQ(t->Str(t->events[8].text), "forward");

  EXPECT_EQ(t->footer.event_count, 9u);
  EXPECT_EQ(t->footer.launch_count, 1u);
  EXPECT_EQ(t->footer.tuner_count, 3u);
}

// Cut the file at every byte: the reader never fails on a cut after the header, reports the
// truncation, and keeps exactly the events of the whole chunks before the cut.
TEST(Trace, CutAtEveryByteReadsUpToTheLastWholeChunk) {
  const auto bytes = SmallTrace();
  auto full = ParseTrace(bytes, "small");
  ASSERT_TRUE(full.ok());
  auto frames = ListFrames(bytes, "small");
  ASSERT_TRUE(frames.ok());
  ASSERT_EQ(frames->size(), 4u);  // header, 2 chunks, footer
  const uint64_t header_end = (*frames)[1].offset;
  const uint64_t chunk1_end = (*frames)[2].offset;
  const uint64_t chunk2_end = (*frames)[3].offset;
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    SCOPED_TRACE(cut);
    std::span<const uint8_t> part(bytes.data(), cut);
    auto t = ParseTrace(part, "cut");
    if (cut < header_end) {
      ASSERT_FALSE(t.ok());
      EXPECT_EQ(t.error().exit_code, 65);
      EXPECT_EQ(t.error().message.find('\n'), std::string::npos);
      continue;
    }
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_TRUE(t->truncated);
    const size_t expect = cut < chunk1_end ? 0 : cut < chunk2_end ? 3 : 9;
    EXPECT_EQ(t->events.size(), expect);
    EXPECT_NE(t->truncation.find("truncated after " + std::to_string(expect) + " events"),
              std::string::npos)
        << t->truncation;
  }
}

TEST(Trace, CorruptFixturesGiveTheirMessages) {
  for (const auto& f : MakeFixtures()) {
    SCOPED_TRACE(f.name);
    const std::string path = SourceDir() + "/tests/data/" + f.name;
    auto t = ReadTrace(path);
    ASSERT_FALSE(t.ok()) << "fixture read without error";
    EXPECT_EQ(t.error().exit_code, 65);
    EXPECT_NE(t.error().message.find(f.expected), std::string::npos) << t.error().message;
    EXPECT_EQ(t.error().message.rfind(path + ": ", 0), 0u) << t.error().message;
    EXPECT_EQ(t.error().message.find('\n'), std::string::npos);
  }
}

TEST(Trace, CheckedInFixturesMatchTheirGenerator) {
  for (const auto& f : MakeFixtures()) {
    SCOPED_TRACE(f.name);
    std::ifstream in(SourceDir() + "/tests/data/" + f.name, std::ios::binary);
    ASSERT_TRUE(in) << "missing fixture: regenerate with build/tests/make_trace_fixtures tests/data";
    std::vector<uint8_t> have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(have, f.bytes) << "stale fixture: regenerate with build/tests/make_trace_fixtures tests/data";
  }
}

TEST(Trace, MissingFileIsExit66) {
  auto t = ReadTrace("/no/such/trace.rrt");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().exit_code, 66);
  EXPECT_NE(t.error().message.find("/no/such/trace.rrt: cannot open the trace"), std::string::npos);
}

// The memory the reader builds stays within its bound on real recordings, with room to spare:
// docs/PERFORMANCE.md gives the figures (at most 9.4 bytes per byte of frame).
TEST(TraceLimits, SamplesBuildAtMostTenBytesPerByteOfFile) {
  for (const auto& e : std::filesystem::directory_iterator(SourceDir() + "/traces/samples")) {
    if (e.path().extension() != ".rrt") continue;
    SCOPED_TRACE(e.path().string());
    auto t = ReadTrace(e.path().string());
    ASSERT_TRUE(t.ok()) << t.error().message;
    const auto size = std::filesystem::file_size(e.path());
    EXPECT_GT(t->built_bytes, size);
    EXPECT_LE(t->built_bytes, 10 * size);
  }
}

// Recorded numbers that cannot be true are refused where they are read, with the event named:
// replay would turn them into costs of 18446744071710 ms or overflow a product.
TEST(TraceLimits, AbsurdRecordedValuesAreRefused) {
  struct Case {
    const char* name;
    void (*edit)(TunerEvent&);
    const char* expected;
  } cases[] = {
      {"NaN", [](TunerEvent& e) { e.timings_ms = {std::nan("")}; }, "benchmark timing nan ms"},
      {"infinity", [](TunerEvent& e) { e.timings_ms = {1.0 / 0.0}; }, "benchmark timing inf ms"},
      {"negative", [](TunerEvent& e) { e.timings_ms = {-1.0}; }, "benchmark timing -1 ms"},
      {"four hours", [](TunerEvent& e) { e.timings_ms = {4 * 3'600'000.0}; }, "expected a finite"},
      {"2^32-1 repetitions", [](TunerEvent& e) { e.repetitions = 4294967295u; },
       "4294967295 benchmark repetitions; expected at most 1000000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = ::testing::TempDir() + "/absurd.rrt";
    {
      auto w = TraceWriter::Create(path, Header{});
      ASSERT_TRUE(w.ok());
      const uint32_t t = (*w)->AddThread(1, "main");
      TunerEvent te;
      te.tuner_class = (*w)->String("c");
      te.kernel = (*w)->String("k");
      te.kind = TunerKind::kBenchEnd;
      c.edit(te);
      (*w)->AppendTuner(t, 1, te);
      ASSERT_TRUE((*w)->Finish({}).ok());
    }
    auto r = ReadTrace(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().exit_code, 65);
    EXPECT_NE(r.error().message.find(c.expected), std::string::npos) << r.error().message;
    std::remove(path.c_str());
  }
}

TEST(TraceLimits, AbsoluteLimitStopsTheReadWithExit65) {
  const auto bytes = SmallTrace();
  ASSERT_TRUE(ParseTrace(bytes, "small").ok());
  auto t = ParseTrace(bytes, "small", ReadLimits{1024});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().exit_code, 65);
  EXPECT_NE(t.error().message.find("more than 0 MiB in memory, the limit; set RERACE_MAX_TRACE_MB"),
            std::string::npos)
      << t.error().message;
}

// What is not a trace file is refused before it is read: the magic first, only regular files,
// only up to the limit.
TEST(TraceLimits, ReadFileBytesRefusesWhatIsNotATraceFile) {
  const std::string zeros = ::testing::TempDir() + "/zeros.rrt";
  {
    std::ofstream f(zeros, std::ios::binary);
    f << std::string(4096, '\0');
  }
  const std::string big = ::testing::TempDir() + "/big.rrt";
  {
    std::ofstream f(big, std::ios::binary);
    f << "RRTRACE\n" << std::string((2u << 20), 'x');
  }
  struct Case {
    std::string path;
    uint64_t limit;
    int code;
    std::string expected;
  } cases[] = {
      {"/dev/zero", kDefaultMaxTraceMemoryBytes, 66, "/dev/zero: not a regular file (a character device)"},
      {"/dev/urandom", kDefaultMaxTraceMemoryBytes, 66, "not a regular file"},
      {"/tmp", kDefaultMaxTraceMemoryBytes, 66, "/tmp: not a regular file (a directory)"},
      {zeros, kDefaultMaxTraceMemoryBytes, 65, "byte 0: bad magic"},
      {big, 1u << 20, 65, "a file of 2 MiB; this rerace reads traces of at most 1 MiB (set "
                          "RERACE_MAX_TRACE_MB"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    auto b = ReadFileBytes(c.path, ReadLimits{c.limit});
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().exit_code, c.code);
    EXPECT_NE(b.error().message.find(c.expected), std::string::npos) << b.error().message;
  }
  std::remove(zeros.c_str());
  std::remove(big.c_str());
}

TEST(TraceLimits, EnvironmentRaisesTheLimit) {
  ::setenv("RERACE_MAX_TRACE_MB", "8192", 1);
  auto l = DefaultReadLimits();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->max_memory_bytes, 8192ull << 20);
  for (const char* bad : {"-1", "0", "1e3", " 5", "lots", "18446744073709551616"}) {
    SCOPED_TRACE(bad);
    ::setenv("RERACE_MAX_TRACE_MB", bad, 1);
    auto b = DefaultReadLimits();
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().exit_code, 64);
  }
  ::unsetenv("RERACE_MAX_TRACE_MB");
  EXPECT_EQ(DefaultReadLimits()->max_memory_bytes, kDefaultMaxTraceMemoryBytes);
}

TEST(Trace, FileWithoutFooterIsTruncatedNotBroken) {
  const std::string path = ::testing::TempDir() + "/nofooter.rrt";
  {
    auto w = TraceWriter::Create(path, Header{});
    ASSERT_TRUE(w.ok());
    const uint32_t t = (*w)->AddThread(1, "main");
    LaunchShape sh;
    sh.kernel = (*w)->String("k");
    (*w)->AppendLaunch(t, 5, (*w)->Shape(sh), 1);
    ASSERT_TRUE((*w)->Flush().ok());
    (*w)->AppendLaunch(t, 6, 0, 2);  // never flushed: lost, as in a SIGKILL
  }
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->truncated);
  EXPECT_EQ(t->events.size(), 1u);
  EXPECT_NE(t->truncation.find("truncated after 1 events: the file has no footer"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Trace, LongGapsSplitChunksAndKeepTimes) {
  const std::string path = ::testing::TempDir() + "/gaps.rrt";
  const uint64_t times[] = {10, 20, 10'000'000'000ull, 10'000'000'005ull, 5};
  {
    auto w = TraceWriter::Create(path, Header{});
    ASSERT_TRUE(w.ok());
    const uint32_t t = (*w)->AddThread(1, "main");
    LaunchShape sh;
    sh.kernel = (*w)->String("k");
    const uint32_t s = (*w)->Shape(sh);
    uint32_t c = 1;
    for (uint64_t at : times) (*w)->AppendLaunch(t, at, s, c++);
    ASSERT_TRUE((*w)->Finish({}).ok());
  }
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->events.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(t->events[i].cpu_ns, times[i]);
    EXPECT_EQ(t->events[i].seq, i);
  }
  EXPECT_EQ(t->chunks, 3u);
  std::remove(path.c_str());
}

TEST(Trace, WriterReportsAnUnwritablePath) {
  auto w = TraceWriter::Create("/no/such/dir/x.rrt", Header{});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().exit_code, 74);
  EXPECT_NE(w.error().message.find("/no/such/dir/x.rrt: cannot create the trace"), std::string::npos);
}

TEST(Synth, DefaultScenarioHasTheH200Shape) {
  const std::string path = ::testing::TempDir() + "/synth.rrt";
  ASSERT_TRUE(Synthesize(Scenario{}, path).ok());
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->threads.size(), 8u);
  size_t calls = 0, benches = 0;
  for (const TunerEvent& e : t->tuner_events) {
    if (e.kind == TunerKind::kCallBegin) {
      ++calls;
      EXPECT_EQ(e.configs.size(), 12u);
      EXPECT_EQ(e.key, "4096");
      ASSERT_EQ(e.restore_value.size(), 1u);
      EXPECT_EQ(e.arg_names[e.restore_value[0]], "y_ptr");
    }
    if (e.kind == TunerKind::kBenchEnd) ++benches;
  }
  EXPECT_EQ(calls, 8u);
  EXPECT_EQ(benches, 8u * 12u);  // cold cache: every thread benchmarks every config
  std::remove(path.c_str());
}

TEST(Synth, SameScenarioGivesTheSameBytes) {
  const std::string a = ::testing::TempDir() + "/synth-a.rrt";
  const std::string b = ::testing::TempDir() + "/synth-b.rrt";
  Scenario s;
  s.seed = 99;
  s.threads = 3;
  ASSERT_TRUE(Synthesize(s, a).ok());
  ASSERT_TRUE(Synthesize(s, b).ok());
  auto ba = ReadFileBytes(a);
  auto bb = ReadFileBytes(b);
  ASSERT_TRUE(ba.ok() && bb.ok());
  EXPECT_EQ(*ba, *bb);
  s.seed = 100;
  ASSERT_TRUE(Synthesize(s, b).ok());
  EXPECT_NE(*ba, *ReadFileBytes(b));
  std::remove(a.c_str());
  std::remove(b.c_str());
}

// `rerace synth --fla V`: FLA's CachedAutotuner, named as the probe names it (its metadata in
// each tuner's first call-begin, rerace_probe.metadata); keys as the probe writes them. The
// scenarios without metadata write no detail (their traces keep their bytes).
TEST(Synth, FlaScenarioCarriesTheProbesMetadata) {
  const std::string path = ::testing::TempDir() + "/synth-fla.rrt";
  Scenario s;
  s.threads = 3;
  s.tuners = 2;
  s.fla_version = "0.6.0";
  s.tuner_class = kFlaTunerClass;
  ASSERT_TRUE(Synthesize(s, path).ok());
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::vector<std::string> details;
  for (const TunerEvent& e : t->tuner_events) {
    if (e.kind != TunerKind::kCallBegin) continue;
    EXPECT_EQ(t->strings[e.tuner_class], kFlaTunerClass);
    EXPECT_EQ(e.key, "(4096,)");
    if (!e.detail.empty()) details.push_back(e.detail);
  }
  ASSERT_EQ(details.size(), 2u);  // one per tuner, at its first call
  EXPECT_EQ(details[0],
            R"({"v":1,"kernel":{"module":"__main__","qualname":"l2norm_fwd_kernel"},"keys":["N"],)"
            R"("class":{"module":"fla.ops.utils.cache","qualname":"CachedAutotuner"},)"
            R"("triton":"3.6.0","fla":"0.6.0",)"
            R"("run":{"module":"fla.ops.utils.cache","qualname":"CachedAutotuner.run"},)"
            R"("autotuner_run":{"module":"triton.runtime.autotuner","qualname":"Autotuner.run"},)"
            R"("bench":{"module":"triton.runtime.autotuner","qualname":"Autotuner._bench"},)"
            R"("hooks":{"pre_hook":{"module":"fla.ops.utils.cache","qualname":)"
            R"("CachedAutotuner.__init__.<locals>._pre_hook","user_defined":false},)"
            R"("post_hook":{"module":"fla.ops.utils.cache","qualname":)"
            R"("CachedAutotuner.__init__.<locals>._post_hook","user_defined":false}}})");
  const std::vector<std::string> cmd = SynthCommand(s);
  EXPECT_EQ(cmd.back(), "--fla=0.6.0");

  // Another tuner class with --fla is refused; a key name that is not an argument too.
  s.tuner_class = "team.TeamAutotuner";
  EXPECT_FALSE(ValidateScenario(s).ok());
  s.tuner_class = kFlaTunerClass;
  s.key_names = {"M"};
  auto v = ValidateScenario(s);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("the key names 'M', which is not an argument"), std::string::npos)
      << v.error().message;

  Scenario plain;
  plain.threads = 2;
  ASSERT_TRUE(Synthesize(plain, path).ok());
  auto p = ReadTrace(path);
  ASSERT_TRUE(p.ok());
  for (const TunerEvent& e : p->tuner_events) EXPECT_TRUE(e.detail.empty()) << e.detail;
  std::remove(path.c_str());
}

// Each parameter within its range is not enough: their product is what is allocated. And a
// duration of 2^64-1 used to divide by zero (SIGFPE) in the synthetic durations.
TEST(Synth, RejectsScenariosThatAskForTooMuch) {
  struct Case {
    const char* name;
    void (*set)(Scenario&);
    const char* expected;
  } cases[] = {
      {"bench-ns 2^64-1", [](Scenario& s) { s.bench_ns = ~0ull; }, "durations must be at most"},
      {"kernel-ns 2^64-1", [](Scenario& s) { s.kernel_ns = ~0ull; }, "durations must be at most"},
      {"other launches 2^32-1", [](Scenario& s) { s.other_launches = ~0u; },
       "other launches must be at most 1000000"},
      {"4096 threads x 10000 calls",
       [](Scenario& s) {
         s.threads = 4096;
         s.calls_per_thread = 10000;
       },
       "events; at most 1000000"},
      {"1024 configs x 10000 repetitions",
       [](Scenario& s) {
         s.configs = 1024;
         s.repetitions = 10000;
       },
       "events; at most 1000000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario s;
    c.set(s);
    auto r = ValidateScenario(s);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().exit_code, 64);
    EXPECT_NE(r.error().message.find(c.expected), std::string::npos) << r.error().message;
  }
  Scenario longest;
  longest.bench_ns = longest.kernel_ns = kMaxSynthKernelNs;
  const std::string path = ::testing::TempDir() + "/longest.rrt";
  ASSERT_TRUE(Synthesize(longest, path).ok());
  auto t = ReadTrace(path);
  EXPECT_TRUE(t.ok()) << t.error().message;  // the reader's limits admit what synth may write
  std::remove(path.c_str());
}

TEST(Synth, RejectsAScenarioNamingAnUnknownArgument) {
  Scenario s;
  s.restore_value = {"z_ptr"};
  auto r = Synthesize(s, ::testing::TempDir() + "/never.rrt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, 64);
  EXPECT_NE(r.error().message.find("restore_value names 'z_ptr'"), std::string::npos);
}

}  // namespace
}  // namespace rerace::traces
