// rerace/traces/trace.h: the trace, the contract between the recorder (on a GPU machine) and
// replay (on any CPU).
//
// A trace is what one process did during a recorded run: its GPUs, its host threads, and a
// stream of events in recorded order: kernel launches and their GPU timings, synchronizations,
// memory operations, the tuner state transitions that probes announce, the locks the program
// took, and free NVTX marks. On disk it is a stream of Cap'n Proto chunks
// (traces/schema/trace.capnp, format.h); in memory it is the plain structs below, which the
// reader fills and the writer takes. Cap'n Proto types never appear outside traces/.
//
//   Result<Trace> t = ReadTrace("step.rrt");
//   for (const Event& e : t->events) if (e.kind == EventKind::kLaunch) ...
//
// Ids: strings, launch shapes and threads are dense ids (0, 1, 2...) into the vectors of
// the Trace; every reference has been checked by the reader, so consumers may index freely.
// A Trace is a plain value: no thread-safety of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rerace::traces {

struct ClockPair {
  uint32_t device = 0;
  uint64_t cpu_ns = 0;
  uint64_t gpu_ns = 0;
  bool operator==(const ClockPair&) const = default;
};

struct Gpu {
  uint32_t index = 0;
  std::string name;
  std::string uuid;
  uint64_t memory_bytes = 0;
  bool operator==(const Gpu&) const = default;
};

struct Header {
  uint32_t format_version = 0;  // filled by the writer / checked by the reader
  std::string recorder_version;
  std::string host;
  uint32_t pid = 0;
  int32_t rank = -1;
  std::vector<std::string> command_line;
  uint64_t start_time_unix_ns = 0;  // informational only: replay never reads it
  uint64_t start_cpu_ns = 0;
  std::vector<ClockPair> clock_pairs;
  std::vector<Gpu> gpus;
  std::vector<std::string> tuner_classes;
  // Ties the header, chunks and footer of one recording together (format 2; 0 in a version 1
  // trace). The writer draws one at random when it is 0.
  uint64_t recording_id = 0;
  bool operator==(const Header&) const = default;
};

struct Thread {
  uint32_t id = 0;
  uint64_t os_tid = 0;
  std::string name;
  bool operator==(const Thread&) const = default;
};

struct LaunchShape {
  uint32_t kernel = 0;  // string id
  uint32_t device = 0;
  uint64_t stream = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;
  bool operator==(const LaunchShape&) const = default;
};

enum class EventKind : uint8_t { kLaunch, kActivity, kSync, kMemOp, kTuner, kLock, kNvtx };
enum class SyncKind : uint8_t { kContext, kStream, kEvent, kEventRecord, kStreamWaitEvent };
enum class MemKind : uint8_t { kHtoD, kDtoH, kDtoD, kHtoH, kPeer, kMemset };
enum class LockKind : uint8_t { kAcquire, kRelease };
enum class NvtxKind : uint8_t { kMark, kRangePush, kRangePop, kRangeStart, kRangeEnd };

const char* EventKindName(EventKind k);
const char* SyncKindName(SyncKind k);
const char* MemKindName(MemKind k);

// One event. Which fields mean something depends on `kind` (see the schema's union).
struct Event {
  EventKind kind = EventKind::kLaunch;
  uint32_t thread = 0;
  uint64_t seq = 0;      // global sequence number (position in the trace)
  uint64_t cpu_ns = 0;   // CLOCK_MONOTONIC of the recording machine
  // kLaunch: shape, correlation. kActivity: correlation, gpu_start/gpu_end (0: no timing).
  uint32_t shape = 0;
  uint32_t correlation = 0;
  uint64_t gpu_start_ns = 0;
  uint64_t gpu_end_ns = 0;
  // kSync / kMemOp
  SyncKind sync = SyncKind::kContext;
  MemKind mem = MemKind::kHtoD;
  uint32_t device = 0;
  uint64_t stream = 0;
  uint64_t handle = 0;   // kSync: CUDA event; kLock: lock identity; kNvtx: range id
  uint64_t bytes = 0;    // kMemOp
  // kLock / kNvtx
  LockKind lock = LockKind::kAcquire;
  NvtxKind nvtx = NvtxKind::kMark;
  uint32_t text = 0;     // kLock: lock name; kNvtx: message (string ids)
  // kTuner: index into Trace::tuner_events
  uint32_t tuner = 0;
  bool operator==(const Event&) const = default;
};

enum class TunerKind : uint8_t {
  kCallBegin, kCallEnd, kFieldRead, kFieldWrite, kBenchBegin, kBenchEnd, kPreHook, kPostHook,
  kLaunch, kError, kPrune, kDiskCache,
};
enum class TunerField : uint8_t {
  kNone, kNargs, kCache, kRestoreCopies, kBestConfig, kConfigsTimings, kBenchTime,
};
const char* TunerKindName(TunerKind k);
const char* TunerFieldName(TunerField f);

struct TunerEvent {
  uint64_t tuner = 0;
  uint32_t tuner_class = 0;  // string id
  uint32_t kernel = 0;       // string id
  TunerKind kind = TunerKind::kCallBegin;
  TunerField field = TunerField::kNone;
  std::string key;
  int32_t config = -1;
  std::string detail;
  std::vector<std::string> configs;      // kCallBegin
  std::vector<std::string> arg_names;    // kCallBegin
  std::vector<uint32_t> restore_value;   // kCallBegin
  std::vector<uint32_t> reset_to_zero;   // kCallBegin
  std::vector<double> timings_ms;        // kBenchEnd
  uint32_t repetitions = 0;              // kBenchEnd
  std::string error_type, error_message, error_where;  // kError
  bool operator==(const TunerEvent&) const = default;
};

struct Footer {
  uint64_t event_count = 0;
  uint64_t launch_count = 0;
  uint64_t activity_count = 0;
  uint64_t tuner_count = 0;
  uint64_t cupti_dropped = 0;
  uint64_t problems = 0;
  bool complete = true;
  std::vector<ClockPair> end_clock_pairs;
  bool operator==(const Footer&) const = default;
};

// A whole trace in memory.
struct Trace {
  Header header;
  std::vector<std::string> strings;
  std::vector<LaunchShape> shapes;
  std::vector<Thread> threads;
  std::vector<Event> events;
  std::vector<TunerEvent> tuner_events;
  Footer footer;           // as written; zero when the file has none
  bool has_footer = false;
  bool truncated = false;  // no footer, or a cut / corrupt frame after the last whole chunk
  std::string truncation;  // why, e.g. "truncated after 1200 events: ..."
  uint64_t chunks = 0;
  uint64_t event_count = 0;  // events read (events.size(), unless they were streamed)
  uint64_t built_bytes = 0;  // the reader's estimate of the memory it built (strings, events...)

  const std::string& Str(uint32_t id) const { return strings[id]; }
};

}  // namespace rerace::traces
