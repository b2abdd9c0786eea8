// sim/src/explore.cc: depth-first schedule enumeration, naive or DPOR, preemption-bounded.
#include "rerace/sim/explore.h"

#include <algorithm>
#include <barrier>
#include <exception>
#include <map>
#include <memory>
#include <set>
#include <thread>

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
  // Threads whose next step was fully explored from an earlier node, each with every access
  // that step made there (its point and what was merged into it).
  std::map<ThreadId, std::vector<SchedulingPoint>> sleep;
  // Accesses the chosen thread performed inside this step after its point (a StepMerge's
  // merged points): part of the step for dependence.
  std::vector<SchedulingPoint> also;
  // Every access of each thread's step from this node in the runs that chose it before
  // `chosen` (its point, then `also` as that run left it): what a sleeping thread's step does.
  std::map<ThreadId, std::vector<SchedulingPoint>> explored;
};

// The chosen thread's step at `n`, every access of it: its point, then what was merged into it.
std::vector<SchedulingPoint> StepAccesses(const Node& n) {
  std::vector<SchedulingPoint> out;
  out.reserve(1 + n.also.size());
  out.push_back(n.pending[n.chosen]);
  out.insert(out.end(), n.also.begin(), n.also.end());
  return out;
}

// Every access of step `n`: its point, then what was merged into it.
template <typename F>
void ForEachAccess(const Node& n, F&& f) {
  f(n.pending[n.chosen]);
  for (const SchedulingPoint& p : n.also) f(p);
}

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

// Two steps are dependent if any access of one is dependent with any access of the other.
bool Dependent(const std::vector<SchedulingPoint>& a, const std::vector<SchedulingPoint>& b) {
  for (const SchedulingPoint& x : a)
    for (const SchedulingPoint& y : b)
      if (Dependent(x, y)) return true;
  return false;
}

