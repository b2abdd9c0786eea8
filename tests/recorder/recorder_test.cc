#include "rerace/recorder/recorder.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <map>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include "rerace/recorder/grammar.h"
#include "rerace/traces/reader.h"

namespace rerace::recorder {
namespace {

using traces::EventKind;

std::string TempTrace(const char* tag) {
  return ::testing::TempDir() + "/recorder-" + tag + "-" + std::to_string(getpid()) + ".rrt";
}

TEST(Grammar, TunerMarksRoundTrip) {
  TunerMark m;
  m.tuner_class = "triton.runtime.autotuner.Autotuner";
  m.kernel = "l2norm_fwd_kernel";
  m.event.kind = traces::TunerKind::kCallBegin;
  m.event.tuner = 0x7f00abcd;
  m.event.key = "(4096, 'torch.float32')";
  m.event.configs = {"BLOCK_N: 64, num_warps: 4", "BLOCK_N: 128|odd=chars%"};
  m.event.arg_names = {"x", "y", "N"};
  m.event.restore_value = {1};
  m.event.reset_to_zero = {0, 2};
  const std::string text = EncodeTunerMark(m);
  EXPECT_TRUE(IsTunerMark(text));
  EXPECT_EQ(text.find('\n'), std::string::npos);
  auto back = ParseTunerMark(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->event, m.event);
  EXPECT_EQ(back->tuner_class, m.tuner_class);
  EXPECT_EQ(back->kernel, m.kernel);

  TunerMark b;
  b.kernel = "k";
  b.event.kind = traces::TunerKind::kBenchEnd;
  b.event.config = 3;
  b.event.timings_ms = {0.021, 0.02, 0.023};
  b.event.repetitions = 14;
  auto bb = ParseTunerMark(EncodeTunerMark(b));
  ASSERT_TRUE(bb.ok());
  EXPECT_EQ(bb->event.timings_ms, b.event.timings_ms);
  EXPECT_EQ(bb->event.config, 3);

  TunerMark err;
  err.event.kind = traces::TunerKind::kError;
  err.event.error_type = "KeyError";
  err.event.error_message = "'y_ptr'";
  err.event.error_where = "triton/runtime/autotuner.py:74 _post_hook";
  auto eb = ParseTunerMark(EncodeTunerMark(err));
  ASSERT_TRUE(eb.ok());
  EXPECT_EQ(eb->event.error_where, err.event.error_where);
}

// Marks exactly as the Python probe writes them (recorder/python/rerace_probe): the two
// encoders must agree.
TEST(Grammar, ParsesThePythonProbesMarks) {
  auto b = ParseTunerMark(
      "rerace:tuner kind=bench-end tuner=0x7f0012 class=triton.runtime.autotuner.Autotuner "
      "kernel=l2norm_fwd_kernel config=3 timings=0.02,0.019,0.021 reps=3");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->event.repetitions, 3u);
  EXPECT_EQ(b->event.timings_ms.size(), 3u);
  auto c = ParseTunerMark(
      "rerace:tuner kind=call-begin tuner=0xff class=c kernel=k "
      "key=(4096,%20'torch.float32',%20'torch.float32') configs=BLOCK_N:%2064|BLOCK_N:%20128 "
      "args=x_ptr|y_ptr|N restore=1");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->event.key, "(4096, 'torch.float32', 'torch.float32')");
  EXPECT_EQ(c->event.arg_names[c->event.restore_value[0]], "y_ptr");
  auto e = ParseTunerMark(
      "rerace:tuner kind=error tuner=0xff class=c kernel=k key=k etype=KeyError emsg='y_ptr' "
      "ewhere=triton/runtime/autotuner.py:74%20_post_hook");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->event.error_where, "triton/runtime/autotuner.py:74 _post_hook");
  auto t = ParseThreadMark("rerace:thread name=ThreadPoolExecutor-0_3");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "ThreadPoolExecutor-0_3");
  auto l = ParseLockMark("rerace:lock kind=release lock=0x7f3a12 name=autotune%20lock");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->kind, traces::LockKind::kRelease);
  EXPECT_EQ(l->lock, 0x7f3a12u);
  EXPECT_EQ(l->name, "autotune lock");
  EXPECT_FALSE(ParseLockMark("rerace:lock kind=maybe lock=0x1").ok());
}

