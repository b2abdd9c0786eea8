// The tuner models and their registry (replay/model/src/models/): which model a recording gets, and
// what Triton 3.8's model does differently from 3.6's on the brief's H200 recording. No Python
// needed (model_fidelity_test.cc compares the models with the real code).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "../samples.h"

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
  EXPECT_EQ(names, (std::vector<std::string>{"triton", "triton-3.2", "triton-3.4", "triton-3.8",
                                             "triton-3.9", "fla", "native"}));
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
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.2.0"})", "triton-3.2"},
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.4.0"})", "triton-3.4"},
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.9.0"})", "triton-3.9"},
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.5.1"})", "triton"},  // = 3.6
      {{"triton.runtime.autotuner.Autotuner"}, R"({"triton": "3.10.0"})", "triton"},
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

// Where each release's model says its failures happen: that release's lines (the step table's
// check, tools/scripts/step-table.py, ties the labels to the wheels' sources).
TEST(ReleaseModels, FindingsAreAtTheirReleasesLines) {
  struct Case {
    const char* model;
    bool key_error;           // 3.2-3.6 raise KeyError in the post-hook; 3.8+ skip the copy
    const char* post_hook;    // where the KeyError or missed restore is
    std::set<std::string> wheres;  // every place a finding may be
  };
  const Case cases[] = {
      {"triton-3.2", true, "triton/runtime/autotuner.py:82 in _post_hook",
       {"triton/runtime/autotuner.py:82 in _post_hook", "triton/runtime/autotuner.py:145 in _bench",
        "triton/runtime/autotuner.py:174 in run", "triton/runtime/autotuner.py:190 in run"}},
      {"triton-3.4", true, "triton/runtime/autotuner.py:70 in _post_hook",
       {"triton/runtime/autotuner.py:70 in _post_hook", "triton/runtime/autotuner.py:139 in _bench",
        "triton/runtime/autotuner.py:215 in run", "triton/runtime/autotuner.py:232 in benchmark"}},
      {"triton-3.9", false, "triton/runtime/autotuner.py:93 in _post_hook",
       {"triton/runtime/autotuner.py:93 in _post_hook", "triton/runtime/autotuner.py:94 in _post_hook",
        "triton/runtime/autotuner.py:163 in _bench", "triton/runtime/autotuner.py:236 in run",
        "triton/runtime/autotuner.py:259 in benchmark"}},
  };
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model);
    ReplayOptions o;
    o.model = c.model;
    Replayer rep(p, o);
    std::set<std::string> wheres;
    bool key_error = false;
    for (uint64_t s = 1; s <= 12; ++s) {
      sim::RandomWalk w(s);
      for (const Finding& f : rep.Run(w).findings) {
        wheres.insert(f.where);
        key_error |= f.type == "KeyError";
      }
    }
    EXPECT_EQ(key_error, c.key_error);
    EXPECT_TRUE(wheres.count(c.post_hook));
    for (const std::string& w : wheres) EXPECT_TRUE(c.wheres.count(w)) << w;
  }
}

// BuildProgram reads `cache_results` from the probe's metadata: the H200 recordings say false.
TEST(Triton34Model, TheRecordedCacheResultsIsRead) {
  const Program p = testing::LoadSample("triton-reset-h200.rrt");
  ASSERT_FALSE(p.tuner_meta.empty());
  EXPECT_NE(p.tuner_meta.begin()->second.find("\"cache_results\":false"), std::string::npos);
  EXPECT_TRUE(p.cache_results.empty());
}

// The H200 recording with the tuner's `cache_results` as the probe records it, and (keys > 1)
// its threads split over `keys` tuning keys, without hooks (no KeyError ends a thread before
// its disk write).
Program WithDiskCache(int keys) {
  Program p = testing::LoadSample("triton-none-h200.rrt");
  for (const TunerCall& c : p.calls) p.cache_results.insert(c.tuner);  // as BuildProgram reads it
  for (size_t i = 0; i < p.calls.size(); ++i) {
    p.calls[i].restore_value.clear();
    if (keys > 1) p.calls[i].key += "-" + std::to_string(i % static_cast<size_t>(keys));
  }
  return p;
}

struct DiskRuns {
  size_t duplicates = 0;
  std::set<std::string> codes;
};

DiskRuns RunSeeds(const Program& p, const std::string& model, uint64_t seeds) {
  ReplayOptions o;
  o.model = model;
  Replayer rep(p, o);
  DiskRuns out;
  for (uint64_t s = 1; s <= seeds; ++s) {
    sim::RandomWalk w(s);
    const ReplayResult r = rep.Run(w);
    out.duplicates += r.duplicates.size();
    for (const Finding& f : r.findings) out.codes.insert(f.code);
  }
  return out;
}

