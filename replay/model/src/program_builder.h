// replay/model/src/program_builder.h: trace → programs, one event at a time (private to replay).
//
// BuildProgram hands it a whole trace's events; ReadProgram hands it a TraceStream's, chunk
// by chunk, so that the events are never all in memory. The one thing an event cannot say
// where it is met is the GPU time of a launch: its activity record comes later. Two ways:
//   - known up front (`durations`, from the whole trace: BuildProgram), applied at once;
//   - deferred: the launch leaves a Pending (where its time goes: its op, its benchmark's GPU
//     work, its call's final launch) keyed by its correlation id, which its activity record
//     resolves and removes. Memory: the launches whose activity has not come yet. Only for a
//     trace that ReadProgram's first pass found fit (program.cc): at most one timed activity
//     per launch, and no memory operation sharing a launch's correlation id (so memory
//     operations have no GPU time, as the whole-trace build gives them).
//
// Not thread-safe; one builder per trace.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/replay/model/program.h"
#include "sync_order.h"
#include "rerace/traces/trace.h"
#include "rerace/replay/model/calibrate.h"

namespace rerace::replay::detail {

// Per device and stream, where another stream of the device has GPU work: [first start, last
// end) of the other streams' work. Only an interval of the stream that meets its window can
// overlap another stream's, so a streamed build keeps only those (Program::overlapping_devices
// is the same): a device with one stream, or a stream that ran before or after the others,
// keeps nothing.
using StreamWindows = std::map<std::pair<uint32_t, uint64_t>, std::pair<uint64_t, uint64_t>>;


class ProgramBuilder {
 public:
  // `threads`: the trace's threads, final names (one program each, in this order).
  // `durations`: GPU time per correlation id, when known up front; nullptr: deferred.
  // `windows`: deferred only, the windows of the streams (only intervals that meet their
  // stream's window are kept for overlapping_devices).
  ProgramBuilder(std::string source, const std::vector<traces::Thread>& threads,
                 const std::unordered_map<uint32_t, Nanos>* durations,
                 StreamWindows windows);

  // One event, in trace order; `meta` holds the strings and shapes it names, `te` its tuner
  // transition (kTuner). `timed`: deferred only, whether an activity with a GPU time will
  // come for this launch's correlation id (else no Pending is kept).
  Result<void> Add(const traces::Event& e, const traces::TunerEvent* te, const traces::Trace& meta,
                   bool timed);
  // After the last event. Deferred: `overlapping` unused (from the activities met); else the
  // devices to record.
  Program Finish(bool truncated, std::set<uint32_t> overlapping);

 private:
  // Where a launch's GPU time goes.
  struct Pending {
    uint32_t thread = 0;
    uint32_t op = UINT32_MAX;      // index in the thread's ops, or none
    uint32_t bench = UINT32_MAX;   // index in bench_gpu_, or none
    uint32_t call = UINT32_MAX;    // the call whose final launch this may be
    uint64_t ordinal = 0;          // of the call's launches: it must still be its last
    uint32_t device = 0;
    uint64_t stream = 0;
  };
  // Per thread, while building: what the calibration of the virtual CPU needs.
  struct Clock {
    uint64_t last_end = 0;       // when the thread's previous op ended (its CPU time after it)
    bool charge = false;         // whether the time since last_end was the thread's own CPU
    uint64_t call_begin = 0;
    uint64_t bench_begin = 0;
    bool in_bench = false;
    uint32_t bench = UINT32_MAX; // the current benchmark's GPU work: index in bench_gpu_
    Nanos bench_walls = 0;       // wall time of the current call's benchmarks
    uint32_t bench_copies = 0;   // restore_copies writes in the current benchmark
    Nanos Gap(const traces::Event& e) const {
      return charge && e.cpu_ns > last_end ? e.cpu_ns - last_end : 0;
    }
    void End(const traces::Event& e, bool own_cpu_after) {
      last_end = e.cpu_ns;
      charge = own_cpu_after;
    }
  };
  struct Bench {
    Nanos wall = 0;
    uint32_t gpu = UINT32_MAX;  // index in bench_gpu_; UINT32_MAX: not benchmarked
  };

  Result<void> AddTuner(const traces::Event& e, const traces::TunerEvent& te, const traces::Trace& meta);
  void AddLaunch(const traces::Event& e, const traces::Trace& meta, bool timed);
  void AddMemOp(const traces::Event& e);
  void Apply(const Pending& p, Nanos d);
  void PushOp(const traces::Event& e, Op op);
  Nanos Known(uint32_t correlation) const;

  Program p_;
  const std::unordered_map<uint32_t, Nanos>* durations_;
  StreamWindows windows_;
  std::unordered_map<uint32_t, Pending> pending_;
  std::map<uint32_t, std::vector<GpuInterval>> intervals_;
  std::vector<int64_t> open_call_;  // per thread: call being recorded
  std::vector<Clock> clock_;
  std::vector<std::vector<uint64_t>> op_cpu_;  // per thread, per op: its event's CPU time
  std::vector<Nanos> bench_gpu_;    // per benchmark met: GPU work launched inside it
  // Per recorded lock: who holds it since when, and its last holds (a ring of at most
  // kLockHolds, grown as holds are met: a gap that spans more of them has the older ones
  // charged as CPU time, as before).
  static constexpr size_t kLockHolds = 64;
  struct LockHolds {
    struct Hold {
      uint64_t acquire = 0, release = 0;
      uint32_t thread = UINT32_MAX;
    };
    uint32_t holder = UINT32_MAX;
    uint64_t since = 0;
    std::vector<Hold> recent;
    size_t next = 0;  // where the next hold goes once the ring is full
  };
  std::unordered_map<uint64_t, LockHolds> locks_;
  // Per call, per config: the benchmark's recorded wall time and GPU work; per call: its CPU
  // time outside benchmarks (UINT64_MAX: the call did not end), and how many launches it made.
  std::vector<std::vector<Bench>> bench_seen_;
  std::vector<Nanos> call_cpu_;
  std::vector<BenchInterval> benches_;  // every benchmark's interval (calibrate.h)
  std::vector<uint64_t> call_launches_;
  SyncOrder sync_;                               // the program's own synchronization
  std::vector<std::vector<uint32_t>> sync_after_;  // per call: the calls it follows by it
  std::optional<uint64_t> first_ns_;
  uint64_t last_ns_ = 0;
};

}  // namespace rerace::replay::detail