TEST(Grammar, BadMarksAreErrorsNamingTheField) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"rerace:tuner tuner=1", "no kind="},
      {"rerace:tuner kind=explode", "unknown kind 'explode'"},
      {"rerace:tuner kind=read field=everything", "unknown field 'everything'"},
      {"rerace:tuner kind=read config=x", "config: expected an index"},
      {"rerace:tuner kind=call-begin args=a restore=4", "restore index 4 out of range"},
      {"rerace:tuner kind=read key=%Z1", "bad %-escape in key"},
      {"rerace:tuner kind=read junk", "field 'junk' has no '='"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto m = ParseTunerMark(c.text);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().message.find(c.expected), std::string::npos) << m.error().message;
  }
  EXPECT_TRUE(ParseTunerMark("rerace:tuner kind=read newer-key=1").ok());  // ignored
  EXPECT_FALSE(IsTunerMark("forward pass"));
}

TEST(ThreadBuffer, WrapsAroundAndKeepsOrder) {
  ThreadBuffer b(4096, 1);
  uint64_t next = 0, seen = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 7; ++i) {
      RawRecord r;
      r.kind = RawRecord::kNvtx;
      r.cpu_ns = next++;
      const std::string text(static_cast<size_t>(round % 5) * 30, 'x');
      ASSERT_TRUE(b.Push(r, text.data(), text.size()));
    }
    b.Drain([&](const RawRecord& r, std::string_view text) {
      EXPECT_EQ(r.cpu_ns, seen++);
      EXPECT_EQ(text.size(), static_cast<size_t>(round % 5) * 30);
    });
  }
  EXPECT_EQ(seen, next);
  EXPECT_EQ(b.dropped(), 0u);
}

TEST(ThreadBuffer, FullBufferDropsAndCounts) {
  ThreadBuffer b(4096, 1);
  RawRecord r;
  int pushed = 0;
  while (b.Push(r, nullptr, 0)) ++pushed;
  EXPECT_GT(pushed, 10);
  EXPECT_EQ(b.dropped(), 1u);
  EXPECT_FALSE(b.Push(r, nullptr, 0));
  EXPECT_EQ(b.dropped(), 2u);
}

// Recorded callback sequences from several threads: the trace holds exactly those launches,
// threads, names, kernel timings and tuner transitions.
TEST(Recorder, ThreadsLaunchesAndMarksArriveExactly) {
  const std::string path = TempTrace("exact");
  RecorderOptions o;
  o.path = path;
  o.header.host = "test";
  o.flush_period_ms = 5;
  auto rec = Recorder::Create(o);
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  Recorder& r = **rec;
  constexpr int kThreads = 4;
  constexpr int kLaunches = 2500;
  std::vector<std::thread> threads;
  std::atomic<uint32_t> corr{1};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      pthread_setname_np(pthread_self(), ("worker-" + std::to_string(t)).c_str());
      const uint32_t grid[3] = {128, 1, 1}, block[3] = {256, 1, 1};
      for (int i = 0; i < kLaunches; ++i) {
        const uint32_t c = corr.fetch_add(1);
        r.Launch(MonotonicNs(), c, 0x1000 + static_cast<uint64_t>(i % 3) * 16,
                 i % 3 == 0 ? "kernel_a" : i % 3 == 1 ? "kernel_b" : "kernel_c", 0,
                 static_cast<uint64_t>(t), grid, block, 0);
        r.AddActivity(c, 1000 + c, 2000 + c);
      }
      TunerMark m;
      m.kernel = "kernel_a";
      m.tuner_class = "triton.runtime.autotuner.Autotuner";
      m.event.kind = traces::TunerKind::kCallBegin;
      m.event.configs = {"a", "b"};
      r.Nvtx(MonotonicNs(), traces::NvtxKind::kMark, EncodeTunerMark(m).c_str(), 0);
      r.Nvtx(MonotonicNs(), traces::NvtxKind::kMark, "free mark", 0);
      r.Sync(MonotonicNs(), traces::SyncKind::kStream, 0, static_cast<uint64_t>(t), 0);
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(r.Stop({}).ok());
  auto tr = traces::ReadTrace(path);
  ASSERT_TRUE(tr.ok()) << tr.error().message;
  EXPECT_FALSE(tr->truncated) << tr->truncation;
  EXPECT_EQ(tr->footer.problems, 0u);
  ASSERT_EQ(tr->threads.size(), static_cast<size_t>(kThreads));
  std::map<uint32_t, int> launches, activities, marks, tuner, syncs;
  std::map<std::string, int> kernels;
  for (const auto& e : tr->events) {
    if (e.kind == EventKind::kLaunch) {
      ++launches[e.thread];
      ++kernels[tr->Str(tr->shapes[e.shape].kernel)];
      EXPECT_EQ(tr->shapes[e.shape].stream, static_cast<uint64_t>(tr->threads[e.thread].name.back() - '0'));
    }
    if (e.kind == EventKind::kActivity) ++activities[e.thread];
    if (e.kind == EventKind::kNvtx) ++marks[e.thread];
    if (e.kind == EventKind::kTuner) ++tuner[e.thread];
    if (e.kind == EventKind::kSync) ++syncs[e.thread];
  }
  for (uint32_t t = 0; t < kThreads; ++t) {
    EXPECT_EQ(launches[t], kLaunches);
    EXPECT_EQ(activities[t], kLaunches);  // every activity matched to its launching thread
    EXPECT_EQ(marks[t], 1);
    EXPECT_EQ(tuner[t], 1);
    EXPECT_EQ(syncs[t], 1);
    EXPECT_EQ(tr->threads[t].name.rfind("worker-", 0), 0u);
  }
  EXPECT_EQ(kernels["kernel_a"], kThreads * 834);
  EXPECT_EQ(tr->tuner_events.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(tr->Str(tr->tuner_events[0].kernel), "kernel_a");
  std::remove(path.c_str());
}

// A Python thread's OS name is the process's ("python3"); the probe names it with a
// `rerace:thread` mark. When that mark is the thread's first record it was timed before the
// thread's buffer (and its OS-name record) existed: the mark's name must still win.
TEST(Recorder, AProbeNameMarkedFirstWinsOverTheOsName) {
  const std::string path = TempTrace("names");
  RecorderOptions o;
  o.path = path;
  o.flush_period_ms = 5;
  auto rec = Recorder::Create(o);
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  Recorder& r = **rec;
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "python3");
    const uint64_t before = MonotonicNs();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the buffer comes later
    r.Nvtx(before, traces::NvtxKind::kMark, "rerace:thread name=ThreadPoolExecutor-0_3", 0);
    const uint32_t grid[3] = {1, 1, 1};
    r.Launch(MonotonicNs(), 1, 0x10, "k", 0, 0, grid, grid, 0);
  });
  worker.join();
  ASSERT_TRUE(r.Stop({}).ok());
  auto tr = traces::ReadTrace(path);
  ASSERT_TRUE(tr.ok()) << tr.error().message;
  ASSERT_EQ(tr->threads.size(), 1u);
  EXPECT_EQ(tr->threads[0].name, "ThreadPoolExecutor-0_3");
  EXPECT_EQ(tr->footer.problems, 0u);
  std::remove(path.c_str());
}

