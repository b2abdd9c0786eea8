// tests/sim/explore_programs.h: programs the explorer's tests share (explore_test.cc,
// merged_steps_test.cc, promise_test.cc): small random programs of reads and writes of two
// variables, some under a lock, and a StepMerge that merges points by their label.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rerace/sim/scheduler.h"

namespace rerace::sim::testing {

struct RandomOp {
  int var;
  bool write;
  bool locked;
};
using RandomProgram = std::vector<std::vector<RandomOp>>;

inline RandomProgram MakeRandomProgram(uint64_t seed, int threads, bool locks) {
  RandomProgram prog(static_cast<size_t>(threads));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545F4914F6CDD1Dull;
  };
  for (auto& ops : prog)
    for (int i = 0; i < 2; ++i)
      ops.push_back({static_cast<int>(next() % 2), next() % 2 == 0, locks && next() % 2 == 0});
  return prog;
}

// Merges every point whose label starts with "in-step" into the step before it.
class MergeInStep final : public StepMerge {
 public:
  bool InStep(ThreadId, const SchedulingPoint& p) override {
    return std::string_view(p.label).starts_with("in-step");
  }
};

}  // namespace rerace::sim::testing
