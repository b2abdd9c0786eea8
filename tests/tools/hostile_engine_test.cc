// Hostile input to the real-code engine (`--engine python`, issue 27): a trace is a file
// strangers send, so the module names written in it must never choose code to run (a module
// of that name in the current directory, a standard-library module, a planted rerace_real);
// a patch that loops, blocks on a raw lock, leaves a non-daemon thread, forks, or writes to the
// engine's channel must end within the watchdog, with a hang report naming where its threads
// are, and leave no process behind.
//
// The traces are the H200 recordings with their call-begin metadata edited (RewriteSample).
// Needs the environment of tools/scripts/python-envs.sh (venv: Triton 3.6); skips without it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "rerace/testing/cli_run.h"
#include "rerace/testing/rewrite.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace {
namespace {

using testing::CliRun;
using testing::RewriteSample;
using testing::RunRerace;
using testing::SourcePath;

std::string Python() { return std::string(RERACE_PY_ROOT) + "/venv/bin/python"; }

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

// A folder holding modules that leave a mark when imported, with the edited traces in it.
class HostileEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(Python().c_str(), X_OK) != 0)
      GTEST_SKIP() << Python() << " is missing (tools/scripts/python-envs.sh makes it)";
    const char* bin = std::getenv("RERACE_BIN");
    setenv("RERACE_BIN", std::filesystem::absolute(bin ? bin : "build/bin").c_str(), 1);
    // The commands run from the crafted folder: the sources too are named absolutely.
    const char* src = std::getenv("RERACE_SOURCE");
    setenv("RERACE_SOURCE", std::filesystem::absolute(src ? src : ".").c_str(), 1);
    // One folder per test and process: ctest runs these tests at once.
    dir_ = ::testing::TempDir() + "/hostile-engine-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" +
           std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/rerace_real");
    dir_ = std::filesystem::canonical(dir_).string();  // as the engine names files
    std::filesystem::create_directories(dir_ + "/site");
    for (const std::string name : {"evil_kmod", "evil_patch", "json", "rerace_real/__init__", "site/good_patch"})
      std::ofstream(dir_ + "/" + name + ".py")
          << "open(" << Quoted(dir_ + "/ran") << ", 'a').write('" << name << " ran\\n')\n";
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  static std::string Quoted(const std::string& s) { return "'" + s + "'"; }

  // rerace run from the folder (the current directory a crafted trace counts on).
  CliRun Rerace(const std::string& args, const std::string& env = "") const {
    return RunRerace(args + " --engine python --python-exe " + Python(),
                     "cd " + dir_ + " && env -u PYTHONPATH " + env);
  }

  std::string Marks() const {
    std::ifstream in(dir_ + "/ran");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
};

// The kernel's module named by the trace is a file in the current directory: it is reported
// and the tuner built from the recording; nothing in the folder runs (nor a json.py or a
// rerace_real/ there), also with --patch given and under check.
TEST_F(HostileEngine, KernelModuleNamedByTheTraceRunsNothing) {
  const std::string t = dir_ + "/evil-kernel.rrt";
  RewriteSample("triton-nohooks-h200.rrt", t, [](std::string d) {
    return Replaced(d, R"("kernel":{"module":"__main__","qualname":"make_kernel.<locals>.l2norm_fwd_kernel"})",
                    R"("kernel":{"module":"evil_kmod","qualname":"kern"})");
  });
  const std::string patch = dir_ + "/harmless.py";
  std::ofstream(patch) << "x = 1\n";
  for (const std::string& cmd : {"replay " + t + " --seed 3", "replay " + t + " --seed 3 --patch " + patch,
                                 "check " + t + " --runs 2 --max-runs 2 --patch " + patch}) {
    SCOPED_TRACE(cmd);
    const CliRun r = Rerace(cmd);
    EXPECT_EQ(r.signal, 0) << r.out;
    if (cmd.rfind("replay", 0) == 0) {
      EXPECT_NE(r.out.find("not imported: module evil_kmod: evil_kmod is not installed here"),
                std::string::npos)
          << r.out;
      EXPECT_NE(r.out.find("simulated step time"), std::string::npos) << r.out;  // replayed all the same
      EXPECT_NE(r.out.find("FAILED: "), std::string::npos) << r.out;
    }
    EXPECT_EQ(Marks(), "");
  }
}

