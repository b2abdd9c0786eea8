#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "rerace/replay/search/check.h"
#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/sim/strategy.h"
#include "rerace/testing/programs.h"
#include "rerace/traces/synth.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

using rerace::testing::SynthesizedProgram;
using rerace::testing::WithFix;

const Program& Default() {
  static const Program p = SynthesizedProgram(traces::Scenario{}, "default");
  return p;
}

bool Has(const ReplayResult& r, const std::string& code) {
  for (const Finding& f : r.findings)
    if (f.code == code) return true;
  return false;
}

TEST(Program, DefaultSynthHasEightThreadsOneCallEach) {
  const Program& p = Default();
  ASSERT_EQ(p.threads.size(), 8u);
  ASSERT_EQ(p.calls.size(), 8u);
  for (const TunerCall& c : p.calls) {
    EXPECT_EQ(c.configs.size(), 12u);
    EXPECT_EQ(c.arg_names[c.restore_value.at(0)], "y_ptr");
    for (Nanos n : c.bench_ns) EXPECT_GT(n, 0u);
    EXPECT_GT(c.launch_ns, 0u);
  }
  // Each thread: two untuned launches, then its tuner call.
  EXPECT_EQ(p.threads[0].ops.size(), 3u);
  EXPECT_EQ(p.threads[0].ops[2].kind, Op::Kind::kTunerCall);
}

TEST(Replay, SeedsReproduceTheKeyErrorByteForByte) {
  Replayer rep(Default(), WithFix("none"));
  int keyerrors = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    sim::RandomWalk a(seed), b(seed);
    const ReplayResult ra = rep.Run(a);
    const ReplayResult rb = rep.Run(b);
    ASSERT_EQ(FormatReport(ra, Default(), ""), FormatReport(rb, Default(), "")) << seed;
    ASSERT_EQ(FormatJson(ra, Default()), FormatJson(rb, Default())) << seed;
    for (const Finding& f : ra.findings) {
      if (f.code != "in-param-not-in-cache") continue;
      ++keyerrors;
      EXPECT_EQ(f.type, "KeyError");
      EXPECT_EQ(f.message, "'y_ptr'");
      EXPECT_EQ(f.where, "triton/runtime/autotuner.py:74 in _post_hook");
      EXPECT_NE(f.words.find("In-parameter y_ptr is not in the cache"), std::string::npos);
      break;
    }
  }
  EXPECT_GT(keyerrors, 30);
}

TEST(Replay, SavedScheduleReplaysTheFailureWithoutItsSeed) {
  Replayer rep(Default(), WithFix("none"));
  ReplayResult first;
  for (uint64_t seed = 1; seed < 100 && !first.failed(); ++seed) {
    sim::Pct pct(seed, 2, 150);
    first = rep.Run(pct);
  }
  ASSERT_TRUE(first.failed());
  auto parsed = sim::Schedule::Parse(first.run.schedule.Encode());
  ASSERT_TRUE(parsed.ok());
  sim::ScheduleReplay again(*parsed);
  const ReplayResult second = rep.Run(again);
  EXPECT_EQ(second.Signature(), first.Signature());
  ASSERT_EQ(second.findings.size(), first.findings.size());
  for (size_t i = 0; i < first.findings.size(); ++i) {
    EXPECT_EQ(second.findings[i].step, first.findings[i].step);
    EXPECT_EQ(second.findings[i].thread, first.findings[i].thread);
    EXPECT_EQ(second.findings[i].words, first.findings[i].words);
  }
  EXPECT_EQ(second.makespan, first.makespan);
}

TEST(Replay, ScheduleOfAnotherFixIsADivergence) {
  Replayer none(Default(), WithFix("none"));
  sim::RandomWalk rw(3);
  const ReplayResult r = none.Run(rw);
  Replayer locked(Default(), WithFix("lock-run"));
  sim::ScheduleReplay replay(r.run.schedule);
  const ReplayResult d = locked.Run(replay);
  ASSERT_TRUE(Has(d, "divergence")) << FormatReport(d, Default(), "");
}