// Follows the path's choices, then runs without preemption; records a node per new step.
// With sleep sets: a thread whose next step was already explored from an earlier node, and
// that nothing since conflicted with, is not chosen again where another choice exists. Steps
// may hold several accesses (a StepMerge's, the real-code engine's GIL steps): a sleeping
// thread's step is compared with each step taken since by every access either made, its own
// as they were when it was explored (it has not moved since, and a step independent of all of
// them cannot change what it does).
class Follow final : public Strategy {
 public:
  Follow(std::vector<Node>& path, size_t prefix, bool sleep_sets)
      : path_(path), prefix_(prefix), sleep_sets_(sleep_sets) {}
  ThreadId Pick(const Choice& c) override {
    const size_t i = c.step;
    if (i < prefix_) {
      path_[i].also.clear();  // the step runs again and reports its merged accesses again
      return path_[i].chosen;
    }
    Node n;
    n.runnable.assign(c.runnable.begin(), c.runnable.end());
    n.pending.assign(c.pending.begin(), c.pending.end());
    n.previous = c.previous;
    n.preemptions_before = i == 0 ? 0 : path_[i - 1].preemptions_before + Cost(path_[i - 1], path_[i - 1].chosen);
    if (sleep_sets_ && i > 0) {
      const Node& parent = path_[i - 1];
      const ThreadId t = parent.chosen;
      const std::vector<SchedulingPoint> step = StepAccesses(parent);  // complete: the step ran
      auto keep = [&](ThreadId u, const std::vector<SchedulingPoint>& its) {
        if (u != t && !n.sleep.count(u) && !Dependent(its, step)) n.sleep.emplace(u, its);
      };
      for (const auto& [u, its] : parent.sleep) keep(u, its);
      for (ThreadId d : parent.done) {
        if (d == t) continue;
        auto e = parent.explored.find(d);
        if (e != parent.explored.end()) keep(d, e->second);
        // A thread done at the parent without an explored step was pruned there asleep: its
        // entry in parent.sleep is the one kept above.
      }
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
  void OnInStep(uint64_t step, ThreadId /*t*/, const SchedulingPoint& p) override {
    if (step < path_.size()) path_[step].also.push_back(p);
  }
  // The prefix's choices are fixed; past it the previous thread goes on while it can run and
  // is awake, and the thread that just ran is never asleep at the next node (Pick's `keep`
  // leaves it out): no preemption past the prefix.
  uint64_t Promised(uint64_t step, ThreadId t) const override {
    uint64_t k = 0;
    for (size_t i = step; i < prefix_; ++i, ++k)
      if (path_[i].chosen != t) return k;
    return UINT64_MAX;
  }
  // The prefix's picks while each can run (a fixed pick that cannot is the divergence Pick
  // reports), then, past the prefix, the thread that took the step before, for good.
  void Plan(uint64_t step, ThreadId t, std::span<const ThreadId> runnable, bool /*changed*/,
            uint64_t max_picks, std::vector<PlannedPicks>& out) const override {
    PlanPrefixThenRun(step, t, runnable, prefix_, [this](uint64_t i) { return path_[i].chosen; },
                      max_picks, out);
  }
  std::string Name() const override { return "explore"; }

 private:
  std::vector<Node>& path_;
  size_t prefix_;
  bool sleep_sets_;
};

// DPOR's analysis of one run (Flanagan & Godefroid 2005, with Abdulla et al.'s source-set
// initials for the case where the racing thread could not run). Happens-before is computed with
// vector clocks over the run: program order, and the order of dependent steps (same object,
// not both reads; lock, unlock and wake steps of a mutex are writes of it). For each step i,
// the latest earlier step j of another thread that is dependent with i and does not happen
// before i's thread reached i is a race: the reversal is scheduled at j. If i's thread could
// run at j, it is added there; otherwise one thread that can start an equivalent reversal (an
// initial of the steps between j and i that do not happen after j, then i) is added, unless
// one already is: that is the source-set condition, which keeps one choice per reversal
// instead of every runnable thread. A wake (a thread resuming after an unlock) is never the
// later step of a race: it cannot happen before the step that caused it.
// The threads whose first step in v = (the steps after j that do not happen after j), then i,
// has no predecessor in v, and that can run at j. Reuses one buffer (single-threaded).
const std::vector<ThreadId>& Initials(const std::vector<Node>& path,
                                      const std::vector<std::vector<uint32_t>>& clock,
                                      const std::vector<uint32_t>& own, size_t j, size_t i) {
  static thread_local std::vector<ThreadId> initials;
  static thread_local std::vector<size_t> kept;
  static thread_local std::vector<bool> seen_thread;
  initials.clear();
  kept.clear();
  seen_thread.assign(path[j].pending.size(), false);
  auto hb = [&](size_t a, size_t b) { return own[a] <= clock[b][path[a].chosen]; };
  for (size_t k = j + 1; k <= i; ++k) {
    if (k != i && hb(j, k)) continue;
    const ThreadId tk = path[k].chosen;
    if (!seen_thread[tk]) {
      seen_thread[tk] = true;
      bool first = true;
      for (size_t q : kept)
        if (hb(q, k)) {
          first = false;
          break;
        }
      if (first && Runnable(path[j], tk)) initials.push_back(tk);
    }
    kept.push_back(k);
  }
  return initials;
}

template <typename Add>
void AddRaceReversals(std::vector<Node>& path, Add&& add, uint64_t& covered_races,
                      uint64_t& cut_races) {
  const size_t n = path.size();
  ThreadId threads = 0;
  for (const Node& node : path) threads = std::max<ThreadId>(threads, static_cast<ThreadId>(node.pending.size()));
  // clock[i]: the vector clock of step i; before[i]: of its thread just before it.
  std::vector<std::vector<uint32_t>> clock(n, std::vector<uint32_t>(threads, 0));
  std::vector<uint32_t> own(n, 0);  // clock[i][chosen]: i's index in its thread
  std::vector<std::vector<uint32_t>> thread_clock(threads, std::vector<uint32_t>(threads, 0));
  struct ObjectClocks {
    std::vector<uint32_t> write, reads;
    // The steps on this object, in order, each with its access of it (a write if the step
    // both reads and writes it).
    std::vector<std::pair<size_t, SchedulingPoint>> steps;
  };
  std::map<uint32_t, ObjectClocks> objects;  // ordered: the same reversals in every build
  auto join = [](std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    if (b.empty()) return;
    for (size_t k = 0; k < a.size(); ++k) a[k] = std::max(a[k], b[k]);
  };
  std::vector<std::vector<uint32_t>> before(n);
  for (size_t i = 0; i < n; ++i) {
    const ThreadId t = path[i].chosen;
    before[i] = thread_clock[t];
    std::vector<uint32_t> c = thread_clock[t];
    c[t] += 1;
    // Every access of the step (its point and the ones merged into it) joins as one step:
    // the step depends on an object if any of its accesses does.
    ForEachAccess(path[i], [&](const SchedulingPoint& a) {
      if (a.object == 0) return;
      ObjectClocks& o = objects[a.object];
      if (o.write.empty()) {
        o.write.assign(threads, 0);
        o.reads.assign(threads, 0);
      }
      join(c, o.write);
      if (!o.steps.empty() && o.steps.back().first == i) {
        if (a.access != Access::kRead) o.steps.back().second = a;  // the step writes it
      } else {
        o.steps.push_back({i, a});
      }
    });
    ForEachAccess(path[i], [&](const SchedulingPoint& a) {
      if (a.object == 0) return;
      ObjectClocks& o = objects[a.object];
      if (a.access == Access::kRead) {
        join(o.reads, c);
      } else {
        join(c, o.reads);
      }
    });
    ForEachAccess(path[i], [&](const SchedulingPoint& a) {
      if (a.object == 0) return;
      ObjectClocks& o = objects[a.object];
      if (o.steps.back().second.access != Access::kRead) {
        o.write = c;
        std::fill(o.reads.begin(), o.reads.end(), 0);
      }
    });
    own[i] = c[t];
    thread_clock[t] = c;
    clock[i] = std::move(c);
  }
  auto happens_before = [&](size_t j, const std::vector<uint32_t>& c) {
    return own[j] <= c[path[j].chosen];
  };
  for (auto& [object, o] : objects) {
    for (size_t a = 0; a < o.steps.size(); ++a) {
      const size_t i = o.steps[a].first;
      const ThreadId ti = path[i].chosen;
      const SchedulingPoint& pi = o.steps[a].second;
      if (pi.access == Access::kWake) continue;
      for (size_t b = a; b-- > 0;) {
        const size_t j = o.steps[b].first;
        const SchedulingPoint& pj = o.steps[b].second;
        const ThreadId tj = path[j].chosen;
        if (tj == ti || !Dependent(pj, pi)) continue;
        if (happens_before(j, before[i])) {
          // Ordered. Every step on the object before a write happens before that write, so
          // nothing earlier can race with i; an earlier read may, if j is a read.
          if (pj.access != Access::kRead) break;
          continue;
        }
        // A race: reverse it unless an initial of v = (steps after j not happening after j),
        // then i, is already to be explored at j (Abdulla et al.'s source-set condition).
        const std::vector<ThreadId>& initials = Initials(path, clock, own, j, i);
        bool covered = false;
        for (ThreadId t : initials)
          covered |= path[j].backtrack.count(t) != 0 || path[j].done.count(t) != 0;
        if (covered) ++covered_races;
        if (!covered) {
          // One initial: awake ones first, then any within the preemption bound. Any choice
          // the bound refuses makes the search differ from the unbounded one: the race is cut.
          bool added = false, refused = false;
          for (int pass = 0; pass < 2 && !added; ++pass)
            for (ThreadId t : initials)
              if (pass == 1 || !path[j].sleep.count(t)) {
                if (add(path[j], t)) {
                  added = true;
                  break;
                }
                refused = true;
              }
          if (initials.empty())
            for (ThreadId t : path[j].runnable)  // i's thread is blocked at j
              refused |= !add(path[j], t);
          if (refused) ++cut_races;
        }
        if (pj.access != Access::kRead) break;  // earlier ones happen before j
      }
    }
  }
}

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
      if (n.preemptions_before + Cost(n, t) > bound_) return false;
      n.backtrack.insert(t);
      return true;
    };
    if (mode_ == Mode::kNaive) {
      for (Node& n : path)
        for (ThreadId t : n.runnable) add(n, t);
    } else {
      AddRaceReversals(path, add, r.pruned, r.cut);
    }
    // The deepest node with a choice left.
    size_t j = path.size();
    ThreadId next = kNoThread;
    while (j-- > 0) {
      for (ThreadId t : path[j].backtrack) {
        if (path[j].done.count(t)) continue;
        if (path[j].sleep.count(t)) {
          ++r.pruned;  // asleep: an equivalent choice was explored from an earlier node
          path[j].done.insert(t);
          continue;
        }
        next = t;
        break;
      }
      if (next != kNoThread) break;
    }
    if (next == kNoThread) {
      r.exhausted = true;
      return r;
    }
    path[j].explored[path[j].chosen] = StepAccesses(path[j]);  // for its sleep later
    path[j].done.insert(next);
    path[j].chosen = next;
    path.resize(j + 1);
    prefix = j + 1;
  }
}

