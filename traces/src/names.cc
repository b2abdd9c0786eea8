// traces/src/names.cc: names of the trace's enums, as reports print them.
#include "rerace/traces/trace.h"

namespace rerace::traces {

const char* EventKindName(EventKind k) {
  switch (k) {
    case EventKind::kLaunch: return "launch";
    case EventKind::kActivity: return "activity";
    case EventKind::kSync: return "sync";
    case EventKind::kMemOp: return "memop";
    case EventKind::kTuner: return "tuner";
    case EventKind::kLock: return "lock";
    case EventKind::kNvtx: return "nvtx";
  }
  return "?";
}

const char* SyncKindName(SyncKind k) {
  switch (k) {
    case SyncKind::kContext: return "context-sync";
    case SyncKind::kStream: return "stream-sync";
    case SyncKind::kEvent: return "event-sync";
    case SyncKind::kEventRecord: return "event-record";
    case SyncKind::kStreamWaitEvent: return "stream-wait-event";
  }
  return "?";
}

const char* MemKindName(MemKind k) {
  switch (k) {
    case MemKind::kHtoD: return "memcpy-htod";
    case MemKind::kDtoH: return "memcpy-dtoh";
    case MemKind::kDtoD: return "memcpy-dtod";
    case MemKind::kHtoH: return "memcpy-htoh";
    case MemKind::kPeer: return "memcpy-peer";
    case MemKind::kMemset: return "memset";
  }
  return "?";
}

const char* TunerKindName(TunerKind k) {
  switch (k) {
    case TunerKind::kCallBegin: return "call-begin";
    case TunerKind::kCallEnd: return "call-end";
    case TunerKind::kFieldRead: return "read";
    case TunerKind::kFieldWrite: return "write";
    case TunerKind::kBenchBegin: return "bench-begin";
    case TunerKind::kBenchEnd: return "bench-end";
    case TunerKind::kPreHook: return "pre-hook";
    case TunerKind::kPostHook: return "post-hook";
    case TunerKind::kLaunch: return "launch";
    case TunerKind::kError: return "error";
    case TunerKind::kPrune: return "prune";
    case TunerKind::kDiskCache: return "disk-cache";
  }
  return "?";
}

const char* TunerFieldName(TunerField f) {
  switch (f) {
    case TunerField::kNone: return "none";
    case TunerField::kNargs: return "nargs";
    case TunerField::kCache: return "cache";
    case TunerField::kRestoreCopies: return "restore_copies";
    case TunerField::kBestConfig: return "best_config";
    case TunerField::kConfigsTimings: return "configs_timings";
    case TunerField::kBenchTime: return "bench_time";
  }
  return "?";
}

}  // namespace rerace::traces
