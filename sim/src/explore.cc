// sim/src/explore.cc: depth-first schedule enumeration, naive or DPOR, preemption-bounded.
#include "rerace/sim/explore.h"

#include <algorithm>
#include <set>

namespace rerace::sim {

namespace {

struct Node {
  std::vector<ThreadId> runnable;
  std::vector<SchedulingPoint> pending;  // by thread id
  ThreadId previous = kNoThread;
  ThreadId chosen = kNoThread;
  uint32_t preemptions_before = 0;
  std::set<ThreadId> backtrack;
  std::set<ThreadId> done;
  std::set<ThreadId> sleep;  // threads whose next step was fully explored from an earlier node
};

bool Runnable(const Node& n, ThreadId t) {
  return std::binary_search(n.runnable.begin(), n.runnable.end(), t);
}

// Choosing t at n preempts when the previous thread could have gone on.
uint32_t Cost(const Node& n, ThreadId t) {
  return n.previous != kNoThread && n.previous != t && Runnable(n, n.previous) ? 1 : 0;
}

bool Dependent(const SchedulingPoint& a, const SchedulingPoint& b) {
  if (a.object == 0 || a.object != b.object) return false;
  return !(a.access == Access::kRead && b.access == Access::kRead);
}

// Follows the path's choices, then runs without preemption; records a node per new step.
// With sleep sets: a thread whose next step was already explored from an earlier node, and
// that nothing since conflicted with, is not chosen again where another choice exists.
class Follow final : public Strategy {
 public:
  Follow(std::vector<Node>& path, size_t prefix, bool sleep_sets)
      : path_(path), prefix_(prefix), sleep_sets_(sleep_sets) {}
  ThreadId Pick(const Choice& c) override {
    const size_t i = c.step;
    if (i < prefix_) return path_[i].chosen;
    Node n;
    n.runnable.assign(c.runnable.begin(), c.runnable.end());
    n.pending.assign(c.pending.begin(), c.pending.end());
    n.previous = c.previous;
    n.preemptions_before = i == 0 ? 0 : path_[i - 1].preemptions_before + Cost(path_[i - 1], path_[i - 1].chosen);
    if (sleep_sets_ && i > 0) {
      const Node& parent = path_[i - 1];
      const ThreadId t = parent.chosen;
      std::set<ThreadId> candidates = parent.sleep;
      for (ThreadId d : parent.done)
        if (d != t) candidates.insert(d);
      for (ThreadId u : candidates)
        if (u != t && u < parent.pending.size() && !Dependent(parent.pending[u], parent.pending[t]))
          n.sleep.insert(u);
    }
    auto awake = [&n](ThreadId t) { return !n.sleep.count(t); };
    n.chosen = kNoThread;
    if (c.previous != kNoThread && Runnable(n, c.previous) && awake(c.previous)) n.chosen = c.previous;
    for (size_t k = 0; k < n.runnable.size() && n.chosen == kNoThread; ++k)
      if (awake(n.runnable[k])) n.chosen = n.runnable[k];
    if (n.chosen == kNoThread) n.chosen = n.runnable.front();  // all asleep: a redundant run
    n.done.insert(n.chosen);
    path_.resize(i);
    path_.push_back(std::move(n));
    return path_.back().chosen;
  }
  std::string Name() const override { return "explore"; }

 private:
  std::vector<Node>& path_;
  size_t prefix_;
  bool sleep_sets_;
};

}  // namespace

ExploreResult Explorer::Explore(const std::function<bool(Strategy&)>& run) {
  ExploreResult r;
  std::vector<Node> path;
  size_t prefix = 0;
  for (;;) {
    if (r.runs >= max_runs_) {
      r.budget_hit = true;
      return r;
    }
    Follow follow(path, prefix, mode_ == Mode::kDpor);
    const bool failed = run(follow);
    ++r.runs;
    if (failed) {
      r.failed = true;
      for (const Node& n : path) r.failing.Append(n.chosen);
      return r;
    }
    // Choices to try, within the bound.
    auto add = [&](Node& n, ThreadId t) {
      if (n.preemptions_before + Cost(n, t) <= bound_) n.backtrack.insert(t);
    };
    if (mode_ == Mode::kNaive) {
      for (Node& n : path)
        for (ThreadId t : n.runnable) add(n, t);
    } else {
      // For each step i, the latest earlier step j of another thread that conflicts with it:
      // try running i's thread at j (or, if it could not run there, every thread).
      for (size_t i = 0; i < path.size(); ++i) {
        const ThreadId ti = path[i].chosen;
        const SchedulingPoint& pi = path[i].pending[ti];
        for (size_t j = i; j-- > 0;) {
          const ThreadId tj = path[j].chosen;
          if (tj == ti || !Dependent(path[j].pending[tj], pi)) continue;
          if (Runnable(path[j], ti)) {
            add(path[j], ti);
          } else {
            for (ThreadId t : path[j].runnable) add(path[j], t);
          }
          break;
        }
      }
    }
    // The deepest node with a choice left.
    size_t j = path.size();
    ThreadId next = kNoThread;
    while (j-- > 0) {
      for (ThreadId t : path[j].backtrack)
        if (!path[j].done.count(t) && !path[j].sleep.count(t)) {
          next = t;
          break;
        }
      if (next != kNoThread) break;
    }
    if (next == kNoThread) {
      r.exhausted = true;
      return r;
    }
    path[j].done.insert(next);
    path[j].chosen = next;
    path.resize(j + 1);
    prefix = j + 1;
  }
}

}  // namespace rerace::sim
