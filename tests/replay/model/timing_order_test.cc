// The order a recording's timing shows (model/program.h SerialCalls, OrderFromTiming): a
// recording holds none of the program's own synchronization, so calls it ordered replay as
// concurrent unless --order-from-timing keeps them in their recorded order.
#include <gtest/gtest.h>

#include "../samples.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/search/check.h"
#include "rerace/testing/programs.h"

namespace rerace::replay {
namespace {

using testing::LoadSample;

// The serial prewarm (each thread's first call ordered by the program's Events, then the
// threads' calls at once): without its order the stock tuner fails in the replay, as no GPU
// run of it did; with the order its timing shows, it holds.
TEST(TimingOrder, APrewarmOrderedByTheProgramHoldsOnlyWithItsRecordedOrder) {
  Program p = LoadSample("triton-prewarm-patched-h200.rrt");
  ASSERT_FALSE(SerialCalls(p).empty());
  ReplayOptions o = rerace::testing::WithFix("none");
  o.python_mode = "gil";
  o.python_version = "3.12";
  const BoundedVerdict without = CheckFixBounded(p, o, 1, 20'000, false);
  EXPECT_FALSE(without.verdict.holds);
  EXPECT_EQ(OrderFromTiming(p), SerialCalls(p).size());
  const BoundedVerdict with = CheckFixBounded(p, o, 1, 20'000, false);
  EXPECT_TRUE(with.verdict.holds);
  EXPECT_TRUE(with.exhausted);
}

// Calls that all overlapped (the brief's eight threads released by a barrier) have no order.
TEST(TimingOrder, CallsThatOverlappedHaveNone) {
  EXPECT_TRUE(SerialCalls(LoadSample("triton-none-h200.rrt")).empty());
}

// A sub-program keeps the order among its own calls, renumbered, and drops the rest.
TEST(TimingOrder, ASubProgramKeepsTheOrderAmongItsCalls) {
  Program p = LoadSample("triton-prewarm-patched-h200.rrt");
  OrderFromTiming(p);
  auto sub = SubProgram(p, {1, 2});
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  ASSERT_EQ(sub->call_after.size(), sub->calls.size());
  size_t edges = 0;
  for (const auto& before : sub->call_after) {
    edges += before.size();
    for (uint32_t b : before) EXPECT_LT(b, sub->calls.size());
  }
  EXPECT_GT(edges, 0u);
  Program none = p;
  none.call_after.clear();
  auto plain = SubProgram(none, {1, 2});
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->call_after.empty());
}

}  // namespace
}  // namespace rerace::replay
