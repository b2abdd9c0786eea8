// sim/src/scheduler.cc: the step loop and the thread life cycle.
#include "rerace/sim/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <exception>
#include <utility>

#include "fiber.h"
#include "rerace/base/result.h"
#include "rerace/sim/race_detector.h"
#include "rerace/sim/strategy.h"

namespace rerace::sim {

namespace {
thread_local Scheduler* tls_current = nullptr;

class CheckFailure : public ThreadError {
 public:
  using ThreadError::ThreadError;
};

// Thrown at a thread's suspension point when the scheduler tears the run down, so that the
// thread's stack unwinds by ordinary C++ means on its own, sanitizer-annotated, stack.
// NB: logical threads must not swallow it (no catch (...) that carries on).
struct Teardown {};
}  // namespace

const char* AccessName(Access a) {
  switch (a) {
    case Access::kStart: return "start";
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
    case Access::kLock: return "lock";
    case Access::kUnlock: return "unlock";
    case Access::kWait: return "wait";
    case Access::kNotify: return "notify";
    case Access::kWake: return "wake";
    case Access::kSpawn: return "spawn";
    case Access::kJoin: return "join";
    case Access::kFutureSet: return "set";
    case Access::kFutureGet: return "get";
    case Access::kSleep: return "sleep";
    case Access::kYield: return "yield";
  }
  return "?";
}

const char* FailureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kException: return "exception";
    case FailureKind::kCheck: return "check";
    case FailureKind::kDeadlock: return "deadlock";
    case FailureKind::kStepBound: return "step-bound";
    case FailureKind::kDivergence: return "divergence";
  }
  return "?";
}

std::string SourceLocation::ToString() const {
  std::string s = file.empty() ? std::string("?") : file;
  if (line != 0) s += fmt::format(":{}", line);
  if (!function.empty()) s += " in " + function;
  return s;
}

void Check(bool cond, std::string_view message, CallSite loc) {
  if (cond) return;
  // Only the file's base name and line: the report must not depend on where the source was
  // built, nor on the compiler (function_name() differs between compilers).
  std::string_view file = loc.file_name();
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  throw CheckFailure("CheckFailed", std::string(message),
                     SourceLocation{std::string(file), loc.line(), ""});
}

struct Scheduler::Thread {
  enum class State : uint8_t { kRunnable, kBlocked, kFinished };
  ThreadId id = 0;
  std::string name;
  std::function<void()> body;
  std::unique_ptr<detail::Fiber> fiber;
  Scheduler* sched = nullptr;
  uint32_t object = 0;  // this thread as an object (for join)
  State state = State::kRunnable;
  uint32_t wait_object = 0;
  const char* waits_for = "";
  ThreadId wait_holder = kNoThread;
  uint64_t steps = 0;
  std::array<std::pair<uint64_t, SchedulingPoint>, kHistory> history{};
  size_t history_len = 0;
  size_t history_next = 0;
  // KeepHistory's copy, reported instead of the ring when kept.
  std::array<std::pair<uint64_t, SchedulingPoint>, kHistory> kept{};
  size_t kept_len = 0;
  size_t kept_next = 0;
  bool history_kept = false;
  std::vector<ThreadId> joiners;
};

Scheduler::Scheduler(Strategy& strategy) : Scheduler(strategy, Options{}) {}

Scheduler::Scheduler(Strategy& strategy, Options options, StackPool* pool)
    : strategy_(strategy),
      options_(options),
      pool_(pool),
      board_(std::make_unique<detail::Switchboard>()) {
  if (pool_ == nullptr) {
    own_pool_ = std::make_unique<StackPool>(options_.stack_size);
    pool_ = own_pool_.get();
  }
  objects_.emplace_back("");  // id 0: no object
}

Scheduler::~Scheduler() {
  tearing_down_ = true;
  Scheduler* saved = std::exchange(tls_current, this);
  for (auto& t : threads_) {
    current_ = t->id;
    // An unfinished thread resumes once: it throws Teardown from where it waits (or, if it
    // never started, returns at once), running the destructors on its stack, and switches
    // back here (Exit).
    if (!t->fiber->finished()) board_->SwitchTo(t->fiber.get());
    t->fiber.reset();
  }
  current_ = kNoThread;
  tls_current = saved;
}

