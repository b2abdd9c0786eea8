// rerace/sim/strategy.h: how the scheduler chooses the next thread.
//
// A Strategy is asked once per step (see `Choice` in scheduler.h) and returns one of the
// runnable threads. Strategies own their random stream; a strategy object serves one run:
// construct a new one per run (MakeStrategy with the run's seed).
//
//   RoundRobin      rotates through runnable threads every `quantum` steps. Consumes no
//                   randomness. The baseline that misses most bugs.
//   RandomWalk      uniform over runnable threads at every step. Seeded.
//   Pct             probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
//                   random thread priorities, and d-1 priority change points over the first
//                   k steps. Finds a bug of depth d with probability >= 1/(n k^(d-1)). Seeded.
//   Timed           the runnable thread earliest in virtual time runs; ties by the seed.
//   ScheduleReplay  follows a saved Schedule; the scheduler reports divergence when the
//                   program no longer matches it. Consumes no randomness.
//
// All are used from the scheduler's OS thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/sim/random.h"
#include "rerace/sim/schedule.h"
#include "rerace/sim/scheduler.h"

namespace rerace::sim {

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Returns a thread from c.runnable. A strategy that cannot follow the program (a replayed
  // schedule that ended or names a thread that cannot run) returns kNoThread or that thread,
  // and the scheduler reports the divergence.
  virtual ThreadId Pick(const Choice& c) = 0;
  // Called when the run ends without failure: a replay strategy reports steps left over.
  virtual std::optional<std::string> AtEnd(uint64_t /*steps*/) { return std::nullopt; }
  // Thread `t` performed `p` inside step `step` without a choice (a StepMerge said so, see
  // scheduler.h). A strategy that reasons about dependent steps (DPOR) counts it as part of
  // the step; a strategy that wraps another must pass it on.
  virtual void OnInStep(uint64_t /*step*/, ThreadId /*t*/, const SchedulingPoint& /*p*/) {}
  // How many picks, from step `step` on, this strategy knows already to be `t`, as long as t
  // stays runnable and nothing else changes (t's steps are plain points: no lock, no wake, no
  // end, no other thread made runnable). The real-code engine lets t's Python thread pass
  // that many points without a round trip (Scheduler::Promised). 0: unknown, ask at every
  // point. Must never overstate: each of those picks, when made, is `t`. A strategy that wraps
  // another and returns its picks unchanged may pass it on.
  virtual uint64_t Promised(uint64_t /*step*/, ThreadId /*t*/) const { return 0; }
  // The picks this strategy will make from step `step` on, `t` having taken the step before,
  // as long as the runnable set stays `runnable` and every step is a plain point (no lock, no
  // wake, no end, no clock that a pick reads changed): appended to `out` as runs of one thread,
  // at most `max_picks` drawn picks (a run may say UINT64_MAX: t's picks with no end, from
  // Promised). Changes nothing: the picks are made later by Pick, and must be these. The
  // real-code engine lets the Python threads switch among themselves by this plan without a
  // round trip (Scheduler::Plan) and checks each pick when it is made. `runnable_changed`:
  // a thread was made runnable or blocked since the last pick. The default is Promised's
  // promise (none when runnable_changed). A strategy that wraps another and returns its
  // picks unchanged may pass it on.
  virtual void Plan(uint64_t step, ThreadId t, std::span<const ThreadId> runnable,
                    bool runnable_changed, uint64_t max_picks,
                    std::vector<PlannedPicks>& out) const;
  virtual std::string Name() const = 0;
};

// Appends `count` picks of `t` to a plan, as a run of the previous thread where it is one
// (UINT64_MAX: t for good).
void AppendPlanned(std::vector<PlannedPicks>& out, ThreadId t, uint64_t count = 1);

// The plan of a fixed prefix followed by no preemption (the explorer's runs, shrinking's):
// prefix_at(i) for the steps from `step` to `prefix` while each can run (a fixed pick that
// cannot is the divergence Pick reports), then the thread that took the step before, for good.
template <typename PrefixAt>
void PlanPrefixThenRun(uint64_t step, ThreadId t, std::span<const ThreadId> runnable,
                       uint64_t prefix, PrefixAt prefix_at, uint64_t max_picks,
                       std::vector<PlannedPicks>& out) {
  ThreadId last = t;
  for (uint64_t i = step; i < prefix; ++i) {
    if (max_picks-- == 0 || !std::binary_search(runnable.begin(), runnable.end(), prefix_at(i)))
      return;
    last = prefix_at(i);
    AppendPlanned(out, last);
  }
  AppendPlanned(out, last, UINT64_MAX);
}

class RoundRobin final : public Strategy {
 public:
  explicit RoundRobin(uint64_t quantum = 1) : quantum_(quantum == 0 ? 1 : quantum) {}
  ThreadId Pick(const Choice& c) override;
  std::string Name() const override;

