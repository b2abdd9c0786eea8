// traces/src/writer.cc: builds each chunk as a Cap'n Proto message and writes it framed.
#include "rerace/traces/writer.h"

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <kj/io.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "rerace/traces/format.h"
#include "trace.capnp.h"

namespace rerace::traces {

namespace s = schema;

namespace {

std::vector<uint8_t> Pack(capnp::MessageBuilder& msg) {
  kj::VectorOutputStream out;
  capnp::writePackedMessage(out, msg);
  auto a = out.getArray();
  return std::vector<uint8_t>(a.begin(), a.end());
}

void FillClockPairs(capnp::List<s::ClockPair>::Builder b, const std::vector<ClockPair>& v) {
  for (unsigned i = 0; i < v.size(); ++i) {
    b[i].setDevice(v[i].device);
    b[i].setCpuNs(v[i].cpu_ns);
    b[i].setGpuNs(v[i].gpu_ns);
  }
}

template <typename T>
void FillTextList(capnp::List<capnp::Text>::Builder b, const std::vector<T>& v) {
  for (unsigned i = 0; i < v.size(); ++i) b.set(i, v[i].c_str());
}

void PutLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

TraceWriter::TraceWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) close(fd_);
}

namespace {

// A recording identifier: random (getrandom through /dev/urandom), never 0.
uint64_t NewRecordingId() {
  uint64_t id = 0;
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) id = 0;
    close(fd);
  }
  if (id == 0)
    id = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         (static_cast<uint64_t>(getpid()) << 40);
  return id == 0 ? 1 : id;
}

}  // namespace

Result<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path, Header header) {
  if (header.recording_id == 0) header.recording_id = NewRecordingId();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error{fmt::format("{}: cannot create the trace: {}", path, std::strerror(errno)),
                 kExitIoError};
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter(fd, path));
  w->recording_id_ = header.recording_id;
  uint8_t preamble[kPreambleBytes] = {};
  std::memcpy(preamble, kMagic.data(), kMagic.size());
  PutLe32(preamble + 8, kFormatVersion);
  if (auto r = w->WriteAll(preamble, sizeof preamble); !r) return r.error();

  capnp::MallocMessageBuilder msg;
  auto h = msg.initRoot<s::Header>();
  h.setFormatVersion(kFormatVersion);
  h.setRecorderVersion(header.recorder_version);
  h.setHost(header.host);
  h.setPid(header.pid);
  h.setRank(header.rank);
  FillTextList(h.initCommandLine(static_cast<unsigned>(header.command_line.size())),
               header.command_line);
  h.setStartTimeUnixNs(header.start_time_unix_ns);
  h.setStartCpuNs(header.start_cpu_ns);
  h.setRecordingId(header.recording_id);
  FillClockPairs(h.initClockPairs(static_cast<unsigned>(header.clock_pairs.size())),
                 header.clock_pairs);
  auto gpus = h.initGpus(static_cast<unsigned>(header.gpus.size()));
  for (unsigned i = 0; i < header.gpus.size(); ++i) {
    gpus[i].setIndex(header.gpus[i].index);
    gpus[i].setName(header.gpus[i].name);
    gpus[i].setUuid(header.gpus[i].uuid);
    gpus[i].setMemoryBytes(header.gpus[i].memory_bytes);
  }
  FillTextList(h.initTunerClasses(static_cast<unsigned>(header.tuner_classes.size())),
               header.tuner_classes);
  if (auto r = w->WriteFrame(static_cast<uint8_t>(FrameKind::kHeader), Pack(msg)); !r)
    return r.error();
  return w;
}

Result<void> TraceWriter::WriteAll(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e{fmt::format("{}: write failed at byte {}: {}", path_, offset_, std::strerror(errno)),
              kExitIoError};
      error_ = e;
      return e;
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset_ += static_cast<uint64_t>(n);
  }
  return {};
}

Result<void> TraceWriter::WriteFrame(uint8_t kind, const std::vector<uint8_t>& payload) {
  // One buffer, one write: a frame reaches the file whole or (on a crash mid-write) as a tail
  // the reader recognizes as cut.
  std::vector<uint8_t> frame(kFrameHeaderBytes + payload.size());
  PutLe32(frame.data(), static_cast<uint32_t>(payload.size()));
  frame[4] = kind;
  PutLe32(frame.data() + 8, Crc32c(payload.data(), payload.size()));
  std::memcpy(frame.data() + kFrameHeaderBytes, payload.data(), payload.size());
  return WriteAll(frame.data(), frame.size());
}

uint32_t TraceWriter::String(std::string_view str) {
  auto [it, inserted] =
      string_ids_.try_emplace(std::string(str), static_cast<uint32_t>(string_ids_.size()));
  if (inserted) new_strings_.emplace_back(str);
  return it->second;
}