Scheduler* Scheduler::Current() { return tls_current; }

uint32_t Scheduler::RegisterObject(std::string name) {
  objects_.push_back(std::move(name));
  return static_cast<uint32_t>(objects_.size() - 1);
}

const std::string& Scheduler::ObjectName(uint32_t id) const {
  RERACE_ASSERT(id < objects_.size(), fmt::format("object id {} of {}", id, objects_.size()));
  return objects_[id];
}

const std::string& Scheduler::ThreadName(ThreadId t) const {
  RERACE_ASSERT(t < threads_.size(), fmt::format("thread id {} of {}", t, threads_.size()));
  return threads_[t]->name;
}

ThreadId Scheduler::Spawn(std::string name, std::function<void()> body) {
  if (current_ != kNoThread) Point({Access::kSpawn, 0, "spawn"});
  auto t = std::make_unique<Thread>();
  t->id = static_cast<ThreadId>(threads_.size());
  t->object = RegisterObject(fmt::format("thread {} ({})", t->id, name));
  t->name = std::move(name);
  t->body = std::move(body);
  t->sched = this;
  t->fiber = std::make_unique<detail::Fiber>(
      *board_, *pool_, detail::Fiber::Entry{&Scheduler::Entry, &Scheduler::Exit}, t.get());
  const ThreadId id = t->id;
  clocks_.push_back(current_ == kNoThread ? 0 : clocks_[current_]);
  pending_.push_back({Access::kStart, t->object, "start"});
  const uint32_t object = t->object;
  threads_.push_back(std::move(t));
  if (options_.races) options_.races->OnSpawn(current_, id, object);
  runnable_.reserve(threads_.size());
  in_runnable_.push_back(0);
  MakeRunnable(id);
  ++live_;
  return id;
}

void Scheduler::Entry(void* arg) {
  Thread* t = static_cast<Thread*>(arg);
  if (t->sched->tearing_down_) return;
  try {
    t->body();
  } catch (const Teardown&) {
  }
}

void Scheduler::MakeRunnable(ThreadId t) {
  if (in_runnable_[t]) return;
  in_runnable_[t] = 1;
  runnable_.insert(std::lower_bound(runnable_.begin(), runnable_.end(), t), t);
  runnable_changed_ = true;
}

void Scheduler::RemoveRunnable(ThreadId t) {
  if (!in_runnable_[t]) return;
  in_runnable_[t] = 0;
  runnable_.erase(std::lower_bound(runnable_.begin(), runnable_.end(), t));
  runnable_changed_ = true;
}

detail::Fiber* Scheduler::Exit(void* arg) {
  Thread* t = static_cast<Thread*>(arg);
  if (t->sched->tearing_down_) return nullptr;
  return t->sched->EndStep(/*finished=*/true);
}

// Runs on the fiber of the thread whose step ends (it reached its next point, blocked or
// finished): the step's bookkeeping, then the next step's choice. Returns the fiber to
// continue in, or nullptr (the host) when the run is over. Throws nothing: an exception of
// the bookkeeping or the strategy is kept for Run() to rethrow on the host.
detail::Fiber* Scheduler::EndStep(bool finished) {
  try {
    Thread& t = *threads_[current_];
    current_ = kNoThread;
    if (finished && t.state != Thread::State::kFinished) Finish(t);
    previous_ = t.id;
    ++step_;
    const ThreadId next = NextStep();
    if (next == kNoThread) return nullptr;
    current_ = next;
    return threads_[next]->fiber.get();
  } catch (...) {
    internal_error_ = std::current_exception();
    current_ = kNoThread;
    return nullptr;
  }
}

void Scheduler::Suspend() {
  board_->SwitchTo(EndStep(/*finished=*/false));
  if (tearing_down_) [[unlikely]] {
    if (std::uncaught_exceptions() == 0) throw Teardown{};
  }
}

