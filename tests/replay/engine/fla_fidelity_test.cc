// The FLA model (`--model fla`, replay/model/src/models/fla.cc) against FLA's real CachedAutotuner
// under the python engine (issue 29, item 4), as model_fidelity_test.cc holds the Triton models
// against their wheels. The brief's H200 recording with its tuner class renamed to FLA's
// (fla.ops.utils.cache.CachedAutotuner: the engine builds the tuner through FLA's real class,
// cache.py imported with rerace's fake torch, docs/ENGINE.md), fla-core 0.5.2 and 0.6.0 from
// build/py, each FLA_CACHE_MODE (FLA reads it when cache.py imports) with an empty
// FLA_CONFIG_DIR, per fix and per switch-point mode, over the same random-walk seeds.
//
// Asserted per case: the same verdict over the seeds (some run has a finding, or none has: for
// the fixes, that is the differential that matters), the same kinds of finding, and for each
// kind both find (but missed-restore, below) the model's file:line among the real code's; in
// the threads cases (40 seeds) also the threads each kind hits. Printed, not asserted: each
// seed's verdict. The same seed is not
// the same interleaving in both (the engine stops at every access of the real code and folds
// GIL windows by its own rules, docs/FIDELITY.md, "Models against the real code"), so a seed's
// verdict, the threads a kind hits and the steps differ between them by sampling alone. missed-restore is placed differently by design: the
// model at the post-hook that skipped the copy (cache.py:362), the engine at the benchmark
// launch that then ran on the unrestored tensor (autotuner.py:150 kernel_call).
//
// The model is FLA's default mode with no config files (it does not seed self.cache, nor read
// it at line 372); with an empty FLA_CONFIG_DIR every other mode adds only that read (or, for
// "always", nothing), so each mode must agree with the same model. With a config file for the
// kernel the real code skips tuning; the model does not (docs/FIDELITY.md says so; not here).
//
// Needs build/py's venv and fla-core-X (tools/scripts/python-envs.sh); skips and says which.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "rerace/replay/model/fix.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/sim/strategy.h"
#include "../samples.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay {
namespace {

constexpr const char* kFlaClass = "fla.ops.utils.cache.CachedAutotuner";
constexpr uint64_t kSeeds = 8;
// Enough seeds for every kind to reach every thread it can in both engines (the recording's
// 8 workers are alike): the threads cases compare the threads each kind hits.
constexpr uint64_t kThreadSeeds = 40;

// The H200 recording as FLA's tuner would have recorded it (the class name the probe writes).
Program FlaProgram() {
  Program p = testing::LoadSample("triton-none-h200.rrt");
  for (TunerCall& c : p.calls) c.tuner_class = kFlaClass;
  for (std::string& c : p.tuner_classes) c = kFlaClass;
  return p;
}

struct Outcome {
  std::vector<bool> failed;                              // per seed
  std::map<std::string, std::set<std::string>> wheres;   // by code: file:line in function
  std::map<std::string, std::set<uint32_t>> threads;     // by code
  std::set<std::string> Codes() const {
    std::set<std::string> s;
    for (const auto& [c, w] : wheres) s.insert(c);
    return s;
  }
};

Outcome Over(Replayer& rep, uint64_t seeds) {
  Outcome o;
  for (uint64_t s = 1; s <= seeds; ++s) {
    sim::RandomWalk w(s);
    const ReplayResult r = rep.Run(w);
    o.failed.push_back(r.failed());
    for (const Finding& f : r.findings) {
      EXPECT_NE(f.code, "internal") << f.words;
      EXPECT_NE(f.code, "exception") << f.type << ": " << f.message << " at " << f.where;
      // The engines name a file differently (fla/ops/utils/cache.py, cache.py).
      o.wheres[f.code].insert(f.where.substr(f.where.rfind('/') + 1));
      o.threads[f.code].insert(f.thread);
    }
  }
  return o;
}

template <typename T>
std::string Join(const std::set<T>& s) {
  std::string out;
  for (const auto& x : s) {
    if (!out.empty()) out += ", ";
    if constexpr (std::is_same_v<T, std::string>)
      out += x;
    else
      out += std::to_string(x);
  }
  return out;
}

std::string Verdicts(const std::vector<bool>& v) {
  std::string s;
  for (bool f : v) s += f ? 'F' : '.';
  return s;
}

struct Case {
  const char* fla;    // fla-core release under build/py/fla-core-X
  const char* mode;   // FLA_CACHE_MODE
  const char* fix;
  const char* steps;  // "free-threaded", or "gil" (the venv's CPython's rules)
  const char* venv = "venv";     // under the py root: venv (CPython 3.11), venv312 (the H200's)
  const char* python = "3.11";   // the venv's CPython, whose GIL table the model takes
  uint64_t seeds = kSeeds;       // kThreadSeeds: the threads each kind hits are compared too
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.fla << " " << c.mode << " " << c.fix << " " << c.steps << " " << c.python << " "
      << c.seeds << " seeds";
}

class FlaModelAgainstRealCode : public ::testing::TestWithParam<Case> {
 protected:
  void TearDown() override {
    unsetenv("PYTHONPATH");
    unsetenv("FLA_CACHE_MODE");
    unsetenv("FLA_CONFIG_DIR");
  }
};

TEST_P(FlaModelAgainstRealCode, SameVerdictsKindsThreadsAndPlaces) {
  const Case c = GetParam();
  // RERACE_PY_ROOT in the environment overrides the build's (another set of environments).
  const char* env_root = std::getenv("RERACE_PY_ROOT");
  const std::string root = env_root != nullptr ? env_root : RERACE_PY_ROOT;
  const std::string python = root + "/" + c.venv + "/bin/python";
  if (root.empty() || access(python.c_str(), X_OK) != 0)
    GTEST_SKIP() << python << " is missing (tools/scripts/python-envs.sh makes it)";
  // FLA's cache.py imports packaging; without it the engine refuses FLA's class in one line.
  if (std::system((python + " -c 'import packaging.version' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << python << " has no packaging, which FLA's cache.py imports "
                 << "(tools/scripts/python-envs.sh installs it)";
  const std::string fla = root + "/fla-core-" + c.fla;
  if (access((fla + "/fla/ops/utils/cache.py").c_str(), F_OK) != 0)
    GTEST_SKIP() << "fla-core " << c.fla << " is not installed at " << fla
                 << " (tools/scripts/python-envs.sh makes it)";
  const std::string empty = ::testing::TempDir() + "/fla-configs-" + std::to_string(getpid());
  std::filesystem::create_directories(empty);
  setenv("PYTHONPATH", fla.c_str(), 1);
  setenv("FLA_CACHE_MODE", c.mode, 1);
  setenv("FLA_CONFIG_DIR", empty.c_str(), 1);
  const Program p = FlaProgram();

  ReplayOptions eo;
  eo.engine = "python";
  eo.python_exe = python;
  eo.python_mode = c.steps;
  auto u = UsePythonFix(c.fix, eo);
  ASSERT_TRUE(u.ok()) << u.error().message;
  Replayer engine(p, eo);
  auto info = engine.StartEngine();
  ASSERT_TRUE(info.ok()) << info.error().message;
  ASSERT_NE(info->find("fla.ops.utils.cache.CachedAutotuner (fla/ops/utils/cache.py)"),
            std::string::npos)
      << *info;
  const Outcome e = Over(engine, c.seeds);

  ReplayOptions mo;
  mo.model = "fla";
  auto f = ParseFix(c.fix);
  ASSERT_TRUE(f.ok()) << c.fix;
  mo.fix = *f;
  mo.python_mode = c.steps;
  if (std::string(c.steps) == "gil") mo.python_version = c.python;
  Replayer model(p, mo);
  const Outcome m = Over(model, c.seeds);

  // One row of docs/FIDELITY.md's table: per seed F (a finding) or . (none), the kinds, and
  // per kind the threads (replay indices) and places, model then real code.
  std::string detail;
  for (const auto& [code, places] : m.wheres)
    detail += " model " + code + " threads {" + Join(m.threads.at(code)) + "} at {" +
              Join(places) + "};";
  for (const auto& [code, places] : e.wheres)
    detail += " real " + code + " threads {" + Join(e.threads.at(code)) + "} at {" +
              Join(places) + "};";
  std::printf("| %s | %s | %s | %s %s | %s {%s} | %s {%s} |%s |\n", c.fla, c.mode, c.fix, c.steps, c.python,
              Verdicts(m.failed).c_str(), Join(m.Codes()).c_str(), Verdicts(e.failed).c_str(),
              Join(e.Codes()).c_str(), detail.c_str());
  const auto fails = [](const std::vector<bool>& v) {
    return std::find(v.begin(), v.end(), true) != v.end();
  };
  EXPECT_EQ(fails(m.failed), fails(e.failed)) << "model " << Verdicts(m.failed) << ", real "
                                              << Verdicts(e.failed) << " (F: a finding)";
  EXPECT_EQ(m.Codes(), e.Codes());
  for (const auto& [code, places] : m.wheres) {
    if (!e.wheres.count(code)) continue;
    if (c.seeds >= kThreadSeeds) {
      EXPECT_EQ(Join(m.threads.at(code)), Join(e.threads.at(code))) << code << ": threads";
    }
    if (code == "missed-restore") continue;
    for (const std::string& w : places)
      EXPECT_TRUE(e.wheres.at(code).count(w))
          << code << " at " << w << " in the model, not in FLA " << c.fla << " (there: "
          << Join(e.wheres.at(code)) << ")";
  }
  std::filesystem::remove_all(empty);
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (const char* fla : {"0.5.2", "0.6.0"}) {
    // Every mode FLA reads, unpatched and with the lock, both step rules.
    for (const char* mode : {"disabled", "default", "always", "strict", "fuzzy", "full"})
      for (const char* fix : {"none", "lock-run"})
        for (const char* steps : {"free-threaded", "gil"}) out.push_back({fla, mode, fix, steps});
    // The other fixes in the default mode and in "full" (restore_matters.py --fla's).
    for (const char* mode : {"disabled", "full"})
      for (const char* fix : {"prewarm", "tls-nargs", "tls-state", "lock-key-event"})
        for (const char* steps : {"free-threaded", "gil"}) out.push_back({fla, mode, fix, steps});
    // The H200's interpreter, CPython 3.12, under the GIL: every fix, default mode and "full".
    for (const char* mode : {"disabled", "full"})
      for (const char* fix : {"none", "lock-run", "prewarm", "tls-nargs", "tls-state", "lock-key-event"})
        out.push_back({fla, mode, fix, "gil", "venv312", "3.12"});
  }
  // The threads each kind hits, over 40 seeds (the failing fixes; one release, the default mode).
  for (const char* fix : {"none", "prewarm", "tls-nargs", "lock-key-event"})
    for (const char* steps : {"free-threaded", "gil"})
      out.push_back({"0.6.0", "disabled", fix, steps, "venv", "3.11", kThreadSeeds});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Releases, FlaModelAgainstRealCode, ::testing::ValuesIn(Cases()),
                         [](const auto& tp) {
                           std::string n = std::string("Fla") + tp.param.fla + "_" +
                                           tp.param.mode + "_" + tp.param.fix + "_" +
                                           tp.param.steps + "_" + tp.param.python +
                                           (tp.param.seeds == kSeeds ? "" : "_threads");
                           for (char& ch : n)
                             if (ch == '.' || ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace rerace::replay
