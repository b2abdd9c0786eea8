// sim/src/strategy.cc: the built-in strategies.
#include "rerace/sim/strategy.h"

#include <fmt/format.h>

#include <algorithm>

namespace rerace::sim {

ThreadId RoundRobin::Pick(const Choice& c) {
  // Stay on the previous thread for `quantum` steps while it can run, then move to the next
  // runnable thread in id order (cyclically).
  if (c.previous != kNoThread && used_ < quantum_ &&
      std::binary_search(c.runnable.begin(), c.runnable.end(), c.previous)) {
    ++used_;
    return c.previous;
  }
  used_ = 1;
  if (c.previous == kNoThread) return c.runnable.front();
  auto it = std::upper_bound(c.runnable.begin(), c.runnable.end(), c.previous);
  return it == c.runnable.end() ? c.runnable.front() : *it;
}

std::string RoundRobin::Name() const { return fmt::format("round-robin(quantum={})", quantum_); }

void AppendPlanned(std::vector<PlannedPicks>& out, ThreadId t, uint64_t count) {
  if (!out.empty() && out.back().thread == t) {
    if (out.back().count != UINT64_MAX)
      out.back().count = count == UINT64_MAX ? UINT64_MAX : out.back().count + count;
  } else {
    out.push_back({t, count});
  }
}

void Strategy::Plan(uint64_t step, ThreadId t, std::span<const ThreadId> /*runnable*/,
                    bool runnable_changed, uint64_t /*max_picks*/,
                    std::vector<PlannedPicks>& out) const {
  if (runnable_changed) return;
  if (const uint64_t k = Promised(step, t); k > 0) out.push_back({t, k});
}

void RandomWalk::Plan(uint64_t /*step*/, ThreadId /*t*/, std::span<const ThreadId> runnable,
                      bool /*runnable_changed*/, uint64_t max_picks,
                      std::vector<PlannedPicks>& out) const {
  if (runnable.empty()) return;
  Prng rng = rng_;  // Pick draws the same numbers from the same state
  for (uint64_t i = 0; i < max_picks; ++i) AppendPlanned(out, runnable[rng.Below(runnable.size())]);
}

std::string RandomWalk::Name() const { return fmt::format("random(seed={})", seed_); }

Pct::Pct(uint64_t seed, uint32_t depth, uint64_t steps)
    : rng_(seed), seed_(seed), depth_(std::max<uint32_t>(depth, 1)), steps_(std::max<uint64_t>(steps, 1)) {
  // d-1 change points, uniform over the first k steps (duplicates allowed, as in the paper).
  // Change point i lowers the running thread to priority i; the points' steps are random, so
  // after sorting by step the priorities they hand out are in random order.
  for (uint32_t i = 1; i < depth_; ++i) change_points_.push_back({rng_.Below(steps_), i});
  std::stable_sort(change_points_.begin(), change_points_.end(),
                   [](const ChangePoint& a, const ChangePoint& b) { return a.step < b.step; });
}

uint64_t Pct::PriorityOf(ThreadId t) {
  if (priority_.size() <= t) priority_.resize(t + 1, 0);
  // Initial priorities lie above every change-point priority (1..d-1): d + random 32 bits.
  // Drawn when the thread is first seen, so threads spawned later get one too.
  if (priority_[t] == 0) priority_[t] = depth_ + 1 + (rng_.Next() >> 32);
  return priority_[t];
}

ThreadId Pct::Pick(const Choice& c) {
  auto highest = [&] {
    ThreadId best = c.runnable.front();
    uint64_t best_p = PriorityOf(best);
    for (ThreadId t : c.runnable.subspan(1)) {
      const uint64_t p = PriorityOf(t);
      if (p > best_p) {
        best = t;
        best_p = p;
      }
    }
    return best;
  };
  ThreadId t = highest();
  // At a change point, the thread about to run drops below every initial priority.
  while (next_change_ < change_points_.size() && change_points_[next_change_].step <= c.step) {
    priority_[t] = change_points_[next_change_].priority;
    ++next_change_;
    t = highest();
  }
  last_pick_ = t;
  return t;
}

uint64_t Pct::Promised(uint64_t step, ThreadId t) const {
  if (t != last_pick_) return 0;
  if (next_change_ >= change_points_.size()) return UINT64_MAX;
  const uint64_t at = change_points_[next_change_].step;  // applies at the pick of step `at`
  return at > step ? at - step : 0;
}

std::string Pct::Name() const {
  return fmt::format("pct(seed={}, depth={}, steps={})", seed_, depth_, steps_);
}

ThreadId Timed::Pick(const Choice& c) {
  // The earliest clock and how many runnable threads share it; then, if several, the
  // Below(ties)-th of them in id order. Two passes over the runnable set, nothing stored.
  size_t first = 0;  // the first runnable thread at the earliest clock (none before it ties)
  Nanos best = c.clocks[c.runnable[0]];
  uint64_t ties = 1;
  for (size_t i = 1; i < c.runnable.size(); ++i) {
    const Nanos clock = c.clocks[c.runnable[i]];
    if (clock < best) {
      best = clock;
      first = i;
      ties = 1;
    } else if (clock == best) {
      ++ties;
    }
  }
  if (ties == 1) return c.runnable[first];
  uint64_t k = rng_.Below(ties);
  if (ties == c.runnable.size()) return c.runnable[k];  // all tied (as at a run's start)
  for (size_t i = first;; ++i) {
    if (c.clocks[c.runnable[i]] == best && k-- == 0) return c.runnable[i];
  }
}

std::string Timed::Name() const { return fmt::format("timed(seed={})", seed_); }

namespace {
// Two pending operations conflict when they touch the same shared object.
bool Conflicts(const SchedulingPoint& a, const SchedulingPoint& b) {
  return a.object != 0 && a.object == b.object &&
         (a.access != Access::kRead || b.access != Access::kRead);
}
}  // namespace

ThreadId Pos::Pick(const Choice& c) {
  if (priority_.size() < c.pending.size()) priority_.resize(c.pending.size(), 0);
  ThreadId best = c.runnable.front();
  uint64_t best_p = 0;
  for (ThreadId t : c.runnable) {
    if (priority_[t] == 0) priority_[t] = rng_.Next() | 1;
    if (priority_[t] > best_p) {
      best_p = priority_[t];
      best = t;
    }
  }
  // The chosen operation runs; those that race with it draw new priorities, and the chosen
  // thread's next operation will draw one.
  for (ThreadId t : c.runnable)
    if (t != best && Conflicts(c.pending[t], c.pending[best])) priority_[t] = 0;
  priority_[best] = 0;
  return best;
}

std::string Pos::Name() const { return fmt::format("pos(seed={})", seed_); }

ThreadId Surw::Pick(const Choice& c) {
  uint64_t total = 0;
  for (ThreadId t : c.runnable) total += t < left_.size() ? std::max<uint64_t>(left_[t], 1) : 1;
  uint64_t r = rng_.Below(total);
  ThreadId pick = c.runnable.back();
  for (ThreadId t : c.runnable) {
    const uint64_t w = t < left_.size() ? std::max<uint64_t>(left_[t], 1) : 1;
    if (r < w) {
      pick = t;
      break;
    }
    r -= w;
  }
  if (pick < left_.size() && left_[pick] > 0) --left_[pick];
  return pick;
}

std::string Surw::Name() const { return fmt::format("surw(seed={})", seed_); }

ThreadId ScheduleReplay::Pick(const Choice& /*c*/) {
  if (cursor_.Done()) return kNoThread;
  const ThreadId t = cursor_.Peek();
  cursor_.Advance();
  return t;
}

void ScheduleReplay::Plan(uint64_t /*step*/, ThreadId /*t*/, std::span<const ThreadId> runnable,
                          bool /*runnable_changed*/, uint64_t max_picks,
                          std::vector<PlannedPicks>& out) const {
  ScheduleCursor at = cursor_;
  for (uint64_t i = 0; i < max_picks && !at.Done(); ++i, at.Advance()) {
    if (!std::binary_search(runnable.begin(), runnable.end(), at.Peek())) return;
    AppendPlanned(out, at.Peek());
  }
}

std::optional<std::string> ScheduleReplay::AtEnd(uint64_t steps) {
  if (cursor_.Done()) return std::nullopt;
  return fmt::format(
      "the program ended after {} steps, but the schedule has {} steps: it does not match this "
      "program",
      steps, schedule_.steps());
}

const std::vector<std::string>& StrategyNames() {
  static const std::vector<std::string> names = {"random", "pct", "round-robin", "timed",
                                                 "pos", "surw", "portfolio"};
  return names;
}

Result<std::unique_ptr<Strategy>> MakeStrategy(const StrategySpec& spec, uint64_t seed) {
  if (spec.name == "random") return std::unique_ptr<Strategy>(new RandomWalk(seed));
  if (spec.name == "pct") {
    if (spec.pct_depth < 1 || spec.pct_depth > kMaxPctDepth)
      return Error{fmt::format("PCT depth {}: expected 1..{} (d-1 priority change points; bugs "
                               "of depth 2 or 3 are the usual target)",
                               spec.pct_depth, kMaxPctDepth),
                   kExitUsage};
    return std::unique_ptr<Strategy>(new Pct(seed, spec.pct_depth, spec.pct_steps));
  }
  if (spec.name == "round-robin") return std::unique_ptr<Strategy>(new RoundRobin(spec.rr_quantum));
  if (spec.name == "timed") return std::unique_ptr<Strategy>(new Timed(seed));
  if (spec.name == "pos") return std::unique_ptr<Strategy>(new Pos(seed));
  if (spec.name == "surw") return std::unique_ptr<Strategy>(new Surw(seed, spec.surw_steps));
  if (spec.name == "portfolio") {
    switch (seed % 5) {
      case 0: return std::unique_ptr<Strategy>(new RandomWalk(seed));
      case 1: return std::unique_ptr<Strategy>(new Pct(seed, 2, spec.pct_steps));
      case 2: return std::unique_ptr<Strategy>(new Pct(seed, 3, spec.pct_steps));
      case 3: return std::unique_ptr<Strategy>(new Pos(seed));
      default: return std::unique_ptr<Strategy>(new Surw(seed, spec.surw_steps));
    }
  }
  return Error{fmt::format("unknown strategy '{}': expected one of {}", spec.name,
                           fmt::join(StrategyNames(), ", ")),
               kExitUsage};
}

}  // namespace rerace::sim