void Scheduler::Point(SchedulingPoint p) {
  if (tearing_down_) return;
  RERACE_ASSERT(current_ != kNoThread, "Scheduler::Point called outside a logical thread");
  if (options_.merge != nullptr && options_.merge->InStep(current_, p)) [[unlikely]] {
    InStep(p);
    return;
  }
  pending_[current_] = p;
  Suspend();
}

// A point performed inside the current step: an access like any other for the history, the
// race detector and the strategy, but no choice.
void Scheduler::InStep(const SchedulingPoint& p) {
  Thread& t = *threads_[current_];
  t.history[t.history_next] = {step_, p};
  t.history_next = (t.history_next + 1) % kHistory;
  t.history_len = std::min(t.history_len + 1, kHistory);
  if (options_.races) options_.races->OnStep(step_, current_, p);
  strategy_.OnInStep(step_, current_, p);
}

void Scheduler::Block(uint32_t object, const char* waits_for, ThreadId holder) {
  if (tearing_down_) return;
  RERACE_ASSERT(current_ != kNoThread, "Scheduler::Block called outside a logical thread");
  Thread& t = *threads_[current_];
  t.state = Thread::State::kBlocked;
  t.wait_object = object;
  t.waits_for = waits_for;
  t.wait_holder = holder;
  RemoveRunnable(t.id);
  pending_[t.id] = {Access::kWake, object, waits_for};
  Suspend();
}

void Scheduler::Wake(ThreadId id) {
  Thread& t = *threads_[id];
  if (t.state != Thread::State::kBlocked) return;
  t.state = Thread::State::kRunnable;
  if (current_ != kNoThread) clocks_[id] = std::max(clocks_[id], clocks_[current_]);
  MakeRunnable(id);
}

void Scheduler::Join(ThreadId id) {
  RERACE_ASSERT(id < threads_.size(), fmt::format("join of unknown thread {}", id));
  Thread& t = *threads_[id];
  Point({Access::kJoin, t.object, "join"});
  while (t.state != Thread::State::kFinished && !tearing_down_) {
    t.joiners.push_back(current_);
    Block(t.object, "to join", id);
  }
  clocks_[current_] = std::max(clocks_[current_], clocks_[id]);
}

uint64_t Scheduler::Promised() const {
  // A promise is made on what the strategy saw at its last pick: none once a thread has been
  // made runnable or blocked since (an unlock that woke a waiter PCT ranks higher, say).
  return current_ == kNoThread || runnable_changed_ ? 0 : strategy_.Promised(step_ + 1, current_);
}

void Scheduler::Plan(uint64_t max_picks, std::vector<PlannedPicks>& out) const {
  out.clear();
  if (current_ == kNoThread) return;
  strategy_.Plan(step_ + 1, current_, runnable_, runnable_changed_, max_picks, out);
}

void Scheduler::Advance(Nanos d) {
  RERACE_ASSERT(current_ != kNoThread, "Scheduler::Advance called outside a logical thread");
  clocks_[current_] += d;
}

void Scheduler::AdvanceTo(Nanos t) {
  RERACE_ASSERT(current_ != kNoThread, "Scheduler::AdvanceTo called outside a logical thread");
  clocks_[current_] = std::max(clocks_[current_], t);
}

void Scheduler::SleepFor(Nanos d, const char* label) {
  Advance(d);
  Point({Access::kSleep, 0, label});
}

Nanos Scheduler::Now() const { return current_ == kNoThread ? 0 : clocks_[current_]; }

void Scheduler::Fail(Failure f) {
  if (!failure_) failure_ = std::move(f);
}

