// Uses the installed headers and libraries: a scheduler run and a trace round trip.
#include <cstdio>

#include "rerace/replay/model/fix.h"
#include "rerace/sim/classic_bugs.h"
#include "rerace/sim/scheduler.h"
#include "rerace/sim/strategy.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/synth.h"

int main() {
  rerace::sim::RoundRobin rr;
  rerace::sim::Scheduler s(rr);
  rerace::sim::FindClassicBug("use-before-init")->build(s);
  const bool found = s.Run().failed();
  if (!rerace::traces::Synthesize(rerace::traces::Scenario{}, "consumer.rrt").ok()) return 2;
  auto t = rerace::traces::ReadTrace("consumer.rrt");
  auto f = rerace::replay::ParseFix("lock-run");
  std::printf("consumer: bug found %d, %zu events, fix %s\n", found, t.ok() ? t->events.size() : 0,
              f.ok() ? f->name.c_str() : "?");
  return found && t.ok() && f.ok() ? 0 : 1;
}
