// tests/tools/truth_engine_test.cc: one true answer from the real-code engine (issue 28): a
// patch is named by its file and content hash wherever it is reported, the recorded locks that
// the real code does not replay are said, a deadlock's entry has no empty fields, and a place in
// Triton is spelled from its package. They run the real Triton code of the environments under
// RERACE_PY_ROOT and skip, saying which, where one is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "rerace/testing/cli.h"
#include "truth_test.h"

namespace {

using rerace::testing::CliRun;
using rerace::testing::Has;
using rerace::testing::Lines;
using rerace::testing::Rerace;
using rerace::testing::SampleTrace;
using rerace::testing::Slurp;
using rerace::testing::Source;
using rerace::testing::truth::Python;
using rerace::testing::truth::TempDir;

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// Three patches: two versions of one file (same name, one comment apart) that deadlock (a lock
// taken and never released), and one that holds (the lock-run fix). Their SHA-256, by
// `sha256sum`, are the constants below: the hash each report prints is the file's.
const std::string kDeadlock =
    "import threading\n"
    "from triton.runtime import autotuner\n"
    "_lock = threading.Lock()\n"
    "_stock = autotuner.Autotuner.run\n"
    "def run(self, *args, **kwargs):\n"
    "    _lock.acquire()  # never released: the second call waits forever\n"
    "    return _stock(self, *args, **kwargs)\n"
    "autotuner.Autotuner.run = run\n";
const std::string kDeadlockSha = "554b4964a58549ae7662ba4f8389de07cc4671e6193b23830da15d9a913b8525";
const std::string kDeadlock2Sha = "19a1a72c5ffb4ee3430e3dc8a16b655b1d9704e5bcf98456d75378a888fce12a";
const std::string kHolds =
    "import threading\n"
    "from triton.runtime import autotuner\n"
    "_lock = threading.Lock()\n"
    "_stock = autotuner.Autotuner.run\n"
    "def run(self, *args, **kwargs):\n"
    "    with _lock:\n"
    "        return _stock(self, *args, **kwargs)\n"
    "autotuner.Autotuner.run = run\n";
const std::string kHoldsSha = "57b29e821b2a0c4d0bab89c2496aa06d5154807949c76e4e1b0c1ba3b8ff3a25";

std::string Deadlock2() {
  std::string s = kDeadlock;
  s.replace(s.find("# never released"), 16, "# (version 2) never released");
  return s;
}

// Defect 2: a patch is named by its file and content hash in the fuzz listing, its JSON, its
// JUnit cases (the hash a property), its saved-failure files (two versions of one file never overwrite each other's)
// and their headers; the engine is "engine python", never "model python" or "fix none".
TEST(Truth, FuzzNamesEachPatchByFileAndHash) {
  std::string skip;
  const std::string py = Python(skip);
  if (py.empty()) GTEST_SKIP() << skip;
  const std::string dir = TempDir("fuzz-patch");
  Write(dir + "/a/my_lock.py", kDeadlock);
  Write(dir + "/b/my_lock.py", Deadlock2());
  const std::string t = SampleTrace("triton-none-h200.rrt");
  struct Case {
    const char* folder;
    std::string sha;
  };
  for (const Case& c : {Case{"a", kDeadlockSha}, Case{"b", kDeadlock2Sha}}) {
    SCOPED_TRACE(c.folder);
    const std::string flags = " --engine python --python-exe " + py + " --patch " + dir + "/" +
                              c.folder + "/my_lock.py --runs 2 ";
    const std::string named = "my_lock.py (sha256 " + c.sha.substr(0, 8) + ")";
    const CliRun f = Rerace("fuzz " + t + flags + "--save-failures " + dir + "/out --junit " + dir +
                            "/" + c.folder + ".xml");
    ASSERT_EQ(f.code, 1) << f.out;
    EXPECT_TRUE(Has(f.out, "(engine python, patch " + named + ", strategy random)")) << f.out;
    EXPECT_FALSE(Has(f.out, "model python")) << f.out;
    EXPECT_FALSE(Has(f.out, "fix none")) << f.out;

    const std::string file =
        dir + "/out/triton-none-h200-my_lock-" + c.sha.substr(0, 8) + "-1.sched";
    const std::string header = Slurp(file);
    ASSERT_FALSE(header.empty()) << file << "\n" << f.out;
    EXPECT_TRUE(Has(header, "# patches: my_lock.py (sha256 " + c.sha + ")")) << header;
    EXPECT_TRUE(Has(header, "# engine: python: ")) << header;
    EXPECT_TRUE(Has(header, "patches " + named)) << header;
    EXPECT_FALSE(Has(header, "# model:")) << header;

    // JUnit names a case by the file alone (its history on a CI page survives an edit of the
    // patch), the hash a property of the case.
    const std::string xml = Slurp(dir + "/" + c.folder + ".xml");
    EXPECT_TRUE(Has(xml, "name=\"patch my_lock.py (2 runs, random)\"")) << xml;
    EXPECT_TRUE(Has(xml, "name=\"patch my_lock.py: deadlock")) << xml;
    EXPECT_TRUE(Has(xml, "<property name=\"sha256 my_lock.py\" value=\"" + c.sha + "\"/>")) << xml;
    EXPECT_FALSE(Has(xml, "fix none")) << xml;

    const std::string json_file = dir + "/" + c.folder + ".json";
    Rerace("fuzz " + t + flags + "--json --shard " + (std::string(c.folder) == "a" ? "0" : "1") +
           "/2 2>/dev/null | cat > " + json_file);  // the engine's lines on stderr left out
    const std::string json = Slurp(json_file);
    EXPECT_TRUE(Has(json, "\"patches\":[{\"file\":\"my_lock.py\",\"sha256\":\"" + c.sha + "\"}]"))
        << json;
    EXPECT_TRUE(Has(json, "\"engine\":\"python\"")) << json;
    EXPECT_FALSE(Has(json, "\"model\":\"python\"")) << json;
  }
  // merge keeps the two versions' results apart.
  const CliRun merged = Rerace("merge " + dir + "/a.json " + dir + "/b.json");
  EXPECT_TRUE(Has(merged.out, kDeadlockSha)) << merged.out;
  EXPECT_TRUE(Has(merged.out, kDeadlock2Sha)) << merged.out;
  EXPECT_TRUE(Has(merged.out, "\"runs\":2,")) << merged.out;  // not one entry of 4 runs
  // The first version's files are still there beside the second's.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/out")) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);
  // A schedule replays only under the patch content that made it.
  const CliRun other = Rerace("replay " + t + " --engine python --python-exe " + py + " --patch " +
                              dir + "/b/my_lock.py --schedule " + dir + "/out/triton-none-h200-my_lock-" +
                              kDeadlockSha.substr(0, 8) + "-1.sched");
  EXPECT_EQ(other.code, 64) << other.out;
  EXPECT_TRUE(Has(other.out, "my_lock.py (sha256 " + kDeadlockSha.substr(0, 8) + ")")) << other.out;
  EXPECT_TRUE(Has(other.out, "my_lock.py (sha256 " + kDeadlock2Sha.substr(0, 8) + ")")) << other.out;
}

// Defect 2: check names the patch in its verdict, its cost line and its JSON, never "fix
// 'none'"; defect 6: the engine's description names the user's file, not its module name.
TEST(Truth, CheckNamesThePatchInVerdictCostAndJson) {
  std::string skip;
  const std::string py = Python(skip);
  if (py.empty()) GTEST_SKIP() << skip;
  const std::string dir = TempDir("check-patch");
  Write(dir + "/my_lock.py", kHolds);
  const std::string cmd = "check " + SampleTrace("triton-none-h200.rrt") +
                          " --engine python --python-exe " + py + " --patch " + dir +
                          "/my_lock.py --bound 1";
  const std::string named = "patch my_lock.py (sha256 " + kHoldsSha.substr(0, 8) + ")";
  const CliRun c = Rerace(cmd);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_TRUE(Has(c.out, "\nverdict: " + named + " holds for ")) << c.out;
  // A patch is real code the model cannot price: the cost line says so, never "with none".
  EXPECT_TRUE(Has(c.out, "\ncost: not priced: a patch file (--patch)")) << c.out;
  EXPECT_TRUE(Has(c.out, "Autotuner.run -> function run (my_lock.py:5)")) << c.out;
  EXPECT_FALSE(Has(c.out, "fix 'none'")) << c.out;
  EXPECT_FALSE(Has(c.out, "with none")) << c.out;
  EXPECT_FALSE(Has(c.out, "rerace_patch_")) << c.out;
  const CliRun j = Rerace(cmd + " --json 2>/dev/null");
  EXPECT_TRUE(Has(j.out, "\"patches\":[{\"file\":\"my_lock.py\",\"sha256\":\"" + kHoldsSha + "\"}]"))
      << j.out;
  EXPECT_TRUE(Has(j.out, "\"engine\":\"python\"")) << j.out;
  EXPECT_TRUE(Has(j.out, "\"fix\":\"" + named + "\"")) << j.out;  // the cost's
}

// A recording that took a lock of its own (rerace_probe.Lock around run): the real code runs
// the patch given in place of the one that took it, and says so, since the model (which keeps
// the recorded lock) would answer "holds" for a fix that fails without the lock. Without a
// patch the engine refuses: its stock code never ran.
TEST(Truth, TheRealCodeSaysTheRecordedLocksAreNotReplayed) {
  std::string skip;
  const std::string py = Python(skip);
  if (py.empty()) GTEST_SKIP() << skip;
  const std::string base = "replay " + SampleTrace("triton-lock-run-h200.rrt") +
                           " --engine python --python-exe " + py + " --seed 1";
  const CliRun with = Rerace(base + " --fix tls-nargs");
  EXPECT_EQ(with.code, 1) << with.out;  // tls-nargs alone fails: the lock is not there
  EXPECT_TRUE(Has(with.out, "recorded locks not replayed: ")) << with.out;
  EXPECT_TRUE(Has(with.out, "triton-lock-run-h200.rrt took autotune lock (its patch's); the real "
                            "code runs the patch given here in its place, not on top of it "
                            "(--engine model keeps the recorded locks)\n"))
      << with.out;
  const CliRun model = Rerace("replay " + SampleTrace("triton-lock-run-h200.rrt") +
                              " --engine model --fix tls-nargs --seed 1");
  EXPECT_FALSE(Has(model.out, "recorded locks not replayed")) << model.out;
  const CliRun bare = Rerace(base);
  EXPECT_EQ(bare.code, 64) << bare.out;
  EXPECT_TRUE(Has(bare.out, "the recorded program took locks of its own (autotune lock)")) << bare.out;
  const CliRun stock = Rerace("replay " + SampleTrace("triton-none-h200.rrt") +
                              " --engine python --python-exe " + py + " --seed 1 --fix tls-nargs");
  EXPECT_FALSE(Has(stock.out, "recorded locks not replayed")) << stock.out;
}

// Defect 6: a deadlock has neither a place nor a thread of its own: its fuzz entry says so
// without empty fields ("deadlock at : ...", "first in  with seed"), each wait on a line of
// its own under it, and its JSON has no empty "thread_name".
TEST(Truth, ADeadlockEntryHasNoEmptyFields) {
  std::string skip;
  const std::string py = Python(skip);
  if (py.empty()) GTEST_SKIP() << skip;
  const std::string dir = TempDir("deadlock");
  Write(dir + "/dead.py", kDeadlock);
  const std::string cmd = "fuzz " + SampleTrace("triton-none-h200.rrt") +
                          " --engine python --python-exe " + py + " --patch " + dir +
                          "/dead.py --runs 2";
  const CliRun f = Rerace(cmd);
  ASSERT_EQ(f.code, 1) << f.out;
  static const std::regex entry(
      R"(^  \[1\] deadlock: Deadlock: every live thread is blocked \([0-9]+ of [0-9]+\), found with seed 1$)");
  size_t entries = 0, waits = 0;
  for (const std::string& line : Lines(f.out)) {
    entries += std::regex_match(line, entry);
    if (Has(line, " waits to lock ")) {
      ++waits;
      EXPECT_EQ(line.rfind("      thread ", 0), 0u) << line;
    }
  }
  EXPECT_EQ(entries, 1u) << f.out;
  EXPECT_GE(waits, 2u) << f.out;
  EXPECT_FALSE(Has(f.out, " at :")) << f.out;
  EXPECT_FALSE(Has(f.out, "first in  ")) << f.out;
  const CliRun j = Rerace(cmd + " --json 2>/dev/null");
  EXPECT_TRUE(Has(j.out, "\"failure\":\"deadlock\",")) << j.out;
  EXPECT_FALSE(Has(j.out, "\"thread_name\":\"\"")) << j.out;
  // The replay of it, as JSON: the engine that ran, no model, no thread name ("" is never
  // written for what is absent: null).
  const CliRun r = Rerace("replay " + SampleTrace("triton-none-h200.rrt") +
                          " --engine python --python-exe " + py + " --patch " + dir +
                          "/dead.py --seed 1 --json 2>/dev/null");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "\"code\":\"deadlock\"")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"engine\":\"python\",\"engine_summary\":\"python: ")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"model\":null,")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"thread\":null,\"thread_name\":null,")) << r.out;
  EXPECT_FALSE(Has(r.out, "\"thread_name\":\"\"")) << r.out;
}