void Scheduler::Finish(Thread& t) {
  t.state = Thread::State::kFinished;
  if (options_.races) options_.races->OnFinish(t.id);
  RemoveRunnable(t.id);
  --live_;
  for (ThreadId j : t.joiners) Wake(j);
  t.joiners.clear();
  std::exception_ptr e = t.fiber->TakeException();
  if (!e) return;
  Failure f;
  f.thread = t.id;
  f.step = step_;
  try {
    std::rethrow_exception(e);
  } catch (const CheckFailure& c) {
    f.kind = FailureKind::kCheck;
    f.type = c.type();
    f.message = c.message();
    f.where = c.where();
  } catch (const ThreadError& c) {
    f.kind = FailureKind::kException;
    f.type = c.type();
    f.message = c.message();
    f.where = c.where();
  } catch (const std::exception& c) {
    f.kind = FailureKind::kException;
    f.type = "exception";
    f.message = c.what();
    f.where.file = pending_[t.id].label;
  } catch (...) {
    f.kind = FailureKind::kException;
    f.type = "exception";
    f.message = "an exception of unknown type";
    f.where.file = pending_[t.id].label;
  }
  Fail(std::move(f));
}

std::string Scheduler::Describe(const SchedulingPoint& p) const {
  if (p.object == 0) return fmt::format("{}  ({})", AccessName(p.access), p.label);
  return fmt::format("{} {}  ({})", AccessName(p.access), objects_[p.object], p.label);
}

// Chooses the next step: the strategy's pick among the runnable threads, checked and
// recorded. Returns kNoThread when the run is over (every thread finished, or a failure:
// deadlock, step bound, divergence, or one found earlier).
ThreadId Scheduler::NextStep() {
  if (failure_) return kNoThread;
  if (runnable_.empty()) {
    if (live_ == 0) return kNoThread;
    Failure f;
    f.kind = FailureKind::kDeadlock;
    f.step = step_;
    f.type = "Deadlock";
    f.message = fmt::format("every live thread is blocked ({} of {})", live_, threads_.size());
    for (const auto& t : threads_) {
      if (t->state != Thread::State::kBlocked) continue;
      std::string line = fmt::format("thread {} ({}) waits {} {}", t->id, t->name, t->waits_for,
                                     objects_[t->wait_object]);
      if (t->wait_holder != kNoThread)
        line += fmt::format(", held by thread {} ({})", t->wait_holder,
                            threads_[t->wait_holder]->name);
      f.waits.push_back(std::move(line));
    }
    Fail(std::move(f));
    return kNoThread;
  }
  if (step_ >= options_.max_steps) {
    Failure f;
    f.kind = FailureKind::kStepBound;
    f.step = step_;
    f.type = "StepBound";
    f.message = fmt::format(
        "the step bound of {} was reached with {} threads still live: a livelock, or a run "
        "longer than the bound",
        options_.max_steps, live_);
    Fail(std::move(f));
    return kNoThread;
  }

  const Choice choice{step_, previous_, runnable_, clocks_, pending_};
  const ThreadId pick = strategy_.Pick(choice);
  runnable_changed_ = false;
  if (pick >= in_runnable_.size() || !in_runnable_[pick]) [[unlikely]] {
    std::string runnable;
    for (ThreadId r : runnable_) runnable += (runnable.empty() ? "" : ", ") + std::to_string(r);
    Failure f;
    f.kind = FailureKind::kDivergence;
    f.step = step_;
    f.type = "Divergence";
    if (pick == kNoThread) {
      f.message = fmt::format("the schedule ends at step {}, but threads {} can still run",
                              step_, runnable);
    } else if (pick >= threads_.size()) {
      f.thread = pick;
      f.message = fmt::format(
          "the schedule names thread {} at step {}, but the program has only {} threads",
          pick, step_, threads_.size());
    } else {
      const Thread& t = *threads_[pick];
      f.thread = pick;
      f.message = fmt::format("the schedule names thread {} at step {}, but it {}; runnable: {}",
                              pick, step_,
                              t.state == Thread::State::kFinished
                                  ? std::string("has finished")
                                  : fmt::format("is blocked ({} {})", t.waits_for,
                                                objects_[t.wait_object]),
                              runnable);
    }
    Fail(std::move(f));
    return kNoThread;
  }
  if (previous_ != kNoThread && previous_ != pick && in_runnable_[previous_]) {
    ++preemptions_;
  }
  schedule_.Append(pick);
  Thread& t = *threads_[pick];
  t.history[t.history_next] = {step_, pending_[pick]};
  t.history_next = (t.history_next + 1) % kHistory;
  t.history_len = std::min(t.history_len + 1, kHistory);
  ++t.steps;
  if (options_.races) options_.races->OnStep(step_, pick, pending_[pick]);
  return pick;
}

