// Replay speed on the default synthetic trace (the H200 experiment's shape): schedules per
// second and runs / CPU time to the first KeyError, per strategy. Prints a table; `make bench`
// runs it. CPU time is read from CLOCK_PROCESS_CPUTIME_ID: this is a benchmark, not a replay.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rerace/replay/program.h"
#include "rerace/replay/replay.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/synth.h"

using namespace rerace;

namespace {
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool KeyError(const replay::ReplayResult& r) {
  for (const auto& f : r.findings)
    if (f.code == "in-param-not-in-cache") return true;
  return false;
}

template <typename T>
T Median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main() {
  const std::string path = "/tmp/rerace-replay-bench.rrt";
  if (!traces::Synthesize(traces::Scenario{}, path).ok()) return 1;
  auto trace = traces::ReadTrace(path);
  auto program = replay::BuildProgram(*trace, path);
  std::remove(path.c_str());
  replay::Replayer rep(*program, replay::ReplayOptions{});
  sim::RoundRobin probe(1'000'000);
  const replay::ReplayResult shape = rep.Run(probe);
  const uint64_t k = shape.run.steps;
  std::vector<uint64_t> per_thread;
  for (const auto& t : shape.run.threads) per_thread.push_back(t.steps);

  using Make = std::function<std::unique_ptr<sim::Strategy>(uint64_t)>;
  struct Row {
    const char* name;
    Make make;
  };
  const std::vector<Row> rows = {
      {"random", [](uint64_t s) { return std::make_unique<sim::RandomWalk>(s); }},
      {"pct d=2", [k](uint64_t s) { return std::make_unique<sim::Pct>(s, 2, k); }},
      {"pct d=3", [k](uint64_t s) { return std::make_unique<sim::Pct>(s, 3, k); }},
      {"pos", [](uint64_t s) { return std::make_unique<sim::Pos>(s); }},
      {"surw", [per_thread](uint64_t s) { return std::make_unique<sim::Surw>(s, per_thread); }},
      {"timed", [](uint64_t s) { return std::make_unique<sim::Timed>(s); }},
      {"round-robin", [](uint64_t) { return std::make_unique<sim::RoundRobin>(1); }},
  };
  std::printf("trace: default synth (8 threads, 12 configs, restore_value=['y_ptr']), reps folded "
              "to 1, k=%llu steps\n\n",
              static_cast<unsigned long long>(k));
  std::printf("| strategy | schedules/s | steps/run | runs to first KeyError (median of 100) | "
              "CPU to first KeyError (median) |\n|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    const int n = 3000;
    uint64_t steps = 0;
    const double t0 = CpuSeconds();
    for (int i = 0; i < n; ++i) {
      auto s = row.make(static_cast<uint64_t>(i) + 1);
      steps += rep.Run(*s).run.steps;
    }
    const double per_s = n / (CpuSeconds() - t0);
    std::vector<uint64_t> runs;
    std::vector<double> cpu;
    for (uint64_t start = 0; start < 100; ++start) {
      const double c0 = CpuSeconds();
      uint64_t r = 0;
      bool hit = false;
      while (!hit && r < 10'000) {
        auto s = row.make(start * 100'000 + r + 1);
        hit = KeyError(rep.Run(*s));
        ++r;
      }
      runs.push_back(hit ? r : UINT64_MAX);
      cpu.push_back(CpuSeconds() - c0);
    }
    const uint64_t m = Median(runs);
    std::printf("| %s | %.0f | %llu | %s | %.1f us |\n", row.name, per_s,
                static_cast<unsigned long long>(steps / n),
                m == UINT64_MAX ? "not within 10000" : std::to_string(m).c_str(), Median(cpu) * 1e6);
  }
  return 0;
}