namespace {

// A node of the many-worker search's tree: one step's Node (runnable threads, pending points,
// sleep, backtrack and done sets, the steps explored from it; `chosen` and `also` belong to a
// run's copy of its path, not to the node), and the nodes reached from it, by the choice made.
struct TreeNode {
  Node node;
  TreeNode* parent = nullptr;
  ThreadId via = kNoThread;  // the choice at `parent` that leads here
  size_t depth = 0;
  uint64_t seq = 0;  // the order nodes were made in: the newest branch first among equals
  std::map<ThreadId, std::unique_ptr<TreeNode>> children;
};

bool HasChoiceLeft(const Node& n) {
  for (ThreadId t : n.backtrack)
    if (!n.done.count(t)) return true;
  return false;
}

// Drops the subtrees below `n` with no choice left (no run will pass through them again: a run
// starts at a choice left and goes on past it with nodes of its own); whether `n` has one.
bool Prune(TreeNode& n) {
  bool alive = HasChoiceLeft(n.node);
  for (auto it = n.children.begin(); it != n.children.end();) {
    if (Prune(*it->second)) {
      alive = true;
      ++it;
    } else {
      it = n.children.erase(it);
    }
  }
  return alive;
}

// The node `n` without what belongs to one run through it (`chosen`, `also`) or is copied only
// where it is read (`explored`).
Node StepOnly(const Node& n) {
  Node out;
  out.runnable = n.runnable;
  out.pending = n.pending;
  out.previous = n.previous;
  out.preemptions_before = n.preemptions_before;
  out.backtrack = n.backtrack;
  out.done = n.done;
  out.sleep = n.sleep;
  return out;
}

// One run of a batch: its path (the tree's prefix copied, then the steps the run took past it)
// and the tree nodes of the prefix.
struct Branch {
  std::vector<Node> path;
  std::vector<TreeNode*> nodes;
  size_t prefix = 0;
};

// The run that chooses `t` at `at` (null: the first run): its path is the prefix's nodes, each
// with the choice that leads on, then `t`. Only the last node's explored steps are copied: they
// are all that Follow reads of them (a new node's sleep set).
Branch StartBranch(TreeNode* at, ThreadId t) {
  Branch b;
  for (TreeNode* x = at; x != nullptr; x = x->parent) b.nodes.push_back(x);
  std::reverse(b.nodes.begin(), b.nodes.end());
  b.prefix = b.nodes.size();
  b.path.reserve(b.prefix);
  for (size_t i = 0; i < b.prefix; ++i) {
    const Node& from = b.nodes[i]->node;
    Node copy = StepOnly(from);
    if (i + 1 == b.prefix) copy.explored = from.explored;
    copy.chosen = i + 1 < b.prefix ? b.nodes[i + 1]->via : t;
    b.path.push_back(std::move(copy));
  }
  return b;
}

// The workers of a many-worker search: worker 0 is the caller, 1 to jobs-1 threads that wait
// for each batch. A run's exception is rethrown on the caller's thread once the batch is over.
class Workers {
 public:
  Workers(unsigned jobs, const std::function<void(unsigned, Strategy&)>& run)
      : run_(run), start_(jobs), end_(jobs), errors_(jobs) {
    for (unsigned w = 1; w < jobs; ++w)
      threads_.emplace_back([this, w] {
        for (;;) {
          start_.arrive_and_wait();
          if (stop_) return;
          RunOne(w);
          end_.arrive_and_wait();
        }
      });
  }
  ~Workers() {
    stop_ = true;
    start_.arrive_and_wait();
    for (std::thread& t : threads_) t.join();
  }
  // Runs strategies[w] on worker w, all at once; returns when every run is over.
  void RunBatch(std::vector<std::unique_ptr<Strategy>>& strategies) {
    batch_ = &strategies;
    start_.arrive_and_wait();
    RunOne(0);
    end_.arrive_and_wait();
    for (std::exception_ptr& e : errors_)
      if (e) std::rethrow_exception(std::exchange(e, nullptr));
  }