TEST(Recorder, FlushedChunksSurviveWithoutStop) {
  const std::string path = TempTrace("crash");
  RecorderOptions o;
  o.path = path;
  o.flush_period_ms = 100;
  auto rec = Recorder::Create(o);
  ASSERT_TRUE(rec.ok());
  const uint32_t grid[3] = {1, 1, 1};
  for (uint32_t i = 1; i <= 10; ++i) (*rec)->Launch(MonotonicNs(), i, 0x10, "k", 0, 0, grid, grid, 0);
  ASSERT_TRUE((*rec)->FlushNow().ok());
  (*rec)->Launch(MonotonicNs(), 11, 0x10, "k", 0, 0, grid, grid, 0);  // never flushed
  // A crash: the file as it is now, before any footer.
  auto tr = traces::ReadTrace(path);
  ASSERT_TRUE(tr.ok()) << tr.error().message;
  EXPECT_TRUE(tr->truncated);
  EXPECT_EQ(tr->events.size(), 10u);
  ASSERT_TRUE((*rec)->Stop({}).ok());
  std::remove(path.c_str());
}

TEST(Recorder, OverflowIsCountedAndTheTraceSaysIncomplete) {
  const std::string path = TempTrace("overflow");
  RecorderOptions o;
  o.path = path;
  o.buffer_bytes = 4096;
  o.flush_period_ms = 100;
  auto rec = Recorder::Create(o);
  ASSERT_TRUE(rec.ok());
  const uint32_t grid[3] = {1, 1, 1};
  for (uint32_t i = 1; i <= 500; ++i) (*rec)->Launch(MonotonicNs(), i, 0x10, "k", 0, 0, grid, grid, 0);
  ASSERT_TRUE((*rec)->Stop({}).ok());
  auto tr = traces::ReadTrace(path);
  ASSERT_TRUE(tr.ok()) << tr.error().message;
  EXPECT_GT(tr->footer.problems, 0u);
  EXPECT_FALSE(tr->footer.complete);
  EXPECT_TRUE(tr->truncated);
  EXPECT_LT(tr->events.size(), 500u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rerace::recorder