// A patched recording whose patch module is in the current directory, or is `os` or `this`
// (stock code replayed as if patched): refused with the module named (exit 64), with and
// without --allow-recorded-patch, and nothing runs (`this` prints the Zen when imported).
TEST_F(HostileEngine, RecordedPatchModuleIsRefusedNamingIt) {
  struct Case {
    std::string module, flags, fragment;
  } cases[] = {
      {"evil_patch", "", "module evil_patch is not imported: evil_patch is not installed here"},
      {"evil_patch", "--allow-recorded-patch", "module evil_patch is not imported: evil_patch is not installed here"},
      {"os", "--allow-recorded-patch", "module os is not imported: os is in the standard library"},
      {"this", "", "module this is not imported: this is in the standard library"},
      {"good_patch", "", "give that patch with --patch FILE, or pass --allow-recorded-patch to import "
                         "the installed module good_patch (" + dir_ + "/site/good_patch.py)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.module + " " + c.flags);
    const std::string t = dir_ + "/patched-" + c.module + ".rrt";
    RewriteSample("triton-lock-run-patched-h200.rrt", t, [&](std::string d) {
      return Replaced(d, R"("module":"rerace_real.fixes.lock_run")", "\"module\":\"" + c.module + "\"");
    });
    const CliRun r = Rerace("replay " + t + " --seed 1 " + c.flags, "PYTHONPATH=" + dir_ + "/site");
    EXPECT_EQ(r.code, 64) << r.out;
    EXPECT_NE(r.out.find("the recorded program was patched: run was " + c.module + "._apply"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(c.fragment), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("Beautiful is better than ugly"), std::string::npos) << r.out;
    EXPECT_EQ(Marks(), "");
  }
  // An installed module (here on the user's PYTHONPATH) the user allows is imported.
  const CliRun allowed = Rerace("replay " + dir_ + "/patched-good_patch.rrt --seed 1 --allow-recorded-patch",
                                "PYTHONPATH=" + dir_ + "/site");
  EXPECT_NE(allowed.out.find("patch good_patch (named by the recording, imported)"), std::string::npos)
      << allowed.out;
  EXPECT_EQ(Marks(), "site/good_patch ran\n");
}

// The pids a patch wrote to `file` (one a line) are all gone (or zombies awaiting their reaper).
void ExpectGone(const std::string& file) {
  std::ifstream in(file);
  int count = 0;
  for (pid_t pid; in >> pid; ++count) {
    // A process killed as rerace exits may still be tearing down when rerace has returned
    // (SIGKILL is delivered, the exit not yet done): wait for that, a bounded while, rather
    // than read one instant. A process rerace left alive (asleep for an hour) stays.
    std::string state;
    for (int tries = 0; tries < 500; ++tries) {
      state = "gone";
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      if (std::getline(stat, line)) state = line.substr(line.rfind(')') + 2, 1);
      if (state == "gone" || state == "Z" || state == "X") break;
      usleep(10'000);
    }
    EXPECT_TRUE(state == "gone" || state == "Z" || state == "X")
        << "process " << pid << " was left, state " << state;
  }
  EXPECT_GT(count, 0) << file << " names no process";
}

// Patches that would hang rerace for good: each run ends within the watchdog (6 s here) with a
// one-line hang report naming the patch's line, and leaves no process; a non-daemon thread or a
// forked child does not hold rerace; a fake protocol line is an error, not a message.
TEST_F(HostileEngine, HangingPatchesEndWithinTheWatchdogAndLeaveNoProcess) {
  const std::string t = SourcePath("traces/samples/triton-none-h200.rrt");
  const std::string pids = dir_ + "/pids";
  const std::string note = "import os\nopen(" + Quoted(pids) + ", 'a').write('%d\\n' % os.getpid())\n";
  const std::string stock = "from triton.runtime import autotuner\nstock = autotuner.Autotuner.run\n";
  struct Case {
    std::string name, source, fragment;
    int code;
  } cases[] = {
      {"loop_at_import", note + "while True: pass\n",
       "while setting up (importing Triton and the patches, building the tuners); where its threads "
       "are: " + dir_ +
           "/loop_at_import.py:3 in <module>",
       65},
      {"raw_lock", note + "import _thread\n" + stock + "held = _thread.allocate_lock()\nheld.acquire()\n"
                   "def run(self, *a, **k):\n"
                   "    open(" + Quoted(pids) + ", 'a').write('%d\\n' % os.getpid())\n"
                   "    held.acquire()\n"
                   "    return stock(self, *a, **k)\n"
                   "autotuner.Autotuner.run = run\n",
       "where its threads are: " + dir_ + "/raw_lock.py:10 in run; 9 threads waiting for their turn in rerace", 65},
      {"forged_line", note + stock + "def run(self, *a, **k):\n"
                      "    for fd in range(3, 64):\n"
                      "        try:\n"
                      "            os.write(fd, b'x\\n')\n"
                      "        except OSError:\n"
                      "            pass\n"
                      "    return stock(self, *a, **k)\n"
                      "autotuner.Autotuner.run = run\n",
       "a line on its channel that the engine did not write", 65},
      // The program, not rerace, ends the replay process mid-run: the user's problem (65),
      // said so, never "a bug in rerace" (70).
      {"exits", note + stock + "calls = [0]\n"
                "def run(self, *a, **k):\n"
                "    calls[0] += 1\n"
                "    if calls[0] == 3:\n"
                "        os._exit(7)\n"
                "    return stock(self, *a, **k)\n"
                "autotuner.Autotuner.run = run\n",
       "the program ended the replay process in the middle of a run (exit status 7", 65},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::filesystem::remove(pids);
    const std::string patch = dir_ + "/" + c.name + ".py";
    std::ofstream(patch) << c.source;
    // 6 s: longer than a set-up takes on a loaded 2-core CI machine (Triton import 1-3 s).
    const CliRun r = Rerace("replay " + t + " --seed 3 --watchdog 6s --patch " + patch);
    EXPECT_EQ(r.signal, 0) << r.out;
    EXPECT_EQ(r.code, c.code) << r.out;
    EXPECT_NE(r.out.find("rerace: error: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.fragment), std::string::npos) << r.out;
    ExpectGone(pids);
  }
  // Threads and processes a patch leaves behind do not hold rerace, and are ended with it.
  std::filesystem::remove(pids);
  const std::string patch = dir_ + "/leftovers.py";
  std::ofstream(patch) << note
                       << "import threading, time\n"
                          "threading.Thread(target=time.sleep, args=(3600,)).start()\n"
                          "if os.fork() == 0:\n"
                          "    open(" << Quoted(pids) << ", 'a').write('%d\\n' % os.getpid())\n"
                          "    time.sleep(3600)\n"
                          "    os._exit(0)\n";
  const CliRun r = Rerace("replay " + t + " --seed 3 --watchdog 30s --patch " + patch);
  EXPECT_EQ(r.code, 1) << r.out;  // the replay ran and found the KeyError
  EXPECT_NE(r.out.find("KeyError: 'y_ptr'"), std::string::npos) << r.out;
  ExpectGone(pids);
}

// Set-up problems: one line naming the fix, with the exit code of whose problem it is.
TEST_F(HostileEngine, SetUpProblemsAreOneLineWithTheirOwnCodes) {
  const std::string t = SourcePath("traces/samples/triton-none-h200.rrt");
  std::ofstream(dir_ + "/syntax.py") << "x = 1\ndef broken(:\n";
  std::ofstream(dir_ + "/missing_import.py") << "import os\nimport no_such_module_here\n";
  std::ofstream(dir_ + "/exit_in_run.py")
      << "import os\nfrom triton.runtime import autotuner\n"
         "def run(self, *a, **k):\n    os._exit(0)\nautotuner.Autotuner.run = run\n";
  std::ofstream(dir_ + "/kill_in_run.py")
      << "import os, signal\nfrom triton.runtime import autotuner\n"
         "def run(self, *a, **k):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
         "autotuner.Autotuner.run = run\n";
  std::ofstream(dir_ + "/exit_at_import.py") << "import os\nos._exit(0)\n";
  struct Case {
    std::string args;
    int code;
    std::string fragment;
  } cases[] = {
      {"replay " + t + " --patch " + dir_ + "/syntax.py", 65, "does not compile: SyntaxError: "},
      {"replay " + t + " --patch " + dir_ + "/syntax.py", 65, "(at " + dir_ + "/syntax.py:2)"},
      {"replay " + t + " --patch " + dir_ + "/missing_import.py", 65,
       "raised ModuleNotFoundError: No module named 'no_such_module_here' (at " + dir_ + "/missing_import.py:2)"},
      {"replay " + t + " --patch /dev/zero", 66, "--patch /dev/zero: not a regular file"},
      {"replay " + t + " --seed 1 --patch " + dir_ + "/exit_at_import.py", 65,
       "ended during the engine's set-up (importing Triton, the tuners' modules and the --patch "
       "files): it exited with status 0; a patch that ends its process at import"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const CliRun r = Rerace(c.args);
    EXPECT_EQ(r.code, c.code) << r.out;
    EXPECT_EQ(r.out.rfind("rerace: error: ", 0), 0u) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
    EXPECT_NE(r.out.find(c.fragment), std::string::npos) << r.out;
  }
  // A patch that ends or kills its process in the middle of a run is the program's doing,
  // named so (65), never "a bug in rerace" (70); SIGKILL is also the OOM killer's. The engine's
  // lines come first (it started); the error is the last line.
  struct Run {
    std::string patch;
    std::string fragment;
  } runs[] = {
      {"exit_in_run.py", "the program ended the replay process in the middle of a run (exit status 0"},
      {"kill_in_run.py", "killed by signal 9 (SIGKILL) in the middle of a run"},
  };
  for (const Run& c : runs) {
    SCOPED_TRACE(c.patch);
    const CliRun r = Rerace("replay " + t + " --seed 1 --patch " + dir_ + "/" + c.patch);
    EXPECT_EQ(r.code, 65) << r.out;
    const size_t last = r.out.rfind("\nrerace: error: ");
    ASSERT_NE(last, std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\n', last + 1), r.out.size() - 1) << r.out;
    EXPECT_NE(r.out.find(c.fragment, last), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
  }
  // An engine switch set to a value it does not take is a usage error naming the variable, not
  // silently the default.
  for (const char* env : {"RERACE_GIL_TRACER=settace", "RERACE_ENGINE_THREADS=green"}) {
    SCOPED_TRACE(env);
    const CliRun r = Rerace("replay " + t + " --seed 1", env);
    EXPECT_EQ(r.code, 64) << r.out;
    EXPECT_NE(r.out.find(std::string(env) + ": neither "), std::string::npos) << r.out;
  }
  // --python-exe that is not a Python (78), a Python without Triton (69, naming the fix).
  struct Exe {
    std::string exe;
    int code;
    std::string fragment;
  } exes[] = {
      {"/bin/true", 78, "--python-exe /bin/true: it ended without starting rerace's engine"},
      {dir_ + "/no-such-python", 78, "no such program"},
      {"/usr/bin/python3", 69, "cannot import triton with /usr/bin/python3"},
  };
  for (const Exe& e : exes) {
    SCOPED_TRACE(e.exe);
    if (e.code == 69 && (access(e.exe.c_str(), X_OK) != 0 ||
                         std::system((e.exe + " -c 'import triton' 2>/dev/null").c_str()) == 0))
      continue;  // no system Python without Triton here
    const CliRun r = RunRerace("replay " + t + " --engine python --python-exe " + e.exe, "env -u PYTHONPATH");
    EXPECT_EQ(r.code, e.code) << r.out;
    EXPECT_NE(r.out.find(e.fragment), std::string::npos) << r.out;
    if (e.code == 69) {
      EXPECT_NE(r.out.find("(give --python-exe "), std::string::npos) << r.out;
      // the Python auto tries first is the one named first
      const std::string root = RERACE_PY_ROOT;
      if (!root.empty() && access((root + "/venv312/bin/python").c_str(), X_OK) == 0) {
        const size_t at = r.out.find("(give --python-exe ");
        ASSERT_NE(at, std::string::npos) << r.out;
        const std::string named = r.out.substr(at, r.out.find_first_of(";)", at) - at);
        EXPECT_NE(named.find("venv312/bin/python"), std::string::npos) << r.out;
      }
    }
  }
}

}  // namespace
}  // namespace rerace
