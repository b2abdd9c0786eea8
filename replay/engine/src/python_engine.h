// replay/engine/src/python_engine.h: the real-code engine's C++ side (private to replay).
//
// `--engine python` replays through the real tuner code: replay/engine/python/rerace_real runs each
// recorded thread as a logical thread (a greenlet on CPython 3.12+ with greenlet installed,
// else a real Python thread; the same reports either way) in the Triton installed where rerace
// runs, with the user's patches, one thread at a time. This side keeps rerace's scheduler in charge: each
// recorded thread is a *proxy fiber* on the ordinary `sim::Scheduler`. When the strategy picks
// a proxy, it tells its Python thread to go on ("g <thread> <step>"); the Python thread runs to
// its next scheduling point and says what it will do there: a read or write of a tuner field
// (`Point` with the object it touches, for DPOR and race detection), a lock operation (a
// `sim::Mutex`, so waits and deadlocks are the scheduler's), a condition wait or notify (a
// `sim::CondVar`), time on the virtual GPU (`Advance`), a finding, or the end of the thread.
// So strategies, schedule files, divergence, the step bound, DPOR, shrinking and reports work
// on the real code as they do on the C++ models.
//
// Process layout: one `PythonProcess` per Replayer (Python, Triton and the patches are loaded
// once); it forks a child per run, so every run starts from the same pristine state. `fuzz
// --jobs N` has N Replayers, so N processes (replay/campaign.h).
//
// Protocol cost (issues 26 and 50): a scheduling point is a round trip ("g" out, the thread's
// next message back) unless the strategy's plan, sent with the last "g", already picked it: the
// Python threads then post the point ("p") and switch among themselves (PythonWorld::Go). The
// Python side writes the messages that get no reply together with the next one that does, in
// one write (rerace_real/control.py); Read() takes whatever arrived in one read and hands the
// lines out in order, so nothing here depends on how they were batched. A message costs no
// allocation here: Read() hands out a view of its buffer, SplitTabs views of its fields.
//
// Errors: a Python process that cannot start, import Triton or a patch, or build a tuner fails
// `PythonProcess::Start` with a one-line message: 78 when --python-exe is not a Python that
// runs the engine, 69 when it has no Triton (naming the environments of a build tree), 65 for
// a patch that does not compile or raises and for the trace's content, 66 for a missing patch,
// 64 for a patched recording given without its patch. A protocol error or a crash of the
// Python side during a run throws `EngineError` (exit 70).
//
// Safety (docs/ENGINE.md "What a trace cannot do"): the interpreter starts with no current
// directory on sys.path (PYTHONSAFEPATH, `-c` with its empty entry removed), and module names
// from the trace are imported only when installed (rerace_real/trust.py). The Python side runs
// in its own process group, ended whole when the process object goes (and at exit). Every line
// it sends starts with a per-session token, so a patch's stray write is an error, not a message.
// A watchdog: no message for `ReplayOptions::watchdog_ms` ends the run as a hang (EngineError,
// exit 65) naming where each Python thread is (faulthandler's stacks, on a pipe of their own).
//
// CPU: the controller (the OS thread that starts the engine) and the Python process take turns,
// never run at once: a point is a write, a wait for the other side, a read. On two CPUs each
// turn is a wake-up across CPUs; so, as rr binds itself and its tracee, Start binds the calling
// thread to one CPU and the Python process inherits it, and the destructor (on that thread)
// gives the thread its former CPUs back. The CPUs are taken in turn, from one that depends on
// the process id (fuzz --jobs spreads its jobs; two rerace processes seldom share one). RERACE_ENGINE_CPU=off leaves the CPUs alone; RERACE_ENGINE_CPU=<n> binds
// to CPU n (one that this process may run on, else a one-line error, exit 78). Nothing printed
// depends on it (docs/PERFORMANCE.md has the figures).
//
// Threads: used from the scheduler's OS thread only. NB: the engine gets SIGKILL when the OS
// thread that started it ends (PR_SET_PDEATHSIG follows the thread, not the process): start it
// from the thread that keeps the Replayer (the campaign's workers each own theirs).
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/sim/sync.h"

namespace rerace::replay::detail {

// A protocol error, a crash or a hang of the Python side (exit 70 unless `exit_code` says the
// user's code is to blame: a hang is 65, as a patch that does not import).
class EngineError : public ExitError {
 public:
  using ExitError::ExitError;
};

class PythonProcess {
 public:
  // Starts the engine for `p`: sends the program, waits for "ready".
  [[nodiscard]] static Result<std::unique_ptr<PythonProcess>> Start(const Program& p,
                                                                    const ReplayOptions& o);
  ~PythonProcess();
  PythonProcess(const PythonProcess&) = delete;
  PythonProcess& operator=(const PythonProcess&) = delete;

  void Send(std::string_view line);  // throws EngineError
  // One line without its token and newline, a view of this object's buffer: valid until the
  // next Read or Send. Throws EngineError (a hang, a forged line).
  std::string_view Read();
  // What the engine said when ready (JSON): versions, switch rules, replaced parts, patches.
  const std::string& info() const { return info_; }

 private:
  PythonProcess() = default;
  // How long a quitting engine may take before it is killed.
  static constexpr int kQuitWaitMs = 2'000;
  // The watchdog fired: collects the threads' stacks, ends the group, throws.
  [[noreturn]] void Hang();
  // Ends the process group (after a bounded wait for the leader when `wait_ms` > 0); returns
  // how the leader ended ("" when it had already been reaped).
  std::string EndGroup(int wait_ms);

