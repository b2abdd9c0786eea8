// One true answer (issue 28): every line a user reads is right, whichever engine ran. Each
// test names the defect of the issue it covers; the python-engine tests run the real Triton
// code of the environments under RERACE_PY_ROOT (tools/scripts/python-envs.sh) and skip,
// saying which, where one is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "rerace/replay/report/timeline.h"
#include "rerace/testing/cli.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace {

using rerace::testing::CliRun;
using rerace::testing::Has;
using rerace::testing::Lines;
using rerace::testing::Rerace;
using rerace::testing::SampleTrace;
using rerace::testing::Slurp;
using rerace::testing::Source;

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/truth-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// The venv's python, or "" (and `skip` says why).
std::string Python(std::string& skip) {
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0) {
    skip = exe + " is missing (tools/scripts/python-envs.sh makes it)";
    return "";
  }
  return exe;
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
// JUnit names, its saved-failure files (two versions of one file never overwrite each other's)
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

    const std::string xml = Slurp(dir + "/" + c.folder + ".xml");
    EXPECT_TRUE(Has(xml, "name=\"patch " + named + " (2 runs, random)\"")) << xml;
    EXPECT_TRUE(Has(xml, "name=\"patch " + named + ": deadlock\"")) << xml;
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
  // The replay of it, as JSON: the engine that ran, no model, no empty thread name.
  const CliRun r = Rerace("replay " + SampleTrace("triton-none-h200.rrt") +
                          " --engine python --python-exe " + py + " --patch " + dir +
                          "/dead.py --seed 1 --json 2>/dev/null");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "\"code\":\"deadlock\"")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"engine\":\"python\",\"engine_summary\":\"python: ")) << r.out;
  EXPECT_FALSE(Has(r.out, "\"model\":")) << r.out;
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

// Defect 6: internal names stay inside: the recorded comparison says what it found in words.
TEST(Truth, TheRecordedComparisonHasNoInternalWords) {
  const CliRun r = Rerace("replay " + SampleTrace("triton-none-h200.rrt") + " --recorded");
  EXPECT_TRUE(Has(r.out, "recorded comparison: reproduces")) << r.out;
  EXPECT_FALSE(Has(r.out, "left_recording")) << r.out;
}

// Defect 8: --failure takes the exception a user saw, as Python names it ("the KeyError you
// saw"), alone or with its place, as well as a report's KIND; a name neither way is refused.
struct FailureCase {
  const char* failure;
  int code;
  const char* raised;  // the report's first failure raises this ("" when refused)
};

TEST(Truth, FailureTakesPythonExceptionNames) {
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const FailureCase cases[] = {
      {"KeyError", 1, "KeyError: 'y_ptr'"},
      {"KeyError@autotuner.py:74", 1, "KeyError: 'y_ptr'"},
      {"TypeError", 1, "TypeError: 'NoneType'"},
      {"in-param-not-in-cache", 1, "KeyError: 'y_ptr'"},
      {"keyerror", 64, ""},
      {"KeyError!", 64, ""},
  };
  for (const FailureCase& c : cases) {
    SCOPED_TRACE(c.failure);
    const CliRun r = Rerace("check " + t + " --bound 1 --failure '" + c.failure + "'");
    EXPECT_EQ(r.code, c.code) << r.out;
    if (c.code != 1) continue;
    EXPECT_TRUE(Has(r.out, std::string("FAILS against ") + c.failure + ":")) << r.out;
    // The report leads with the failure asked about: the first FAILED block raises it.
    const size_t failed = r.out.find("\nFAILED: ");
    ASSERT_NE(failed, std::string::npos) << r.out;
    const size_t next = r.out.find("\n  ", r.out.find('\n', failed + 1));
    EXPECT_EQ(r.out.compare(next + 3, std::string(c.raised).size(), c.raised), 0)
        << r.out.substr(failed, 300);
  }
  // fuzz counts only that exception: every distinct failure listed raised it.
  const CliRun f = Rerace("fuzz " + t + " --runs 50 --failure KeyError");
  EXPECT_EQ(f.code, 1) << f.out;
  for (const std::string& line : Lines(f.out)) {
    if (line.rfind("  [", 0) != 0) continue;
    EXPECT_TRUE(Has(line, ": KeyError: ")) << line;
  }
}

// Defect 7: show names kernels short by default, as Nsight Systems does: no template
// arguments, parameters, return type or namespaces.
struct ShortCase {
  const char* raw;
  const char* short_name;
};

