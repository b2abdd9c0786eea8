// big_trace: writes a large trace that replays (issue 19's memory measure of the streaming
// reader): the synthetic H200 shape (8 threads, one Triton tuner, 12 configs), with, inside
// thread 0's tuner call, N kernel launches and their GPU timings, as a long do_bench would
// record them. The programs replay builds stay small (launches inside a call are not ops);
// reading the events is what costs.
//
//   big_trace OUT.rrt [EVENTS]     EVENTS launch+activity events (default 74,000,000: 1.06 GB,
//                                  just under the reader's default 1024 MiB file limit)
//
// Deterministic: the same arguments give a byte-identical file.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rerace/traces/reader.h"
#include "rerace/traces/synth.h"
#include "rerace/traces/writer.h"

using namespace rerace::traces;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: big_trace OUT.rrt [EVENTS]\n");
    return 64;
  }
  const std::string out = argv[1];
  const uint64_t bulk = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 74'000'000ull;
  const std::string small = out + ".shape.rrt";
  if (auto r = Synthesize(Scenario{}, small); !r) {
    std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return 1;
  }
  auto t = ReadTrace(small);
  std::remove(small.c_str());
  if (!t) {
    std::fprintf(stderr, "%s\n", t.error().message.c_str());
    return 1;
  }
  auto w = TraceWriter::Create(out, t->header);
  if (!w) {
    std::fprintf(stderr, "%s\n", w.error().message.c_str());
    return 1;
  }
  TraceWriter& tw = **w;
  // The same ids as in the small trace: strings, shapes and threads interned in its order.
  for (const std::string& s : t->strings) tw.String(s);
  for (const LaunchShape& sh : t->shapes) tw.Shape(sh);
  for (const Thread& th : t->threads) tw.AddThread(th.os_tid, th.name);
  LaunchShape bench_shape = t->shapes.empty() ? LaunchShape{} : t->shapes.front();
  bench_shape.kernel = tw.String("bench_fill_kernel");
  const uint32_t shape = tw.Shape(bench_shape);
  bool inserted = false;
  uint32_t corr = 1u << 24;  // above the small trace's ids
  auto flush = [&] {
    if (tw.pending_events() >= 65536) (void)tw.Flush();
  };
  for (const Event& e : t->events) {
    if (e.kind == EventKind::kTuner)
      tw.AppendTuner(e.thread, e.cpu_ns, t->tuner_events[e.tuner]);
    else
      tw.Append(e);
    flush();
    if (!inserted && e.kind == EventKind::kTuner && e.thread == 0 &&
        t->tuner_events[e.tuner].kind == TunerKind::kCallBegin) {
      inserted = true;
      for (uint64_t i = 0; i < bulk / 2; ++i) {
        tw.AppendLaunch(0, e.cpu_ns, shape, corr);
        tw.AppendActivity(0, e.cpu_ns, corr, 1'000'000 + i * 1000, 1'000'000 + i * 1000 + 700);
        ++corr;
        flush();
      }
    }
  }
  if (auto r = tw.Finish(t->footer); !r) {
    std::fprintf(stderr, "%s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("wrote %s: %llu events, %llu bytes\n", out.c_str(),
              static_cast<unsigned long long>(tw.events_written()),
              static_cast<unsigned long long>(tw.bytes_written()));
  return 0;
}
