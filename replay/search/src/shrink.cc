// replay/search/src/shrink.cc: prefix-then-no-preemption shrinking.
#include "rerace/replay/search/shrink.h"

#include <fmt/format.h>

#include <algorithm>

namespace rerace::replay {

namespace {

// Follows `prefix` for its first steps, then never preempts.
class PrefixThenRun final : public sim::Strategy {
 public:
  PrefixThenRun(std::vector<sim::ThreadId> prefix) : prefix_(std::move(prefix)) {}
  sim::ThreadId Pick(const sim::Choice& c) override {
    if (c.step < prefix_.size()) return prefix_[c.step];
    if (c.previous != sim::kNoThread &&
        std::binary_search(c.runnable.begin(), c.runnable.end(), c.previous))
      return c.previous;
    return c.runnable.front();
  }
  void Plan(uint64_t step, sim::ThreadId t, std::span<const sim::ThreadId> runnable,
            bool /*changed*/, uint64_t max_picks,
            std::vector<sim::PlannedPicks>& out) const override {
    sim::PlanPrefixThenRun(step, t, runnable, prefix_.size(),
                           [this](uint64_t i) { return prefix_[i]; }, max_picks, out);
  }
  std::string Name() const override { return "shrunk"; }

 private:
  std::vector<sim::ThreadId> prefix_;
};

std::string FirstSignature(const ReplayResult& r) {
  return r.findings.empty() ? "" : r.findings.front().code + "@" + r.findings.front().where;
}

uint64_t PreemptionsUpTo(const ReplayResult& r) { return r.run.preemptions; }

}  // namespace

Shrunk ShrinkFailure(Replayer& replayer, const ReplayResult& failing, const std::string& kind) {
  const Finding* target = FirstOf(failing, kind);
  if (target == nullptr) {
    Shrunk s;
    s.result = failing;
    s.preemptions_before = s.preemptions_after = PreemptionsUpTo(failing);
    s.steps_before = s.steps_after = failing.run.steps;
    s.first_matches = false;
    return s;
  }
  return ShrinkTo(replayer, failing, *target);
}

Shrunk ShrinkTo(Replayer& replayer, const ReplayResult& failing, const Finding& target,
                const std::function<bool()>& stop) {
  Shrunk s;
  s.result = failing;
  s.preemptions_before = s.preemptions_after = PreemptionsUpTo(failing);
  s.steps_before = s.steps_after = target.step;
  const std::string want = target.code + "@" + target.where;
  s.first_matches = FirstSignature(failing) == want;
  const std::vector<sim::ThreadId> full = failing.run.schedule.Expand();
  const size_t limit = std::min<size_t>(full.size(), s.steps_before + 1);
  for (size_t k = 0; k <= limit; ++k) {
    if (stop && stop()) {
      s.stopped = true;
      break;
    }
    PrefixThenRun strategy(std::vector<sim::ThreadId>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(k)));
    ReplayResult r = replayer.Run(strategy);
    ++s.tries;
    if (FirstSignature(r) != want) continue;
    if (r.run.preemptions > s.preemptions_before) continue;
    s.preemptions_after = r.run.preemptions;
    s.steps_after = r.findings.front().step;
    s.result = std::move(r);
    s.first_matches = true;
    break;
  }
  return s;
}

std::string DescribeShrink(const Shrunk& s) {
  return fmt::format("shrunk: {} -> {} preemptions, first failure at step {} -> {} ({} replays)",
                     s.preemptions_before, s.preemptions_after, s.steps_before, s.steps_after, s.tries);
}

}  // namespace rerace::replay