uint32_t TraceWriter::Shape(const LaunchShape& sh) {
  auto key = std::make_tuple(sh.kernel, sh.device, sh.stream, sh.grid[0], sh.grid[1], sh.grid[2],
                             sh.block[0], sh.block[1], sh.block[2], sh.shared_bytes);
  auto [it, inserted] = shape_ids_.try_emplace(key, static_cast<uint32_t>(shape_ids_.size()));
  if (inserted) new_shapes_.push_back(sh);
  return it->second;
}

uint32_t TraceWriter::AddThread(uint64_t os_tid, std::string_view name) {
  const uint32_t id = thread_count_++;
  new_threads_.push_back({id, os_tid, std::string(name)});
  return id;
}

void TraceWriter::RenameThread(uint32_t id, std::string_view name) {
  new_threads_.push_back({id, 0, std::string(name)});
}

void TraceWriter::FlushIfDeltaOverflows(uint64_t cpu_ns) {
  if (events_.empty()) {
    base_cpu_ns_ = cpu_ns;
    return;
  }
  if (cpu_ns < base_cpu_ns_ || cpu_ns - base_cpu_ns_ > UINT32_MAX) {
    (void)Flush();  // an error stays sticky and is returned by the next Flush/Finish
    base_cpu_ns_ = cpu_ns;
  }
}

void TraceWriter::Append(const Event& e) {
  if (error_ || finished_) return;
  FlushIfDeltaOverflows(e.cpu_ns);
  Event copy = e;
  copy.seq = next_seq_++;
  events_.push_back(copy);
  ++counts_.event_count;
  if (e.kind == EventKind::kLaunch) ++counts_.launch_count;
  if (e.kind == EventKind::kActivity) ++counts_.activity_count;
}

void TraceWriter::AppendLaunch(uint32_t thread, uint64_t cpu_ns, uint32_t shape,
                               uint32_t correlation) {
  Event e;
  e.kind = EventKind::kLaunch;
  e.thread = thread;
  e.cpu_ns = cpu_ns;
  e.shape = shape;
  e.correlation = correlation;
  Append(e);
}

void TraceWriter::AppendActivity(uint32_t thread, uint64_t cpu_ns, uint32_t correlation,
                                 uint64_t gpu_start_ns, uint64_t gpu_end_ns) {
  Event e;
  e.kind = EventKind::kActivity;
  e.thread = thread;
  e.cpu_ns = cpu_ns;
  e.correlation = correlation;
  e.gpu_start_ns = gpu_start_ns;
  e.gpu_end_ns = gpu_end_ns;
  Append(e);
}

void TraceWriter::AppendTuner(uint32_t thread, uint64_t cpu_ns, TunerEvent t) {
  if (error_ || finished_) return;
  FlushIfDeltaOverflows(cpu_ns);
  Event e;
  e.kind = EventKind::kTuner;
  e.thread = thread;
  e.cpu_ns = cpu_ns;
  e.tuner = static_cast<uint32_t>(tuners_.size());
  e.seq = next_seq_++;
  events_.push_back(e);
  tuners_.push_back(std::move(t));
  ++counts_.event_count;
  ++counts_.tuner_count;
}