  // The controller thread bound to one CPU for this engine's life, or none (docs above).
  struct CpuBinding {
    pid_t tid = 0;             // the bound thread (0: nothing bound)
    std::vector<unsigned char> before;  // its former CPU mask (a cpu_set_t's bytes)
  };
  // Binds the calling thread as RERACE_ENGINE_CPU says; an error for a bad value.
  [[nodiscard]] static Result<CpuBinding> BindCpu();
  static void Unbind(CpuBinding& b);

  CpuBinding cpu_;
  pid_t pid_ = -1;  // the Python process, leader of its own process group
  int to_ = -1;
  int from_ = -1;
  int dump_ = -1;   // faulthandler's stacks on SIGUSR1
  int watchdog_ms_ = 60'000;
  bool ready_ = false;
  bool started_ = false;      // the interpreter runs the engine (its "started"), set-up under way
  bool has_patches_ = false;  // --patch files are imported in the set-up
  std::string token_;
  std::string buf_;    // what was read and not yet handed out, from buf_at_ on
  size_t buf_at_ = 0;
  std::string out_;    // the line being written (reused)
  std::string info_;
};

// `text` kept for the rest of the process, one copy per distinct text: a label of the real
// code's points (sim::SchedulingPoint keeps labels by pointer, and races, reports and a
// campaign's merge outlive the run that made them). Safe to call from any thread (fuzz --jobs).
const char* InternedLabel(const std::string& text);

// One line naming the interpreter, mode, Triton and patches of an engine's ready report.
std::string EngineSummaryOf(const std::string& info_json);

// A protocol line's tab-separated fields, as views of `line`, into `out` (cleared first).
void SplitTabs(std::string_view line, std::vector<std::string_view>& out);

// The program as JSON for the engine (threads with their operations, the recorded calls).
std::string ProgramJson(const Program& p);

// The engine's steps under the GIL: an access the Python side reports as inside the running
// thread's step ("m": no hand-over place since its last point) is performed there, so DPOR,
// the race detector and the history see every access a step makes. Set by PythonWorld around
// such an access; given to the scheduler as its StepMerge. Scheduler's thread only.
class EngineSteps final : public sim::StepMerge {
 public:
  bool InStep(sim::ThreadId, const sim::SchedulingPoint&) override { return merging; }
  bool merging = false;
};

// One run's world on the C++ side: the proxy fibers and the locks and conditions the Python
// threads use.
class PythonWorld {
 public:
  // `here`: the run goes to the engine's long-lived process ("here": rerace_real/reset.py),
  // else to a fresh fork ("run").
  PythonWorld(sim::Scheduler& s, const Program& p, PythonProcess& py, EngineSteps& steps,
              bool here = false);
  // The body of proxy fiber `t`.
  void RunThread(uint32_t t);
  // After sched.Run(): ends the Python run, collects the findings.
  void Finalize(ReplayResult& r);

 private:
  void Go(uint32_t t, int value = 0);
  // `text` as a label that lives as long as the process (InternedLabel): the results keep
  // labels by pointer after the run (the races, a campaign's merged races).
  const char* Label(std::string_view text);
  uint32_t Object(std::string_view name);
  sim::Mutex& MutexNamed(std::string_view name);
  sim::CondVar& CondNamed(std::string_view name);
  void AddFinding(uint32_t t, std::string_view json);
  // "r": which patch replacements a tuner call entered, and its bypasses (rerace_real/reach.py).
  void AddReach(std::string_view json);
  // The run's patch reach: a `patch-not-reached` finding per replacement no call entered
  // (first in `r.findings`), a note per one that some did.
  void ReportReach(ReplayResult& r);

  sim::Scheduler& s_;
  const Program& p_;
  PythonProcess& py_;
  EngineSteps& steps_;
  // By name, looked up by a message's view (std::less<>): a name costs an allocation once a run.
  std::map<std::string, const char*, std::less<>> labels_;  // this run's labels, interned
  std::map<std::string, uint32_t, std::less<>> objects_;
  std::map<std::string, std::unique_ptr<sim::Mutex>, std::less<>> mutexes_;
  std::map<std::string, std::unique_ptr<sim::CondVar>, std::less<>> conds_;
  std::vector<Finding> findings_;
  uint32_t reach_calls_ = 0;                   // threads' tuner calls that reported reach
  std::map<size_t, uint32_t> reach_entered_;   // replacement index -> calls that entered it
  std::map<size_t, std::string> reach_bypass_;  // replacement index -> the first bypass seen
  std::map<size_t, std::string> reach_hidden_;  // replacement index -> a class that hides it
  // The picks of the next points that the Python threads make among themselves, without a
  // round trip: the strategy's plan (Scheduler::Plan) sent with the last "g", cut at the first
  // thread that is not waiting at a plain point (one inside a lock operation needs its "g").
  // Each "p" takes the next pick; the thread it resumes checks that the scheduler picked it.
  bool TakePlanned(uint32_t& who);
  // Fiber `t` runs again (its point or its start was picked): a "g" unless the pick was
  // planned, in which case the Python side has switched to t itself.
  void Resumed(uint32_t t);
  // Fiber `t` is back from a lock operation: its "g", with the operation's value.
  void Waited(uint32_t t, int value = 0);
  std::vector<sim::PlannedPicks> plan_;   // Scheduler::Plan's, cut (reused)
  size_t plan_at_ = 0;
  std::vector<char> at_point_;            // by thread: waits at a plain point, or not started
  bool resumed_by_plan_ = false;          // the last pick was a planned one...
  uint32_t planned_pick_ = 0;             // ...of this thread
  std::string line_;                      // the "g" being written (reused)
  bool plans_ = true;  // off with RERACE_ENGINE_PLANS=0: every point waits for its "g"
  std::string error_;  // an engine error seen inside a fiber
  int error_code_ = kExitInternal;  // and its exit code
};

}  // namespace rerace::replay::detail
