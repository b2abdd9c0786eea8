// replay/search/src/campaign.cc: fuzzing campaigns over worker threads, merged as one job gives them.
#include "rerace/replay/search/campaign.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "rerace/replay/search/check.h"

namespace rerace::replay {

unsigned AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

constexpr uint64_t kNoRun = UINT64_MAX;

// The rank one job keeps a failure by: a run that fails first with it beats one that does not,
// then the lower run index (runs are in seed order).
struct Rank {
  bool first = false;
  uint64_t run = kNoRun;
  bool operator<(const Rank& o) const {
    return std::make_pair(!first, run) < std::make_pair(!o.first, o.run);
  }
};

struct Kept {
  Rank rank;
  CampaignFailure failure;  // its `shrunk` is made after the merge, for the failures kept there
  ReplayResult run;         // the seed's run, shrunk towards `failure.finding` after the merge
};

// The races and findings of consecutive runs, merged in run order at the end.
struct Chunk {
  uint64_t index = 0;
  std::vector<sim::Race> races;
  std::vector<Finding> findings;
};

struct Worker {
  uint64_t runs = 0, failing = 0;
  uint64_t in_process = 0, confirmed = 0, unconfirmed = 0;
  std::map<std::string, Kept> kept;
  std::vector<Chunk> chunks;
  uint64_t error_run = kNoRun;
  uint64_t error_seed = 0;
  std::optional<Error> error;
};

// What the workers share: the claim counter and when to stop. Nothing else is written by more
// than one thread.
struct Shared {
  const CampaignOptions* o = nullptr;
  std::optional<StepShape> shape;
  uint64_t chunk_runs = 1;
  std::chrono::steady_clock::time_point start;
  std::atomic<uint64_t> next_chunk{0};
  std::atomic<uint64_t> stop_at{kNoRun};  // the lowest run index that ended in an error
  std::atomic<bool> time_up{false};
  std::atomic<uint64_t> runs{0}, failing{0}, distinct{0};
};

Result<std::unique_ptr<sim::Strategy>> StrategyFor(const Shared& s, uint64_t seed) {
  sim::StrategySpec spec = s.o->strategy;
  if (s.shape) {
    spec.pct_steps = s.shape->steps;
    spec.surw_steps = s.shape->per_thread;
  }
  return sim::MakeStrategy(spec, seed);
}

void LowerStop(Shared& s, uint64_t run) {
  uint64_t now = s.stop_at.load();
  while (run < now && !s.stop_at.compare_exchange_weak(now, run)) {
  }
}

void Fail(Shared& s, Worker& w, uint64_t run, uint64_t seed, Error e) {
  if (run < w.error_run) {
    w.error_run = run;
    w.error_seed = seed;
    w.error = std::move(e);
  }
  LowerStop(s, run);
}

// One run: counts it, and keeps each of its distinct failures that ranks before what this
// worker kept for that signature, with the run (shrunk once the workers' failures are merged:
// ShrinkTo is deterministic given the seed's run, so it does not matter which job shrinks it,
// and a failure that a better seed replaces later is never shrunk).
void Record(Shared& s, Worker& w, Chunk& chunk, uint64_t run, uint64_t seed,
            const ReplayResult& r) {
  const CampaignOptions& o = *s.o;
  if (o.races) {
    MergeRaces(chunk.races, r.races);
    chunk.findings.insert(chunk.findings.end(), r.findings.begin(), r.findings.end());
  }
  if (!Hits(r, o.target)) return;
  ++w.failing;
  s.failing.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::string> seen;  // a signature counts once per run: its first finding
  for (const Finding& f : r.findings) {
    if (!Matches(f, o.target)) continue;
    std::string sig = f.where.empty() ? f.code : f.code + " at " + f.where;  // a deadlock has no place
    if (std::find(seen.begin(), seen.end(), sig) != seen.end()) continue;
    seen.push_back(sig);
    const Rank rank{&f == &r.findings.front(), run};
    auto it = w.kept.find(sig);
    if (it != w.kept.end() && !(rank < it->second.rank)) continue;
    Kept k;
    k.rank = rank;
    k.failure.signature = sig;
    k.failure.seed = seed;
    k.failure.first = rank.first;
    k.failure.finding = f;
    k.run = r;
    if (it == w.kept.end()) {
      w.kept.emplace(std::move(sig), std::move(k));
      uint64_t d = s.distinct.load();
      while (w.kept.size() > d && !s.distinct.compare_exchange_weak(d, w.kept.size())) {
      }
    } else {
      it->second = std::move(k);
    }
  }
}

// Under a time budget (--time), the share of it the runs take; shrinking has the rest.
constexpr double kRunsShare = 0.8;

// Whether two runs of one schedule found the same: each finding's kind, place, thread and step.
bool SameFindings(const ReplayResult& a, const ReplayResult& b) {
  if (a.findings.size() != b.findings.size()) return false;
  for (size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& x = a.findings[i];
    const Finding& y = b.findings[i];
    if (x.code != y.code || x.where != y.where || x.thread != y.thread || x.step != y.step ||
        x.message != y.message || x.words != y.words)
      return false;
  }
  return true;
}

void Work(Shared& s, Worker& w, Replayer& rep, const std::function<void()>& tick) {
  const CampaignOptions& o = *s.o;
  const bool timed = o.seconds > 0;
  const bool here = o.in_process && !o.races && rep.CanRunInProcess();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - s.start).count();
  };
  for (;;) {
    const uint64_t c = s.next_chunk.fetch_add(1);
    const uint64_t begin = c * s.chunk_runs;
    if ((!timed && begin >= o.runs) || begin > s.stop_at.load() || s.time_up.load()) return;
    const uint64_t end = timed ? begin + s.chunk_runs : std::min(o.runs, begin + s.chunk_runs);
    Chunk chunk;
    chunk.index = c;
    for (uint64_t i = begin; i < end && i <= s.stop_at.load(); ++i) {
      // The runs take the first kRunsShare of a time budget; shrinking what they found, the rest.
      if (timed && i > 0 && (s.time_up.load() || elapsed() >= kRunsShare * o.seconds)) {
        s.time_up.store(true);
        break;
      }
      const uint64_t seed = o.first_seed + o.offset + i * o.stride;
      auto strategy = StrategyFor(s, seed);
      if (!strategy) {
        Fail(s, w, i, seed, strategy.error());
        break;
      }
      ReplayResult r = here ? rep.RunInProcess(**strategy) : rep.Run(**strategy);
      if (here) {
        ++w.in_process;
        if (Hits(r, o.target)) {
          // Confirmed, or not, by the same schedule in a fresh fork: that run is the one that
          // counts (a strategy is a function of its seed). A run that is no failure counts
          // for nothing but its number (`races` is off).
          auto again = StrategyFor(s, seed);
          if (!again) {
            Fail(s, w, i, seed, again.error());
            break;
          }
          ReplayResult fresh = rep.Run(**again);
          ++(SameFindings(r, fresh) ? w.confirmed : w.unconfirmed);
          r = std::move(fresh);
        }
      }
      ++w.runs;
      s.runs.fetch_add(1, std::memory_order_relaxed);
      if (auto e = RunError(r)) {
        Fail(s, w, i, seed, *e);
        break;
      }
      Record(s, w, chunk, i, seed, r);
      if (tick) tick();
    }
    w.chunks.push_back(std::move(chunk));
  }
}

}  // namespace

