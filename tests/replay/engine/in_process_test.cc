// Issue 50, item 2: runs that share the engine's process (Replayer::RunInProcess), which puts
// back between runs what a run changed (replay/engine/python/rerace_real/reset.py), give the
// report a fresh fork gives (Replayer::Run), run for run: on bundled recordings with the
// shipped fixes, and with patches that keep state of every kind the reset puts back (module
// dicts and lists, class attributes, closures, a threading.local, a controlled lock's owner,
// sync's names of the primitives a run makes, a random.Random) or cannot put back and must
// notice (a module a run imports, an lru_cache a run fills: the process makes way for a fresh
// one). A campaign in one process counts and keeps what a campaign of forks does, and says
// how many runs it made there and that none of its failures went unconfirmed.
//
// OS threads too (CPython 3.11, and 3.12 with RERACE_ENGINE_THREADS=os).
//
// Needs build/py/venv312 with greenlet and build/py/venv (tools/scripts/python-envs.sh); skips
// and says so without.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/report/report.h"
#include "rerace/replay/search/campaign.h"
#include "rerace/sim/strategy.h"
#include "../samples.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay {
namespace {

std::string Python(const std::string& venv) { return std::string(RERACE_PY_ROOT) + "/" + venv + "/bin/python"; }
bool Exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

std::string TempPatch(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// Every kind of state the reset puts back, each in the finding's message: a missed reset shows
// as another message in a later run than the fork's.
const char* const kStatePatch =
    "import random\n"
    "import threading\n"
    "from triton.runtime import autotuner\n"
    "stock = autotuner.Autotuner.run\n"
    "calls = []\n"
    "seen = {}\n"
    "tls = threading.local()\n"
    "lock = threading.Lock()\n"
    "rng = random.Random(7)\n"
    "class Box:\n"
    "    n = 0\n"
    "def counter():\n"
    "    n = 0\n"
    "    def bump():\n"
    "        nonlocal n\n"
    "        n += 1\n"
    "        return n\n"
    "    return bump\n"
    "bump = counter()\n"
    "def run(self, *a, **k):\n"
    "    calls.append(1)\n"
    "    seen[threading.get_ident()] = seen.get(threading.get_ident(), 0) + 1\n"
    "    Box.n += 1\n"
    "    tls.x = getattr(tls, 'x', 0) + 1\n"
    "    was = lock.locked()\n"
    "    got = lock.acquire(False)\n"
    "    made = threading.Lock()\n"
    "    self.rr_extra = getattr(self, 'rr_extra', 0) + 1\n"
    "    raise RuntimeError('calls %d seen %d box %d bump %d tls %d locked %s got %s made %r "
    "extra %d rng %.6f' % (len(calls), len(seen), Box.n, bump(), tls.x, was, got, made, "
    "self.rr_extra, rng.random()))\n"
    "autotuner.Autotuner.run = run\n";

// What the reset cannot put back and must notice: a run imports a module (later runs in one
// process would find it imported), or fills an lru_cache.
const char* const kImportPatch =
    "import sys\n"
    "from triton.runtime import autotuner\n"
    "stock = autotuner.Autotuner.run\n"
    "def run(self, *a, **k):\n"
    "    fresh = 'colorsys' not in sys.modules\n"
    "    import colorsys  # noqa: F401\n"
    "    if fresh:\n"
    "        raise RuntimeError('the first import of colorsys')\n"
    "    return stock(self, *a, **k)\n"
    "autotuner.Autotuner.run = run\n";

const char* const kCachePatch =
    "import functools\n"
    "from triton.runtime import autotuner\n"
    "stock = autotuner.Autotuner.run\n"
    "@functools.lru_cache(maxsize=None)\n"
    "def first(key):\n"
    "    return True\n"
    "def run(self, *a, **k):\n"
    "    cached = first.cache_info().currsize\n"
    "    first(len(a))\n"
    "    if cached == 0:\n"
    "        raise RuntimeError('the cache was empty')\n"
    "    return stock(self, *a, **k)\n"
    "autotuner.Autotuner.run = run\n";

// A run that deadlocks ends with threads in the middle of the program (holding the patch's
// locks): the process cannot run on, and the next run is a fresh one's.
const char* const kDeadlockPatch =
    "import threading\n"
    "from triton.runtime import autotuner\n"
    "A, B = threading.Lock(), threading.Lock()\n"
    "stock = autotuner.Autotuner.run\n"
    "def run(self, *a, **k):\n"
    "    first, second = (A, B) if threading.current_thread().name.endswith(('0', '2', '4', "
    "'6')) else (B, A)\n"
    "    with first:\n"
    "        with second:\n"
    "            return stock(self, *a, **k)\n"
    "autotuner.Autotuner.run = run\n";

struct Case {
  std::string name, fix, patch;
};

std::vector<Case> Cases() {
  return {{"none", "none", ""},
          {"lock-run", "lock-run", ""},
          {"lock-key-event", "lock-key-event", ""},
          {"tls-nargs", "tls-nargs", ""},
          {"prewarm", "prewarm", ""},
          {"state", "none", TempPatch("rerace_in_process_state.py", kStatePatch)},
          {"import", "none", TempPatch("rerace_in_process_import.py", kImportPatch)},
          {"lru_cache", "none", TempPatch("rerace_in_process_cache.py", kCachePatch)},
          {"deadlock", "none", TempPatch("rerace_in_process_deadlock.py", kDeadlockPatch)}};
}

std::string Report(const ReplayResult& r, const Program& p) {
  return FormatReport(r, p, "") + r.run.schedule.Encode() + "\n";
}

// Each (sample, case) run for seeds 1-8 in the long-lived process, each compared with the same
// seed's fork in between: the forks start from the set-up's state whatever the long-lived
// process did.
void CompareRuns(const std::string& py, const std::vector<std::pair<std::string, Case>>& runs) {
  for (const auto& [sample, c] : runs) {
    SCOPED_TRACE(sample + " " + c.name);
    const Program p = testing::LoadSample(sample);
    ReplayOptions o = testing::EngineOptions(py, "", c.fix);
    if (!c.patch.empty()) o.patches = {c.patch};
    Replayer rep(p, o);
    ASSERT_TRUE(rep.StartEngine().ok());
    ASSERT_TRUE(rep.CanRunInProcess());
    int deadlocks = 0;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      sim::RandomWalk a(seed), b(seed);
      const ReplayResult here = rep.RunInProcess(a);
      const ReplayResult fork = rep.Run(b);
      EXPECT_EQ(Report(here, p), Report(fork, p)) << "seed " << seed;
      for (const Finding& f : here.findings) deadlocks += f.code == "deadlock";
    }
    if (c.name == "deadlock") {
      EXPECT_GT(deadlocks, 0) << "no seed deadlocked: the case tests nothing";
    }
  }
}

std::vector<std::pair<std::string, Case>> OnTheBriefsRecording() {
  std::vector<std::pair<std::string, Case>> runs;
  for (const Case& c : Cases()) runs.push_back({"triton-none-h200.rrt", c});
  return runs;
}

// Greenlets and the sys.monitoring tracer (CPython 3.12): the brief's recording with every
// case; two more (two keys; an imported kernel's own tuner) with a fix that passes and one
// that fails.
TEST(EngineInProcess, EachRunGivesTheReportOfAFreshFork) {
  const std::string py = Python("venv312");
  if (!Exists(py)) GTEST_SKIP() << py << " is missing (tools/scripts/python-envs.sh makes it)";
  unsetenv("PYTHONPATH");
  std::vector<std::pair<std::string, Case>> runs = OnTheBriefsRecording();
  for (const char* sample : {"triton-keys2-h200.rrt", "triton-user-h200.rrt"})
    for (const Case& c : Cases())
      if (c.name == "lock-key-event" || c.name == "tls-nargs") runs.push_back({sample, c});
  CompareRuns(py, runs);
}

// OS threads handing a baton over: CPython 3.11 (the sys.settrace tracer), and 3.12 with
// RERACE_ENGINE_THREADS=os (sys.monitoring). The thread that reads the run's end lets the main
// thread go; a clean run's threads are joined.
TEST(EngineInProcess, OsThreadsGiveTheReportOfAFreshForkToo) {
  int ran = 0;
  for (const char* venv : {"venv", "venv312"}) {
    const std::string py = Python(venv);
    if (!Exists(py)) continue;
    ++ran;
    SCOPED_TRACE(venv);
    unsetenv("PYTHONPATH");
    setenv("RERACE_ENGINE_THREADS", "os", 1);
    CompareRuns(py, OnTheBriefsRecording());
    unsetenv("RERACE_ENGINE_THREADS");
  }
  if (ran == 0) GTEST_SKIP() << "no Python environment under " << RERACE_PY_ROOT;
}

// RERACE_ENGINE_IN_PROCESS=0 turns it off.
TEST(EngineInProcess, TheEnvironmentTurnsItOff) {
  const std::string py = Python("venv312");
  if (!Exists(py)) GTEST_SKIP() << py << " is missing (tools/scripts/python-envs.sh makes it)";
  unsetenv("PYTHONPATH");
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  setenv("RERACE_ENGINE_IN_PROCESS", "0", 1);
  Replayer rep(p, testing::EngineOptions(py, "", "none"));
  const bool started = rep.StartEngine().ok();
  unsetenv("RERACE_ENGINE_IN_PROCESS");
  ASSERT_TRUE(started);
  EXPECT_FALSE(rep.CanRunInProcess());
}

// A campaign in one process keeps what a campaign of forks keeps (each failing run is
// confirmed in a fresh fork, and that run counts), over one job and two.
TEST(EngineInProcess, ACampaignKeepsWhatACampaignOfForksKeeps) {
  const std::string py = Python("venv312");
  if (!Exists(py)) GTEST_SKIP() << py << " is missing (tools/scripts/python-envs.sh makes it)";
  unsetenv("PYTHONPATH");
  const Program p = testing::LoadSample("triton-none-h200.rrt");
  for (const std::string fix : {"lock-run", "tls-nargs"}) {
    SCOPED_TRACE(fix);
    std::string forks;
    for (const bool here : {false, true})
      for (const unsigned jobs : {1u, 2u}) {
        SCOPED_TRACE(std::to_string(jobs) + (here ? " in one process" : " forks"));
        Replayer rep(p, testing::EngineOptions(py, "", fix));
        CampaignOptions o;
        o.runs = 12;
        o.jobs = jobs;
        o.in_process = here;
        auto r = RunCampaign(rep, o);
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_FALSE(r->error.has_value()) << r->error->message;
        if (!here) {
          EXPECT_EQ(r->in_process, 0u);
          if (forks.empty()) forks = testing::DescribeCampaign(*r);
          else EXPECT_EQ(testing::DescribeCampaign(*r), forks);
          continue;
        }
        EXPECT_EQ(testing::DescribeCampaign(*r), forks);
        EXPECT_EQ(r->in_process, 12u);
        EXPECT_EQ(r->confirmed, r->failing);
        EXPECT_EQ(r->unconfirmed, 0u);
      }
  }
}

}  // namespace
}  // namespace rerace::replay
