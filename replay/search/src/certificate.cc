// replay/search/src/certificate.cc: certificates over sub-programs (certificate.h): the
// symmetry classes of K-thread combinations and an unbounded DPOR search per class.
#include "rerace/replay/search/certificate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>

#include "rerace/sim/explore.h"

namespace rerace::replay {

namespace {

// DPOR without a preemption bound: no race reversal is refused (sim/explore.h).
constexpr uint32_t kUnbounded = 1'000'000;
// Above this many threads a combination is taken in index order only (no search over its
// orders): still sound, with fewer combinations sharing a class.
constexpr uint32_t kMaxPermutedThreads = 6;

// The config a call's recorded timings select, by the rule of the models and of Triton's
// `min(timings, key=timings.get)` (replay/model/src/models/triton_3_6.cc): the first least
// non-zero time.
int32_t RecordedBest(const TunerCall& c) {
  size_t best = 0;
  for (size_t i = 0; i < c.bench_ns.size(); ++i) {
    if (c.bench_ns[i] != 0 && c.bench_ns[i] < c.bench_ns[best]) best = i;
    if (c.bench_ns[best] == 0) best = i;
  }
  return c.bench_ns.empty() ? -1 : static_cast<int32_t>(best);
}

// Objects shared between threads, named by their first appearance in the serialization.
class Names {
 public:
  uint32_t Of(uint64_t id) { return ids_.emplace(id, static_cast<uint32_t>(ids_.size())).first->second; }
  bool Seen(uint64_t id) const { return ids_.count(id) != 0; }