TEST(Truth, ShortKernelNamesDropTemplatesParametersAndNamespaces) {
  const ShortCase cases[] = {
      {"l2norm_fwd_kernel", "l2norm_fwd_kernel"},  // Triton: unchanged
      {"void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, "
       "4, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase "
       "const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
       "const::{lambda(float)#2}>(long, at::PhiloxCudaState, float)",
       "distribution_elementwise_grid_stride_kernel"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
       "vectorized_elementwise_kernel"},
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_"
       "256x128_8x4_nn_align1::Params)",
       "Kernel2"},
      // A mangled name is demangled first: rerace::kernels::(anonymous namespace)::NormKernel(...).
      {"_ZN6rerace7kernels12_GLOBAL__N_110NormKernelEPKfS3_Pfllib", "NormKernel"},
  };
  for (const ShortCase& c : cases) EXPECT_EQ(rerace::replay::ShortKernelName(c.raw), c.short_name) << c.raw;
}

// Defect 7: every sample's summary has no line over 160 columns and its PyTorch kernels by
// their short names; --full-names gives them whole.
TEST(Truth, ShowFitsEverySampleIn160Columns) {
  const std::string dir = TempDir("show");
  size_t samples = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(Source("traces/samples"))) {
    const std::string name = e.path().filename().string();
    const bool packed = name.size() > 7 && name.compare(name.size() - 7, 7, ".rrt.xz") == 0;
    if (e.path().extension() != ".rrt" && !packed) continue;
    ++samples;
    SCOPED_TRACE(e.path().string());
    std::string path = e.path().string();
    if (packed) {  // the cost recordings, unpacked as their README says
      path = dir + "/unpacked.rrt";
      if (std::system(("xz -dc '" + e.path().string() + "' > '" + path + "' 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "xz cannot unpack " << e.path();
    }
    const CliRun r = Rerace("show " + path);
    ASSERT_EQ(r.code, 0) << r.out;
    for (const std::string& line : Lines(r.out)) EXPECT_LE(line.size(), 160u) << line;
  }
  EXPECT_GE(samples, 50u);
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const CliRun show = Rerace("show " + t);
  EXPECT_TRUE(Has(show.out, "  distribution_elementwise_grid_stride_kernel\n")) << show.out;
  for (const std::string& line : Lines(show.out)) {
    if (line.rfind("      device ", 0) != 0) continue;
    EXPECT_FALSE(Has(line, "<")) << line;
  }
  const CliRun full = Rerace("show --full-names " + t);
  EXPECT_TRUE(Has(full.out, "::distribution_elementwise_grid_stride_kernel<float,")) << full.out;
}

// Defect 5: an explanation cites the write that caused the failure, at the step the timeline
// shows it. Each run writes its Perfetto timeline (one slice per step: thread, access, source
// line) and its findings as JSON; every "thread X ... at step S" of the words must be, on the
// timeline, thread X's write of that field at step S, and "while thread Y was benchmarking
// config C" must be what thread Y was doing then.
struct Step {
  int thread = -1;
  std::string source;
};

std::map<int, Step> Timeline(const std::string& json) {
  static const std::regex slice(
      R"re("cat":"step".*"tid":([0-9]+),"args":\{"step":([0-9]+),"source":"([^"]*)")re");
  std::map<int, Step> steps;
  for (const std::string& line : Lines(json)) {
    std::smatch m;
    if (std::regex_search(line, m, slice)) steps[std::stoi(m[2])] = {std::stoi(m[1]), m[3].str()};
  }
  return steps;
}

// The config thread `thread` was benchmarking at `step`: its _bench reads since its last call
// began (Autotuner.run's write of nargs), less one.
int ConfigAt(const std::map<int, Step>& steps, int thread, int step) {
  int benches = 0;
  for (const auto& [n, st] : steps) {
    if (n > step) break;
    if (st.thread != thread) continue;
    if (Has(st.source, "Autotuner.run: self.nargs = dict(")) benches = 0;
    if (Has(st.source, "Autotuner._bench: full_nargs")) ++benches;
  }
  return benches - 1;
}

struct CitedCase {
  std::string run;  // replay arguments after the trace
  const char* trace;
};

TEST(Truth, ExplanationsCiteTheWriteAtItsStepOnTheTimeline) {
  const std::string dir = TempDir("cited");
  const std::string none = SampleTrace("triton-none-h200.rrt");
  // A schedule that ends in nargs-none (check's counterexample) for the "set it to None" words.
  // The model's explanations (the engine's: the test below).
  ASSERT_EQ(Rerace("check " + none + " --engine model --failure nargs-none --bound 1 --save-schedule " + dir +
                   "/nargs.sched")
                .code,
            1);
  std::vector<CitedCase> cases;
  for (int seed = 1; seed <= 8; ++seed) cases.push_back({"--seed " + std::to_string(seed), "triton-none-h200.rrt"});
  cases.push_back({"--schedule " + dir + "/nargs.sched", "triton-none-h200.rrt"});
  cases.push_back({"--fix tls-nargs --seed 2", "triton-none-h200.rrt"});
  cases.push_back({"--strategy pct --pct-depth 3 --seed 5", "synth-h200-shape.rrt"});
  static const std::regex reset(
      R"(thread ([0-9]+)'s post-hook reset restore_copies to \{\} at step ([0-9]+) while thread ([0-9]+) was benchmarking config ([0-9]+))");
  static const std::regex cloned(R"(cloned by thread ([0-9]+)'s pre-hook at step ([0-9]+))");
  static const std::regex none_by(R"(thread ([0-9]+) set it to None at step ([0-9]+))");
  size_t cited = 0;
  for (const CitedCase& c : cases) {
    SCOPED_TRACE(std::string(c.trace) + " " + c.run);
    const std::string timeline = dir + "/t.json";
    const CliRun r = Rerace("replay " + SampleTrace(c.trace) + " " + c.run +
                            " --engine model --json --perfetto " + timeline);
    ASSERT_EQ(r.code, 1) << r.out;
    const std::map<int, Step> steps = Timeline(Slurp(timeline));
    ASSERT_FALSE(steps.empty());
    auto expect_write = [&](const std::smatch& m, const char* source) {
      ++cited;
      const int step = std::stoi(m[2]);
      ASSERT_TRUE(steps.count(step)) << m[0];
      const Step& st = steps.at(step);
      EXPECT_EQ(st.thread, std::stoi(m[1])) << m[0] << ": the timeline's step is " << st.source;
      EXPECT_TRUE(Has(st.source, source)) << m[0] << ": the timeline's step is " << st.source;
    };
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), reset), end; it != end; ++it) {
      expect_write(*it, "_post_hook: self.restore_copies = {}");
      // The config, where the timeline shows each benchmark's read of nargs (no fix).
      if (std::string(c.trace) != "triton-none-h200.rrt" || Has(c.run, "--fix")) continue;
      EXPECT_EQ(ConfigAt(steps, std::stoi((*it)[3]), std::stoi((*it)[2])), std::stoi((*it)[4]))
          << (*it)[0];
    }
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), cloned), end; it != end; ++it)
      expect_write(*it, "_pre_hook: self.restore_copies = {name:");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), none_by), end; it != end; ++it)
      expect_write(*it, "self.nargs = None");
  }
  EXPECT_GE(cited, 20u);
}

