// rerace/replay/model/program.h: a trace turned into one program per recorded host thread.
//
// Replay re-executes; it does not reorder recorded events. Each thread's program is what the
// thread asked for, in its recorded order: tuner calls (the tuner object, kernel, key,
// configs, in-parameters by name and index, restore_value / reset_to_zero, the recorded
// benchmark time of each config), its own kernel launches with their recorded durations,
// synchronizations, and the locks it took. Launches made inside a tuner call (benchmark
// repetitions, the final launch) belong to the call: the tuner model re-issues them.
//
// The recording's own order is kept beside the programs: per thread, the tuner transitions
// with their global sequence numbers (for `replay --recorded`), and the failures recorded.
//
// Plain values; built once, read by many runs (from one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/traces/trace.h"

namespace rerace::replay {

using Nanos = uint64_t;

struct TunerCall {
  uint64_t tuner = 0;          // identity of the tuner object
  std::string tuner_class;
  std::string kernel;
  std::string key;
  std::vector<std::string> configs;
  std::vector<std::string> arg_names;
  std::vector<uint32_t> restore_value;  // indices into arg_names
  std::vector<uint32_t> reset_to_zero;
  // per restore_value entry: the tensor's shape at this call, as the probe recorded it (empty:
  // not recorded, or not a tensor). Restoring another call's copy of another shape raises.
  std::vector<std::vector<int64_t>> restore_shapes;
  // Patch reach at this call, as the probe recorded it (issue 29): for each callable a patch
  // replaced after the probe ("Autotuner.run"), whether it was on the call's stack, and which
  // frame called Triton's run. Empty: nothing replaced, or not recorded.
  struct Reach {
    std::string name;   // "Autotuner.run"
    std::string patch;  // "fix.py:7"
    std::string by;     // "CachedAutotuner.run (cache.py:360)"
    bool on_stack = false;
  };
  std::vector<Reach> reach;
  std::vector<Nanos> bench_ns;          // per config: one repetition's recorded time
  std::vector<uint32_t> bench_reps;     // per config: recorded repetitions (do_bench)
  Nanos launch_ns = 0;                  // the final launch's recorded duration
  // Calibration (virtual_gpu.h), per config, over all its do_bench repetitions: the GPU work
  // the thread launched inside the benchmark (kernels, the trial's clones and copies, fills)
  // and the rest of the benchmark's recorded wall time (CPU: Python, launches, allocation).
  // From the least contended recorded benchmark of the same tuner, key and config; 0: none.
  std::vector<Nanos> trial_gpu_ns;
  std::vector<Nanos> trial_cpu_ns;
  bool time_budgeted = false;           // do_bench runs for a time, not a count (Triton, FLA)
  // The recorded trials synchronize the whole device (a context synchronization inside a
  // benchmark: the native tuner frees each repetition's clone with cudaDeviceSynchronize +
  // cudaFree and allocates the next with cudaMalloc): trials of one device do not overlap.
  bool trial_device_sync = false;
  Nanos call_cpu_ns = 0;                // the call's CPU time outside benchmarks (least of the tuner's calls)
  uint32_t device = 0;
  uint64_t stream = 0;
  // The recorded events that began and ended the call (UINT64_MAX: it never ended, a
  // truncated trace), for the order a recording's timing shows (OrderFromTiming).
  uint64_t begin_seq = 0;
  uint64_t end_seq = UINT64_MAX;
};

struct Op {
  enum class Kind : uint8_t { kTunerCall, kLaunch, kSync, kLockAcquire, kLockRelease };
  Kind kind = Kind::kLaunch;
  uint32_t call = 0;       // kTunerCall: index into Program::calls
  uint32_t device = 0;     // kLaunch / kSync
  uint64_t stream = 0;
  Nanos duration = 0;      // kLaunch
  std::string kernel;      // kLaunch
  traces::SyncKind sync = traces::SyncKind::kContext;
  uint64_t lock = 0;       // kLock*: identity
  std::string lock_name;
  uint64_t seq = 0;        // the recorded event it came from
  Nanos cpu_before_ns = 0; // CPU time the thread spent before it, since its previous op ended
                           // (0 after a synchronization or a lock: that time was waiting)
};

// One recorded tuner transition of a thread, in that thread's order.
struct RecordedTransition {
  traces::TunerKind kind;
  int32_t config;
  uint64_t seq;            // global position in the trace
  traces::TunerField field = traces::TunerField::kNone;  // kFieldRead / kFieldWrite
};

struct RecordedFailure {
  uint64_t seq = 0;
  std::string type, message, where;
};

struct ThreadProgram {
  uint32_t thread = 0;     // trace thread id
  std::string name;
  std::vector<Op> ops;
  std::vector<RecordedTransition> transitions;
  std::vector<RecordedFailure> failures;
  Nanos start_ns = 0;      // when it starts, from the trace's first event (see BuildProgram)
  bool worker = false;     // part of the step: it calls a tuner (any thread with ops when none does)
};

struct Program {
  std::string source;                   // the trace's path, for reports
  std::vector<ThreadProgram> threads;   // only threads that did something replay models
  std::vector<TunerCall> calls;
  std::vector<std::string> tuner_classes;  // seen, in order of first call
  Nanos recorded_span_ns = 0;           // CPU time from the first to the last event
  bool truncated = false;
  // The virtual CPU and GPU (virtual_gpu.h): Python tuners run their CPU work under the GIL
  // (false when the probe says the interpreter ran without one, and for native tuners and
  // traces without tuner calls); devices on which the recording shows kernels of different
  // streams overlapping run their streams concurrently.
  bool gil = false;
  // Where the step starts: the earliest start_ns of a worker. The step ends when the last
  // worker (or a thread a fix adds) ends; the process's start-up before it, and what other
  // threads do after it, are not part of it.
  Nanos step_start_ns = 0;
  std::set<uint32_t> overlapping_devices;
  // Per tuner object: what the probe recorded about it at its first call (JSON, in the
  // call-begin mark's detail): kernel module and qualname, key names, Python version and GIL,
  // Triton and FLA versions, and what `run`, `_bench` and the fields resolved to at call time
  // (a patched program is recognised by them). Empty for recordings of older probes.
  std::map<uint64_t, std::string> tuner_meta;
  // The tuners whose metadata says `cache_results` (Triton's disk cache, from 3.4: the models'
  // check_disk_cache), read from tuner_meta once here, not per replayed run.
  std::set<uint64_t> cache_results;
  // What tuner objects share, from the probe's `identity` (metadata v2, ReadSharing): per
  // tuner, the tuner whose cache dict it holds (the first, in call order, of those holding that
  // dict; absent: its own), and the tuner whose restore_copies its hooks write (the tuner their
  // closures or __self__ refer to: a shallow copy's hooks write its original's, which may be a
  // tuner no recorded call used; absent: its own). Replayed by both engines.
  std::map<uint64_t, uint64_t> cache_home;
  std::map<uint64_t, uint64_t> hooks_home;
  // Whether every tuner's metadata says what it holds by identity; false for recordings of
  // older probes, whose verdicts say so when they have two tuner objects or more.
  bool identity_recorded = false;
  // Python trials that run for a time budget (Triton's do_bench) share the host under the GIL:
  // a trial repetition that starts while k other threads' such trials run takes
  // (1 + trial_contention_ppm / 1e6 x log2(k + 1)) times its calibrated time (virtual_gpu.h,
  // calibrate.h: the H200 shows a jump from one trial to two and less with each doubling after). Fitted from
  // the recording when it has trials of one kernel and config both alone and with others
  // (trial_contention_from "recording"), else the figure measured on the H200 ("H200",
  // docs/MODEL.md); 0 and "" for native tuners and free-threaded interpreters.
  uint32_t trial_contention_ppm = 0;
  std::string trial_contention_from;
  // Per call, the calls of other threads that must end before it begins: the program's own
  // synchronization as recorded (rerace:sync marks: Thread.start / join, Event, Queue, Future,
  // Executor.submit, Barrier; replay/model/src/sync_order.h), and with --order-from-timing
  // (OrderFromTiming) the calls that in the recording ended before it began. Empty: no order
  // between threads but the one their own operations make.
  std::vector<std::vector<uint32_t>> call_after;
  // Whether the recording holds the program's synchronization (any rerace:sync mark: a probe
  // that records it), whether its marks hit the probe's bound (later ones were not recorded),
  // and per primitive how many of its waits ordered a call.
  bool sync_recorded = false;
  bool sync_overflowed = false;
  std::map<std::string, uint32_t> sync_orders;
  // The process's cold start as its first recorded trial shows it (CUDA's and Triton's runtime
  // start, the launcher, lazy loading of kernels): paid once by the first trial of a replayed
  // run; a trial that starts before it ends waits for it (calibrate.h). 0: not cold.
  Nanos cold_ns = 0;
};

// Reads Program::cache_home, hooks_home and identity_recorded from tuner_meta (the probe's
// "identity": {"self", "fields": {"cache": token}, "hooks": {"post_hook": {"tuner": token}}},
// tokens "0x..." as tuners are named). Called by BuildProgram; unreadable entries share nothing.
void ReadSharing(Program& p);
// Tuners sharing state, one line per group: "Autotuner(k) x8 share one cache dict", "the hooks of
// Autotuner(k) x8 write the restore_copies of tuner 0x7f.. (not called)". Empty when none do.
std::vector<std::string> SharingLines(const Program& p);

// What the recording says was patched in a tuner's class (`run` or `_bench` resolving to a
// function outside Triton and FLA, or a field made a descriptor), one line each, from
// Program::tuner_meta; empty when nothing was, or when the probe recorded no metadata.
std::vector<std::string> PatchedParts(const Program& p);

// Patch reach as recorded (TunerCall::reach), one line per replaced callable: "your
// Autotuner.run replacement (fix.py:7) was on the stack of 0 of 8 recorded calls:
// CachedAutotuner.run (cache.py:360) reached Autotuner.run without it". Empty when the
// recording has none.
std::vector<std::string> RecordedReach(const Program& p);
// The same words over reach entries of any calls (`rerace show`, per tuner, from the events).
std::vector<std::string> ReachLines(const std::vector<TunerCall::Reach>& entries);
// The reach entries of one call-begin's detail (the probe's JSON); empty when it has none.
std::vector<TunerCall::Reach> ReachOfDetail(const std::string& detail);

// Builds the programs. Errors (exit 65) name the trace and event: a tuner call that never
// says which configs it has, a transition outside a call, a config index out of range.
Result<Program> BuildProgram(const traces::Trace& trace, const std::string& source);
// The same from the trace at `path`, streamed (traces::TraceStream) in two passes: the events
// are never all in memory, only the programs, what the reader keeps (strings, shapes, threads,
// the launches' correlation ids as a bitmap) and the launches whose GPU time (their activity
// record, later in the trace) has not come yet. A trace that gives a launch two GPU times, or
// a memory operation a launch's correlation id, is read whole instead (the same program).
// `read`, when given, receives what was read besides the events (header, threads, footer,
// truncated / truncation, event_count). Errors: the reader's (exit 65, 66), then BuildProgram's.
Result<Program> ReadProgram(const std::string& path, traces::Trace* read = nullptr);

// The calls of different threads that never overlapped in the recording: pairs (a, b), a's
// thread's latest call that ended before b began, for every other thread that had one. A
// recording holds no synchronization of the program (its Events, joins, queues), so calls it
// ordered replay as concurrent; these pairs are the order its timing shows.
std::vector<std::pair<uint32_t, uint32_t>> SerialCalls(const Program& p);
// --order-from-timing: every pair of SerialCalls becomes an order of the replay (b waits for a
// to end; a thread whose call raised ends its calls). Returns how many.
size_t OrderFromTiming(Program& p);

// The program of the worker threads `threads` (indices into p.threads) alone: their ops, the
// tuner calls they make (renumbered), the tuner state as recorded (cold, the same metadata);
// every other thread absent. Its threads are numbered 0..K-1 in the order of their indices
// here, keeping their recorded names. A certificate's search runs on such sub-programs
// (replay/search/certificate.h), and `--only` replays one. Errors (exit 64): no thread, a
// thread named twice, out of range, or not a worker.
[[nodiscard]] Result<Program> SubProgram(const Program& p, const std::vector<uint32_t>& threads);

}  // namespace rerace::replay
