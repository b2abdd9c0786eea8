// Small traces, written by the trace writer, whose simulated step time is known exactly: the
// virtual GPU and CPU (replay/model/include/rerace/replay/model/virtual_gpu.h) as docs/MODEL.md describes them.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>
#include <unistd.h>

#include "rerace/replay/search/check.h"
#include "rerace/replay/model/cost.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/writer.h"

namespace rerace::replay {
namespace {

using traces::Event;
using traces::EventKind;
constexpr uint64_t kUs = 1000;
constexpr uint64_t kGpu = 1'000'000'000;

// The programs of the trace a test wrote at `path`, which is then removed.
Program ReadBack(const std::string& path) {
  auto t = traces::ReadTrace(path);
  std::remove(path.c_str());
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  if (!t.ok()) return {};
  auto p = BuildProgram(*t, path);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : Program{};
}

// Writes a trace with `body`, reads it back, builds the programs and runs the timed strategy
// (a trace without tuner calls needs --model: any model runs it).
Nanos StepTime(const char* tag, const std::function<void(traces::TraceWriter&)>& body) {
  const std::string path = ::testing::TempDir() + "/cost-" + tag + "-" + std::to_string(getpid()) + ".rrt";
  traces::Header h;
  h.recorder_version = "cost_test";
  h.host = "test";
  for (uint32_t d = 0; d < 4; ++d) h.gpus.push_back({d, "GPU", "GPU-" + std::to_string(d), 1u << 30});
  {
    auto w = traces::TraceWriter::Create(path, h);
    EXPECT_TRUE(w.ok());
    body(**w);
    EXPECT_TRUE((*w)->Finish({}).ok());
  }
  const Program p = ReadBack(path);
  ReplayOptions o;
  o.model = "triton";
  Replayer rep(p, o);
  sim::Timed timed(0);
  const ReplayResult r = rep.Run(timed);
  EXPECT_FALSE(r.failed());
  return r.makespan;
}

// A launch of `kernel` on (device, stream) at cpu_ns, run on the GPU over [start, end].
void Kernel(traces::TraceWriter& w, uint32_t thread, uint64_t cpu_ns, uint32_t device, uint64_t stream,
            uint64_t start, uint64_t end, uint32_t correlation) {
  const uint32_t s = w.Shape({.kernel = w.String("k"), .device = device, .stream = stream});
  w.AppendLaunch(thread, cpu_ns, s, correlation);
  // GPU times from a base: 0 means "no timing" in a trace.
  w.AppendActivity(thread, cpu_ns, correlation, kGpu + start, kGpu + end);
}

void Sync(traces::TraceWriter& w, uint32_t thread, uint64_t cpu_ns, uint32_t device) {
  Event e;
  e.kind = EventKind::kSync;
  e.thread = thread;
  e.cpu_ns = cpu_ns;
  e.sync = traces::SyncKind::kContext;
  e.device = device;
  w.Append(e);
}

void Lock(traces::TraceWriter& w, uint32_t thread, uint64_t cpu_ns, traces::LockKind k) {
  Event e;
  e.kind = EventKind::kLock;
  e.thread = thread;
  e.cpu_ns = cpu_ns;
  e.lock = k;
  e.handle = 7;
  e.text = w.String("the lock");
  w.Append(e);
}

// One thread: kernel A (100 us), 150 us of CPU, kernel B (250 us, queued after A), a
// synchronization: B starts at 150 us (its launch) and ends at 400 us.
TEST(Cost, SerialChainIsLaunchGapAndKernelTimes) {
  const Nanos step = StepTime("serial", [](traces::TraceWriter& w) {
    const uint32_t t = w.AddThread(1, "main");
    Kernel(w, t, 0, 0, 1, 0, 100 * kUs, 1);
    Kernel(w, t, 150 * kUs, 0, 1, 150 * kUs, 400 * kUs, 2);
    Sync(w, t, 150 * kUs, 0);
  });
  EXPECT_EQ(step, 400 * kUs);
}

// One thread, two streams whose kernels overlapped in the recording: X (200 us) on stream 1,
// 10 us of CPU, Y (200 us) on stream 2, 10 us of CPU, a synchronization: they run at once,
// 10 + 200 = 210 us (a device running one kernel at a time would take 400 us).
TEST(Cost, TwoStreamsOverlapAsRecorded) {
  const Nanos step = StepTime("streams", [](traces::TraceWriter& w) {
    const uint32_t t = w.AddThread(1, "main");
    Kernel(w, t, 0, 0, 1, 0, 200 * kUs, 1);
    Kernel(w, t, 10 * kUs, 0, 2, 10 * kUs, 210 * kUs, 2);
    Sync(w, t, 20 * kUs, 0);
  });
  EXPECT_EQ(step, 210 * kUs);
}

// The same two kernels recorded one after the other on two streams: the device runs one at a
// time, 400 us.
TEST(Cost, TwoStreamsThatDidNotOverlapShareTheDevice) {
  const Nanos step = StepTime("streams-serial", [](traces::TraceWriter& w) {
    const uint32_t t = w.AddThread(1, "main");
    Kernel(w, t, 0, 0, 1, 0, 200 * kUs, 1);
    Kernel(w, t, 10 * kUs, 0, 2, 200 * kUs, 400 * kUs, 2);
    Sync(w, t, 20 * kUs, 0);
  });
  EXPECT_EQ(step, 400 * kUs);
}

// Four threads, each on its own GPU (devices are independent): take a lock, run a 100 us
// kernel, wait for it, release. The lock serializes them: 4 x 100 = 400 us (without it, 100).
TEST(Cost, ALockSerializesFourThreads) {
  const Nanos step = StepTime("lock", [](traces::TraceWriter& w) {
    // The process's first thread starts the others: not part of the step.
    Sync(w, w.AddThread(1, "main"), 0, 0);
    uint64_t at = 0;
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t t = w.AddThread(10 + i, "worker-" + std::to_string(i));
      // Each thread starts at 0 (its first event); the recording's later events carry the
      // times they had, which a lock's wait does not charge.
      Lock(w, t, i == 0 ? 0 : at, traces::LockKind::kAcquire);
      Kernel(w, t, at, i, 1, at, at + 100 * kUs, 1 + i);
      Sync(w, t, at, i);
      Lock(w, t, at + 100 * kUs, traces::LockKind::kRelease);
      at += 100 * kUs;
    }
  });
  EXPECT_EQ(step, 400 * kUs);
}

// The probes mark a lock's acquire once it is held, so a thread's wait for the lock lies in the
// gap before its acquire mark: not CPU time. Three threads, one lock, each its own device. A
// holds it over [0, 100] us, then marks its next acquire at 300 (B held it over [100, 200], C
// over [200, 300]) and at 550 after a 50 us kernel released at 450 (nobody held it since):
// A's gaps before those acquires charge 0 and 100 us (200 and 100 before).
TEST(Cost, ALocksWaitBeforeItsAcquireMarkIsNotCpuTime) {
  const std::string path = ::testing::TempDir() + "/cost-lock-wait-" + std::to_string(getpid()) + ".rrt";
  traces::Header h;
  h.recorder_version = "cost_test";
  for (uint32_t d = 0; d < 3; ++d) h.gpus.push_back({d, "GPU", "GPU-" + std::to_string(d), 1u << 30});
  {
    auto w = traces::TraceWriter::Create(path, h);
    ASSERT_TRUE(w.ok());
    traces::TraceWriter& tw = **w;
    Sync(tw, tw.AddThread(1, "main"), 0, 0);  // the process's first thread: not part of the step
    const uint32_t a = tw.AddThread(10, "A"), b = tw.AddThread(11, "B"), c = tw.AddThread(12, "C");
    auto hold = [&](uint32_t t, uint32_t device, uint64_t from, uint64_t to, uint32_t correlation) {
      Lock(tw, t, from, traces::LockKind::kAcquire);
      Kernel(tw, t, from, device, 1, from, to, correlation);
      Sync(tw, t, from, device);
      Lock(tw, t, to, traces::LockKind::kRelease);
    };
    hold(a, 0, 0, 100 * kUs, 1);
    hold(b, 1, 100 * kUs, 200 * kUs, 2);
    hold(c, 2, 200 * kUs, 300 * kUs, 3);
    hold(a, 0, 300 * kUs, 450 * kUs, 4);
    hold(a, 0, 550 * kUs, 600 * kUs, 5);
    ASSERT_TRUE(tw.Finish({}).ok());
  }
  const Program p = ReadBack(path);
  ASSERT_EQ(p.threads.size(), 4u);
  std::vector<Nanos> before;  // A's acquires
  for (const Op& op : p.threads.at(1).ops)
    if (op.kind == Op::Kind::kLockAcquire) before.push_back(op.cpu_before_ns);
  EXPECT_EQ(before, (std::vector<Nanos>{0, 0, 100 * kUs}));
}

// A recording in which one worker threw in its first tuner call: a fix that lets it go on is
// priced with what the worker that completed did after the same call (the step assumed the
// same on every worker). Two workers, one tuner of one config (no benchmark); the one that
// completed then runs a 100 us kernel and waits for it. Both on one device: 2 x 100 = 200 us
// (100 us if the failed worker's work were left out). A failed worker whose call was of
// another kernel is not completed.
Program TwoWorkers(const std::string& failed_kernel) {
  Program p;
  p.source = "hand-made";
  for (const std::string& k : {std::string("k"), failed_kernel}) {
    TunerCall c;
    c.tuner = k == "k" ? 1 : 2;
    c.kernel = k;
    c.key = "1";
    c.configs = {"only"};
    c.bench_ns = {0};
    c.bench_reps = {0};
    p.calls.push_back(c);
  }
  for (uint32_t t = 0; t < 2; ++t) {
    ThreadProgram tp;
    tp.thread = t;
    tp.name = "worker-" + std::to_string(t);
    tp.worker = true;
    Op call;
    call.kind = Op::Kind::kTunerCall;
    call.call = t;
    tp.ops = {call};
    if (t == 0) {
      Op launch;
      launch.kind = Op::Kind::kLaunch;
      launch.stream = 1;
      launch.duration = 100 * kUs;
      Op sync;
      sync.kind = Op::Kind::kSync;
      sync.sync = traces::SyncKind::kStream;
      sync.stream = 1;
      tp.ops.push_back(launch);
      tp.ops.push_back(sync);
    } else {
      tp.failures.push_back({1, "KeyError", "'y_ptr'", "autotuner.py:74"});
    }
    p.threads.push_back(tp);
  }
  return p;
}

TEST(Cost, AFailedWorkerIsPricedWithTheRestOfAWorkerThatCompleted) {
  ReplayOptions o;
  o.launch_cpu_ns = 0;
  const Verdict same = CheckFix(TwoWorkers("k"), o, 1, 1);
  ASSERT_TRUE(same.cost.priced) << same.cost.failure;
  EXPECT_EQ(same.cost.completed_workers, 1u);
  EXPECT_EQ(same.cost.step_ns, 200 * kUs);
  EXPECT_EQ(same.cost.baseline.ns, 200 * kUs);  // the stock code, serially, on the same work
  EXPECT_NE(FormatCost(same.cost).find("1 workers that failed in the recording"), std::string::npos);
  const Verdict other = CheckFix(TwoWorkers("other"), o, 1, 1);
  ASSERT_TRUE(other.cost.priced) << other.cost.failure;
  EXPECT_EQ(other.cost.completed_workers, 0u);
  EXPECT_EQ(other.cost.step_ns, 100 * kUs);
}

// The native tuner's trials end each repetition with cudaDeviceSynchronize + cudaFree (a
// context synchronization in the recording): trials of one device do not overlap. Two workers
// tune the same key under per-thread-tuner (each its own tuner object, no lock: each benchmarks
// both configs), one repetition of 100 us
// of CPU and 100 us of GPU per config. Serialized: 2 x 2 x 200 = 800 us. Without the device
// synchronization each trial's CPU overlaps the other thread's GPU work: A's CPU [0, 100],
// B's [0, 100], A's GPU [100, 200], B's [200, 300], A's second CPU [200, 300], its GPU
// [300, 400], B's second CPU [300, 400], its GPU [400, 500]: 500 us.
struct Tunings {
  bool python = false;       // a Triton tuner: time-budgeted trials (else the native tuner's)
  bool device_sync = false;  // native: the trials synchronize the device
  size_t configs = 2;
  uint32_t contention_ppm = 0;
  Nanos cold_ns = 0;
};

Program TwoTunings(const Tunings& k) {
  Program p;
  p.source = "hand-made";
  TunerCall c;
  c.tuner = 1;
  c.tuner_class = k.python ? "triton.runtime.autotuner.Autotuner" : "rerace.kernels.Autotuner";
  c.kernel = "k";
  c.key = "1";
  for (size_t i = 0; i < k.configs; ++i) {
    c.configs.push_back(std::string(1, static_cast<char>('a' + i)));
    c.bench_ns.push_back(100 * kUs);
    c.bench_reps.push_back(1);
    // Python: 200 us of wall time alone, waiting for the device included; native: 100 + 100.
    c.trial_gpu_ns.push_back(k.python ? 0 : 100 * kUs);
    c.trial_cpu_ns.push_back(k.python ? 200 * kUs : 100 * kUs);
  }
  c.time_budgeted = k.python;
  c.trial_device_sync = k.device_sync;
  c.stream = 1;
  p.calls = {c, c};
  p.tuner_classes = {c.tuner_class};
  p.gil = k.python;
  p.trial_contention_ppm = k.contention_ppm;
  p.cold_ns = k.cold_ns;
  for (uint32_t t = 0; t < 2; ++t) {
    ThreadProgram tp;
    tp.thread = t;
    tp.name = "worker-" + std::to_string(t);
    tp.worker = true;
    Op call;
    call.kind = Op::Kind::kTunerCall;
    call.call = t;
    tp.ops = {call};
    p.threads.push_back(tp);
  }
  return p;
}

ReplayResult Timed(const Program& p, const std::string& fix) {
  ReplayOptions o;
  o.launch_cpu_ns = 0;
  o.fix = *ParseFix(fix);
  Replayer rep(p, o);
  return rep.RunTimed();
}

TEST(Cost, TrialsThatSynchronizeTheDeviceDoNotOverlap) {
  for (const bool sync : {true, false}) {
    const ReplayResult r = Timed(TwoTunings({.device_sync = sync}), "per-thread-tuner");
    ASSERT_FALSE(r.failed()) << sync;
    EXPECT_EQ(r.makespan, sync ? 800 * kUs : 500 * kUs) << sync;
  }
}

// Python trials that run for a time budget contend for the host (the GIL): with contention
// 0.5 (x 1.5 for two trials at once, 1 + 0.5 x log2 2), two workers each benchmarking two
// configs of 200 us under per-thread-tuner take 300 us a trial: 600 us, 100 us of contention
// per trial. Without contention: 400 us. Under lock-run (one tuner, shared) the second worker
// finds the key tuned: its trials never run at once with the first's: 400 us, no contention.
TEST(Cost, ConcurrentPythonTrialsContend) {
  const ReplayResult both = Timed(TwoTunings({.python = true, .contention_ppm = 500'000}), "per-thread-tuner");
  ASSERT_FALSE(both.failed());
  EXPECT_EQ(both.makespan, 600 * kUs);
  EXPECT_EQ(both.cost.trial_contention_ns, 4 * 100 * kUs);
  const ReplayResult alone = Timed(TwoTunings({.python = true}), "per-thread-tuner");
  EXPECT_EQ(alone.makespan, 400 * kUs);
  EXPECT_EQ(alone.cost.trial_contention_ns, 0u);
  const ReplayResult locked = Timed(TwoTunings({.python = true, .contention_ppm = 500'000}), "lock-run");
  ASSERT_FALSE(locked.failed());
  EXPECT_EQ(locked.makespan, 400 * kUs);
  EXPECT_EQ(locked.cost.trial_contention_ns, 0u);
}

// Trials that synchronize the device are serialized and contend too. Two workers, two configs
// each of 200 us alone, contention 0.5: each thread's trials run while the other's are asked
// for, so every trial takes 300 us, one at a time: 4 x 300 = 1200 us (800 without contention).
// The first run alone is lopsided: the thread the schedule runs first sees nobody in its first
// trial (A [0, 200], B asks at 0 and runs [200, 500], A asks at 200 and runs [500, 800], B asks
// at 500 and runs [800, 1100]): 1100 us; RunTimed's later runs count every thread's trials.
TEST(Cost, TrialsThatSynchronizeTheDeviceContendToo) {
  const Program p = TwoTunings({.device_sync = true, .contention_ppm = 500'000});
  const ReplayResult r = Timed(p, "per-thread-tuner");
  ASSERT_FALSE(r.failed());
  EXPECT_EQ(r.makespan, 1200 * kUs);
  EXPECT_EQ(r.cost.trial_contention_ns, 4 * 100 * kUs);
  ReplayOptions o;
  o.launch_cpu_ns = 0;
  o.fix = *ParseFix("per-thread-tuner");
  Replayer rep(p, o);
  sim::Timed once(0);
  EXPECT_EQ(rep.Run(once).makespan, 1100 * kUs);
  EXPECT_EQ(Timed(TwoTunings({.device_sync = true}), "per-thread-tuner").makespan, 800 * kUs);
}

// The process's cold start (Program::cold_ns, 50 us) is paid once, by the first trial: two
// workers, two configs of 200 us each. A: cold [0, 50], trials [50, 250] and [250, 450]; B asks
// at 0, waits for the cold start, then [50, 250] and [250, 450]: 450 us (400 without).
TEST(Cost, TheColdStartIsPaidOnce) {
  const ReplayResult r = Timed(TwoTunings({.python = true, .cold_ns = 50 * kUs}), "per-thread-tuner");
  ASSERT_FALSE(r.failed());
  EXPECT_EQ(r.makespan, 450 * kUs);
  EXPECT_EQ(r.cost.cold_ns, 50 * kUs);
  EXPECT_EQ(Timed(TwoTunings({.python = true}), "per-thread-tuner").makespan, 400 * kUs);
}

// A thread runs on until its next scheduling point, so the schedule can reach a launch of one
// thread after another thread's later one (in virtual time). Two threads on one stream, no
// scheduling points: A (start 0) computes 100 us, then launches a 10 us kernel and waits for
// it; B (start 50 us, so the timed schedule runs A first) launches a 10 us kernel at 50 us,
// waits for it, then computes 200 us. B's kernel runs at [50, 60] (it does not queue behind
// A's kernel, launched at 100 us): B ends at 260 us (320 if it waited for A's).
TEST(Cost, WorkLaunchedLaterInVirtualTimeIsNotWaitedFor) {
  Program p;
  p.source = "hand-made";
  auto launch = [](Nanos cpu_before) {
    Op o;
    o.kind = Op::Kind::kLaunch;
    o.stream = 1;
    o.duration = 10 * kUs;
    o.cpu_before_ns = cpu_before;
    return o;
  };
  auto sync = [](Nanos cpu_before) {
    Op o;
    o.kind = Op::Kind::kSync;
    o.sync = traces::SyncKind::kStream;
    o.stream = 1;
    o.cpu_before_ns = cpu_before;
    return o;
  };
  for (uint32_t t = 0; t < 2; ++t) {
    ThreadProgram tp;
    tp.thread = t;
    tp.name = t == 0 ? "A" : "B";
    tp.worker = true;
    tp.start_ns = t == 0 ? 0 : 50 * kUs;
    tp.ops = t == 0 ? std::vector<Op>{launch(100 * kUs), sync(0)}
                    : std::vector<Op>{launch(0), sync(0), sync(200 * kUs)};
    p.threads.push_back(tp);
  }
  ReplayOptions o;
  o.model = "triton";
  Replayer rep(p, o);
  const ReplayResult r = rep.RunTimed();
  ASSERT_FALSE(r.failed());
  EXPECT_EQ(r.makespan, 260 * kUs);
}

// Calibration (replay/model/include/rerace/replay/model/calibrate.h): three threads, each with its own tuner object of one
// kernel, key and config. Thread A benchmarks it alone for 100 us; B and C at once, 150 us each.
// The contention is fitted from the recording: (150 / 100 - 1) / log2(2) = 0.5; the trials
// alone take 150 / 1.5 = 100 us. Without A's trial there is nothing alone to fit against: the
// H200 figure (0.13), and B and C's trials alone 150 / 1.13 = 132.743 us.
Program Recorded(bool with_alone) {
  const std::string path = ::testing::TempDir() + "/cost-fit-" + std::to_string(with_alone) + "-" +
                           std::to_string(getpid()) + ".rrt";
  traces::Header h;
  h.recorder_version = "cost_test";
  {
    auto w = traces::TraceWriter::Create(path, h);
    EXPECT_TRUE(w.ok());
    traces::TraceWriter& tw = **w;
    traces::TunerEvent begin;
    begin.tuner_class = tw.String("triton.runtime.autotuner.Autotuner");
    begin.kernel = tw.String("k");
    begin.key = "1";
    begin.configs = {"c0"};
    auto tune = [&](uint32_t thread, uint64_t tuner, uint64_t from, uint64_t to) {
      traces::TunerEvent te = begin;
      te.tuner = tuner;
      for (auto [kind, at] : {std::pair{traces::TunerKind::kCallBegin, from},
                              std::pair{traces::TunerKind::kBenchBegin, from},
                              std::pair{traces::TunerKind::kBenchEnd, to},
                              std::pair{traces::TunerKind::kCallEnd, to}}) {
        te.kind = kind;
        te.config = kind == traces::TunerKind::kBenchBegin || kind == traces::TunerKind::kBenchEnd ? 0 : -1;
        te.timings_ms = kind == traces::TunerKind::kBenchEnd ? std::vector<double>{0.05} : std::vector<double>{};
        te.repetitions = kind == traces::TunerKind::kBenchEnd ? 1 : 0;
        tw.AppendTuner(thread, at, te);
      }
    };
    if (with_alone) tune(tw.AddThread(10, "A"), 0x51, 0, 100 * kUs);
    const uint32_t b = tw.AddThread(11, "B"), c = tw.AddThread(12, "C");
    tune(b, 0x52, 200 * kUs, 350 * kUs);
    tune(c, 0x53, 200 * kUs, 350 * kUs);
    EXPECT_TRUE(tw.Finish({}).ok());
  }
  return ReadBack(path);
}

TEST(Cost, ContentionIsFittedFromTrialsAloneAndAtOnce) {
  const Program fitted = Recorded(true);
  EXPECT_TRUE(fitted.gil);
  EXPECT_EQ(fitted.trial_contention_ppm, 500'000u);
  EXPECT_EQ(fitted.trial_contention_from, "recording");
  EXPECT_EQ(fitted.cold_ns, 0u);
  ASSERT_EQ(fitted.calls.size(), 3u);
  for (const TunerCall& c : fitted.calls) EXPECT_EQ(c.trial_cpu_ns.at(0) + c.trial_gpu_ns.at(0), 100 * kUs);
  const Program h200 = Recorded(false);
  EXPECT_EQ(h200.trial_contention_ppm, 130'000u);
  EXPECT_EQ(h200.trial_contention_from, "H200");
  ASSERT_EQ(h200.calls.size(), 2u);
  for (const TunerCall& c : h200.calls) EXPECT_EQ(c.trial_cpu_ns.at(0) + c.trial_gpu_ns.at(0), 132'743u);
}

// Calibration of trials that ran at once and synchronize the device (the native tuner's): two
// threads, each its own tuner object of one kernel, key and config, benchmark it at once, A over
// [0, 400] us and B over [0, 800] us, each with a 50 us kernel and a device synchronization.
// A ran with a mean of 2 such trials (itself included), B with 1.5; the H200's contention
// (0.13 per doubling): A's share 400 / (2 x 1.13) = 176.991 us, B's 800 / (1.5 x (1 + 0.13 x
// log2 1.5)) = 495.642 us; their kernels 50 / 2 = 25 us and 50 / 1.5 = 33.333 us. The config's
// time is the mean of the two, 336.316 us of which 29.166 us GPU (the least, 176.991, would
// price the pair at the cheaper's share). A third thread C that benchmarks it alone, later, for
// 300 us: the least of the samples alone, 300 us, 50 us GPU. The tuner's own timing (0.9 ms, in
// a recording of trials at once it holds the others' work) does not raise the trial's time.
Program AtOnce(bool with_alone) {
  const std::string path = ::testing::TempDir() + "/cost-at-once-" + std::to_string(with_alone) + "-" +
                           std::to_string(getpid()) + ".rrt";
  traces::Header h;
  h.recorder_version = "cost_test";
  h.gpus.push_back({0, "GPU", "GPU-0", 1u << 30});
  {
    auto w = traces::TraceWriter::Create(path, h);
    EXPECT_TRUE(w.ok());
    traces::TraceWriter& tw = **w;
    traces::TunerEvent begin;
    begin.tuner_class = tw.String("rerace.kernels.Autotuner");
    begin.kernel = tw.String("k");
    begin.key = "1";
    begin.configs = {"c0"};
    uint32_t correlation = 1;
    auto tune = [&](uint32_t thread, uint64_t tuner, uint64_t from, uint64_t to) {
      traces::TunerEvent te = begin;
      te.tuner = tuner;
      auto mark = [&](traces::TunerKind kind, uint64_t at) {
        te.kind = kind;
        te.config = kind == traces::TunerKind::kBenchBegin || kind == traces::TunerKind::kBenchEnd ? 0 : -1;
        te.timings_ms = kind == traces::TunerKind::kBenchEnd ? std::vector<double>{0.9} : std::vector<double>{};
        te.repetitions = kind == traces::TunerKind::kBenchEnd ? 1 : 0;
        tw.AppendTuner(thread, at, te);
      };
      mark(traces::TunerKind::kCallBegin, from);
      mark(traces::TunerKind::kBenchBegin, from);
      Kernel(tw, thread, from + kUs, 0, 1, from + kUs, from + 51 * kUs, correlation++);
      Sync(tw, thread, from + 2 * kUs, 0);
      mark(traces::TunerKind::kBenchEnd, to);
      mark(traces::TunerKind::kCallEnd, to);
    };
    const uint32_t a = tw.AddThread(10, "A"), b = tw.AddThread(11, "B");
    tune(a, 0x51, 0, 400 * kUs);
    tune(b, 0x52, 0, 800 * kUs);
    if (with_alone) tune(tw.AddThread(12, "C"), 0x53, 1000 * kUs, 1300 * kUs);
    EXPECT_TRUE(tw.Finish({}).ok());
  }
  return ReadBack(path);
}

TEST(Cost, TrialsAtOnceTakeTheMeanOfTheirShares) {
  const Program shared = AtOnce(false);
  ASSERT_EQ(shared.calls.size(), 2u);
  EXPECT_EQ(shared.trial_contention_ppm, 130'000u);
  for (const TunerCall& c : shared.calls) {
    EXPECT_TRUE(c.trial_device_sync);
    EXPECT_EQ(c.trial_gpu_ns.at(0), 29'166u);
    EXPECT_EQ(c.trial_cpu_ns.at(0) + c.trial_gpu_ns.at(0), 336'316u);
  }
  const Program alone = AtOnce(true);
  ASSERT_EQ(alone.calls.size(), 3u);
  for (const TunerCall& c : alone.calls) {
    EXPECT_EQ(c.trial_gpu_ns.at(0), 50 * kUs);
    EXPECT_EQ(c.trial_cpu_ns.at(0) + c.trial_gpu_ns.at(0), 300 * kUs);
  }
  // The step: two workers that benchmark two such configs each (TwoTunings, no contention; a
  // tuner of one config does not benchmark), the four trials one at a time: 4 x 336.316 us,
  // whatever the tuner's own timing said (a floor at it made it 4 x 900 us).
  for (const Nanos timing : {Nanos{900 * kUs}, Nanos{kUs}}) {
    Program p = TwoTunings({.device_sync = true});
    for (TunerCall& c : p.calls) {
      c.bench_ns.assign(2, timing);
      c.trial_cpu_ns.assign(2, shared.calls[0].trial_cpu_ns.at(0));
      c.trial_gpu_ns.assign(2, shared.calls[0].trial_gpu_ns.at(0));
    }
    const ReplayResult r = Timed(p, "per-thread-tuner");
    ASSERT_FALSE(r.failed());
    EXPECT_EQ(r.makespan, 4 * 336'316u) << timing;
  }
}

}  // namespace
}  // namespace rerace::replay