// Defect 5, the python engine: "restore_copies was last written by thread X at step S" and
// "thread X set it to None at step S" are, on the timeline, thread X's write at step S.
TEST(Truth, PythonEngineExplanationsCiteTheWriteAtItsStep) {
  std::string skip;
  const std::string py = Python(skip);
  if (py.empty()) GTEST_SKIP() << skip;
  const std::string dir = TempDir("cited-py");
  static const std::regex written(R"(([a-z_]+) (?:was )?last written by thread ([0-9]+) at step ([0-9]+))");
  static const std::regex none_by(R"(thread ([0-9]+) set it to None at step ([0-9]+))");
  size_t cited = 0;
  for (const char* mode : {"gil", "free-threaded"}) {
    for (int seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(std::string(mode) + " seed " + std::to_string(seed));
      const std::string timeline = dir + "/t.json";
      const CliRun r = Rerace("replay " + SampleTrace("triton-none-h200.rrt") +
                              " --engine python --python-exe " + py + " --python " + mode +
                              " --seed " + std::to_string(seed) + " --json --perfetto " + timeline +
                              " 2>/dev/null");
      ASSERT_EQ(r.code, 1) << r.out;
      const std::map<int, Step> steps = Timeline(Slurp(timeline));
      auto expect_write = [&](int thread, int step, const std::string& field, const std::string& what) {
        ++cited;
        ASSERT_TRUE(steps.count(step)) << what;
        const Step& st = steps.at(step);
        EXPECT_EQ(st.thread, thread) << what << ": the timeline's step is " << st.source;
        EXPECT_TRUE(Has(st.source, ": write self." + field)) << what << ": the timeline's step is " << st.source;
      };
      for (std::sregex_iterator it(r.out.begin(), r.out.end(), written), end; it != end; ++it)
        expect_write(std::stoi((*it)[2]), std::stoi((*it)[3]), (*it)[1], (*it)[0]);
      for (std::sregex_iterator it(r.out.begin(), r.out.end(), none_by), end; it != end; ++it)
        expect_write(std::stoi((*it)[1]), std::stoi((*it)[2]), "nargs", (*it)[0]);
    }
  }
  EXPECT_GE(cited, 6u);
}

