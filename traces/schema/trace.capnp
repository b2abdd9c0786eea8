# rerace trace format, schema version 1. See traces/include/rerace/traces/format.h.
#
# A trace file is:
#   magic      8 bytes  "RRTRACE\n"
#   version    u32 LE   kFormatVersion (must equal Header.formatVersion)
#   reserved   u32      must be 0
#   frames     each: u32 LE payload length, u8 kind (1 Header, 2 Chunk, 3 Footer),
#              3 bytes zero, u32 LE CRC-32C of the payload, then the payload: one
#              Cap'n Proto message in packed encoding.
# The first frame must be a Header; then any number of Chunks; then at most one Footer, which
# must be the last frame. A file without a Footer was cut short (a crash, a kill) and reads
# up to its last whole chunk.
#
# To print a frame's message, cut its payload out and decode it:
#   rerace show --frame N --raw TRACE > chunk.bin
#   capnp decode --packed traces/schema/trace.capnp Chunk < chunk.bin
#
# Every "must" below is checked by the reader (traces/src/records.cc).

@0xe071a15d5c0b8f18;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("rerace::traces::schema");

struct Header {
  formatVersion @0 :UInt32;        # must equal the version in the file preamble
  recorderVersion @1 :Text;
  host @2 :Text;
  pid @3 :UInt32;
  rank @4 :Int32 = -1;             # RANK / LOCAL_RANK of the process, -1 when unset
  commandLine @5 :List(Text);
  startTimeUnixNs @6 :UInt64;      # wall clock at start: informational, never used in replay
  clockPairs @7 :List(ClockPair);  # CPU/GPU clock pairs taken at start
  gpus @8 :List(Gpu);              # each index must be unique
  tunerClasses @9 :List(Text);     # e.g. "triton.runtime.autotuner.Autotuner"
  startCpuNs @10 :UInt64;          # the recorder's CPU clock (CLOCK_MONOTONIC) at start
  recordingId @11 :UInt64;         # from version 2: must not be 0; each chunk and the footer
                                   # must carry the same (frames of one recording, no splice)
}

struct ClockPair {
  device @0 :UInt32;               # must name a GPU in Header.gpus
  cpuNs @1 :UInt64;
  gpuNs @2 :UInt64;
}

struct Gpu {
  index @0 :UInt32;
  name @1 :Text;
  uuid @2 :Text;
  memoryBytes @3 :UInt64;
}

struct Thread {
  id @0 :UInt32;       # must be the next unused id (a new thread) or an existing id (a rename)
  osTid @1 :UInt64;
  name @2 :Text;
}

# A launch shape: what a launch site always passes. Interned like strings, so that a launch
# event is a shape id and a correlation id (a training step repeats few shapes many times).
struct LaunchShape {
  kernel @0 :UInt32;   # must be a string id
  device @1 :UInt32;   # must name a GPU in Header.gpus when that list is not empty
  stream @2 :UInt64;
  gridX @3 :UInt32;    # grid and block dimensions must be at least 1
  gridY @4 :UInt32;
  gridZ @5 :UInt32;
  blockX @6 :UInt32;
  blockY @7 :UInt32;
  blockZ @8 :UInt32;
  sharedBytes @9 :UInt32;
}

struct Chunk {
  firstSeq @0 :UInt64;              # must equal the number of events in earlier chunks
  baseCpuNs @1 :UInt64;             # event CPU times are deltas from this
  strings @2 :List(Text);           # new strings; their ids continue from earlier chunks
  shapes @3 :List(LaunchShape);     # new shapes; ids continue likewise
  threads @4 :List(Thread);         # new threads and renames, before any event that uses them
  events @5 :List(Event);           # in recorded order; event i has sequence firstSeq + i
  tuners @6 :List(TunerEvent);      # tuner transitions, referenced by events in order
  recordingId @7 :UInt64;           # from version 2: must equal Header.recordingId
}

enum SyncKind {
  contextSync @0;      # cuCtxSynchronize / cudaDeviceSynchronize
  streamSync @1;
  eventSync @2;
  eventRecord @3;
  streamWaitEvent @4;
}

enum MemKind {
  memcpyHtoD @0;
  memcpyDtoH @1;
  memcpyDtoD @2;
  memcpyHtoH @3;
  memcpyPeer @4;
  memset @5;
}

enum LockKind {
  acquire @0;
  release @1;
}

enum NvtxKind {
  mark @0;
  rangePush @1;
  rangePop @2;
  rangeStart @3;
  rangeEnd @4;
}

