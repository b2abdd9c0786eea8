// rerace/testing/rewrite.h: a bundled sample rewritten with each tuner call's detail edited
// (the probe's JSON), for tests of what a recording says (hostile metadata, recorded reach).
//
//   RewriteSample("triton-none-h200.rrt", out, [](std::string d) { return d; });
//
// Test failures (gtest) when the sample cannot be read or the copy written.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "rerace/traces/reader.h"
#include "rerace/traces/writer.h"

namespace rerace::testing {

// `sample` written to `out` with `edit` applied to each tuner call's detail (the probe's JSON).
// `edit_string`, when given, is applied to each string of the trace (a tuner class's name).
inline void RewriteSample(const std::string& sample, const std::string& out,
                          const std::function<std::string(std::string)>& edit,
                          const std::function<std::string(std::string)>& edit_string = {}) {
  const char* src = std::getenv("RERACE_SOURCE");  // the source tree (ctest sets it)
  auto t = traces::ReadTrace(std::string(src ? src : ".") + "/traces/samples/" + sample);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto w = traces::TraceWriter::Create(out, t->header);
  ASSERT_TRUE(w.ok()) << w.error().message;
  traces::TraceWriter& tw = **w;
  std::vector<uint32_t> sid, shid;
  for (const std::string& s : t->strings) sid.push_back(tw.String(edit_string ? edit_string(s) : s));
  for (traces::LaunchShape sh : t->shapes) {
    sh.kernel = sid[sh.kernel];
    shid.push_back(tw.Shape(sh));
  }
  for (const traces::Thread& th : t->threads) tw.AddThread(th.os_tid, th.name);
  size_t n = 0;
  for (traces::Event e : t->events) {
    if (e.kind == traces::EventKind::kTuner) {
      traces::TunerEvent te = t->tuner_events[e.tuner];
      te.tuner_class = sid[te.tuner_class];
      te.kernel = sid[te.kernel];
      if (te.kind == traces::TunerKind::kCallBegin) te.detail = edit(te.detail);
      tw.AppendTuner(e.thread, e.cpu_ns, std::move(te));
    } else {
      if (e.kind == traces::EventKind::kLaunch) e.shape = shid[e.shape];
      if (e.kind == traces::EventKind::kLock || e.kind == traces::EventKind::kNvtx) e.text = sid[e.text];
      tw.Append(e);
    }
    if (++n % 4096 == 0) {
      ASSERT_TRUE(tw.Flush().ok());
    }
  }
  ASSERT_TRUE(tw.Finish({}).ok());
}

}  // namespace rerace::testing