// Defect 9: check --save-schedule with no counterexample says that nothing was written (and
// writes nothing); with one, text and --json alike write it.
struct SaveCase {
  const char* flags;
  int code;
  bool written;
};

TEST(Truth, CheckSaveScheduleSaysWhenThereIsNothingToSave) {
  const std::string dir = TempDir("save");
  const SaveCase cases[] = {
      {"--fix lock-run --bound 1", 0, false},
      {"--fix tls-nargs --bound 1", 1, true},
      {"--fix tls-nargs --bound 1 --json", 1, true},
  };
  int n = 0;
  for (const SaveCase& c : cases) {
    SCOPED_TRACE(c.flags);
    const std::string file = dir + "/" + std::to_string(++n) + ".sched";
    const CliRun r = Rerace("check " + SampleTrace("triton-none-h200.rrt") + " " + c.flags +
                            " --save-schedule " + file);
    EXPECT_EQ(r.code, c.code) << r.out;
    EXPECT_EQ(std::filesystem::exists(file), c.written) << r.out;
    EXPECT_EQ(Has(r.out, "no counterexample was found, so there is no schedule to save: " + file +
                             " was not written"),
              !c.written)
        << r.out;
    if (!c.written) continue;
    EXPECT_TRUE(Has(Slurp(file), "# fix: tls-nargs\n")) << Slurp(file);
  }
}

// Defect 9: traces/samples/README.md's event counts are what `rerace show` counts (the
// compressed recordings unpacked with xz).
TEST(Truth, SamplesReadmeCountsAreWhatShowSays) {
  const std::string dir = TempDir("counts");
  static const std::regex row(R"(^\| `([^`]+)` .*[^0-9,]([0-9][0-9,]*k?) events)");
  size_t checked = 0;
  for (const std::string& line : Lines(Slurp(Source("traces/samples/README.md")))) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    std::string name = m[1], want = m[2];
    want.erase(std::remove(want.begin(), want.end(), ','), want.end());  // "153k" matches no count
    // "r{1,2,3}": each of the files.
    std::vector<std::string> files;
    if (const size_t open = name.find('{'); open != std::string::npos) {
      const size_t close = name.find('}', open);
      std::string alts = name.substr(open + 1, close - open - 1) + ",";
      for (size_t p = 0, q; (q = alts.find(',', p)) != std::string::npos; p = q + 1)
        files.push_back(name.substr(0, open) + alts.substr(p, q - p) + name.substr(close + 1));
    } else {
      files.push_back(name);
    }
    for (const std::string& f : files) {
      SCOPED_TRACE(f);
      std::string path = Source("traces/samples/" + f);
      ASSERT_TRUE(std::filesystem::exists(path)) << line;
      if (path.size() > 3 && path.compare(path.size() - 3, 3, ".xz") == 0) {
        const std::string out = dir + "/unpacked.rrt";
        if (std::system(("xz -dc '" + path + "' > '" + out + "' 2>/dev/null").c_str()) != 0)
          GTEST_SKIP() << "xz cannot unpack " << path;
        path = out;
      }
      const CliRun r = Rerace("show " + path);
      EXPECT_TRUE(Has(r.out, "  " + want + " events in ")) << line << "\n" << r.out.substr(0, 600);
      ++checked;
    }
  }
  EXPECT_GE(checked, 20u);
}

// Defect 9: the README names every environment tools/scripts/python-envs.sh makes.
TEST(Truth, ReadmeNamesThePythonEnvironmentsTheScriptMakes) {
  const std::string script = Slurp(Source("tools/scripts/python-envs.sh"));
  const std::string readme = Slurp(Source("README.md"));
  static const std::regex loop(R"(for v in ([0-9. ]+); do\n\s*d="\$root/([a-z-]+)-\$v")");
  size_t named = 0;
  for (std::sregex_iterator it(script.begin(), script.end(), loop), end; it != end; ++it) {
    const std::string what = (*it)[2] == "triton" ? "Triton" : (*it)[2].str();
    std::string versions = (*it)[1].str() + " ";
    for (size_t p = 0, q; (q = versions.find(' ', p)) != std::string::npos; p = q + 1) {
      std::string v = versions.substr(p, q - p);
      if (v.empty()) continue;
      if (what == "Triton" && v.size() > 2 && v.compare(v.size() - 2, 2, ".0") == 0) v.resize(v.size() - 2);
      EXPECT_TRUE(Has(readme, v)) << what << " " << v;
      ++named;
    }
    EXPECT_TRUE(Has(readme, what)) << what;
  }
  EXPECT_GE(named, 6u);
  for (const char* env : {"`venv`", "`venv312`", "CPython 3.12", "Triton 3.6", "PYTHON_ENVS=OFF"})
    EXPECT_TRUE(Has(readme, env)) << env;
}

}  // namespace