RunResult Scheduler::Run() {
  RERACE_ASSERT(!ran_, "Scheduler::Run called twice");
  ran_ = true;
  Scheduler* saved = std::exchange(tls_current, this);
  schedule_.Reserve(1024);

  // The first step is chosen here; from then on each thread chooses the next at its point
  // and switches straight to it (EndStep), and the last one switches back here.
  ThreadId first = kNoThread;
  try {
    first = NextStep();
  } catch (...) {
    tls_current = saved;
    throw;
  }
  if (first != kNoThread) {
    current_ = first;
    board_->SwitchTo(threads_[first]->fiber.get());
  }
  if (internal_error_) {
    tls_current = saved;
    std::rethrow_exception(std::exchange(internal_error_, nullptr));
  }
  if (!failure_) {
    if (auto msg = strategy_.AtEnd(step_)) {
      Failure f;
      f.kind = FailureKind::kDivergence;
      f.step = step_;
      f.type = "Divergence";
      f.message = *msg;
      Fail(std::move(f));
    }
  }
  RunResult result = Collect();
  if (options_.races) options_.races->NameObjects(*this);
  tls_current = saved;
  return result;
}

void Scheduler::KeepHistory(ThreadId t) {
  if (t >= threads_.size()) return;
  Thread& th = *threads_[t];
  if (th.history_kept) return;
  th.kept = th.history;
  th.kept_len = th.history_len;
  th.kept_next = th.history_next;
  th.history_kept = true;
}

RunResult Scheduler::Collect() {
  RunResult r;
  r.failure = failure_;
  r.steps = step_;
  r.preemptions = preemptions_;
  r.schedule = schedule_;
  for (const auto& t : threads_) {
    ThreadSummary s;
    s.id = t->id;
    s.name = t->name;
    s.steps = t->steps;
    s.clock = clocks_[t->id];
    s.finished = t->state == Thread::State::kFinished;
    const auto& ring = t->history_kept ? t->kept : t->history;
    const size_t len = t->history_kept ? t->kept_len : t->history_len;
    const size_t next = t->history_kept ? t->kept_next : t->history_next;
    const size_t first = (next + kHistory - len) % kHistory;
    for (size_t i = 0; i < len; ++i) {
      const auto& [step, point] = ring[(first + i) % kHistory];
      s.last_steps.push_back({step, Describe(point)});
    }
    r.makespan = std::max(r.makespan, s.clock);
    r.threads.push_back(std::move(s));
  }
  return r;
}

std::string RunResult::Report() const {
  std::string out;
  if (failure) {
    const Failure& f = *failure;
    if (f.thread != kNoThread && f.thread < threads.size()) {
      out += fmt::format("FAILED: {} in thread {} ({}) at step {}\n", FailureKindName(f.kind),
                         f.thread, threads[f.thread].name, f.step);
    } else {
      out += fmt::format("FAILED: {} at step {}\n", FailureKindName(f.kind), f.step);
    }
    out += fmt::format("  {}: {}\n", f.type, f.message);
    if (!f.where.file.empty()) out += fmt::format("  at {}\n", f.where.ToString());
    for (const auto& w : f.waits) out += fmt::format("  {}\n", w);
  } else {
    out += "ok: no failure\n";
  }
  out += "threads (last steps, oldest first):\n";
  for (const auto& t : threads) {
    out += fmt::format("  thread {} ({}): {}, {} steps, clock {} ns\n", t.id, t.name,
                       t.finished ? "finished" : "live", t.steps, t.clock);
    for (const auto& s : t.last_steps) out += fmt::format("    step {:>6}  {}\n", s.step, s.text);
  }
  out += fmt::format("run: {} steps, {} preemptions, makespan {} ns\n", steps, preemptions,
                     makespan);
  out += fmt::format("schedule: {}\n", schedule.Encode());
  return out;
}

}  // namespace rerace::sim