 private:
  uint64_t quantum_;
  uint64_t used_ = 0;
};

class RandomWalk final : public Strategy {
 public:
  explicit RandomWalk(uint64_t seed) : rng_(seed), seed_(seed) {}
  ThreadId Pick(const Choice& c) override { return c.runnable[rng_.Below(c.runnable.size())]; }
  // The next picks drawn from a copy of the stream: they depend on nothing but the runnable set.
  void Plan(uint64_t step, ThreadId t, std::span<const ThreadId> runnable, bool runnable_changed,
            uint64_t max_picks, std::vector<PlannedPicks>& out) const override;
  std::string Name() const override;

 private:
  Prng rng_;
  uint64_t seed_;
};

class Pct final : public Strategy {
 public:
  // depth: the bug depth d targeted (>= 1); steps: k, the expected number of steps of a run.
  Pct(uint64_t seed, uint32_t depth, uint64_t steps);
  ThreadId Pick(const Choice& c) override;
  // The thread just picked (the highest priority runnable) keeps running, with the same
  // runnable set, until the next change point lowers it.
  uint64_t Promised(uint64_t step, ThreadId t) const override;
  std::string Name() const override;

 private:
  uint64_t PriorityOf(ThreadId t);
  Prng rng_;
  uint64_t seed_;
  uint32_t depth_;
  uint64_t steps_;
  struct ChangePoint {
    uint64_t step;
    uint64_t priority;  // 1..d-1
  };
  std::vector<ChangePoint> change_points_;  // sorted by step
  size_t next_change_ = 0;
  std::vector<uint64_t> priority_;       // by thread id; 0 = not yet assigned
  ThreadId last_pick_ = kNoThread;
};

class Timed final : public Strategy {
 public:
  explicit Timed(uint64_t seed) : rng_(seed), seed_(seed) {}
  ThreadId Pick(const Choice& c) override;
  std::string Name() const override;

 private:
  Prng rng_;
  uint64_t seed_;
};

// Partial order sampling (Yuan, Yang, Gu: "Partial Order Aware Concurrency Sampling", CAV 2018):
// every pending operation gets a random priority; the runnable thread whose pending operation
// has the highest priority runs; after it runs, the operations that conflict with it (same
// shared object) draw new priorities. Samples partial orders far more evenly than a random
// walk. Seeded.
class Pos final : public Strategy {
 public:
  explicit Pos(uint64_t seed) : rng_(seed), seed_(seed) {}
  ThreadId Pick(const Choice& c) override;
  std::string Name() const override;

 private:
  Prng rng_;
  uint64_t seed_;
  std::vector<uint64_t> priority_;  // by thread: of its pending operation; 0 = to draw
};

// A selectively uniform random walk, in the spirit of SURW (ASPLOS 2025): a thread runs with
// probability proportional to the steps it has left, which makes every interleaving of the
// threads' steps equally likely (a plain random walk favours switching early). `expected`
// is each thread's step count, from an earlier run (e.g. round-robin); threads it does not
// cover count one step. Seeded.
class Surw final : public Strategy {
 public:
  Surw(uint64_t seed, std::vector<uint64_t> expected)
      : rng_(seed), seed_(seed), left_(std::move(expected)) {}
  ThreadId Pick(const Choice& c) override;
  std::string Name() const override;

 private:
  Prng rng_;
  uint64_t seed_;
  std::vector<uint64_t> left_;
};

class ScheduleReplay final : public Strategy {
 public:
  explicit ScheduleReplay(Schedule s) : schedule_(std::move(s)), cursor_(schedule_) {}
  ThreadId Pick(const Choice& c) override;
  std::optional<std::string> AtEnd(uint64_t steps) override;
  // The schedule's next entries, when they name `t` (asked for the step after the last pick).
  uint64_t Promised(uint64_t /*step*/, ThreadId t) const override {
    return !cursor_.Done() && cursor_.Peek() == t ? cursor_.SameAhead() : 0;
  }
  // The schedule's next entries, up to the first that cannot run (the divergence Pick reports).
  void Plan(uint64_t step, ThreadId t, std::span<const ThreadId> runnable, bool runnable_changed,
            uint64_t max_picks, std::vector<PlannedPicks>& out) const override;
  std::string Name() const override { return "replay"; }

 private:
  Schedule schedule_;
  ScheduleCursor cursor_;
};

// Builds a strategy from its command-line name: "round-robin", "random", "pct", "timed", "pos",
// "surw" (needs `surw_steps`), or "portfolio" (random, PCT d=2, PCT d=3, POS and SURW in turn,
// by seed).
// `pct_depth` (1..kMaxPctDepth) and `pct_steps` apply to "pct". Error (exit 64) names the known
// strategies, or the allowed depths.
// PCT's d-1 change points are allocated up front: a depth is a request for memory.
inline constexpr uint32_t kMaxPctDepth = 1000;
struct StrategySpec {
  std::string name = "random";
  uint32_t pct_depth = 3;
  uint64_t pct_steps = 1000;
  uint64_t rr_quantum = 1;
  std::vector<uint64_t> surw_steps;  // per thread: steps of a probe run
};
Result<std::unique_ptr<Strategy>> MakeStrategy(const StrategySpec& spec, uint64_t seed);
const std::vector<std::string>& StrategyNames();

}  // namespace rerace::sim