Result<CampaignResult> RunCampaign(Replayer& replayer, const CampaignOptions& o,
                                   const std::function<void(const CampaignProgress&)>& progress) {
  Shared s;
  s.o = &o;
  s.start = o.start;
  const std::string& name = o.strategy.name;
  // PCT's k and SURW's weights: measured once, before any worker runs (one job measures it at
  // its first run; the measure does not depend on when).
  if (name == "pct" || name == "surw" || name == "portfolio") s.shape = MeasureShape(replayer);
  if (auto check = StrategyFor(s, o.first_seed + o.offset); !check) return check.error();
  unsigned jobs = std::max(1u, o.jobs);
  if (o.seconds <= 0) jobs = static_cast<unsigned>(std::clamp<uint64_t>(o.runs, 1, jobs));
  // Chunks small enough to share the runs out evenly, large enough that claiming one costs
  // nothing next to its runs. The results do not depend on the size.
  s.chunk_runs = o.seconds > 0 ? 16 : std::clamp<uint64_t>(o.runs / (uint64_t{jobs} * 8), 1, 64);

  std::vector<Worker> workers(jobs);
  std::vector<std::exception_ptr> thrown(jobs);
  std::vector<std::optional<Error>> not_started(jobs);
  CampaignResult out;
  std::map<std::string, Kept> kept;
  // The workers' failures merged (below), then shrunk: each kept failure by one job, claimed
  // in turn, on that job's Replayer (its engine).
  std::vector<Kept*> to_shrink;
  std::atomic<size_t> next_shrink{0};
  auto shrink = [&](Replayer& rep) {
    for (size_t i = next_shrink.fetch_add(1); i < to_shrink.size(); i = next_shrink.fetch_add(1)) {
      Kept& k = *to_shrink[i];
      // Under a time budget, shrinking counts against it too: a failure the budget leaves
      // unshrunk keeps its seed's run (and says so).
      std::function<bool()> stop;
      if (o.seconds > 0)
        stop = [&] {
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - o.start)
                     .count() >= o.seconds;
        };
      k.failure.shrunk = ShrinkTo(rep, k.run, k.failure.finding, stop);
    }
  };
  auto merge = [&]() noexcept {
    bool failed = false;
    for (unsigned j = 0; j < jobs; ++j) failed |= thrown[j] != nullptr || not_started[j].has_value();
    if (failed) return;  // the campaign's result is that error: nothing to shrink
    try {
      uint64_t error_run = kNoRun;
      std::vector<Chunk> chunks;
      for (Worker& w : workers) {
        out.runs += w.runs;
        out.failing += w.failing;
        out.in_process += w.in_process;
        out.confirmed += w.confirmed;
        out.unconfirmed += w.unconfirmed;
        if (w.error && w.error_run < error_run) {
          error_run = w.error_run;
          out.error = w.error;
          out.error_seed = w.error_seed;
        }
        for (auto& [sig, k] : w.kept) {
          auto it = kept.find(sig);
          if (it == kept.end())
            kept.emplace(sig, std::move(k));
          else if (k.rank < it->second.rank)
            it->second = std::move(k);
        }
        for (Chunk& c : w.chunks) chunks.push_back(std::move(c));
      }
      std::sort(chunks.begin(), chunks.end(),
                [](const Chunk& a, const Chunk& b) { return a.index < b.index; });
      for (const Chunk& c : chunks) {
        MergeRaces(out.races, c.races);
        out.findings.insert(out.findings.end(), c.findings.begin(), c.findings.end());
      }
      for (auto& [sig, k] : kept) to_shrink.push_back(&k);
    } catch (...) {
      thrown[0] = std::current_exception();
    }
  };
  // Every job arrives here after its runs, whatever happened to it; the merge runs once, before
  // any is let on to shrink.
  std::barrier merged(static_cast<std::ptrdiff_t>(jobs), merge);
  std::vector<std::thread> threads;
  threads.reserve(jobs - 1);
  for (unsigned j = 1; j < jobs; ++j)
    threads.emplace_back([&, j] {
      // Its own Replayer, and so its own engine (python: a Python process of its own, started
      // from this thread, which must outlive it: python_engine.h), so that the jobs' runs
      // never share one.
      std::optional<Replayer> own;
      try {
        own.emplace(replayer.program(), replayer.options());
        if (auto started = own->StartEngine(); !started) {
          not_started[j] = started.error();
          LowerStop(s, 0);
        } else {
          Work(s, workers[j], *own, {});
        }
      } catch (...) {
        thrown[j] = std::current_exception();
        LowerStop(s, 0);  // stop the others: this campaign cannot give one job's report
      }
      merged.arrive_and_wait();
      if (!own || not_started[j]) return;
      try {
        shrink(*own);
      } catch (...) {
        thrown[j] = std::current_exception();
        next_shrink.store(to_shrink.size());
      }
    });
  auto last = std::chrono::steady_clock::now();
  std::function<void()> tick;
  if (progress)
    tick = [&] {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(250)) return;
      last = now;
      progress({s.runs.load(), s.failing.load(), s.distinct.load(), o.seconds > 0 ? 0 : o.runs});
    };
  try {
    Work(s, workers[0], replayer, tick);
  } catch (...) {
    thrown[0] = std::current_exception();
    LowerStop(s, 0);
  }
  merged.arrive_and_wait();
  try {
    shrink(replayer);
  } catch (...) {
    thrown[0] = std::current_exception();
    next_shrink.store(to_shrink.size());
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : thrown)
    if (e) std::rethrow_exception(e);
  for (const std::optional<Error>& e : not_started)
    if (e) return *e;

  for (auto& [sig, k] : kept) out.failures.push_back(std::move(k.failure));
  return out;
}

}  // namespace rerace::replay
