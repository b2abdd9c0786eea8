// Tuners that share state (issue 53): shallow copies of one tuner share the original's cache dict
// and hooks. The probe records identity; ReadSharing reads it; the model replays the sharing.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/search/check.h"
#include "rerace/testing/programs.h"
#include "rerace/traces/synth.h"

namespace rerace::replay {
namespace {

using rerace::testing::SynthesizedProgram;
using rerace::testing::WithFix;

traces::Scenario Copies(bool identity) {
  traces::Scenario s;
  s.threads = 4;
  s.configs = 3;
  s.copies = true;
  s.identity = identity;
  return s;
}

constexpr uint64_t kOriginal = 0x7f0000001000ull;  // synth's tuner 0, which the copies copy

TEST(Sharing, IdentityRecordsSayWhichCopiesShareTheCacheAndWhoseHooksTheyRun) {
  const Program p = SynthesizedProgram(Copies(true), "copies-identity");
  EXPECT_TRUE(p.identity_recorded);
  std::set<uint64_t> tuners;
  for (const TunerCall& c : p.calls) tuners.insert(c.tuner);
  ASSERT_EQ(tuners.size(), 4u);
  EXPECT_FALSE(tuners.count(kOriginal));  // the original makes no call
  // The first copy called holds the cache dict; the three others share it.
  EXPECT_EQ(p.cache_home.size(), 3u);
  const uint64_t home = p.calls.front().tuner;
  for (const auto& [tuner, h] : p.cache_home) {
    EXPECT_NE(tuner, home);
    EXPECT_EQ(h, home);
  }
  // Every copy's hooks write the original's restore_copies.
  EXPECT_EQ(p.hooks_home.size(), 4u);
  for (const auto& [tuner, h] : p.hooks_home) EXPECT_EQ(h, kOriginal);
  const auto lines = SharingLines(p);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("4 tuner objects share the cache dict"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("the hooks of 4 tuner objects write the restore_copies of tuner "
                          "0x7f0000001000 (no recorded call)"),
            std::string::npos)
      << lines[1];
}

TEST(Sharing, OlderRecordingsShareNothingAndSaySo) {
  const Program p = SynthesizedProgram(Copies(false), "copies-no-identity");
  EXPECT_FALSE(p.identity_recorded);
  EXPECT_TRUE(p.cache_home.empty());
  EXPECT_TRUE(p.hooks_home.empty());
  EXPECT_TRUE(SharingLines(p).empty());
}

TEST(Sharing, CopiesThatShareTheOriginalsHooksFailAsOnTheGpu) {
  const Program shared = SynthesizedProgram(Copies(true), "copies-identity");
  const BoundedVerdict v = CheckFixBounded(shared, WithFix("none"), 2, 20000, false);
  ASSERT_FALSE(v.verdict.holds);
  std::set<std::string> codes;
  for (const Finding& f : v.verdict.counterexample->findings) codes.insert(f.code);
  EXPECT_TRUE(codes.count("in-param-not-in-cache") || codes.count("wrong-restore"))
      << *codes.begin();
  // The recorded order (lockstep) raises the KeyError in every thread but the first, as eight
  // copies did on the GPU.
  Replayer rep(shared, WithFix("none"));
  const ReplayResult r = rep.RunRecorded();
  std::set<uint32_t> raised;
  for (const Finding& f : r.findings)
    if (f.code == "in-param-not-in-cache") raised.insert(f.thread);
  EXPECT_EQ(raised, (std::set<uint32_t>{1, 2, 3}));
  // Same seed, same report.
  sim::RandomWalk a(7), b(7);
  EXPECT_EQ(FormatReport(rep.Run(a), shared, ""), FormatReport(rep.Run(b), shared, ""));
}

TEST(Sharing, WithoutIdentityEachCopyIsItsOwnTunerAndHolds) {
  // What rerace did before identity records: one tuner per thread, nothing to race on.
  const Program alone = SynthesizedProgram(Copies(false), "copies-no-identity");
  const BoundedVerdict v = CheckFixBounded(alone, WithFix("none"), 2, 20000, false);
  EXPECT_TRUE(v.verdict.holds);
  EXPECT_TRUE(v.Complete());
}

TEST(Sharing, ASharedCacheTunesEachKeyOnceUnderALock) {
  // With the cache shared and lock-run (one lock per tuner class: every copy's run), the copies
  // tune the key once between them; without sharing each copy tunes it.
  const Program shared = SynthesizedProgram(Copies(true), "copies-identity");
  const Program alone = SynthesizedProgram(Copies(false), "copies-no-identity");
  sim::RandomWalk a(3), b(3);
  const ReplayResult rs = Replayer(shared, WithFix("lock-run")).Run(a);
  const ReplayResult ra = Replayer(alone, WithFix("lock-run")).Run(b);
  EXPECT_TRUE(rs.findings.empty());
  EXPECT_EQ(rs.cost.tunings, 1u);
  EXPECT_EQ(ra.cost.tunings, 4u);
}

TEST(Sharing, ASubProgramKeepsTheSharingOfItsThreads) {
  const Program p = SynthesizedProgram(Copies(true), "copies-identity");
  auto sub = SubProgram(p, {1, 2});  // the cache's holder (thread 0's copy) is not in it
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  EXPECT_TRUE(sub->identity_recorded);
  const BoundedVerdict v = CheckFixBounded(*sub, WithFix("none"), 2, 20000, false);
  EXPECT_FALSE(v.verdict.holds);
}

}  // namespace
}  // namespace rerace::replay
