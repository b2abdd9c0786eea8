// The C++ models against the real code (the python engine, docs/ENGINE.md): the brief's H200
// recording through each release's model (triton-3.2, triton-3.4, triton = 3.6, triton-3.8,
// triton-3.9) and through that release's wheel, over the same seeds, must show the same kinds
// of outcome: KeyError in both for 3.2-3.6; none in either for 3.8 and 3.9, and a silent wrong
// or missed restore in both; and where both find a kind, the model's places are lines where
// the real code finds it. The two engines' steps differ (docs/FIDELITY.md, "Models against
// the real code"), so a seed's schedule is not the same interleaving in both: kinds and
// places are compared, not steps.
//
// Needs the environments of tools/scripts/python-envs.sh; skips and says which is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "rerace/replay/search/check.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "../samples.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay {
namespace {

struct Outcome {
  bool key_error = false;  // a KeyError was raised (3.6's post-hook at line 74)
  bool silent = false;     // a wrong or missed restore
  std::set<std::string> codes;
  std::map<std::string, std::set<std::string>> wheres;  // by code: the file:line in function
};

Outcome Over(Replayer& rep, uint64_t seeds) {
  Outcome o;
  for (uint64_t s = 1; s <= seeds; ++s) {
    sim::RandomWalk w(s);
    const ReplayResult r = rep.Run(w);
    for (const Finding& f : r.findings) {
      EXPECT_NE(f.code, "internal") << f.words;
      EXPECT_NE(f.code, "exception") << f.type << ": " << f.message << " at " << f.where;
      o.key_error |= f.type == "KeyError";
      o.silent |= f.code == "wrong-restore" || f.code == "missed-restore";
      o.codes.insert(f.code);
      // The engines name a file differently (triton/runtime/autotuner.py, autotuner.py).
      o.wheres[f.code].insert(f.where.substr(f.where.rfind('/') + 1));
    }
  }
  return o;
}

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

struct Pair {
  const char* model;   // the C++ model
  const char* triton;  // the wheel the python engine runs ("3.6.0": the venv's own)
  bool key_error;
  // The model finds exactly the real code's kinds. 3.6: the real code also sees a missed
  // restore (a benchmark launch on data a raising post-hook left unrestored), which the
  // model does not track (docs/FIDELITY.md).
  bool same_codes;
};

class ModelAgainstRealCode : public ::testing::TestWithParam<Pair> {};

TEST_P(ModelAgainstRealCode, SameKindsOfOutcomeOnTheH200Recording) {
  const Pair pair = GetParam();
  const std::string root = RERACE_PY_ROOT;
  const std::string python = root + "/venv/bin/python";
  if (root.empty() || access(python.c_str(), X_OK) != 0)
    GTEST_SKIP() << python << " is missing (tools/scripts/python-envs.sh makes it)";
  if (std::string(pair.triton) == "3.6.0") {
    unsetenv("PYTHONPATH");
  } else {
    const std::string dir = root + "/triton-" + pair.triton;
    if (access((dir + "/.complete").c_str(), F_OK) != 0)
      GTEST_SKIP() << "Triton " << pair.triton << " is not installed at " << dir;
    setenv("PYTHONPATH", dir.c_str(), 1);
  }
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  constexpr uint64_t kSeeds = 12;

  ReplayOptions mo;
  mo.model = pair.model;
  Replayer model(p, mo);
  const Outcome m = Over(model, kSeeds);

  Replayer engine(p, testing::EngineOptions(python, ""));
  auto info = engine.StartEngine();
  ASSERT_TRUE(info.ok()) << info.error().message;
  ASSERT_NE(info->find(std::string("\"triton\": \"") + pair.triton + "\""), std::string::npos)
      << *info;
  const Outcome e = Over(engine, kSeeds);
  unsetenv("PYTHONPATH");

  std::printf("%s vs Triton %s, %llu seeds: model {%s}, real code {%s}\n", pair.model,
              pair.triton, static_cast<unsigned long long>(kSeeds), Join(m.codes).c_str(),
              Join(e.codes).c_str());
  EXPECT_EQ(m.key_error, pair.key_error) << "model " << pair.model;
  EXPECT_EQ(e.key_error, pair.key_error) << "Triton " << pair.triton;
  EXPECT_TRUE(m.silent) << "model " << pair.model << ": no wrong or missed restore";
  EXPECT_TRUE(e.silent) << "Triton " << pair.triton << ": no wrong or missed restore";
  if (pair.same_codes) {
    EXPECT_EQ(m.codes, e.codes);
  }
  // Where both find a kind, the model's places are lines where the real code finds it too.
  // (Not missed-restore: the model reports the hook that skipped the copy, the engine the
  // benchmark launch that then ran on the unrestored tensor, kernel_call.)
  for (const auto& [code, places] : m.wheres) {
    if (!e.wheres.count(code) || code == "missed-restore") continue;
    for (const std::string& w : places)
      EXPECT_TRUE(e.wheres.at(code).count(w))
          << code << " at " << w << " in the model, not in Triton " << pair.triton << " (there: "
          << Join(e.wheres.at(code)) << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, ModelAgainstRealCode,
                         ::testing::Values(Pair{"triton-3.2", "3.2.0", true, false},
                                           Pair{"triton-3.4", "3.4.0", true, false},
                                           Pair{"triton", "3.6.0", true, false},
                                           Pair{"triton-3.8", "3.8.0", false, true},
                                           Pair{"triton-3.9", "3.9.0", false, true}),
                         [](const auto& tp) {
                           std::string n = std::string("Triton") + tp.param.triton;
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace rerace::replay
