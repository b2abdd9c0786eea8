// rerace/sim/scheduler.h: the deterministic scheduler, rerace's foundation.
//
// The model. A run executes N logical threads as fibers on one OS thread. A logical thread
// runs until its next *scheduling point* (a read or write of a shared variable, a lock, a
// wait, a sleep...), then gives control back; a `Strategy` picks which runnable thread goes
// next. One *step* is one such pick: the chosen thread performs the operation of the point it
// was waiting at and runs on to its next point. Every choice is appended to a `Schedule`, so
// the run can be replayed exactly, without its seed. Because nothing else decides the order,
// the same program, strategy and seed give the same run, byte for byte, on any machine.
//
//   sim::RandomWalk strategy(/*seed=*/7);
//   sim::Scheduler sched(strategy);
//   sim::Shared<int> counter(sched, "counter", 0);
//   for (int i = 0; i < 2; ++i)
//     sched.Spawn("worker", [&] { counter.Write(counter.Read() + 1); });
//   sim::RunResult r = sched.Run();
//   // r.failure, r.schedule, r.threads[i].last_steps ...
//
// Failures end the run: an exception that escapes a thread (never across a fiber switch: the
// fiber's entry catches it and hands it here), a failed `Check`, a deadlock (every live thread
// blocked; the report lists what each waits for), the step bound (a livelock becomes a
// report instead of a hang), or a replayed schedule that the program no longer follows.
//
// Virtual time. Each thread carries its own clock (nanoseconds). `Advance` and `SleepFor` move
// it forward; waking another thread or joining it carries time across (the woken thread's
// clock becomes at least the waker's). Only the `Timed` strategy orders threads by time; the
// others explore orders regardless of it, as an OS under load may. The makespan of a run is
// the largest clock at its end. Nothing here reads the wall clock.
//
// Threads: a Scheduler and everything attached to it are used from one OS thread. Methods
// marked "Fiber only" must be called from inside a logical thread during Run().
// Hot path: a step allocates nothing (schedule appends are amortized), and switches once: the
// thread that reaches a point picks the next thread itself, on its own stack (the strategy
// runs there), and switches straight to it; back to Run() only when the run is over.
// NB: so a Strategy's Pick, and a RaceDetector's callbacks, run on a logical thread's fiber
// stack (whatever they throw is rethrown by Run(), never into the logical thread).
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "rerace/sim/schedule.h"

