#include "rerace/sim/classic_bugs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "rerace/sim/strategy.h"
#include "rerace/testing/sim_run.h"

namespace rerace::sim {
namespace {

using rerace::testing::RunWith;

RunResult RunBug(const ClassicBug& bug, Strategy& s) {
  return RunWith(s, [&bug](Scheduler& sched) { bug.build(sched); });
}

// PCT's guarantee (Burckhardt et al. 2010, Theorem 9): one run finds a bug of depth d in a
// program of n threads and k steps with probability at least 1/(n k^(d-1)). Over the first
// N seeds (enough for 40 hits at the bound, capped at 6000) at least one run must hit, and
// the hit rate must reach half the bound: the seeds are fixed, so this is deterministic, and
// the margin only absorbs the sampling error of a finite N (for ordering-depth2 the bound is
// exact, so the rate sits near it).
TEST(ClassicBugs, PctFindsEachBugAtLeastAsOftenAsItsBound) {
  for (const ClassicBug& bug : ClassicBugs()) {
    SCOPED_TRACE(std::string(bug.name));
    RoundRobin probe(1'000'000);
    const RunResult shape = RunBug(bug, probe);
    const double n = static_cast<double>(shape.threads.size());
    const double k = static_cast<double>(shape.steps);
    const double bound = 1.0 / (n * std::pow(k, bug.depth - 1));
    const uint64_t runs = std::min<uint64_t>(static_cast<uint64_t>(40.0 / bound), 6000);
    uint64_t hits = 0;
    std::optional<uint64_t> first;
    for (uint64_t seed = 0; seed < runs; ++seed) {
      Pct pct(seed, bug.depth, shape.steps);
      const RunResult r = RunBug(bug, pct);
      if (!r.failed()) continue;
      EXPECT_EQ(r.failure->kind, bug.kind) << r.Report();
      ++hits;
      if (!first) first = seed;
    }
    const double rate = static_cast<double>(hits) / static_cast<double>(runs);
    EXPECT_GE(hits, 1u) << runs << " runs";
    EXPECT_GE(rate, bound / 2) << "hits " << hits << " of " << runs << ", n=" << n << " k=" << k;
    std::printf("%-16s n=%.0f k=%.0f d=%u  bound %.5f  PCT rate %.5f (%llu/%llu), first at seed %llu\n",
                std::string(bug.name).c_str(), n, k, bug.depth, bound, rate,
                static_cast<unsigned long long>(hits), static_cast<unsigned long long>(runs),
                static_cast<unsigned long long>(first.value_or(0)));
  }
}

// Round-robin is deterministic; what it finds is fixed by the programs. With quantum 1 it
// interleaves every step and hits the bugs a strict alternation exposes (ABBA, use before
// init); without preemption (a huge quantum) it runs each thread to completion and finds
// only the bug that needs no preemption at all. It misses the rest: the reason PCT exists.
TEST(ClassicBugs, RoundRobinMissesTheBugsItShould) {
  struct Case {
    const char* bug;
    bool found_q1;
    bool found_whole;
  };
  const Case cases[] = {
      {"lost-update", false, false},     {"check-then-act", false, false},
      {"abba-deadlock", true, false},    {"use-before-init", true, false},
      {"ordering-depth2", false, false}, {"ordering-depth3", false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bug);
    const ClassicBug* bug = FindClassicBug(c.bug);
    ASSERT_NE(bug, nullptr);
    RoundRobin q1(1);
    EXPECT_EQ(RunBug(*bug, q1).failed(), c.found_q1);
    RoundRobin whole(1'000'000);
    EXPECT_EQ(RunBug(*bug, whole).failed(), c.found_whole);
  }
}

TEST(ClassicBugs, FailingScheduleReplaysToTheSameFailure) {
  for (const ClassicBug& bug : ClassicBugs()) {
    SCOPED_TRACE(std::string(bug.name));
    std::optional<RunResult> failing;
    for (uint64_t seed = 0; seed < 20000 && !failing; ++seed) {
      Pct pct(seed, bug.depth, 40);
      RunResult r = RunBug(bug, pct);
      if (r.failed()) failing = std::move(r);
    }
    ASSERT_TRUE(failing.has_value());
    auto parsed = Schedule::Parse(failing->schedule.Encode());
    ASSERT_TRUE(parsed.ok());
    ScheduleReplay replay(*parsed);
    RunResult again = RunBug(bug, replay);
    ASSERT_TRUE(again.failed());
    EXPECT_EQ(again.Report(), failing->Report());
  }
}

TEST(ClassicBugs, EveryNameIsFoundAndUnknownIsNot) {
  for (const ClassicBug& bug : ClassicBugs()) EXPECT_EQ(FindClassicBug(bug.name), &bug);
  EXPECT_EQ(FindClassicBug("no-such-bug"), nullptr);
}

}  // namespace
}  // namespace rerace::sim