// The verdicts the H200 measured (unpatched fails, tls-nargs fails, lock-run holds), and what
// the model says of the other fixes.
TEST(Check, VerdictsOfEveryFix) {
  struct Case {
    const char* fix;
    bool holds;
    const char* failure;  // a code the counterexample must contain
  };
  const Case cases[] = {
      {"none", false, "in-param-not-in-cache"},
      {"tls-nargs", false, "wrong-restore"},
      {"lock-run", true, ""},
      {"call-local", true, ""},
      {"lock-key-future", false, "nargs-none"},
      {"per-thread-tuner", true, ""},
      {"prewarm", false, "nargs-none"},
      {"owner-thread", true, ""},
      {"tls-nargs+lock-run", true, ""},
      {"local=nargs,restore_copies", true, ""},
      {"lock=hooks", false, "nargs-none"},
      {"lock=run:A,bench:A", false, "deadlock"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fix);
    const Verdict v = CheckFix(Default(), WithFix(c.fix), 600, 1);
    EXPECT_EQ(v.holds, c.holds);
    if (c.holds) {
      EXPECT_EQ(v.explored, 600u);
      continue;
    }
    ASSERT_TRUE(v.counterexample.has_value());
    std::set<std::string> codes;
    for (const Finding& f : v.counterexample->findings) codes.insert(f.code);
    if (!codes.count(c.failure)) {
      // The first counterexample may show another failure; the code must appear within a few
      // more schedules of the same fix.
      bool seen = false;
      Replayer rep(Default(), WithFix(c.fix));
      for (uint64_t s = 1; s <= 300 && !seen; ++s) {
        sim::RandomWalk rw(s);
        sim::Pos pos(s);
        seen = Has(rep.Run(rw), c.failure) || Has(rep.Run(pos), c.failure);
      }
      EXPECT_TRUE(seen) << "never saw " << c.failure;
    }
  }
}

TEST(Check, LockRunCostsAndRemovesDuplicateTuning) {
  const Verdict lock = CheckFix(Default(), WithFix("lock-run"), 30, 1);
  const Verdict local = CheckFix(Default(), WithFix("call-local"), 30, 1);
  EXPECT_TRUE(lock.duplicates_fix.empty());
  ASSERT_EQ(local.duplicates_fix.size(), 1u);
  // Every thread misses the key at once; how many benchmark it before one has cached it depends
  // on the timed schedule's times (trials slowed by contention, waits for the GIL).
  EXPECT_GE(local.duplicates_fix[0].threads, 7u);
  EXPECT_LE(local.duplicates_fix[0].threads, 8u);
  EXPECT_GT(local.duplicates_fix[0].wasted_gpu_ns, 0u);
  EXPECT_GT(lock.makespan_fix, 0u);
  EXPECT_GT(local.makespan_fix, 0u);
  // Which of the two is cheaper is asserted on the H200's recordings, where it was measured
  // (NativeTraces.LockRunCostsLessThanCallLocalAsOnTheH200): this synthetic trace's trials
  // (3 x 20 us) are no Triton do_bench trial (a time budget of 125 ms), so nothing real says
  // what eight of them at once cost.
}

TEST(Replay, ConfigMismatchWhenThreadsHaveDifferentKeys) {
  traces::Scenario s;
  s.keys = {"1024", "4096"};
  const Program p = SynthesizedProgram(s, "twokeys");
  Replayer rep(p, WithFix("none"));
  bool seen = false;
  for (uint64_t seed = 1; seed <= 200 && !seen; ++seed) {
    sim::RandomWalk rw(seed);
    const ReplayResult r = rep.Run(rw);
    for (const Finding& f : r.findings)
      if (f.code == "config-mismatch") {
        seen = true;
        EXPECT_TRUE(f.silent);
        EXPECT_NE(f.words.find("with the config tuned for key"), std::string::npos);
      }
  }
  EXPECT_TRUE(seen);
}