namespace rerace::sim {

class StackPool;
namespace detail {
class Fiber;
class Switchboard;
}  // namespace detail

class Strategy;
class Scheduler;
class RaceDetector;
class StepMerge;

using Nanos = uint64_t;

// What a scheduling point is about to do. Used in reports, and by strategies and detectors
// that reason about which steps conflict.
enum class Access : uint8_t {
  kStart,     // the thread's first step
  kRead,      // read of a shared variable
  kWrite,     // write of a shared variable
  kLock,      // mutex acquire
  kUnlock,    // mutex release
  kWait,      // condition-variable wait (releases its mutex)
  kNotify,    // condition-variable notify
  kWake,      // resuming after being blocked
  kSpawn,     // creating a thread
  kJoin,      // joining a thread
  kFutureSet, // fulfilling a promise
  kFutureGet, // waiting for a future
  kSleep,     // sleeping in virtual time
  kYield,     // a plain point with no shared object
};
const char* AccessName(Access a);

// A scheduling point: what the thread will do when it is next picked.
// NB: `label` must be a string with static storage duration (a literal): points are stored
// by pointer so that a step allocates nothing.
struct SchedulingPoint {
  Access access = Access::kYield;
  uint32_t object = 0;        // id from Scheduler::RegisterObject; 0 = none
  const char* label = "";     // where in the program, e.g. "autotuner.py:74 Autotuner.run"
};

// A step as reported: which step, and the point performed.
struct StepView {
  uint64_t step = 0;
  std::string text;  // "write restore_copies  (autotuner.py:74 Autotuner.run)"
};

struct SourceLocation {
  std::string file;
  uint32_t line = 0;
  std::string function;
  std::string ToString() const;
};

// An error a logical thread raises on purpose: a failed check, or a model's rendition of the
// real program's exception (`KeyError: 'y_ptr'` at autotuner.py:74). Thrown inside a fiber;
// the scheduler turns it into the run's Failure.
class ThreadError : public std::exception {
 public:
  ThreadError(std::string type, std::string message, SourceLocation where)
      : type_(std::move(type)), message_(std::move(message)), where_(std::move(where)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& type() const { return type_; }
  const std::string& message() const { return message_; }
  const SourceLocation& where() const { return where_; }

 private:
  std::string type_;
  std::string message_;
  SourceLocation where_;
};

// Where a Check was called. std::source_location where the standard library has it; the
// libFuzzer build (clang 14 with libstdc++ 12, which lacks __builtin_source_location) gets the
// same file and line from the builtins every compiler of ours has.
#if defined(__cpp_lib_source_location)
using CallSite = std::source_location;
#else
struct CallSite {
  static constexpr CallSite current(const char* file = __builtin_FILE(),
                                    unsigned line = __builtin_LINE()) {
    return CallSite{file, line};
  }
  constexpr const char* file_name() const { return file_; }
  constexpr unsigned line() const { return line_; }
  const char* file_;
  unsigned line_;
};
#endif

// Fiber only. Fails the current thread (and so the run) unless `cond` holds.
void Check(bool cond, std::string_view message, CallSite loc = CallSite::current());

enum class FailureKind : uint8_t { kException, kCheck, kDeadlock, kStepBound, kDivergence };
const char* FailureKindName(FailureKind k);

struct Failure {
  FailureKind kind = FailureKind::kException;
  ThreadId thread = kNoThread;    // the failing thread; kNoThread for deadlock / step bound
  uint64_t step = 0;              // the step during which it failed
  std::string type;               // exception type: "KeyError", "CheckFailed", ...
  std::string message;
  SourceLocation where;
  std::vector<std::string> waits; // deadlock: what each blocked thread waits for
};

struct ThreadSummary {
  ThreadId id = 0;
  std::string name;
  uint64_t steps = 0;
  Nanos clock = 0;
  bool finished = false;
  std::vector<StepView> last_steps;  // oldest first, at most kHistory
};

struct RunResult {
  std::optional<Failure> failure;
  uint64_t steps = 0;
  uint64_t preemptions = 0;   // switches away from a thread that could have gone on
  Nanos makespan = 0;
  Schedule schedule;
  std::vector<ThreadSummary> threads;

  bool failed() const { return failure.has_value(); }
  // A deterministic, human-readable report: the failure, then each thread's last steps.
  std::string Report() const;
};

// What a strategy sees when it must choose.
struct Choice {
  uint64_t step;                       // the step about to be taken (0-based)
  ThreadId previous;                   // thread that took the previous step, or kNoThread
  std::span<const ThreadId> runnable;  // sorted ascending, never empty
  std::span<const Nanos> clocks;       // virtual clock per thread id
  std::span<const SchedulingPoint> pending;  // the point each thread waits at, per thread id
};

// A run of picks a strategy has planned (Strategy::Plan): `thread`, `count` times in a row.
struct PlannedPicks {
  ThreadId thread;
  uint64_t count;
};

// Steps of several accesses: a policy that says which points a thread performs without giving
// the scheduler a choice (an interpreter that cannot switch threads between them, such as
// CPython under the GIL between two eval-breaker checks). A merged point is still an access:
// it enters the thread's history, the race detector, and the strategy's OnInStep (DPOR counts
// it as part of the step), with the current step's number. Called on the scheduler's thread,
// for every point of every thread, in order; consumes no random stream.
class StepMerge {
 public:
  virtual ~StepMerge() = default;
  // Thread `t` reached point `p`: true if `p` is performed inside `t`'s current step.
  virtual bool InStep(ThreadId t, const SchedulingPoint& p) = 0;
};

class Scheduler {
 public:
  static constexpr size_t kHistory = 16;

  struct Options {
    uint64_t max_steps = 10'000'000;  // the step bound; reaching it is a failure
    size_t stack_size = 0;            // 0: default (256 KiB, 2 MiB under sanitizers)
    RaceDetector* races = nullptr;    // if set, sees every step (race_detector.h)
    // If set, asked at every point whether it is performed inside the current step (no
    // choice, no switch): see StepMerge.
    StepMerge* merge = nullptr;
  };

