// Certificates over sub-programs (search/certificate.h): sub-program extraction, symmetry
// classes, the reduced search against the unreduced one, and --jobs determinism.
#include "rerace/replay/search/certificate.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "rerace/replay/model/program.h"
#include "rerace/sim/explore.h"
#include "rerace/testing/programs.h"
#include "rerace/traces/synth.h"

namespace rerace::replay {
namespace {

using rerace::testing::SynthesizedProgram;
using rerace::testing::WithFix;

// Every failure signature (codes and where, no thread ids) an unbounded DPOR search of `p`
// reaches, and its run count.
struct Outcomes {
  std::set<std::string> signatures;
  uint64_t runs = 0;
  bool exhausted = false;
};
Outcomes Search(const Program& p, const ReplayOptions& o) {
  Outcomes out;
  Replayer rep(p, o);
  sim::Explorer e(sim::Explorer::Mode::kDpor, 1'000'000, 200'000);
  const sim::ExploreResult x = e.Explore([&](sim::Strategy& s) {
    const ReplayResult r = rep.Run(s);
    out.signatures.insert(r.Signature());
    return false;  // every outcome, not the first failure
  });
  out.runs = x.runs;
  out.exhausted = x.exhausted;
  return out;
}

// The fix under the GIL's steps (CPython 3.12): far fewer interleavings than every access a
// step, so that the exhaustive searches here stay small; what they show holds in either mode.
ReplayOptions Gil(const std::string& fix) {
  ReplayOptions o = WithFix(fix);
  o.python_mode = "gil";
  o.python_version = "3.12";
  return o;
}

traces::Scenario Small(uint32_t threads) {
  traces::Scenario s;
  s.threads = threads;
  s.configs = 2;
  s.repetitions = 1;
  s.other_launches = 0;
  return s;
}

TEST(SubProgram, KeepsTheNamedWorkersAndTheirCallsOnly) {
  traces::Scenario s = Small(4);
  s.tuners = 2;
  const Program p = SynthesizedProgram(s, "sub-keep");
  auto sub = SubProgram(p, {3, 1});
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  ASSERT_EQ(sub->threads.size(), 2u);
  EXPECT_EQ(sub->threads[0].name, p.threads[1].name);  // ascending indices
  EXPECT_EQ(sub->threads[1].name, p.threads[3].name);
  ASSERT_EQ(sub->calls.size(), 2u);
  for (const ThreadProgram& tp : sub->threads)
    for (const Op& op : tp.ops)
      if (op.kind == Op::Kind::kTunerCall) {
        EXPECT_LT(op.call, sub->calls.size());
      }
  // Each kept call is the same call as in the whole program.
  EXPECT_EQ(sub->calls[0].kernel, p.calls[p.threads[1].ops[0].call].kernel);
}

TEST(SubProgram, RefusesBadThreadLists) {
  const Program p = SynthesizedProgram(Small(3), "sub-bad");
  struct Case {
    std::vector<uint32_t> threads;
    const char* says;
  };
  for (const Case& c : {Case{{}, "at least one"}, Case{{1, 1}, "twice"}, Case{{0, 7}, "no thread 7"}}) {
    SCOPED_TRACE(c.says);
    auto sub = SubProgram(p, c.threads);
    ASSERT_FALSE(sub.ok());
    EXPECT_EQ(sub.error().exit_code, kExitUsage);
    EXPECT_NE(sub.error().message.find(c.says), std::string::npos) << sub.error().message;
  }
}

// A K-thread sub-program of a recording replays like a K-thread recording of the same program:
// the same outcomes and the same number of DPOR runs (every outcome where the fix leaves few
// interleavings; the first failure, at the same run and schedule, where it leaves many).
TEST(SubProgram, OfThreeThreadsReplaysLikeATwoThreadRecording) {
  const Program three = SynthesizedProgram(Small(3), "sub-three");
  const Program two = SynthesizedProgram(Small(2), "sub-two");
  auto sub = SubProgram(three, {0, 1});
  ASSERT_TRUE(sub.ok());
  for (const char* fix : {"tls-nargs", "lock-run"}) {
    SCOPED_TRACE(fix);
    const Outcomes a = Search(*sub, Gil(fix));
    const Outcomes b = Search(two, Gil(fix));
    EXPECT_TRUE(a.exhausted);
    EXPECT_EQ(a.signatures, b.signatures);
    EXPECT_EQ(a.runs, b.runs);
  }
  auto first_failure = [](const Program& p) {
    Replayer rep(p, Gil("none"));
    sim::Explorer e(sim::Explorer::Mode::kDpor, 1'000'000, 100'000);
    const sim::ExploreResult x =
        e.Explore([&](sim::Strategy& st) { return rep.Run(st).failed(); });
    EXPECT_TRUE(x.failed);
    return std::make_pair(x.runs, x.failing.Encode());
  };
  EXPECT_EQ(first_failure(*sub), first_failure(two));
}

TEST(SymmetryClasses, CoverEveryCombinationOnce) {
  for (uint32_t tuners : {1u, 2u, 3u}) {
    traces::Scenario s = Small(6);
    s.tuners = tuners;
    const Program p = SynthesizedProgram(s, "classes-" + std::to_string(tuners));
    for (uint32_t k = 1; k <= 4; ++k) {
      SCOPED_TRACE(::testing::Message() << tuners << " tuners, K=" << k);
      const std::vector<SubsetClass> classes = SymmetryClasses(p, k);
      uint64_t sum = 0;
      std::set<std::vector<uint32_t>> reps;
      for (const SubsetClass& c : classes) {
        sum += c.combinations;
        EXPECT_EQ(c.threads.size(), k);
        EXPECT_TRUE(std::is_sorted(c.threads.begin(), c.threads.end()));
        reps.insert(c.threads);
      }
      EXPECT_EQ(sum, Combinations(6, k));
      EXPECT_EQ(reps.size(), classes.size());
    }
  }
}

TEST(SymmetryClasses, ACopiedThreadIsInterchangeableAndAnotherKernelIsNot) {
  Program p = SynthesizedProgram(Small(2), "sym-copy");
  // Thread 2: thread 0's program again (its own calls, the same tuner, kernel, key, timings).
  ThreadProgram copy = p.threads[0];
  copy.name = "copy-of-0";
  for (Op& op : copy.ops)
    if (op.kind == Op::Kind::kTunerCall) {
      p.calls.push_back(p.calls[op.call]);
      op.call = static_cast<uint32_t>(p.calls.size() - 1);
    }
  p.threads.push_back(copy);
  EXPECT_EQ(SymmetryKey(p, {0, 1}), SymmetryKey(p, {1, 2}));
  const std::vector<SubsetClass> classes = SymmetryClasses(p, 2);
  // {0,1} and {1,2} are one class; {0,2} (two copies of one program) is its own unless thread 1
  // is a copy too.
  ASSERT_GE(classes.size(), 1u);
  EXPECT_EQ(classes[0].threads, (std::vector<uint32_t>{0, 1}));
  EXPECT_GE(classes[0].combinations, 2u);
  // Another kernel in thread 2 makes it another program.
  p.calls[p.calls.size() - 1].kernel = "other_kernel";
  EXPECT_NE(SymmetryKey(p, {0, 1}), SymmetryKey(p, {1, 2}));
  // So does another key, and a config the recorded timings select.
  p.calls[p.calls.size() - 1].kernel = p.calls[0].kernel;
  EXPECT_EQ(SymmetryKey(p, {0, 1}), SymmetryKey(p, {1, 2}));
  p.calls[p.calls.size() - 1].key = "other";
  EXPECT_NE(SymmetryKey(p, {0, 1}), SymmetryKey(p, {1, 2}));
  p.calls[p.calls.size() - 1].key = p.calls[0].key;
  auto& bench = p.calls[p.calls.size() - 1].bench_ns;
  ASSERT_GE(bench.size(), 2u);
  std::swap(bench[0], bench[1]);
  EXPECT_NE(SymmetryKey(p, {0, 1}), SymmetryKey(p, {1, 2}));
}

// Shallow copies of one tuner (synth --copies) are distinct tuner objects whose identity
// records differ only in object ids: the key renames them, so copies are interchangeable; the
// sharing itself is part of the key.
TEST(SymmetryClasses, CopiesSharingOneTunerAreInterchangeable) {
  traces::Scenario s = Small(4);
  s.copies = true;
  s.identity = true;
  const Program p = SynthesizedProgram(s, "sym-copies");
  EXPECT_EQ(SymmetryKey(p, {1, 2}), SymmetryKey(p, {2, 3}));
  EXPECT_EQ(SymmetryKey(p, {0, 1}), SymmetryKey(p, {0, 3}));
  s.identity = false;
  const Program q = SynthesizedProgram(s, "sym-copies-alone");
  EXPECT_NE(SymmetryKey(p, {1, 2}), SymmetryKey(q, {1, 2}));
}

// The reduction is sound: every combination of a class reaches exactly the outcomes of the
// others in it, on random programs and fixes. Mutation check: a coarser key (the number of
// tuner calls alone, ignoring which tuner and key) puts combinations with different outcomes
// together in at least one of these programs, so this test catches a key that leaves out what
// matters.
TEST(SymmetryClasses, EveryCombinationOfAClassReachesTheSameOutcomes) {
  bool coarse_caught = false;
  bool merged = false;  // some class stood for more than one combination (the test is not vacuous)
  uint64_t seed = 1;
  for (uint32_t tuners : {1u, 2u}) {
    for (const char* fix : {"tls-nargs", "lock-run"}) {
      traces::Scenario s = Small(3);
      s.tuners = tuners;
      s.seed = seed++;
      const Program p = SynthesizedProgram(s, "sym-sound");
      SCOPED_TRACE(::testing::Message() << tuners << " tuners, fix " << fix);
      const ReplayOptions o = Gil(fix);
      std::map<std::string, std::set<std::set<std::string>>> by_key;
      std::map<size_t, std::set<std::set<std::string>>> by_calls;
      const std::vector<uint32_t> w = WorkerIndices(p);
      for (size_t a = 0; a < w.size(); ++a)
        for (size_t b = a + 1; b < w.size(); ++b) {
          auto sub = SubProgram(p, {w[a], w[b]});
          ASSERT_TRUE(sub.ok());
          const Outcomes out = Search(*sub, o);
          ASSERT_TRUE(out.exhausted);
          by_key[SymmetryKey(p, {w[a], w[b]})].insert(out.signatures);
          size_t calls = 0;
          for (uint32_t t : {w[a], w[b]})
            for (const Op& op : p.threads[t].ops) calls += op.kind == Op::Kind::kTunerCall;
          by_calls[calls].insert(out.signatures);
        }
      for (const auto& [key, sets] : by_key) EXPECT_EQ(sets.size(), 1u) << key;
      for (const auto& [calls, sets] : by_calls) coarse_caught |= sets.size() > 1;
      EXPECT_EQ(by_key.size(), SymmetryClasses(p, 2).size());
      for (const SubsetClass& c : SymmetryClasses(p, 2)) merged |= c.combinations > 1;
    }
  }
  EXPECT_TRUE(merged) << "every class here stood for one combination: nothing was reduced";
  EXPECT_TRUE(coarse_caught) << "no program here tells the coarse key from the real one";
}

TEST(Certify, SameVerdictCountsAndCounterexampleForAnyJobs) {
  traces::Scenario s = Small(5);
  s.tuners = 2;
  const Program p = SynthesizedProgram(s, "certify-jobs");
  for (const char* fix : {"none", "lock-run"}) {
    SCOPED_TRACE(fix);
    const Certificate one = Certify(p, WithFix(fix), 2, 100'000, 1);
    for (unsigned jobs : {2u, 3u}) {
      const Certificate many = Certify(p, WithFix(fix), 2, 100'000, jobs);
      EXPECT_EQ(CertificateJson(one), CertificateJson(many));
      EXPECT_EQ(one.failing_threads, many.failing_threads);
      ASSERT_EQ(one.counterexample.has_value(), many.counterexample.has_value());
      if (one.counterexample) {
        EXPECT_EQ(one.counterexample->run.schedule.Encode(), many.counterexample->run.schedule.Encode());
      }
    }
    if (std::string(fix) == "none") {
      EXPECT_FALSE(one.complete);
      ASSERT_TRUE(one.counterexample.has_value());
      EXPECT_EQ(one.failing_threads.size(), 2u);
    } else {
      EXPECT_TRUE(one.complete);
      EXPECT_EQ(one.combinations, 10u);
    }
  }
}

TEST(Certify, ABudgetThatStopsAClassIsNeverComplete) {
  const Program p = SynthesizedProgram(Small(3), "certify-budget");
  const Certificate c = Certify(p, WithFix("lock-run"), 3, 1, 1);
  EXPECT_FALSE(c.complete);
  ASSERT_TRUE(c.stopped.has_value());
  EXPECT_FALSE(c.counterexample.has_value());
  EXPECT_EQ(c.runs, 1u);
}

}  // namespace
}  // namespace rerace::replay