// Triton 3.4's check_disk_cache with one tuner per thread (the per-thread-tuner fix) and the
// calls made one at a time (a lock the program takes around them): the tuners share the
// kernel's cache directory, so every thread after the first finds the file the first wrote and
// loads it without benchmarking. Without `cache_results` every thread's tuner benchmarks.
TEST(Triton34Model, ADiskHitSkipsBenchmarking) {
  Program p = WithDiskCache(1);
  for (ThreadProgram& tp : p.threads) {
    std::vector<Op> ops;
    for (const Op& op : tp.ops) {
      Op lock;
      lock.kind = Op::Kind::kLockAcquire;
      lock.lock = 77;
      lock.lock_name = "calls one at a time";
      if (op.kind == Op::Kind::kTunerCall) ops.push_back(lock);
      ops.push_back(op);
      lock.kind = Op::Kind::kLockRelease;
      if (op.kind == Op::Kind::kTunerCall) ops.push_back(lock);
    }
    tp.ops = std::move(ops);
  }
  auto tunings = [](const Program& prog) {
    ReplayOptions o;
    o.model = "triton-3.4";
    o.fix = *ParseFix("per-thread-tuner");
    Replayer rep(prog, o);
    size_t n = 0;
    for (uint64_t s = 1; s <= 12; ++s) {
      sim::RandomWalk w(s);
      for (const DuplicateTuning& d : rep.Run(w).duplicates) n += d.threads;
    }
    return n;
  };
  EXPECT_EQ(tunings(p), 0u);
  p.cache_results.clear();
  const auto workers = std::count_if(p.threads.begin(), p.threads.end(), [](const ThreadProgram& tp) {
    return std::any_of(tp.ops.begin(), tp.ops.end(),
                       [](const Op& op) { return op.kind == Op::Kind::kTunerCall; });
  });
  EXPECT_EQ(tunings(p), 12 * static_cast<size_t>(workers));
}

// Two keys: thread A's cache.put reads the shared self.configs_timings after thread B's
// benchmark() of the other key set it: the file of A's key holds B's timings.
// (Every release from 3.4 has check_disk_cache, and its model the same wrapper.)
TEST(Triton34Model, TheDiskFileCanHoldAnotherKeysTimings) {
  for (const char* model : {"triton-3.4", "triton", "triton-3.8", "triton-3.9"}) {
    SCOPED_TRACE(model);
    const DiskRuns disk = RunSeeds(WithDiskCache(2), model, 24);
    EXPECT_TRUE(disk.codes.count("disk-cache-wrong-timings"));
    Program off = WithDiskCache(2);
    off.cache_results.clear();
    EXPECT_FALSE(RunSeeds(off, model, 24).codes.count("disk-cache-wrong-timings"));
  }
  // 3.2 has no disk cache.
  EXPECT_FALSE(RunSeeds(WithDiskCache(2), "triton-3.2", 24).codes.count("disk-cache-wrong-timings"));
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

namespace rerace::replay {
namespace {

// The brief's recording with every call's y recorded as [4096, N], N by thread: a post-hook that
// restores another thread's copy raises torch's RuntimeError where the shapes differ, and stays
// silent (wrong-restore) where they are the same or were not recorded.
std::set<std::string> RestoreKinds(Program p, const std::function<int64_t(uint32_t)>& cols,
                                   const std::string& model = "triton") {
  for (const ThreadProgram& t : p.threads)
    for (const Op& op : t.ops)
      if (op.kind == Op::Kind::kTunerCall)
        p.calls[op.call].restore_shapes = {{4096, cols(t.thread)}};
  std::set<std::string> out;
  ReplayOptions o;
  o.model = model;
  Replayer rep(p, o);
  for (uint64_t s = 1; s <= 12; ++s) {
    sim::RandomWalk w(s);
    for (const Finding& f : rep.Run(w).findings) {
      out.insert(f.code);
      if (f.code == "restore-shape-mismatch") {
        EXPECT_EQ(f.type, "RuntimeError");
        if (model == "triton") {
          EXPECT_EQ(f.where, "triton/runtime/autotuner.py:74 in _post_hook");
        }
        out.insert(f.message);
      }
    }
  }
  return out;
}

TEST(TunerModels, RestoringACopyOfAnotherShapeRaisesRuntimeError) {
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  const auto two = RestoreKinds(p, [](uint32_t t) { return t % 2 ? 512 : 1024; });
  EXPECT_TRUE(two.count("restore-shape-mismatch"));
  // torch's words (ATen's infer_size), as the H200 raised them (triton-keys2-h200.rrt).
  EXPECT_TRUE(two.count("The size of tensor a (512) must match the size of tensor b (1024) at "
                        "non-singleton dimension 1") ||
              two.count("The size of tensor a (1024) must match the size of tensor b (512) at "
                        "non-singleton dimension 1"));
  const auto one = RestoreKinds(p, [](uint32_t) { return 1024; });
  EXPECT_FALSE(one.count("restore-shape-mismatch"));
  EXPECT_TRUE(one.count("wrong-restore"));
  // [4096, 1] broadcasts into [4096, 1024] silently; [4096, 1024] into [4096, 1] does not fit.
  const auto broadcast = RestoreKinds(p, [](uint32_t t) { return t % 2 ? 1024 : 1; });
  for (const std::string& k : broadcast)
    if (k.rfind("The size", 0) == 0 || k.rfind("output", 0) == 0) {
      EXPECT_EQ(k, "output with shape [4096, 1] doesn't match the broadcast shape [4096, 1024]");
    }
  EXPECT_TRUE(broadcast.count("restore-shape-mismatch"));
  // 3.8 and 3.9 copy each item of restore_copies the same way: the same RuntimeError.
  for (const char* m : {"triton-3.8", "triton-3.9"}) {
    SCOPED_TRACE(m);
    EXPECT_TRUE(RestoreKinds(p, [](uint32_t t) { return t % 2 ? 512 : 1024; }, m)
                    .count("restore-shape-mismatch"));
  }
}

}  // namespace
}  // namespace rerace::replay