// FLA's CachedAutotuner (fla-core 0.5.2 / 0.6.0) replaces Triton's post-hook with a None-safe
// one that iterates self.restore_copies.items(): where Triton 3.6 raises KeyError, FLA skips
// the missing copy (a silent missed restore at cache.py:362).
TEST(Replay, FlaModelIsChosenFromTheTunerClassAndSkipsAMissingCopy) {
  traces::Scenario s;
  s.keys = {"1024", "4096"};
  s.tuner_class = "fla.ops.utils.CachedAutotuner";
  const Program p = SynthesizedProgram(s, "fla");
  Replayer rep(p, WithFix("none"));
  EXPECT_EQ(rep.ModelName(), "fla");
  ReplayOptions triton = WithFix("none");
  triton.model = "triton";
  Replayer forced(p, triton);
  EXPECT_EQ(forced.ModelName(), "triton");
  std::set<std::string> fla, tri;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    sim::RandomWalk a(seed), b(seed);
    for (const Finding& f : rep.Run(a).findings) fla.insert(f.code + " " + f.where);
    for (const Finding& f : forced.Run(b).findings) tri.insert(f.type + " " + f.code);
  }
  EXPECT_TRUE(tri.count("KeyError in-param-not-in-cache"));
  for (const std::string& f : fla) EXPECT_EQ(f.find("in-param-not-in-cache"), std::string::npos) << f;
  EXPECT_TRUE(fla.count("missed-restore fla/ops/utils/cache.py:362 in _post_hook"));
}

TEST(Replay, RecordedOrderOfTheSynthTraceRaisesInSevenOfEightThreads) {
  Replayer rep(Default(), WithFix("none"));
  const ReplayResult a = rep.RunRecorded();
  const ReplayResult b = rep.RunRecorded();
  EXPECT_EQ(FormatReport(a, Default(), ""), FormatReport(b, Default(), ""));
  std::set<uint32_t> raised;
  for (const Finding& f : a.findings)
    if (f.code == "in-param-not-in-cache") raised.insert(f.thread);
  // Lockstep order: thread 0's post-hook resets the dict first; the seven others then miss it.
  EXPECT_EQ(raised, (std::set<uint32_t>{1, 2, 3, 4, 5, 6, 7}));
  // The synthetic recording records no failure; the threads that raise leave it early.
  EXPECT_GT(a.left_recording, 0u);
}

// Issue 49, item 7: a silent failure's thread goes on, but the report's last steps of the
// threads involved are theirs up to the failure, the thread whose write led to it included.
TEST(Replay, ASilentFailuresLastStepsEndAtItAndShowTheWriter) {
  Replayer rep(Default(), WithFix("none"));
  for (uint64_t s = 1; s <= 200; ++s) {
    sim::RandomWalk w(s);
    const ReplayResult r = rep.Run(w);
    if (r.findings.empty() || !r.findings.front().silent) continue;
    const Finding& f = r.findings.front();
    ASSERT_NE(f.other, UINT32_MAX);
    for (uint32_t t : {f.thread, f.other}) {
      ASSERT_LT(t, r.run.threads.size());
      ASSERT_FALSE(r.run.threads[t].last_steps.empty());
      EXPECT_LE(r.run.threads[t].last_steps.back().step, f.step) << "thread " << t;
    }
    const std::string report = FormatReport(r, Default(), "");
    EXPECT_NE(report.find("  thread " + std::to_string(f.other) + " ("), std::string::npos)
        << report;
    return;
  }
  FAIL() << "no seed of 200 failed silently first";
}

TEST(Replay, RepetitionsFoldWithoutLosingTheFailure) {
  ReplayOptions folded = WithFix("none");
  ReplayOptions full = WithFix("none");
  full.reps = 0;
  Replayer a(Default(), folded), b(Default(), full);
  int fa = 0, fb = 0;
  uint64_t steps_a = 0, steps_b = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    sim::RandomWalk ra(seed), rb(seed);
    const ReplayResult x = a.Run(ra), y = b.Run(rb);
    fa += Has(x, "in-param-not-in-cache");
    fb += Has(y, "in-param-not-in-cache");
    steps_a += x.run.steps;
    steps_b += y.run.steps;
  }
  EXPECT_GT(fa, 20);
  EXPECT_GT(fb, 20);
  EXPECT_LT(steps_a, steps_b);
}

