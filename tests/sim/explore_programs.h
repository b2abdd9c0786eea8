// tests/sim/explore_programs.h: programs the explorer's tests share (explore_test.cc,
// merged_steps_test.cc, promise_test.cc): small random programs of reads and writes of two
// variables, some under a lock, and a StepMerge that merges points by their label.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rerace/sim/scheduler.h"
#include "rerace/sim/sync.h"

namespace rerace::sim::testing {

struct RandomOp {
  int var;
  bool write;
  bool locked;
};
using RandomProgram = std::vector<std::vector<RandomOp>>;

// `threads` threads of `ops` operations each (2: the explorer's tests' programs).
inline RandomProgram MakeRandomProgram(uint64_t seed, int threads, bool locks, int ops_each = 2) {
  RandomProgram prog(static_cast<size_t>(threads));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545F4914F6CDD1Dull;
  };
  for (auto& ops : prog)
    for (int i = 0; i < ops_each; ++i)
      ops.push_back({static_cast<int>(next() % 2), next() % 2 == 0, locks && next() % 2 == 0});
  return prog;
}

// One run of `prog` under `st`: the values each thread's reads saw, then the final values of the
// two variables (the run's outcome, for comparing what two searches reached).
inline std::string RunRandomProgram(const RandomProgram& prog, Strategy& st) {
  Scheduler s(st);
  std::vector<std::unique_ptr<Shared<int>>> vars;
  vars.push_back(std::make_unique<Shared<int>>(s, "a", 0));
  vars.push_back(std::make_unique<Shared<int>>(s, "b", 0));
  Mutex m(s, "m");
  std::vector<std::string> reads(prog.size());
  for (size_t t = 0; t < prog.size(); ++t)
    s.Spawn("t", [&, t] {
      for (size_t i = 0; i < prog[t].size(); ++i) {
        const RandomOp& op = prog[t][i];
        if (op.locked) m.Lock();
        Shared<int>& v = *vars[static_cast<size_t>(op.var)];
        if (op.write) v.Write(static_cast<int>(t * 10 + i + 1));
        else reads[t] += std::to_string(v.Read()) + ",";
        if (op.locked) m.Unlock();
      }
    });
  s.Run();
  std::string out;
  for (const auto& rd : reads) out += rd + "|";
  return out + std::to_string(vars[0]->UnsafeRef()) + "," + std::to_string(vars[1]->UnsafeRef());
}

// Merges every point whose label starts with "in-step" into the step before it.
class MergeInStep final : public StepMerge {
 public:
  bool InStep(ThreadId, const SchedulingPoint& p) override {
    return std::string_view(p.label).starts_with("in-step");
  }
};

}  // namespace rerace::sim::testing