// Defect 6: one place is spelled one way: a Triton found on PYTHONPATH (not site-packages) is
// "triton/runtime/autotuner.py" in the silent findings as in the raised ones.
TEST(Truth, EveryPlaceInTritonIsSpelledFromItsPackage) {
  std::string skip;
  const std::string py = Python(skip);
  if (py.empty()) GTEST_SKIP() << skip;
  const std::string triton = std::string(RERACE_PY_ROOT) + "/triton-3.4.0";
  if (access((triton + "/.complete").c_str(), F_OK) != 0)
    GTEST_SKIP() << "Triton 3.4.0 is not installed at " << triton;
  setenv("PYTHONPATH", triton.c_str(), 1);
  const CliRun r = Rerace("replay " + SampleTrace("triton-none-h200.rrt") +
                          " --engine python --python-exe " + py + " --seed 2");
  unsetenv("PYTHONPATH");
  ASSERT_EQ(r.code, 1) << r.out;
  size_t places = 0;
  for (size_t p = r.out.find("autotuner.py:"); p != std::string::npos;
       p = r.out.find("autotuner.py:", p + 1)) {
    ++places;
    EXPECT_EQ(r.out.compare(p < 15 ? 0 : p - 15, 15, "triton/runtime/"), 0)
        << r.out.substr(p < 40 ? 0 : p - 40, 80);
  }
  EXPECT_GE(places, 2u) << r.out;
}

}  // namespace