  // `strategy` must outlive the Scheduler. `pool`, if given, supplies fiber stacks and must
  // outlive it too; pass one pool to many runs to reuse stacks (see StackPool).
  explicit Scheduler(Strategy& strategy);
  Scheduler(Strategy& strategy, Options options, StackPool* pool = nullptr);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Creates a logical thread. Before Run(), or Fiber only (then it is a scheduling point).
  ThreadId Spawn(std::string name, std::function<void()> body);

  // Runs every thread to the end or to the first failure. Call once.
  RunResult Run();

  // Names a shared object for reports; returns its id (never 0). Call before or during Run();
  // allocates, so objects register once, not per access.
  uint32_t RegisterObject(std::string name);
  const std::string& ObjectName(uint32_t id) const;

  // ---- Fiber only ----
  // A scheduling point: waits until the strategy picks this thread, which then performs `p`.
  // With a StepMerge that says so, `p` is performed at once, inside the current step.
  void Point(SchedulingPoint p);
  // Blocks the current thread until Wake(); `waits_for` describes why, for deadlock reports.
  // NB: returns at once while the run is being torn down (after a failure); callers loop.
  void Block(uint32_t object, const char* waits_for, ThreadId holder = kNoThread);
  // Makes a blocked thread runnable; its clock becomes at least the caller's.
  void Wake(ThreadId t);
  void Join(ThreadId t);
  void Advance(Nanos d);
  // Moves the current thread's clock to at least `t` (time carried by synchronization).
  void AdvanceTo(Nanos t);
  void SleepFor(Nanos d, const char* label = "sleep_for");
  ThreadId CurrentThread() const { return current_; }
  // The step being taken (while a thread runs) or the number taken (after Run).
  uint64_t step() const { return step_; }
  // How many of the current thread's next steps the strategy has already given it, provided
  // each is a plain point (Strategy::Promised); 0 outside a thread, and 0 when a thread has
  // been made runnable or blocked since the last pick (the strategy did not see that set).
  uint64_t Promised() const;
  // The strategy's next picks after the current step, as long as nothing but plain points
  // happen (Strategy::Plan): `out` cleared, then filled; empty outside a thread. At most
  // `max_picks` drawn picks.
  void Plan(uint64_t max_picks, std::vector<PlannedPicks>& out) const;
  Nanos Now() const;  // the current thread's clock

  // The scheduler running on this OS thread, or nullptr outside Run().
  static Scheduler* Current();
  bool tearing_down() const { return tearing_down_; }
  size_t thread_count() const { return threads_.size(); }
  const std::string& ThreadName(ThreadId t) const;
  // Keeps thread t's last steps as they are now for its ThreadSummary::last_steps (a failure's
  // moment: a thread that goes on after a silent failure would otherwise report later steps);
  // the first call per thread counts. Copies a fixed-size ring: no allocation.
  void KeepHistory(ThreadId t);

 private:
  struct Thread;
  static void Entry(void* arg);
  static detail::Fiber* Exit(void* arg);
  void Suspend();
  void InStep(const SchedulingPoint& p);
  ThreadId NextStep();
  detail::Fiber* EndStep(bool finished);
  void Finish(Thread& t);
  void Fail(Failure f);
  void MakeRunnable(ThreadId t);
  void RemoveRunnable(ThreadId t);
  std::string Describe(const SchedulingPoint& p) const;
  RunResult Collect();

  Strategy& strategy_;
  Options options_;
  std::unique_ptr<StackPool> own_pool_;
  StackPool* pool_;
  std::unique_ptr<detail::Switchboard> board_;  // outlives the threads' fibers
  std::vector<std::unique_ptr<Thread>> threads_;
  std::vector<ThreadId> runnable_;
  std::vector<uint8_t> in_runnable_;  // by thread id: 1 while in runnable_ (O(1) membership)
  std::vector<Nanos> clocks_;
  std::vector<SchedulingPoint> pending_;
  std::vector<std::string> objects_;
  Schedule schedule_;
  std::optional<Failure> failure_;
  ThreadId current_ = kNoThread;
  ThreadId previous_ = kNoThread;  // the thread that took the previous step
  std::exception_ptr internal_error_;  // thrown by the step's own code on a fiber; Run rethrows it
  uint64_t step_ = 0;
  uint64_t preemptions_ = 0;
  size_t live_ = 0;
  bool ran_ = false;
  bool tearing_down_ = false;
  bool runnable_changed_ = false;  // since the last pick (Promised)
};

}  // namespace rerace::sim
