// Scheduler speed: the raw Boost.Context switch, one scheduling point with 2, 8 and 64
// threads under each strategy, and steps per second. `make bench` runs it.
#include <benchmark/benchmark.h>

#include <boost/context/fiber.hpp>
#include <memory>

#include "rerace/sim/stack_pool.h"
#include "rerace/sim/scheduler.h"
#include "rerace/sim/strategy.h"

namespace ctx = boost::context;
using namespace rerace::sim;

// One round trip: main -> fiber -> main (two switches).
static void BM_RawFiberRoundTrip(benchmark::State& state) {
  bool stop = false;
  ctx::fiber f([&stop](ctx::fiber&& sink) {
    while (!stop) sink = std::move(sink).resume();
    return std::move(sink);
  });
  for (auto _ : state) f = std::move(f).resume();
  stop = true;
  f = std::move(f).resume();
  state.SetLabel("per item: two switches");
}
BENCHMARK(BM_RawFiberRoundTrip);

// N threads each hitting `per_thread` points; reports time per scheduling point (one step:
// thread -> scheduler -> strategy pick -> next thread).
template <typename MakeStrategy>
static void RunPoints(benchmark::State& state, MakeStrategy make) {
  const int threads = static_cast<int>(state.range(0));
  const int per_thread = 200'000 / threads;
  uint64_t steps = 0;
  uint64_t seed = 1;
  StackPool pool;  // shared across runs, as a fuzz campaign shares it
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Strategy> s = make(seed++);
    auto sched = std::make_unique<Scheduler>(*s, Scheduler::Options{}, &pool);
    for (int t = 0; t < threads; ++t) {
      sched->Spawn("t", [&sch = *sched, per_thread] {
        for (int i = 0; i < per_thread; ++i) sch.Point({Access::kYield, 0, "bench"});
      });
    }
    state.ResumeTiming();
    RunResult r = sched->Run();
    steps += r.steps;
    state.PauseTiming();
    sched.reset();
    state.ResumeTiming();
  }
  state.counters["steps/s"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["s/step"] = benchmark::Counter(static_cast<double>(steps),
                                                benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

static void BM_PointRoundRobin(benchmark::State& state) {
  RunPoints(state, [](uint64_t) { return std::make_unique<RoundRobin>(1); });
}
static void BM_PointRandom(benchmark::State& state) {
  RunPoints(state, [](uint64_t seed) { return std::make_unique<RandomWalk>(seed); });
}
static void BM_PointPct(benchmark::State& state) {
  RunPoints(state, [](uint64_t seed) { return std::make_unique<Pct>(seed, 3, 200'000); });
}
static void BM_PointTimed(benchmark::State& state) {
  RunPoints(state, [](uint64_t seed) { return std::make_unique<Timed>(seed); });
}
BENCHMARK(BM_PointRoundRobin)->Arg(2)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PointRandom)->Arg(2)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PointPct)->Arg(2)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PointTimed)->Arg(2)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