 private:
  void RunOne(unsigned w) {
    if (w >= batch_->size()) return;
    try {
      run_(w, *(*batch_)[w]);
    } catch (...) {
      errors_[w] = std::current_exception();
    }
  }
  const std::function<void(unsigned, Strategy&)>& run_;
  std::barrier<> start_, end_;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::unique_ptr<Strategy>>* batch_ = nullptr;
  bool stop_ = false;  // written before start_'s phase completes, read after it
  std::vector<std::thread> threads_;
};

}  // namespace

ExploreResult Explorer::Explore(unsigned jobs, const std::function<void(unsigned, Strategy&)>& run,
                                const std::function<bool(unsigned)>& settle) {
  jobs = std::max(jobs, 1u);
  ExploreResult r;
  std::unique_ptr<TreeNode> root;
  uint64_t seq = 0;
  auto add = [&](Node& n, ThreadId t) {
    if (n.preemptions_before + Cost(n, t) > bound_) return false;
    n.backtrack.insert(t);
    return true;
  };
  Workers workers(jobs, run);
  std::vector<Branch> batch;
  batch.push_back(StartBranch(nullptr, kNoThread));  // the first run: no prefix
  for (;;) {
    std::vector<std::unique_ptr<Strategy>> follows;
    for (Branch& b : batch) follows.push_back(std::make_unique<Follow>(b.path, b.prefix, mode_ == Mode::kDpor));
    workers.RunBatch(follows);
    r.runs += batch.size();
    // Each run's new steps become nodes of the tree, and its races are reversed, in start order.
    for (unsigned w = 0; w < batch.size(); ++w) {
      Branch& b = batch[w];
      const bool failed = settle(w);
      if (failed && !r.failed) {
        r.failed = true;
        for (const Node& n : b.path) r.failing.Append(n.chosen);
      }
      if (r.failed) continue;
      std::vector<TreeNode*> nodes = std::move(b.nodes);
      for (size_t i = b.prefix; i < b.path.size(); ++i) {
        auto made = std::make_unique<TreeNode>();
        made->node = StepOnly(b.path[i]);
        made->depth = i;
        made->seq = ++seq;
        TreeNode* raw = made.get();
        if (i == 0) {
          root = std::move(made);
        } else {
          made->parent = nodes[i - 1];
          made->via = b.path[i - 1].chosen;
          nodes[i - 1]->children[made->via] = std::move(made);
        }
        nodes.push_back(raw);
      }
      nodes.resize(std::min(nodes.size(), b.path.size()));
      for (size_t i = 0; i < nodes.size(); ++i) {
        Node& held = nodes[i]->node;
        held.explored[b.path[i].chosen] = StepAccesses(b.path[i]);  // for its sleep later
        b.path[i].backtrack = held.backtrack;  // what the runs settled before this one added
        b.path[i].done = held.done;
      }
      if (mode_ == Mode::kNaive) {
        for (Node& n : b.path)
          for (ThreadId t : n.runnable) add(n, t);
      } else {
        AddRaceReversals(b.path, add, r.pruned, r.cut);
      }
      for (size_t i = 0; i < nodes.size(); ++i)
        nodes[i]->node.backtrack.insert(b.path[i].backtrack.begin(), b.path[i].backtrack.end());
    }
    if (r.failed) return r;
    // The next batch: the deepest choices left, the newest branch's first among nodes of one
    // depth (with one worker, the one path's nodes from the deepest up, as Explore(run) scans).
    batch.clear();
    if (!root || !Prune(*root)) {
      r.exhausted = true;
      return r;
    }
    std::vector<TreeNode*> order;
    std::vector<TreeNode*> stack{root.get()};
    while (!stack.empty()) {
      TreeNode* n = stack.back();
      stack.pop_back();
      order.push_back(n);
      for (auto& [t, c] : n->children) stack.push_back(c.get());
    }
    std::sort(order.begin(), order.end(), [](const TreeNode* a, const TreeNode* b) {
      return a->depth != b->depth ? a->depth > b->depth : a->seq > b->seq;
    });
    // With the budget spent, the search stops at the first choice left (budget_hit) or finds
    // none (exhausted), as Explore(run) does.
    const uint64_t room = std::min<uint64_t>(jobs, max_runs_ - std::min(max_runs_, r.runs));
    bool left = false;
    for (TreeNode* n : order) {
      for (ThreadId t : n->node.backtrack) {
        if (left || (room > 0 && batch.size() >= room)) break;
        if (n->node.done.count(t)) continue;
        if (n->node.sleep.count(t)) {
          ++r.pruned;  // asleep: an equivalent choice was explored from an earlier node
          n->node.done.insert(t);
          continue;
        }
        if (room == 0) {
          left = true;
          break;
        }
        n->node.done.insert(t);
        batch.push_back(StartBranch(n, t));
      }
      if (left || (room > 0 && batch.size() >= room)) break;
    }
    if (left) {
      r.budget_hit = true;
      return r;
    }
    if (batch.empty()) {
      r.exhausted = true;
      return r;
    }
  }
}

}  // namespace rerace::sim
