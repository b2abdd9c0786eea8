// Strategy power and replay speed: on the default synthetic trace, the recorded H200 traces
// (Triton and native, and the native one under lock-key-future, whose failure window is
// narrow) and the classic-bug corpus, per strategy: schedules per second, and the runs and CPU
// time to the first failure (median over 100 seeds). Prints tables; `make bench` runs it from
// the repository root. CPU time is CLOCK_PROCESS_CPUTIME_ID: a benchmark, not a replay.
// RERACE_BENCH_RATES=1: the trace tables' schedules/s and steps/run only (no runs to the first
// failure, no classic corpus), for repeated before/after runs
// (tools/scripts/replay-bench-compare.py).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <cstdlib>
#include <string>
#include <vector>

#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/scheduler.h"
#include "rerace/sim/strategy.h"
#include "rerace/replay/model/fix.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/synth.h"

using namespace rerace;

namespace {
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <typename T>
T Median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool RatesOnly() {
  const char* v = std::getenv("RERACE_BENCH_RATES");
  return v != nullptr && std::string(v) == "1";
}

using Make = std::function<std::unique_ptr<sim::Strategy>(uint64_t)>;
struct Row {
  const char* name;
  Make make;
};

// The strategies, given a program's step count k (PCT) and per-thread steps (SURW).
std::vector<Row> Strategies(uint64_t k, std::vector<uint64_t> per_thread) {
  return {
      {"random", [](uint64_t s) { return std::make_unique<sim::RandomWalk>(s); }},
      {"pct d=2", [k](uint64_t s) { return std::make_unique<sim::Pct>(s, 2, k); }},
      {"pct d=3", [k](uint64_t s) { return std::make_unique<sim::Pct>(s, 3, k); }},
      {"pos", [](uint64_t s) { return std::make_unique<sim::Pos>(s); }},
      {"surw", [per_thread](uint64_t s) { return std::make_unique<sim::Surw>(s, per_thread); }},
      {"timed", [](uint64_t s) { return std::make_unique<sim::Timed>(s); }},
      {"round-robin", [](uint64_t) { return std::make_unique<sim::RoundRobin>(1); }},
  };
}

// One table: per strategy, schedules/s, steps per run, and the median over 100 seeds of the
// runs and CPU time to the first run where `hit` holds (at most `cap` runs per seed).
void Table(const std::string& title, const std::function<sim::RunResult(sim::Strategy&, bool*)>& run,
           uint64_t k, const std::vector<uint64_t>& per_thread, int rate_runs, uint64_t cap) {
  std::printf("\n%s, k=%llu steps\n\n", title.c_str(), static_cast<unsigned long long>(k));
  std::printf("| strategy | schedules/s | steps/run | runs to first failure (median of 100) | "
              "CPU to first failure (median) |\n|---|---|---|---|---|\n");
  for (const Row& row : Strategies(k, per_thread)) {
    uint64_t steps = 0;
    bool hit = false;
    const double t0 = CpuSeconds();
    for (int i = 0; i < rate_runs; ++i) {
      auto s = row.make(static_cast<uint64_t>(i) + 1);
      steps += run(*s, &hit).steps;
    }
    const double per_s = rate_runs / (CpuSeconds() - t0);
    if (RatesOnly()) {
      std::printf("| %s | %.0f | %llu | - | - |\n", row.name, per_s,
                  static_cast<unsigned long long>(steps / static_cast<uint64_t>(rate_runs)));
      continue;
    }
    std::vector<uint64_t> runs;
    std::vector<double> cpu;
    for (uint64_t start = 0; start < 100; ++start) {
      const double c0 = CpuSeconds();
      uint64_t r = 0;
      hit = false;
      while (!hit && r < cap) {
        auto s = row.make(start * 100'000 + r + 1);
        run(*s, &hit);
        ++r;
      }
      runs.push_back(hit ? r : UINT64_MAX);
      cpu.push_back(CpuSeconds() - c0);
    }
    const uint64_t m = Median(runs);
    std::printf("| %s | %.0f | %llu | %s | %s |\n", row.name, per_s,
                static_cast<unsigned long long>(steps / static_cast<uint64_t>(rate_runs)),
                m == UINT64_MAX ? ("not within " + std::to_string(cap)).c_str() : std::to_string(m).c_str(),
                m == UINT64_MAX ? "-" : (std::to_string(static_cast<int>(Median(cpu) * 1e6)) + " us").c_str());
  }
}

// A trace's programs under a fix; a failure is a finding with `code`.
void TraceTable(const std::string& title, const replay::Program& program, const std::string& fix,
                const std::string& code) {
  replay::ReplayOptions o;
  o.fix = *replay::ParseFix(fix);
  replay::Replayer rep(program, o);
  sim::RoundRobin probe(1'000'000);
  const replay::ReplayResult shape = rep.Run(probe);
  std::vector<uint64_t> per_thread;
  for (const auto& t : shape.run.threads) per_thread.push_back(t.steps);
  Table(title, [&](sim::Strategy& s, bool* hit) {
    replay::ReplayResult r = rep.Run(s);
    for (const auto& f : r.findings) *hit |= f.code == code;
    return r.run;
  }, shape.run.steps, per_thread, 1000, 2000);
}

std::optional<replay::Program> LoadSample(const std::string& name) {
  const char* src = std::getenv("RERACE_SOURCE");
  const std::string path = std::string(src ? src : ".") + "/traces/samples/" + name;
  auto t = traces::ReadTrace(path);
  if (!t.ok()) {
    std::fprintf(stderr, "replay_bench: %s (run from the repository root)\n", t.error().message.c_str());
    return std::nullopt;
  }
  auto p = replay::BuildProgram(*t, path);
  if (!p.ok()) return std::nullopt;
  return std::move(*p);
}

}  // namespace

int main() {
  const std::string path = "/tmp/rerace-replay-bench.rrt";
  if (!traces::Synthesize(traces::Scenario{}, path).ok()) return 1;
  auto trace = traces::ReadTrace(path);
  auto program = replay::BuildProgram(*trace, path);
  std::remove(path.c_str());
  TraceTable("trace: default synth (8 threads, 12 configs, restore_value=['y_ptr']), reps folded "
             "to 1, failure: KeyError (in-param-not-in-cache)",
             *program, "none", "in-param-not-in-cache");
  if (auto p = LoadSample("triton-none-h200.rrt"))
    TraceTable("trace: triton-none-h200.rrt (recorded, 9 threads), failure: KeyError", *p, "none",
               "in-param-not-in-cache");
  if (auto p = LoadSample("native-none-h200.rrt")) {
    TraceTable("trace: native-none-h200.rrt (recorded, 8 workers), failure: TunerError "
               "in-param-not-in-cache", *p, "none", "in-param-not-in-cache");
    TraceTable("trace: native-none-h200.rrt under --fix lock-key-future, failure: nargs-none (the "
               "narrow window)", *p, "lock-key-future", "nargs-none");
  }
  // The classic corpus: runs to the bug.
  if (RatesOnly()) return 0;
  for (const sim::ClassicBug& bug : sim::ClassicBugs()) {
    sim::RoundRobin rr(1'000'000);
    sim::Scheduler probe(rr);
    bug.build(probe);
    const sim::RunResult shape = probe.Run();
    std::vector<uint64_t> per_thread;
    for (const auto& t : shape.threads) per_thread.push_back(t.steps);
    Table("classic bug: " + std::string(bug.name), [&](sim::Strategy& st, bool* hit) {
      sim::Scheduler sch(st);
      bug.build(sch);
      sim::RunResult r = sch.Run();
      *hit |= r.failed();
      return r;
    }, shape.steps, per_thread, 1000, 2000);
  }
  return 0;
}
