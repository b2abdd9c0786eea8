// Test helpers for the bundled traces (traces/samples/): load one as a Program.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/search/campaign.h"
#include "rerace/traces/reader.h"

namespace rerace::replay::testing {

inline std::string SamplePath(const std::string& name) {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/traces/samples/" + name;
}

// The sample, read (complete, no CUPTI drops) and built into programs; test failures otherwise.
inline Program LoadSample(const std::string& name) {
  const std::string path = SamplePath(name);
  auto t = traces::ReadTrace(path);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  EXPECT_FALSE(t->truncated);
  EXPECT_EQ(t->footer.cupti_dropped, 0u);
  auto p = BuildProgram(*t, path);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return *p;
}

// The bundled Triton recordings (traces/samples/triton-*.rrt), sorted: read when the tests are
// listed, so a recording added later is covered after the next build.
inline std::vector<std::string> TritonSampleNames() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(SamplePath("")).parent_path();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".rrt" && e.path().filename().string().rfind("triton-", 0) == 0)
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// What a fuzz report is made of, as text: runs, failing, each failure's seed, first-ness,
// shrunk schedule and finding; the races and the runs' findings.
inline std::string DescribeCampaign(const CampaignResult& r) {
  std::string s = std::to_string(r.runs) + " runs, " + std::to_string(r.failing) + " failing\n";
  for (const CampaignFailure& f : r.failures)
    s += f.signature + " seed " + std::to_string(f.seed) + (f.first ? " first " : " later ") +
         f.finding.thread_name + " " + f.finding.words + " " +
         f.shrunk.result.run.schedule.Encode() + "\n";
  s += RacesJson(r.races) + "\n" + std::to_string(r.findings.size()) + " findings";
  for (const Finding& f : r.findings) s += " " + f.code + "@" + std::to_string(f.step);
  return s;
}

// Options for the real-code engine (--engine python): `python` runs it, in interpreter mode
// `mode` ("" keeps the default, auto), with the shipped fix `fix` (its patch file); a test
// failure for a fix the engine does not ship.
inline ReplayOptions EngineOptions(const std::string& python, const std::string& mode,
                                   const std::string& fix = "none") {
  ReplayOptions o;
  o.engine = "python";
  o.python_exe = python;
  if (!mode.empty()) o.python_mode = mode;
  auto u = UsePythonFix(fix, o);
  EXPECT_TRUE(u.ok()) << fix << ": " << (u.ok() ? "" : u.error().message);
  return o;
}

}  // namespace rerace::replay::testing
