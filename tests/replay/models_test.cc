// The tuner models and their registry (replay/src/models/): which model a recording gets, and
// what Triton 3.8's model does differently from 3.6's on the brief's H200 recording. No Python
// needed (model_fidelity_test.cc compares the models with the real code).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "rerace/replay/replay.h"
#include "rerace/sim/strategy.h"
#include "samples.h"

namespace rerace::replay {
namespace {

// What `seeds` random schedules of `model` found on `p`: finding codes and exception types.
std::set<std::string> KindsOver(const Program& p, const std::string& model, uint64_t seeds) {
  ReplayOptions o;
  o.model = model;
  Replayer rep(p, o);
  std::set<std::string> kinds;
  for (uint64_t s = 1; s <= seeds; ++s) {
    sim::RandomWalk w(s);
    const ReplayResult r = rep.Run(w);
    EXPECT_EQ(r.model, model);
    for (const Finding& f : r.findings) {
      kinds.insert(f.code);
      if (!f.silent) kinds.insert(f.type);
    }
  }
  return kinds;
}

TEST(ModelRegistry, NamesEveryModelOnce) {
  const std::vector<std::string>& names = ModelNames();
  EXPECT_EQ(names, (std::vector<std::string>{"triton", "triton-3.8", "fla", "native"}));
}

TEST(ModelRegistry, ChoosesByTunerClassThenRecordedTritonVersion) {
  struct Case {
    std::vector<std::string> classes;
    std::string meta;  // the probe's metadata of the one tuner, or ""
    std::string model;
  };
  const Case cases[] = {
      {{"triton.runtime.autotuner.Autotuner"}, "", "triton"},
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.6.0"})", "triton"},
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.8.0"})", "triton-3.8"},
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.8.2", "fla": null})", "triton-3.8"},
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": null})", "triton"},
      {{"triton.runtime.autotuner.Autotuner", "fla.ops.utils.cache.CachedAutotuner"},
       R"({"triton": "3.8.0"})", "fla"},
      {{"rerace.kernels.Autotuner"}, "", "native"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model + " for " + c.meta);
    Program p;
    p.tuner_classes = c.classes;
    if (!c.meta.empty()) p.tuner_meta[1] = c.meta;
    ReplayOptions o;
    EXPECT_EQ(Replayer(p, o).ModelName(), c.model);
    o.model = "native";  // --model overrides
    EXPECT_EQ(Replayer(p, o).ModelName(), "native");
    EXPECT_FALSE(UnknownTunerClass(p).has_value());
  }
  Program torch;
  torch.tuner_classes = {"triton.runtime.autotuner.Autotuner", "torch.test"};
  EXPECT_EQ(UnknownTunerClass(torch), "torch.test");
}

// Triton 3.6 raises KeyError: 'y_ptr' at autotuner.py:74 (the H200's failure); 3.8's post-hook
// iterates restore_copies.items() and skips the missing copy: no KeyError, silent corruption.
TEST(Triton38Model, SkipsAMissingCopyWhereTriton36RaisesKeyError) {
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  const std::set<std::string> k36 = KindsOver(p, "triton", 12);
  const std::set<std::string> k38 = KindsOver(p, "triton-3.8", 12);
  EXPECT_TRUE(k36.count("KeyError") && k36.count("in-param-not-in-cache"));
  EXPECT_FALSE(k38.count("KeyError") || k38.count("in-param-not-in-cache"));
  EXPECT_TRUE(k38.count("missed-restore")) << "no missed restore in 12 seeds";
  EXPECT_TRUE(k38.count("wrong-restore")) << "no wrong restore in 12 seeds";
}

TEST(Triton38Model, LabelsAreTriton38Lines) {
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  ReplayOptions o;
  o.model = "triton-3.8";
  Replayer rep(p, o);
  std::set<std::string> wheres;
  for (uint64_t s = 1; s <= 12; ++s) {
    sim::RandomWalk w(s);
    for (const Finding& f : rep.Run(w).findings) wheres.insert(f.where);
  }
  for (const std::string& w : wheres) {
    SCOPED_TRACE(w);
    EXPECT_TRUE(w == "triton/runtime/autotuner.py:78 in _post_hook" ||
                w == "triton/runtime/autotuner.py:79 in _post_hook" ||
                w == "triton/runtime/autotuner.py:148 in _bench" ||
                w == "triton/runtime/autotuner.py:221 in run" ||
                w == "triton/runtime/autotuner.py:244 in benchmark");
  }
  EXPECT_TRUE(wheres.count("triton/runtime/autotuner.py:78 in _post_hook"));
}

}  // namespace
}  // namespace rerace::replay

namespace rerace::replay {
namespace {

// reset_to_zero alone: Triton's _pre_hook (autotuner.py:58-63 of 3.6) still assigns
// `self.restore_copies = {}` (the comprehension over an empty restore_value) on every
// benchmark repetition, a write of a shared field the probe records; rerace's native tuner
// (kernels/src/autotuner.cc PreHook) writes no copies then.
TEST(TunerModels, ResetToZeroAloneStillWritesRestoreCopiesInTriton) {
  Program p = testing::LoadSample("triton-none-h200.rrt");
  for (TunerCall& c : p.calls) {
    c.reset_to_zero = c.restore_value;
    c.restore_value.clear();
  }
  auto copies_races = [&](const std::string& model) {
    ReplayOptions o;
    o.model = model;
    o.detect_races = true;
    Replayer rep(p, o);
    sim::RandomWalk w(1);
    const ReplayResult r = rep.Run(w);
    EXPECT_FALSE(std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) {
      return f.code == "in-param-not-in-cache";  // nothing to restore, no KeyError
    }));
    return std::count_if(r.races.begin(), r.races.end(), [](const sim::Race& x) {
      return x.object_name.find("restore_copies") != std::string::npos;
    });
  };
  EXPECT_GT(copies_races("triton"), 0);
  EXPECT_GT(copies_races("triton-3.8"), 0);
  EXPECT_EQ(copies_races("native"), 0);
}

}  // namespace
}  // namespace rerace::replay
