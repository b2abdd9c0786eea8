// Fuzzing campaigns over worker threads: the merge gives exactly one job's result.
#include "rerace/replay/search/campaign.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "rerace/sim/strategy.h"
#include "../samples.h"

namespace rerace::replay {
namespace {

using testing::LoadSample;

using testing::DescribeCampaign;

CampaignResult RunOf(const Program& p, CampaignOptions o, ReplayOptions ro = {}) {
  Replayer rep(p, ro);
  auto r = RunCampaign(rep, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  EXPECT_FALSE(r->error.has_value());
  return *r;
}

TEST(Campaign, ThreeJobsGiveOneJobsResult) {
  const Program p = LoadSample("synth-h200-shape.rrt");
  CampaignOptions o;
  o.runs = 150;
  o.jobs = 1;
  const CampaignResult one = RunOf(p, o);
  o.jobs = 3;
  const CampaignResult three = RunOf(p, o);
  EXPECT_EQ(one.runs, 150u);
  ASSERT_GE(one.failures.size(), 2u);  // something to merge
  EXPECT_EQ(DescribeCampaign(three), DescribeCampaign(one));
}

TEST(Campaign, ShardsStrategiesTargetsAndRacesMergeAsOneJob) {
  const Program p = LoadSample("synth-h200-shape.rrt");
  ReplayOptions ro;
  ro.detect_races = true;
  for (const char* strategy : {"portfolio", "pct"}) {
    CampaignOptions o;
    o.strategy.name = strategy;
    o.runs = 40;
    o.offset = 1;
    o.stride = 3;
    o.first_seed = 7;
    o.races = true;
    o.jobs = 1;
    const CampaignResult one = RunOf(p, o, ro);
    EXPECT_FALSE(one.races.empty()) << strategy;
    o.jobs = 4;
    EXPECT_EQ(DescribeCampaign(RunOf(p, o, ro)), DescribeCampaign(one)) << strategy;
    o.target = "nargs-none";
    o.jobs = 1;
    const CampaignResult target_one = RunOf(p, o, ro);
    o.jobs = 5;
    EXPECT_EQ(DescribeCampaign(RunOf(p, o, ro)), DescribeCampaign(target_one)) << strategy;
  }
}

// The rule one job keeps a failure's seed by, computed here run by run without the campaign:
// the lowest seed whose run fails first with it, else the lowest seed whose run has it.
TEST(Campaign, KeepsTheLowestSeedThatFailsFirstElseTheLowestThatHasIt) {
  const Program p = LoadSample("synth-h200-shape.rrt");
  Replayer rep(p, {});
  std::map<std::string, uint64_t> first_seed, any_seed;
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    auto s = sim::MakeStrategy({}, seed);
    ASSERT_TRUE(s.ok());
    const ReplayResult r = rep.Run(**s);
    for (const Finding& f : r.findings) {
      const std::string sig = f.code + " at " + f.where;
      any_seed.emplace(sig, seed);
      if (&f == &r.findings.front()) first_seed.emplace(sig, seed);
    }
  }
  CampaignOptions o;
  o.runs = 80;
  o.jobs = 4;
  const CampaignResult r = RunOf(p, o);
  ASSERT_EQ(r.failures.size(), any_seed.size());
  bool some_later = false;
  for (const CampaignFailure& f : r.failures) {
    const auto first = first_seed.find(f.signature);
    EXPECT_EQ(f.first, first != first_seed.end()) << f.signature;
    EXPECT_EQ(f.seed, f.first ? first->second : any_seed.at(f.signature)) << f.signature;
    some_later |= f.first && first->second != any_seed.at(f.signature);
  }
  EXPECT_TRUE(some_later) << "no failure whose first-failing seed is not its first seed: the rule is untested";
}

TEST(Campaign, AStrategyThatCannotBeMadeIsAnError) {
  const Program p = LoadSample("synth-h200-shape.rrt");
  Replayer rep(p, {});
  CampaignOptions o;
  o.strategy.name = "no-such-strategy";
  o.jobs = 2;
  EXPECT_FALSE(RunCampaign(rep, o).ok());
}

TEST(Campaign, AvailableCoresIsAtLeastOne) { EXPECT_GE(AvailableCores(), 1u); }

}  // namespace
}  // namespace rerace::replay