Result<void> TraceWriter::Flush() {
  if (error_) return *error_;
  if (events_.empty() && new_strings_.empty() && new_shapes_.empty() && new_threads_.empty())
    return {};
  capnp::MallocMessageBuilder msg;
  auto c = msg.initRoot<s::Chunk>();
  c.setRecordingId(recording_id_);
  c.setFirstSeq(next_seq_ - events_.size());
  c.setBaseCpuNs(base_cpu_ns_);
  FillTextList(c.initStrings(static_cast<unsigned>(new_strings_.size())), new_strings_);
  auto shapes = c.initShapes(static_cast<unsigned>(new_shapes_.size()));
  for (unsigned i = 0; i < new_shapes_.size(); ++i) {
    const LaunchShape& sh = new_shapes_[i];
    auto b = shapes[i];
    b.setKernel(sh.kernel);
    b.setDevice(sh.device);
    b.setStream(sh.stream);
    b.setGridX(sh.grid[0]);
    b.setGridY(sh.grid[1]);
    b.setGridZ(sh.grid[2]);
    b.setBlockX(sh.block[0]);
    b.setBlockY(sh.block[1]);
    b.setBlockZ(sh.block[2]);
    b.setSharedBytes(sh.shared_bytes);
  }
  auto threads = c.initThreads(static_cast<unsigned>(new_threads_.size()));
  for (unsigned i = 0; i < new_threads_.size(); ++i) {
    threads[i].setId(new_threads_[i].id);
    threads[i].setOsTid(new_threads_[i].os_tid);
    threads[i].setName(new_threads_[i].name);
  }
  auto events = c.initEvents(static_cast<unsigned>(events_.size()));
  for (unsigned i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    auto b = events[i];
    b.setThread(e.thread);
    b.setCpuDeltaNs(static_cast<uint32_t>(e.cpu_ns - base_cpu_ns_));
    switch (e.kind) {
      case EventKind::kLaunch: {
        auto g = b.initLaunch();
        g.setShape(e.shape);
        g.setCorrelationId(e.correlation);
        break;
      }
      case EventKind::kActivity: {
        auto g = b.initActivity();
        g.setCorrelationId(e.correlation);
        g.setGpuStartNs(e.gpu_start_ns);
        g.setGpuEndNs(e.gpu_end_ns);
        break;
      }
      case EventKind::kSync: {
        auto g = b.initSync();
        g.setKind(static_cast<s::SyncKind>(e.sync));
        g.setDevice(e.device);
        g.setStream(e.stream);
        g.setEvent(e.handle);
        break;
      }
      case EventKind::kMemOp: {
        auto g = b.initMemop();
        g.setKind(static_cast<s::MemKind>(e.mem));
        g.setDevice(e.device);
        g.setStream(e.stream);
        g.setBytes(e.bytes);
        g.setMemCorrelationId(e.correlation);
        break;
      }
      case EventKind::kTuner:
        b.setTuner();
        break;
      case EventKind::kLock: {
        auto g = b.initLock();
        g.setKind(static_cast<s::LockKind>(e.lock));
        g.setLock(e.handle);
        g.setLockName(e.text);
        break;
      }
      case EventKind::kNvtx: {
        auto g = b.initNvtx();
        g.setKind(static_cast<s::NvtxKind>(e.nvtx));
        g.setMessage(e.text);
        g.setRangeId(e.handle);
        break;
      }
    }
  }
  auto tuners = c.initTuners(static_cast<unsigned>(tuners_.size()));
  for (unsigned i = 0; i < tuners_.size(); ++i) {
    const TunerEvent& t = tuners_[i];
    auto b = tuners[i];
    b.setTuner(t.tuner);
    b.setTunerClass(t.tuner_class);
    b.setKernel(t.kernel);
    b.setKind(static_cast<s::TunerEvent::Kind>(t.kind));
    b.setField(static_cast<s::TunerEvent::Field>(t.field));
    b.setKey(t.key);
    b.setConfig(t.config);
    b.setDetail(t.detail);
    FillTextList(b.initConfigs(static_cast<unsigned>(t.configs.size())), t.configs);
    FillTextList(b.initArgNames(static_cast<unsigned>(t.arg_names.size())), t.arg_names);
    auto rv = b.initRestoreValue(static_cast<unsigned>(t.restore_value.size()));
    for (unsigned k = 0; k < t.restore_value.size(); ++k) rv.set(k, t.restore_value[k]);
    auto rz = b.initResetToZero(static_cast<unsigned>(t.reset_to_zero.size()));
    for (unsigned k = 0; k < t.reset_to_zero.size(); ++k) rz.set(k, t.reset_to_zero[k]);
    auto tm = b.initTimingsMs(static_cast<unsigned>(t.timings_ms.size()));
    for (unsigned k = 0; k < t.timings_ms.size(); ++k) tm.set(k, t.timings_ms[k]);
    b.setRepetitions(t.repetitions);
    b.setErrorType(t.error_type);
    b.setErrorMessage(t.error_message);
    b.setErrorWhere(t.error_where);
  }
  unpacked_bytes_ += capnp::computeSerializedSizeInWords(msg) * sizeof(capnp::word);
  auto r = WriteFrame(static_cast<uint8_t>(FrameKind::kChunk), Pack(msg));
  new_strings_.clear();
  new_shapes_.clear();
  new_threads_.clear();
  events_.clear();
  tuners_.clear();
  return r;
}

Result<void> TraceWriter::Finish(Footer footer) {
  if (finished_) return {};
  if (auto r = Flush(); !r) return r;
  finished_ = true;
  capnp::MallocMessageBuilder msg;
  auto f = msg.initRoot<s::Footer>();
  f.setRecordingId(recording_id_);
  f.setEventCount(counts_.event_count);
  f.setLaunchCount(counts_.launch_count);
  f.setActivityCount(counts_.activity_count);
  f.setTunerCount(counts_.tuner_count);
  f.setCuptiDropped(footer.cupti_dropped);
  f.setProblems(footer.problems);
  f.setComplete(footer.complete);
  FillClockPairs(f.initEndClockPairs(static_cast<unsigned>(footer.end_clock_pairs.size())),
                 footer.end_clock_pairs);
  auto r = WriteFrame(static_cast<uint8_t>(FrameKind::kFooter), Pack(msg));
  if (fd_ >= 0 && close(fd_) != 0 && r) {
    r = Error{fmt::format("{}: close failed: {}", path_, std::strerror(errno)), kExitIoError};
  }
  fd_ = -1;
  return r;
}

}  // namespace rerace::traces
