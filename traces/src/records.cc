// traces/src/records.cc: what each record holds and every "must" the schema states next to its
// fields, checked as the parser decodes it: the header (GPUs, clock pairs), a chunk's tables
// (strings, launch shapes, threads) and events, a tuner transition, the footer's counts, and
// that every frame names the header's recording.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "parser.h"

namespace rerace::traces::detail {

void Parser::CheckString(uint32_t id, std::string_view field) {
  if (id >= trace_.strings.size())
    Fail(fmt::format("{} names string {}; expected a declared string id (< {})", field, id,
                     trace_.strings.size()));
}

bool Parser::KnownGpu(uint32_t device) const {
  if (trace_.header.gpus.empty()) return true;
  for (const Gpu& g : trace_.header.gpus)
    if (g.index == device) return true;
  return false;
}

std::vector<ClockPair> Parser::ClockPairs(capnp::List<s::ClockPair>::Reader l,
                                          std::string_view field) {
  std::vector<ClockPair> out;
  for (auto c : l) {
    Charge(sizeof(ClockPair));
    if (!KnownGpu(c.getDevice()))
      Fail(fmt::format("{} names device {}, which is not in the header's GPUs", field,
                       c.getDevice()));
    out.push_back({c.getDevice(), c.getCpuNs(), c.getGpuNs()});
  }
  return out;
}

void Parser::ReadHeader(s::Header::Reader h, const Frame&) {
  Header& out = trace_.header;
  out.format_version = h.getFormatVersion();
  if (out.format_version != version_)
    Fail(fmt::format("header says format version {}, the preamble {}", out.format_version,
                     version_));
  out.recording_id = h.getRecordingId();
  if (version_ >= 2 && out.recording_id == 0)
    Fail("recording id 0; expected the recording's non-zero identifier (format 2)");
  out.recorder_version = Text(h.getRecorderVersion());
  out.host = Text(h.getHost());
  out.pid = h.getPid();
  out.rank = h.getRank();
  for (auto t : h.getCommandLine()) out.command_line.push_back(Text(t));
  out.start_time_unix_ns = h.getStartTimeUnixNs();
  out.start_cpu_ns = h.getStartCpuNs();
  for (auto g : h.getGpus()) {
    for (const Gpu& seen : out.gpus)
      if (seen.index == g.getIndex())
        Fail(fmt::format("GPU index {} appears twice; expected unique indices", g.getIndex()));
    Charge(sizeof(Gpu));
    out.gpus.push_back({g.getIndex(), Text(g.getName()), Text(g.getUuid()), g.getMemoryBytes()});
  }
  out.clock_pairs = ClockPairs(h.getClockPairs(), "a clock pair");
  for (auto t : h.getTunerClasses()) out.tuner_classes.push_back(Text(t));
}

void Parser::SameRecording(uint64_t id) {
  if (version_ >= 2 && id != trace_.header.recording_id)
    Fail(fmt::format("recording id {:016x}, the header's {:016x}: the frames come from two "
                     "recordings (a splice?)",
                     id, trace_.header.recording_id));
}

void Parser::ReadChunk(s::Chunk::Reader c) {
  ReadChunkBody(c);
  SameRecording(c.getRecordingId());  // last: a chunk's own corruption is said first
}

void Parser::ReadChunkBody(s::Chunk::Reader c) {
  if (c.getFirstSeq() != event_count_)
    Fail(fmt::format("first sequence number {}; expected {} (the events before it)",
                     c.getFirstSeq(), event_count_));
  for (auto t : c.getStrings()) trace_.strings.push_back(Text(t));
  for (auto sh : c.getShapes()) {
    Charge(sizeof(LaunchShape));
    LaunchShape out;
    out.kernel = sh.getKernel();
    CheckString(out.kernel, fmt::format("launch shape {}'s kernel", trace_.shapes.size()));
    out.device = sh.getDevice();
    if (!KnownGpu(out.device))
      Fail(fmt::format("launch shape {} names device {}, which is not in the header's GPUs",
                       trace_.shapes.size(), out.device));
    out.stream = sh.getStream();
    out.grid[0] = sh.getGridX();
    out.grid[1] = sh.getGridY();
    out.grid[2] = sh.getGridZ();
    out.block[0] = sh.getBlockX();
    out.block[1] = sh.getBlockY();
    out.block[2] = sh.getBlockZ();
    for (uint32_t d : {out.grid[0], out.grid[1], out.grid[2], out.block[0], out.block[1], out.block[2]})
      if (d == 0)
        Fail(fmt::format("launch shape {} has a zero grid or block dimension; expected >= 1",
                         trace_.shapes.size()));
    out.shared_bytes = sh.getSharedBytes();
    trace_.shapes.push_back(out);
  }
  for (auto t : c.getThreads()) {
    const uint32_t id = t.getId();
    Charge(sizeof(Thread));
    if (id == trace_.threads.size()) {
      trace_.threads.push_back({id, t.getOsTid(), Text(t.getName())});
    } else if (id < trace_.threads.size()) {
      trace_.threads[id].name = Text(t.getName());
    } else {
      Fail(fmt::format("declares thread {}; expected the next id {} or an existing one", id,
                       trace_.threads.size()));
    }
  }
  auto tuners = c.getTuners();
  uint32_t next_tuner = 0;
  const uint64_t base = c.getBaseCpuNs();
  auto events = c.getEvents();
  // What this chunk's events build, released when they are streamed (the correlation set
  // is charged as its pages are made, and kept).
  const uint64_t before_events = built_;
  Charge(sizeof(Event) * events.size());
  std::vector<Event>& out_events = *events_out_;
  if (out_events.capacity() < out_events.size() + events.size())  // geometric growth
    out_events.reserve(std::max<size_t>(2 * out_events.capacity(), out_events.size() + events.size()));
  for (auto e : events) {
    Event out;
    out.seq = event_count_;
    out.thread = e.getThread();
    if (base > std::numeric_limits<uint64_t>::max() - e.getCpuDeltaNs())
      Fail(fmt::format("event {}: CPU time {} + {} ns overflows 64 bits; a corrupt time",
                       out.seq, base, e.getCpuDeltaNs()));
    out.cpu_ns = base + e.getCpuDeltaNs();
    if (out.thread >= trace_.threads.size())
      Fail(fmt::format("event {} names thread {}; expected a declared thread (< {})", out.seq,
                       out.thread, trace_.threads.size()));
    switch (e.which()) {
      case s::Event::LAUNCH: {
        auto g = e.getLaunch();
        out.kind = EventKind::kLaunch;
        out.shape = g.getShape();
        out.correlation = g.getCorrelationId();
        if (out.shape >= trace_.shapes.size())
          Fail(fmt::format("event {} names launch shape {}; expected a declared shape (< {})",
                           out.seq, out.shape, trace_.shapes.size()));
        uint64_t set_bytes = 0;
        const bool fresh = launched_.Insert(out.correlation, set_bytes);
        if (set_bytes != 0) {
          Charge(set_bytes);
          kept_in_chunk_ += set_bytes;
        }
        if (!fresh)
          Fail(fmt::format("event {}: correlation id {} is used by an earlier launch; expected "
                           "unique ids",
                           out.seq, out.correlation));
        ++counts_.launch_count;
        break;
      }
      case s::Event::ACTIVITY: {
        auto g = e.getActivity();
        out.kind = EventKind::kActivity;
        out.correlation = g.getCorrelationId();
        out.gpu_start_ns = g.getGpuStartNs();
        out.gpu_end_ns = g.getGpuEndNs();
        if (!launched_.Contains(out.correlation))
          Fail(fmt::format("event {}: kernel activity for correlation id {}, which no earlier "
                           "launch has",
                           out.seq, out.correlation));
        if (out.gpu_start_ns != 0 && out.gpu_end_ns < out.gpu_start_ns)
          Fail(fmt::format("event {}: GPU end {} before start {}", out.seq, out.gpu_end_ns,
                           out.gpu_start_ns));
        if (out.gpu_start_ns != 0 && out.gpu_end_ns - out.gpu_start_ns > kMaxKernelNs)
          Fail(fmt::format("event {}: a kernel of {} ns (GPU start {}, end {}); expected at "
                           "most {} ns (an hour): a corrupt timing",
                           out.seq, out.gpu_end_ns - out.gpu_start_ns, out.gpu_start_ns,
                           out.gpu_end_ns, kMaxKernelNs));
        ++counts_.activity_count;
        break;
      }
      case s::Event::SYNC: {
        auto g = e.getSync();
        out.kind = EventKind::kSync;
        const auto k = static_cast<uint16_t>(g.getKind());
        if (k > static_cast<uint16_t>(s::SyncKind::STREAM_WAIT_EVENT))
          Fail(fmt::format("event {}: unknown sync kind {}", out.seq, k));
        out.sync = static_cast<SyncKind>(k);
        out.device = g.getDevice();
        out.stream = g.getStream();
        out.handle = g.getEvent();
        break;
      }
      case s::Event::MEMOP: {
        auto g = e.getMemop();
        out.kind = EventKind::kMemOp;
        const auto k = static_cast<uint16_t>(g.getKind());
        if (k > static_cast<uint16_t>(s::MemKind::MEMSET))
          Fail(fmt::format("event {}: unknown memory operation kind {}", out.seq, k));
        out.mem = static_cast<MemKind>(k);
        out.device = g.getDevice();
        out.stream = g.getStream();
        out.bytes = g.getBytes();
        out.correlation = g.getMemCorrelationId();
        break;
      }
      case s::Event::TUNER: {
        out.kind = EventKind::kTuner;
        if (next_tuner >= tuners.size())
          Fail(fmt::format("event {} is tuner transition {} of the chunk, which lists only {}",
                           out.seq, next_tuner, tuners.size()));
        out.tuner = static_cast<uint32_t>(tuners_out_->size());
        tuners_out_->push_back(ReadTuner(tuners[next_tuner++], out));
        ++counts_.tuner_count;
        break;
      }
      case s::Event::LOCK: {
        auto g = e.getLock();
        out.kind = EventKind::kLock;
        const auto k = static_cast<uint16_t>(g.getKind());
        if (k > static_cast<uint16_t>(s::LockKind::RELEASE))
          Fail(fmt::format("event {}: unknown lock kind {}", out.seq, k));
        out.lock = static_cast<LockKind>(k);
        out.handle = g.getLock();
        out.text = g.getLockName();
        CheckString(out.text, fmt::format("event {}'s lock name", out.seq));
        break;
      }
      case s::Event::NVTX: {
        auto g = e.getNvtx();
        out.kind = EventKind::kNvtx;
        const auto k = static_cast<uint16_t>(g.getKind());
        if (k > static_cast<uint16_t>(s::NvtxKind::RANGE_END))
          Fail(fmt::format("event {}: unknown NVTX kind {}", out.seq, k));
        out.nvtx = static_cast<NvtxKind>(k);
        out.text = g.getMessage();
        out.handle = g.getRangeId();
        CheckString(out.text, fmt::format("event {}'s NVTX message", out.seq));
        break;
      }
      default:
        Fail(fmt::format("event {} has unknown kind {} (a newer recorder?)", out.seq,
                         static_cast<unsigned>(e.which())));
    }
    out_events.push_back(out);
    ++event_count_;
  }
  if (next_tuner != tuners.size())
    Fail(fmt::format("lists {} tuner transitions but its events use {}", tuners.size(),
                     next_tuner));
  if (fd_ >= 0) streamed_ = built_ - before_events - kept_in_chunk_;
  kept_in_chunk_ = 0;
}

TunerEvent Parser::ReadTuner(s::TunerEvent::Reader t, const Event& ev) {
  Charge(sizeof(TunerEvent));
  TunerEvent out;
  out.tuner = t.getTuner();
  out.tuner_class = t.getTunerClass();
  CheckString(out.tuner_class, fmt::format("event {}'s tuner class", ev.seq));
  out.kernel = t.getKernel();
  CheckString(out.kernel, fmt::format("event {}'s kernel", ev.seq));
  const auto kind = static_cast<uint16_t>(t.getKind());
  if (kind > static_cast<uint16_t>(s::TunerEvent::Kind::DISK_CACHE))
    Fail(fmt::format("event {}: unknown tuner transition {}", ev.seq, kind));
  out.kind = static_cast<TunerKind>(kind);
  const auto field = static_cast<uint16_t>(t.getField());
  if (field > static_cast<uint16_t>(s::TunerEvent::Field::BENCH_TIME))
    Fail(fmt::format("event {}: unknown tuner field {}", ev.seq, field));
  out.field = static_cast<TunerField>(field);
  out.key = Text(t.getKey());
  out.config = t.getConfig();
  out.detail = Text(t.getDetail());
  for (auto c : t.getConfigs()) out.configs.push_back(Text(c));
  for (auto a : t.getArgNames()) out.arg_names.push_back(Text(a));
  Charge(sizeof(uint32_t) * (t.getRestoreValue().size() + t.getResetToZero().size()) +
         sizeof(double) * t.getTimingsMs().size());
  for (uint32_t i : t.getRestoreValue()) {
    if (i >= out.arg_names.size())
      Fail(fmt::format("event {}: restore_value index {} is out of range of {} arguments",
                       ev.seq, i, out.arg_names.size()));
    out.restore_value.push_back(i);
  }
  for (uint32_t i : t.getResetToZero()) {
    if (i >= out.arg_names.size())
      Fail(fmt::format("event {}: reset_to_zero index {} is out of range of {} arguments",
                       ev.seq, i, out.arg_names.size()));
    out.reset_to_zero.push_back(i);
  }
  for (double d : t.getTimingsMs()) {
    if (!std::isfinite(d) || d < 0 || d > kMaxTimingMs)
      Fail(fmt::format("event {}: benchmark timing {} ms; expected a finite number of "
                       "milliseconds from 0 to {} (an hour): a corrupt timing",
                       ev.seq, d, kMaxTimingMs));
    out.timings_ms.push_back(d);
  }
  out.repetitions = t.getRepetitions();
  if (out.repetitions > kMaxRepetitions)
    Fail(fmt::format("event {}: {} benchmark repetitions; expected at most {}: a corrupt count",
                     ev.seq, out.repetitions, kMaxRepetitions));
  out.error_type = Text(t.getErrorType());
  out.error_message = Text(t.getErrorMessage());
  out.error_where = Text(t.getErrorWhere());
  // The config index must fit the call this thread has open on this tuner.
  const auto call_key = std::make_pair(out.tuner, ev.thread);
  if (out.kind == TunerKind::kCallBegin) {
    open_calls_[call_key] = out.configs.size();
  }
  if (out.config < -1) Fail(fmt::format("event {}: config index {}", ev.seq, out.config));
  if (out.config >= 0 && out.kind != TunerKind::kPrune) {
    auto it = open_calls_.find(call_key);
    if (it != open_calls_.end() && static_cast<size_t>(out.config) >= it->second)
      Fail(fmt::format("event {}: config index {}; the call has {} configs", ev.seq,
                       out.config, it->second));
  }
  return out;
}

void Parser::ReadFooter(s::Footer::Reader f) {
  ReadFooterBody(f);
  SameRecording(f.getRecordingId());  // last: the footer's own miscounts are said first
}

void Parser::ReadFooterBody(s::Footer::Reader f) {
  Footer& out = trace_.footer;
  trace_.has_footer = true;
  out.event_count = f.getEventCount();
  out.launch_count = f.getLaunchCount();
  out.activity_count = f.getActivityCount();
  out.tuner_count = f.getTunerCount();
  out.cupti_dropped = f.getCuptiDropped();
  out.problems = f.getProblems();
  out.complete = f.getComplete();
  out.end_clock_pairs = ClockPairs(f.getEndClockPairs(), "an end clock pair");
  auto check = [&](uint64_t said, uint64_t seen, const char* what) {
    if (said != seen)
      Fail(fmt::format("footer counts {} {}; the chunks hold {}", said, what, seen));
  };
  check(out.event_count, event_count_, "events");
  check(out.launch_count, counts_.launch_count, "launches");
  check(out.activity_count, counts_.activity_count, "kernel activity records");
  check(out.tuner_count, counts_.tuner_count, "tuner transitions");
}

}  // namespace rerace::traces::detail