struct Event {
  thread @0 :UInt32;        # must name a declared thread
  cpuDeltaNs @1 :UInt32;    # CPU time (CLOCK_MONOTONIC) minus Chunk.baseCpuNs; the sum
                            # must fit 64 bits
  union {
    launch :group {
      shape @2 :UInt32;             # must be a declared shape id
      correlationId @3 :UInt32;     # must be unique among launches
    }
    activity :group {
      correlationId @4 :UInt32;     # must match an earlier launch
      gpuStartNs @5 :UInt64;        # 0 means "no timing", not time zero
      gpuEndNs @6 :UInt64;          # must be >= gpuStartNs, and at most an hour after it,
                                    # when gpuStartNs != 0
    }
    sync :group {
      kind @7 :SyncKind;
      device @8 :UInt32;
      stream @9 :UInt64;
      event @10 :UInt64;            # CUDA event handle id, for event kinds
    }
    memop :group {
      kind @11 :MemKind;
      device @12 :UInt32;
      stream @13 :UInt64;
      bytes @14 :UInt64;
      memCorrelationId @15 :UInt32;
    }
    tuner @16 :Void;                # the next entry of Chunk.tuners (must exist)
    lock :group {
      kind @17 :LockKind;
      lock @18 :UInt64;             # identity of the lock object
      lockName @19 :UInt32;         # must be a string id
    }
    nvtx :group {
      kind @20 :NvtxKind;
      message @21 :UInt32;          # must be a string id
      rangeId @22 :UInt64;
    }
  }
}

# A tuner state transition, announced by a probe (recorder/python/rerace_probe or kernels/'s native tuner).
# The kinds line up with the scheduling points of replay's tuner models.
struct TunerEvent {
  tuner @0 :UInt64;              # identity of the tuner object
  tunerClass @1 :UInt32;         # must be a string id
  kernel @2 :UInt32;             # must be a string id
  kind @3 :Kind;
  field @4 :Field;               # fieldRead / fieldWrite: which shared field
  key @5 :Text;                  # the tuning key, as the program printed it
  config @6 :Int32 = -1;         # config index; must be < the call's configs when >= 0
  detail @7 :Text;               # e.g. the in-parameter name a hook touches
  # callBegin only:
  configs @8 :List(Text);        # the configs, e.g. "BLOCK_N=64 num_warps=4"
  argNames @9 :List(Text);       # positional in-parameters, by index
  restoreValue @10 :List(UInt32);  # indices into argNames (must be in range)
  resetToZero @11 :List(UInt32);   # indices into argNames (must be in range)
  # benchEnd only:
  timingsMs @12 :List(Float64);  # do_bench quantiles: median, 20th, 80th percentile; each
                                 # must be finite, from 0 to 3,600,000 (an hour)
  repetitions @13 :UInt32;       # how many times the config's kernel ran while benchmarked;
                                 # must be at most 1,000,000
  # error only:
  errorType @14 :Text;           # "KeyError"
  errorMessage @15 :Text;        # "'y_ptr'"
  errorWhere @16 :Text;          # "triton/runtime/autotuner.py:74 _post_hook"

  enum Kind {
    callBegin @0;    # Autotuner.run entered
    callEnd @1;      # Autotuner.run returned
    fieldRead @2;
    fieldWrite @3;
    benchBegin @4;   # _bench(config) entered
    benchEnd @5;     # _bench(config) returned its timings
    preHook @6;      # default pre hook ran (detail: in-parameter)
    postHook @7;     # default post hook ran (detail: in-parameter)
    launch @8;       # the selected config's kernel launched for the caller
    error @9;        # an exception left the tuner
    prune @10;       # prune_configs returned (config: number kept)
    diskCache @11;   # check_disk_cache consulted
  }
  enum Field {
    none @0;
    nargs @1;
    cache @2;
    restoreCopies @3;
    bestConfig @4;
    configsTimings @5;
    benchTime @6;
  }
}

struct Footer {
  eventCount @0 :UInt64;         # must equal the number of events in the chunks
  launchCount @1 :UInt64;
  activityCount @2 :UInt64;
  tunerCount @3 :UInt64;
  cuptiDropped @4 :UInt64;       # CUPTI activity records lost (read from every buffer)
  problems @5 :UInt64;           # callback problems counted instead of thrown
  complete @6 :Bool;             # false: the recorder knew the run was cut short
  endClockPairs @7 :List(ClockPair);
  recordingId @8 :UInt64;        # from version 2: must equal Header.recordingId
}