TEST(Fix, UnknownNamesAreUsageErrors) {
  auto f = ParseFix("lock-everything");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().exit_code, 64);
  EXPECT_NE(f.error().message.find("unknown fix 'lock-everything'"), std::string::npos);
  EXPECT_NE(f.error().message.find("tls-nargs"), std::string::npos);
  auto g = ParseFix("local=nargz");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("unknown field 'nargz'"), std::string::npos);
  auto h = ParseFix("lock=everywhere");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("unknown region 'everywhere'"), std::string::npos);
}

// Descriptions that used to mean "none" (or something else) without a word: each is exit 64
// with what was expected.
TEST(Fix, DescriptionsThatSayNothingAreUsageErrors) {
  const struct {
    const char* text;
    const char* expected;
  } cases[] = {
      {"", "empty fix: expected one of none, lock-run"},
      {"lock=run:", "lock=run: names no lock after ':'; expected run:NAME or run"},
      {"lock=hooks:,run", "lock=hooks: names no lock"},
      {"local=", "local= names an empty field"},
      {"local=nargs,", "local= names an empty field"},
      {"lock=", "lock= names an empty region"},
      {";", "an empty part"},
      {"local=nargs;", "an empty part"},
      {"+", "an empty name"},
      {"tls-nargs+", "an empty name"},
      {"none+none", "'none' joined with other fixes"},
      {"none+lock-run", "'none' joined with other fixes"},
      {"tls-nargs+tls-nargs", "'tls-nargs' appears twice"},
      {"future=1", "'future' takes no value, found 'future=1'"},
      {"per-thread=yes", "'per-thread' takes no value"},
      {"local", "unknown fix 'local'"},
      {"prewarm;local", "'local' needs a list"},
      {"local=nargs;local=cache", "'local' appears twice"},
      {"local=nargs,nargs", "field 'nargs' appears twice"},
      {"lock=run,run:G", "region 'run' is locked twice"},
      {"call-lo\ncal", "fix 'call-lo\\x0acal': control character \\x0a at byte 7"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto f = ParseFix(c.text);
    ASSERT_FALSE(f.ok()) << "accepted";
    EXPECT_EQ(f.error().exit_code, 64);
    EXPECT_NE(f.error().message.find(c.expected), std::string::npos) << f.error().message;
  }
  for (const char* good : {"none", "lock-run", "future", "per-thread", "owner", "prewarm",
                           "lock=run", "lock=run:G,hooks:H", "local=nargs;future;prewarm"}) {
    SCOPED_TRACE(good);
    EXPECT_TRUE(ParseFix(good).ok());
  }
}

// Every named fix but "none" changes the tuner: a name that parsed to nothing would certify the
// stock code under a fix's name (the fix fuzzer holds parsed descriptions to the same).
TEST(Fix, EveryNamedFixChangesTheModel) {
  for (const std::string& name : FixNames()) {
    SCOPED_TRACE(name);
    auto f = ParseFix(name);
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(f->ChangesModel(), name != "none");
  }
}

TEST(Fix, NamesComposeAndDescriptionsParse) {
  auto f = ParseFix("tls-nargs+lock-run");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->IsLocal(Field::kNargs));
  EXPECT_EQ(f->LockFor(Region::kRun), "global autotune lock");
  auto d = ParseFix("local=nargs,restore_copies;lock=hooks:H,cache:C;future");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->IsLocal(Field::kRestoreCopies));
  EXPECT_EQ(d->LockFor(Region::kHooks), "H");
  EXPECT_EQ(d->LockFor(Region::kCache), "C");
  EXPECT_TRUE(d->per_key_future);
}

