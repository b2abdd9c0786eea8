// rerace/testing/programs.h: what a replay test starts from: the programs of a synthesized
// trace (traces/synth.h) and the options that replay them under a named fix.
//
//   const replay::Program p = SynthesizedProgram(traces::Scenario{}, "default");
//   replay::Replayer rep(p, WithFix("lock-run"));
//
// Failures are test failures (gtest's EXPECT), not errors returned. Header only.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "rerace/replay/model/fix.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/synth.h"

namespace rerace::testing {

// The scenario written to a temporary trace (one file per process and tag: ctest runs each
// test in its own process, several at once), read back and built into programs whose source is
// "synth-TAG"; the file is removed.
inline replay::Program SynthesizedProgram(const traces::Scenario& s, const std::string& tag) {
  const std::string path =
      ::testing::TempDir() + "/replay-" + tag + "-" + std::to_string(getpid()) + ".rrt";
  EXPECT_TRUE(traces::Synthesize(s, path).ok());
  auto t = traces::ReadTrace(path);
  EXPECT_TRUE(t.ok());
  auto p = replay::BuildProgram(*t, "synth-" + tag);
  EXPECT_TRUE(p.ok()) << p.error().message;
  std::remove(path.c_str());
  return *p;
}

// Default replay options with the fix `fix` (replay::ParseFix's words) parsed, every access a
// step: a synthesized program names no interpreter, and the model's default would assume the
// H200's CPython 3.12 with the GIL (replay/model/include/rerace/replay/model/tuner_world_gil.h); these tests pin the
// finest steps.
inline replay::ReplayOptions WithFix(const std::string& fix) {
  replay::ReplayOptions o;
  auto f = replay::ParseFix(fix);
  EXPECT_TRUE(f.ok()) << fix;
  o.fix = *f;
  o.python_mode = "free-threaded";
  return o;
}

}  // namespace rerace::testing