 private:
  std::map<uint64_t, uint32_t> ids_;
};

// A tuner's metadata without its identity records, whose object ids name no tuner the same way
// twice (the sharing they say is serialized by Canonical, renamed).
std::string WithoutIdentity(const std::string& meta) {
  if (meta.find("\"identity\"") == std::string::npos) return meta;
  nlohmann::json j = nlohmann::json::parse(meta, nullptr, false);
  if (!j.is_object()) return meta;
  j.erase("identity");
  return j.dump();
}

// The sub-program of `order` (thread indices, in this order) as text, with tuners, locks and
// streams renamed by first appearance and everything that is a thread's identity or time
// (names, tids, recorded times and sequence numbers) left out: two orders of two combinations
// give the same text exactly when their sub-programs are the same up to those renamings.
std::string Canonical(const Program& p, const std::vector<uint32_t>& order) {
  Names tuners, locks, streams;
  std::string s;
  for (uint32_t t : order) {
    s += "\n#";
    for (const Op& op : p.threads[t].ops) {
      switch (op.kind) {
        case Op::Kind::kTunerCall: {
          const TunerCall& c = p.calls[op.call];
          const bool first = !tuners.Seen(c.tuner);
          s += fmt::format("C{}", tuners.Of(c.tuner));
          if (first) {
            auto meta = p.tuner_meta.find(c.tuner);
            s += fmt::format("[{}|{}]",
                             meta != p.tuner_meta.end() ? WithoutIdentity(meta->second) : "",
                             p.cache_results.count(c.tuner) != 0);
            // What it shares, its homes renamed as tuners are (ReadSharing's relations).
            if (auto h = p.cache_home.find(c.tuner); h != p.cache_home.end())
              s += fmt::format("[cache C{}]", tuners.Of(h->second));
            if (auto h = p.hooks_home.find(c.tuner); h != p.hooks_home.end())
              s += fmt::format("[hooks C{}]", tuners.Of(h->second));
          }
          s += fmt::format("({}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|s{})", c.tuner_class, c.kernel,
                           c.key, fmt::join(c.configs, ","), fmt::join(c.arg_names, ","),
                           fmt::join(c.restore_value, ","), fmt::join(c.reset_to_zero, ","),
                           c.restore_shapes.size(), fmt::join(c.bench_reps, ","), RecordedBest(c),
                           c.time_budgeted, c.trial_device_sync, c.device, streams.Of(c.stream));
          for (const auto& shape : c.restore_shapes) s += fmt::format("<{}>", fmt::join(shape, ","));
          for (const auto& r : c.reach)
            s += fmt::format("{{{}|{}|{}|{}}}", r.name, r.patch, r.by, r.on_stack);
          break;
        }
        case Op::Kind::kLaunch:
          s += fmt::format("L{},s{}", op.device, streams.Of(op.stream));
          break;
        case Op::Kind::kSync:
          s += fmt::format("S{},{},s{}", static_cast<int>(op.sync), op.device, streams.Of(op.stream));
          break;
        case Op::Kind::kLockAcquire:
          s += fmt::format("A{}", locks.Of(op.lock));
          break;
        case Op::Kind::kLockRelease:
          s += fmt::format("R{}", locks.Of(op.lock));
          break;
      }
      s += ';';
    }
  }
  return s;
}

}  // namespace

std::string SymmetryKey(const Program& p, std::vector<uint32_t> combination) {
  std::sort(combination.begin(), combination.end());
  if (combination.size() > kMaxPermutedThreads) return Canonical(p, combination);
  std::string least;
  bool first = true;
  do {
    std::string s = Canonical(p, combination);
    if (first || s < least) least = std::move(s);
    first = false;
  } while (std::next_permutation(combination.begin(), combination.end()));
  return least;
}

std::vector<uint32_t> WorkerIndices(const Program& p) {
  std::vector<uint32_t> out;
  for (uint32_t t = 0; t < p.threads.size(); ++t)
    if (p.threads[t].worker) out.push_back(t);
  return out;
}

uint64_t Combinations(uint64_t n, uint64_t k) {
  if (k > n) return 0;
  k = std::min(k, n - k);
  uint64_t c = 1;
  for (uint64_t i = 1; i <= k; ++i) {
    // c * (n - k + i) / i is exact (c is C(n - k + i - 1, i - 1)); divide first where it can.
    const uint64_t g = std::gcd(c, i);
    uint64_t next = 0;
    if (__builtin_mul_overflow(c / g, (n - k + i) / (i / g), &next)) return UINT64_MAX;
    c = next;
  }
  return c;
}

std::vector<SubsetClass> SymmetryClasses(const Program& p, uint32_t k) {
  const std::vector<uint32_t> workers = WorkerIndices(p);
  std::vector<SubsetClass> classes;
  if (k == 0 || k > workers.size()) return classes;
  std::map<std::string, size_t> index;
  // Combinations of positions into `workers`, in lexicographic order.
  std::vector<uint32_t> pos(k);
  for (uint32_t i = 0; i < k; ++i) pos[i] = i;
  const auto n = static_cast<uint32_t>(workers.size());
  for (;;) {
    std::vector<uint32_t> combination(k);
    for (uint32_t i = 0; i < k; ++i) combination[i] = workers[pos[i]];
    auto [it, added] = index.emplace(SymmetryKey(p, combination), classes.size());
    if (added) classes.push_back({combination, 0});
    ++classes[it->second].combinations;
    int32_t i = static_cast<int32_t>(k) - 1;
    while (i >= 0 && pos[static_cast<size_t>(i)] == n - k + static_cast<uint32_t>(i)) --i;
    if (i < 0) break;
    ++pos[static_cast<size_t>(i)];
    for (auto j = static_cast<size_t>(i) + 1; j < k; ++j) pos[j] = pos[j - 1] + 1;
  }
  return classes;
}

Certificate Certify(const Program& p, const ReplayOptions& options, uint32_t k, uint64_t max_runs,
                    unsigned jobs, const CheckProgress& progress) {
  Certificate c;
  c.threads = k;
  c.of = static_cast<uint32_t>(WorkerIndices(p).size());
  c.combinations = Combinations(c.of, k);
  const std::vector<SubsetClass> classes = SymmetryClasses(p, k);
  c.classes = classes.size();
  struct Searched {
    bool done = false;
    sim::ExploreResult x;
    std::exception_ptr error;
  };
  std::vector<Searched> searched(classes.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> first_failure{SIZE_MAX};
  std::atomic<uint64_t> runs{0};
  const bool inline_progress = jobs <= 1;
  auto work = [&] {
    for (;;) {
      const size_t i = next.fetch_add(1);
      // A class after a failing one is not needed: the failure is the verdict.
      if (i >= classes.size() || i > first_failure.load()) return;
      Searched& out = searched[i];
      try {
        auto sub = SubProgram(p, classes[i].threads);
        if (!sub) throw std::runtime_error(sub.error().message);
        Replayer rep(*sub, options);
        sim::Explorer e(sim::Explorer::Mode::kDpor, kUnbounded, max_runs);
        out.x = e.Explore([&](sim::Strategy& s) {
          const ReplayResult r = rep.Run(s);
          const uint64_t total = runs.fetch_add(1) + 1;
          if (inline_progress && progress) progress(total, "certificate");
          return Hits(r, options.target);
        });
      } catch (...) {
        out.error = std::current_exception();
      }
      out.done = true;
      if (out.x.failed || out.error) {
        size_t seen = first_failure.load();
        while (i < seen && !first_failure.compare_exchange_weak(seen, i)) {
        }
      }
    }
  };
  if (jobs <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    const unsigned n = std::min<unsigned>(jobs, static_cast<unsigned>(std::max<size_t>(classes.size(), 1)));
    std::atomic<unsigned> running{n};
    for (unsigned j = 0; j < n; ++j)
      pool.emplace_back([&] {
        work();
        running.fetch_sub(1);
      });
    // Progress on the caller's thread, as the workers' runs add up (display only).
    while (running.load() != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (progress) progress(runs.load(), "certificate");
    }
    for (std::thread& t : pool) t.join();
  }
  bool all = true;
  for (size_t i = 0; i < classes.size(); ++i) {
    const Searched& s = searched[i];
    if (!s.done) {
      all = false;
      break;
    }
    if (s.error) std::rethrow_exception(s.error);
    c.runs += s.x.runs;
    if (s.x.failed) {
      ++c.searched;
      c.failing_threads = classes[i].threads;
      auto sub = SubProgram(p, classes[i].threads);
      Replayer rep(*sub, options);
      sim::ScheduleReplay again(s.x.failing);
      c.counterexample = rep.Run(again);
      c.counterexample->strategy = fmt::format("DPOR over threads {}", fmt::join(c.failing_threads, ","));
      break;
    }
    if (s.x.exhausted)
      ++c.searched;
    else if (!c.stopped)
      c.stopped = classes[i];
  }
  c.complete = all && !c.counterexample && !c.stopped && !classes.empty();
  return c;
}

std::string CertificateWords(const Certificate& c) {
  return fmt::format("every interleaving of any {} of the {} recorded threads ({} class{} standing "
                     "for {} combination{}; {} runs)",
                     c.threads, c.of, c.classes, c.classes == 1 ? "" : "es", c.combinations,
                     c.combinations == 1 ? "" : "s", c.runs);
}

std::string CertificateJson(const Certificate& c) {
  return fmt::format("{{\"threads\":{},\"of\":{},\"classes\":{},\"combinations\":{},\"runs\":{},"
                     "\"complete\":{}}}",
                     c.threads, c.of, c.classes, c.combinations, c.runs, c.complete ? "true" : "false");
}

}  // namespace rerace::replay