// The virtual GPU: a stream runs in order, a device one kernel at a time, syncs wait.
TEST(VirtualGpu, LaunchesQueueAndSyncsWait) {
  Program p;
  p.source = "hand-made";
  TunerCall c;
  c.tuner = 1;
  c.kernel = "k";
  c.key = "1";
  c.configs = {"only"};
  c.bench_ns = {1000};
  c.bench_reps = {1};
  c.launch_ns = 0;
  p.calls.push_back(c);
  for (uint32_t t = 0; t < 2; ++t) {
    ThreadProgram tp;
    tp.thread = t;
    tp.name = "t" + std::to_string(t);
    Op launch;
    launch.kind = Op::Kind::kLaunch;
    launch.stream = t;  // different streams, same device
    launch.duration = 100'000;
    tp.ops = {launch, launch};
    Op sync;
    sync.kind = Op::Kind::kSync;
    sync.sync = traces::SyncKind::kStream;
    sync.stream = t;
    tp.ops.push_back(sync);
    p.threads.push_back(tp);
  }
  ReplayOptions o;
  o.launch_cpu_ns = 0;
  Replayer rep(p, o);
  sim::RoundRobin rr;
  const ReplayResult r = rep.Run(rr);
  EXPECT_FALSE(r.failed());
  // Four 100 us kernels on one device: 400 us, whatever the streams.
  EXPECT_EQ(r.makespan, 400'000u);
}

}  // namespace
}  // namespace rerace::replay

namespace rerace::replay {
namespace {

// One cost for both engines: a fix the real-code engine checks is priced by the model of the
// same fix (its own virtual GPU ran the recorded kernels only: 1.1 ms against the recording's
// 2,101.8 ms, issue 28), so the engine's cost line is the model's, on every sample and named
// fix; and a lock around run is within the model's own tolerance of the recorded step (15 %,
// cost_fidelity_test). Code the model cannot price has no cost line, and says why.
TEST(Check, TheRealCodeEnginesCostIsTheModels) {
  for (const char* sample : {"triton-none-h200.rrt", "synth-h200-shape.rrt"}) {
    const Program p = testing::LoadSample(sample);
    for (const char* fix : {"none", "lock-run", "tls-nargs", "tls-state", "lock-key-event", "prewarm"}) {
      SCOPED_TRACE(std::string(sample) + " --fix " + fix);
      ReplayOptions mo;
      auto f = ParseFix(fix);
      ASSERT_TRUE(f.ok());
      mo.fix = *f;
      ReplayOptions eo;
      eo.engine = "python";
      ASSERT_TRUE(UsePythonFix(fix, eo).ok());
      const Verdict m = PriceFix(p, mo);
      const Verdict e = PriceFix(p, eo);
      EXPECT_EQ(e.cost.priced_by, "model");
      EXPECT_EQ(m.cost.priced_by, "");
      EXPECT_EQ(e.cost.unpriced, "");
      EXPECT_EQ(e.cost.priced, m.cost.priced);
      EXPECT_EQ(e.cost.step_ns, m.cost.step_ns);
      EXPECT_EQ(e.cost.baseline.ns, m.cost.baseline.ns);
      EXPECT_EQ(e.makespan_fix, m.makespan_fix);
      EXPECT_EQ(e.makespan_recorded, m.makespan_recorded);
      EXPECT_NE(FormatCost(e.cost).find("priced by the C++ model of the same fix"),
                std::string::npos)
          << FormatCost(e.cost);
      if (std::string(fix) == "lock-run" && std::string(sample) == "triton-none-h200.rrt") {
        ASSERT_TRUE(e.cost.priced);
        const double ratio = static_cast<double>(e.cost.step_ns) /
                             static_cast<double>(e.makespan_recorded);
        EXPECT_NEAR(ratio, 1.0, 0.15) << e.cost.step_ns << " ns against " << e.makespan_recorded;
      }
    }
  }
  // A patch file of the user's: real code the model cannot price.
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  ReplayOptions user;
  user.engine = "python";
  user.patches = {"/tmp/my_lock.py"};
  ASSERT_TRUE(UsePythonFix("lock-run", user).ok());
  const Verdict u = PriceFix(p, user);
  EXPECT_FALSE(u.cost.priced);
  EXPECT_EQ(u.makespan_fix, 0);
  EXPECT_EQ(FormatCost(u.cost).rfind("cost: not priced: a patch file (--patch)", 0), 0u)
      << FormatCost(u.cost);
  EXPECT_NE(CostJson(u.cost).find("\"unpriced\":\"a patch file"), std::string::npos)
      << CostJson(u.cost);
}

}  // namespace
}  // namespace rerace::replay
