// libFuzzer harness over trace -> programs -> one small replay: no input may crash, hang or
// build memory out of proportion to its size (make fuzz runs it with -max_len 524288 and
// -rss_limit_mb 1024, so an input that amplifies as the null-strings chunks did is found).
// Seed corpus in tests/fuzz/replay/: sample traces and the amplifying fixtures.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rerace;
  auto t = traces::ParseTrace(std::span<const uint8_t>(data, size), "fuzz");
  if (!t.ok()) return 0;
  auto program = replay::BuildProgram(*t, "fuzz");
  if (!program.ok() || program->calls.empty()) return 0;
  replay::ReplayOptions o;
  o.max_steps = 20'000;  // a small budget: one run stays well under the fuzzer's timeout
  o.reps = 1;
  replay::Replayer rep(*program, o);
  sim::RandomWalk walk(static_cast<uint64_t>(size));
  (void)rep.Run(walk);
  return 0;
}
