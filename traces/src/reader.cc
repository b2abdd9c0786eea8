// traces/src/reader.cc: frame parsing, Cap'n Proto decoding with deliberate limits, and the
// checks of every "must" in the schema.
#include "rerace/traces/reader.h"

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <fmt/format.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <limits>
#include <new>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "rerace/traces/format.h"
#include "trace.capnp.h"

namespace rerace::traces {

namespace s = schema;

namespace {

uint32_t GetLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// Raised inside the parser with a message; turned into the one-line Error at the top.
struct Bad {
  std::string what;
};

struct Frame {
  uint64_t offset;
  uint8_t kind;
  std::span<const uint8_t> payload;
};

enum class FrameStatus { kOk, kEnd, kCut };

// The correlation ids of the launches seen so far, as a bitmap in pages of 2^16 ids (8 KiB)
// made when an id first falls in them: CUPTI hands the ids out densely in increasing order, so
// a trace of N launches takes about N/8 bytes (a sorted vector took 4 N, a hash set 40 N) and
// a lookup is usually the last page's.
// `Insert` says how many bytes it built, for the reader's memory bound: a hostile file that
// spreads its ids one per page pays 8 KiB per id and is stopped by that bound.
class CorrelationSet {
 public:
  static constexpr uint32_t kPageBits = 16;
  static constexpr size_t kPageWords = (size_t{1} << kPageBits) / 64;
  static constexpr uint64_t kPageCost = kPageWords * sizeof(uint64_t) + 64;  // and its map node
  // Returns false when `id` is already in; `built` receives the bytes this call allocated.
  bool Insert(uint32_t id, uint64_t& built) {
    built = 0;
    uint64_t* page = Page(id >> kPageBits);
    if (page == nullptr) {
      auto fresh = std::make_unique<uint64_t[]>(kPageWords);  // zeroed
      page = fresh.get();
      pages_.emplace(id >> kPageBits, std::move(fresh));
      last_index_ = id >> kPageBits;
      last_ = page;
      built = kPageCost;
    }
    uint64_t& word = page[(id & ((1u << kPageBits) - 1)) >> 6];
    const uint64_t bit = uint64_t{1} << (id & 63);
    if (word & bit) return false;
    word |= bit;
    return true;
  }
  bool Contains(uint32_t id) {
    const uint64_t* page = Page(id >> kPageBits);
    return page != nullptr && ((page[(id & ((1u << kPageBits) - 1)) >> 6] >> (id & 63)) & 1);
  }

 private:
  uint64_t* Page(uint32_t index) {
    if (last_ != nullptr && index == last_index_) return last_;
    const auto it = pages_.find(index);
    if (it == pages_.end()) return nullptr;
    last_index_ = index;
    last_ = it->second.get();
    return last_;
  }
  std::unordered_map<uint32_t, std::unique_ptr<uint64_t[]>> pages_;
  uint32_t last_index_ = 0;
  uint64_t* last_ = nullptr;
};

// Cap'n Proto logs some problems (through KJ) on stderr before, or instead of, throwing.
// While a Parser runs, KJ's log goes here: kept for the error line, never printed.
class KjLogCapture : public kj::ExceptionCallback {
 public:
  void logMessage(kj::LogSeverity, const char*, int, int, kj::String&& text) override {
    if (first_.empty()) {
      first_ = text.cStr();
      for (char& c : first_)
        if (c == '\n') c = ' ';
      while (!first_.empty() && first_.back() == ' ') first_.pop_back();
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

uint64_t StrCost(size_t n) { return sizeof(std::string) + n; }

}  // namespace

namespace detail {

// Reads a trace from bytes in memory (the whole file) or, streaming, from an open file one
// frame at a time. Whole: every event goes into trace_.events. Streaming: each chunk's events
// go into the consumer's vectors (Next) and their memory is released from the bound when the
// next chunk is read; what is kept (header, strings, shapes, threads, the correlation set)
// stays within it.
class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, std::string_view name, const ReadLimits& limits)
      : bytes_(bytes), size_(bytes.size()), name_(name), limit_(limits.max_memory_bytes) {
    const uint64_t relative = kTraceBuildSlackBytes + size_ * kMaxBuiltBytesPerByte;
    trace_budget_ = std::min<uint64_t>(limit_, relative);
    events_out_ = &trace_.events;
    tuners_out_ = &trace_.tuner_events;
  }
  Parser(int fd, uint64_t size, std::string name, const ReadLimits& limits)
      : fd_(fd), size_(size), owned_name_(std::move(name)), name_(owned_name_),
        limit_(limits.max_memory_bytes) {
    const uint64_t relative = kTraceBuildSlackBytes + size_ * kMaxBuiltBytesPerByte;
    trace_budget_ = std::min<uint64_t>(limit_, relative);
  }
  ~Parser() {
    if (fd_ >= 0) ::close(fd_);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  Result<Trace> Run() {
    if (auto b = Guarded([&] { Begin(); }); !b) return b.error();
    for (bool more = true; more;) {
      auto r = Guarded([&] { more = Step(); });
      if (!r) return r.error();
    }
    trace_.built_bytes = built_;
    trace_.event_count = event_count_;
    return std::move(trace_);
  }

  // Streaming: the next chunk's events (Event::tuner indexes `tuners`); false once the footer
  // or the end has been read.
  Result<bool> Next(std::vector<Event>& events, std::vector<TunerEvent>& tuners) {
    events.clear();
    tuners.clear();
    if (done_) return false;
    built_ -= streamed_;  // the consumer is done with the last chunk's events
    streamed_ = 0;
    events_out_ = &events;
    tuners_out_ = &tuners;
    bool got = false;
    while (!done_ && !got) {
      const uint64_t chunks = trace_.chunks;
      auto r = Guarded([&] { done_ = !Step(); });
      if (!r) {
        done_ = true;
        return r.error();
      }
      got = trace_.chunks != chunks;
    }
    trace_.event_count = event_count_;
    trace_.built_bytes = built_;
    return got;
  }

  // Preamble and header frame.
  void Begin() {
    Preamble();
    Frame f;
    if (NextFrame(f) != FrameStatus::kOk) {
      throw Bad{fmt::format("byte {}: the file ends inside its header frame; expected a whole "
                            "header (the recorder died before writing it?)",
                            pos_)};
    }
    if (f.kind != static_cast<uint8_t>(FrameKind::kHeader)) {
      throw Bad{fmt::format("frame 0 at byte {}: kind {} where the header (kind 1) must come",
                            f.offset, f.kind)};
    }
    Decode<s::Header>(f, [&](s::Header::Reader h) { ReadHeader(h, f); });
  }

  // Runs `body` with Cap'n Proto's log captured; a Bad or a logged complaint is the one-line
  // error.
  template <typename F>
  Result<void> Guarded(F&& body) {
    KjLogCapture kj_log;
    try {
      body();
    } catch (const Bad& b) {
      return Error{fmt::format("{}: {}", name_, b.what), kExitDataError};
    }
    if (!kj_log.first().empty()) {
      // Cap'n Proto complained without throwing: the data is not what the writer wrote.
      return Error{fmt::format("{}: {}: Cap'n Proto reported: {}", name_, where_, kj_log.first()),
                   kExitDataError};
    }
    return {};
  }

  // One frame after the header; false once there is nothing more to read.
  bool Step() {
    Frame f;
    const FrameStatus st = NextFrame(f);
    if (st == FrameStatus::kEnd) {
      trace_.truncated = true;
      trace_.truncation = fmt::format(
          "truncated after {} events: the file has no footer (the recording was cut short)",
          event_count_);
      return false;
    }
    if (st == FrameStatus::kCut) {
      trace_.truncated = true;
      trace_.truncation = fmt::format(
          "truncated after {} events: frame {} at byte {} is cut short ({} of {} bytes)",
          event_count_, frame_index_, cut_offset_, cut_have_, cut_need_);
      return false;
    }
    if (f.kind == static_cast<uint8_t>(FrameKind::kChunk)) {
      Decode<s::Chunk>(f, [&](s::Chunk::Reader c) { ReadChunk(c); });
      ++trace_.chunks;
      return true;
    }
    if (f.kind == static_cast<uint8_t>(FrameKind::kFooter)) {
      Decode<s::Footer>(f, [&](s::Footer::Reader ft) { ReadFooter(ft); });
      if (pos_ != size_) {
        throw Bad{fmt::format("byte {}: {} bytes after the footer; expected the end of file",
                              pos_, size_ - pos_)};
      }
      if (!trace_.footer.complete) {
        trace_.truncated = true;
        trace_.truncation = fmt::format(
            "truncated after {} events: the recorder marked the run incomplete", event_count_);
      }
      return false;
    }
    throw Bad{fmt::format("frame {} at byte {}: unknown frame kind {}; expected 2 (chunk) "
                          "or 3 (footer)",
                          frame_index_ - 1, f.offset, f.kind)};
  }

  // `n` bytes of the file at `at`: in memory, or read into `buf` (nullptr when the file ends
  // sooner: it shrank while being read).
  const uint8_t* Fetch(uint64_t at, size_t n, std::vector<uint8_t>& buf) {
    if (fd_ < 0) return bytes_.data() + at;
    buf.resize(n);
    size_t have = 0;
    while (have < n) {
      const ssize_t got = ::pread(fd_, buf.data() + have, n - have, static_cast<off_t>(at + have));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0)
        throw Bad{fmt::format("byte {}: read failed: {}", at + have, std::strerror(errno))};
      if (got == 0) return nullptr;
      have += static_cast<size_t>(got);
    }
    return buf.data();
  }

  FrameStatus NextFrame(Frame& f) {
    if (pos_ == size_) return FrameStatus::kEnd;
    const uint64_t at = pos_;
    if (size_ - pos_ < kFrameHeaderBytes) {
      return Cut(at, size_ - pos_, kFrameHeaderBytes);
    }
    const uint8_t* h = Fetch(pos_, kFrameHeaderBytes, head_buf_);
    if (h == nullptr) return Cut(at, 0, kFrameHeaderBytes);
    const uint32_t len = GetLe32(h);
    if (h[5] != 0 || h[6] != 0 || h[7] != 0) {
      throw Bad{fmt::format("frame {} at byte {}: reserved header bytes are not zero; not a "
                            "frame boundary (corrupt file?)",
                            frame_index_, at)};
    }
    if (len > kMaxFrameBytes) {
      throw Bad{fmt::format("frame {} at byte {}: payload of {} bytes; expected at most {} "
                            "(corrupt or hostile file)",
                            frame_index_, at, len, kMaxFrameBytes)};
    }
    if (size_ - pos_ - kFrameHeaderBytes < len) {
      return Cut(at, size_ - pos_, kFrameHeaderBytes + len);
    }
    f.offset = at;
    f.kind = h[4];
    const uint32_t crc = GetLe32(h + 8);
    const uint8_t* payload = Fetch(pos_ + kFrameHeaderBytes, len, frame_buf_);
    if (payload == nullptr) return Cut(at, kFrameHeaderBytes, kFrameHeaderBytes + len);
    f.payload = std::span<const uint8_t>(payload, len);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    // Under the fuzzer a checksum would stop nearly every mutation at the door.
    const bool crc_ok = true;
    (void)crc;
#else
    const bool crc_ok = Crc32c(f.payload.data(), f.payload.size()) == crc;
#endif
    if (!crc_ok) {
      throw Bad{fmt::format("frame {} at byte {}: CRC-32C mismatch over {} payload bytes; the "
                            "frame is corrupt",
                            frame_index_, at, len)};
    }
    pos_ += kFrameHeaderBytes + len;
    ++frame_index_;
    return FrameStatus::kOk;
  }

  Trace trace_;
  std::string_view name() const { return name_; }

 private:
  FrameStatus Cut(uint64_t at, uint64_t have, uint64_t need) {
    cut_offset_ = at;
    cut_have_ = have;
    cut_need_ = need;
    return FrameStatus::kCut;
  }

  void Preamble() {
    const uint8_t* pre = size_ < kMagic.size() ? nullptr : Fetch(0, std::min<uint64_t>(size_, kPreambleBytes), head_buf_);
    if (pre == nullptr || std::memcmp(pre, kMagic.data(), kMagic.size()) != 0) {
      throw Bad{"byte 0: bad magic; expected \"RRTRACE\\n\" (not a rerace trace)"};
    }
    if (size_ < kPreambleBytes) {
      throw Bad{fmt::format("byte {}: the file ends inside its preamble; expected {} bytes",
                            size_, kPreambleBytes)};
    }
    const uint32_t version = GetLe32(pre + 8);
    if (version < kOldestFormatVersion || version > kFormatVersion) {
      throw Bad{fmt::format("byte 8: trace format version {}; this rerace reads versions {} to {} "
                            "({} rerace to read it)",
                            version, kOldestFormatVersion, kFormatVersion,
                            version > kFormatVersion ? "upgrade" : "use an older")};
    }
    version_ = version;
    if (GetLe32(pre + 12) != 0) throw Bad{"byte 12: reserved preamble word is not 0"};
    pos_ = kPreambleBytes;
  }

  template <typename T, typename F>
  void Decode(const Frame& f, F&& body) {
    where_ = fmt::format("frame {} ({}) at byte {}", frame_index_ - 1,
                         f.kind == 1 ? "header" : f.kind == 2 ? "chunk" : "footer", f.offset);
    capnp::ReaderOptions opts;
    // Memory stays proportional to the frame: at most kMaxUnpackedWordsPerByte words of
    // message per packed byte, and never more than kMaxChunkWords.
    opts.traversalLimitInWords =
        std::min<uint64_t>(kMaxChunkWords, 1024 + f.payload.size() * kMaxUnpackedWordsPerByte);
    opts.nestingLimit = kNestingLimit;
    chunk_built_ = 0;
    chunk_payload_ = f.payload.size();
    chunk_budget_ = kChunkBuildSlackBytes + f.payload.size() * kMaxBuiltBytesPerByte;
    try {
      kj::ArrayInputStream in(kj::ArrayPtr<const kj::byte>(f.payload.data(), f.payload.size()));
      capnp::PackedMessageReader msg(in, opts);
      body(msg.getRoot<T>());
      if (in.tryGetReadBuffer().size() != 0) {
        throw Bad{fmt::format("{}: {} bytes after the message inside the frame", where_,
                              in.tryGetReadBuffer().size())};
      }
    } catch (const kj::Exception& e) {
      std::string d = e.getDescription().cStr();
      for (char& c : d)
        if (c == '\n') c = ' ';
      throw Bad{fmt::format("{}: Cap'n Proto could not read it: {}", where_, d)};
    }
  }

  [[noreturn]] void Fail(std::string_view what) { throw Bad{fmt::format("{}: {}", where_, what)}; }

  // Counts `bytes` of memory about to be built from the current frame; stops the read when the
  // frame or the whole trace would build more than its bound (format.h).
  void Charge(uint64_t bytes) {
    chunk_built_ += bytes;
    built_ += bytes;
    if (chunk_built_ > chunk_budget_)
      Fail(fmt::format("its {} bytes would build more than {} bytes in memory (at most {} per "
                       "byte of frame, plus {} KiB); a hostile or corrupt frame (lists of empty "
                       "elements?)",
                       chunk_payload_, chunk_budget_, kMaxBuiltBytesPerByte,
                       kChunkBuildSlackBytes >> 10));
    if (built_ > trace_budget_) {
      if (trace_budget_ == limit_)
        Fail(fmt::format("the trace would take more than {} MiB in memory, the limit; set "
                         "RERACE_MAX_TRACE_MB to raise it",
                         limit_ >> 20));
      Fail(fmt::format("a file of {} bytes would build more than {} bytes in memory (at most {} "
                       "per byte of file, plus {} MiB); a hostile or corrupt file",
                       size_, trace_budget_, kMaxBuiltBytesPerByte,
                       kTraceBuildSlackBytes >> 20));
    }
  }
  std::string Text(capnp::Text::Reader t) {
    Charge(StrCost(t.size()));
    return std::string(t.cStr());
  }

  void CheckString(uint32_t id, std::string_view field) {
    if (id >= trace_.strings.size())
      Fail(fmt::format("{} names string {}; expected a declared string id (< {})", field, id,
                       trace_.strings.size()));
  }

  bool KnownGpu(uint32_t device) const {
    if (trace_.header.gpus.empty()) return true;
    for (const Gpu& g : trace_.header.gpus)
      if (g.index == device) return true;
    return false;
  }

  std::vector<ClockPair> ClockPairs(capnp::List<s::ClockPair>::Reader l, std::string_view field) {
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

  void ReadHeader(s::Header::Reader h, const Frame&) {
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

  // From format 2 every chunk and the footer name the header's recording: frames of two
  // recordings put together (a splice) are refused.
  void SameRecording(uint64_t id) {
    if (version_ >= 2 && id != trace_.header.recording_id)
      Fail(fmt::format("recording id {:016x}, the header's {:016x}: the frames come from two "
                       "recordings (a splice?)",
                       id, trace_.header.recording_id));
  }

  void ReadChunk(s::Chunk::Reader c) {
    ReadChunkBody(c);
    SameRecording(c.getRecordingId());  // last: a chunk's own corruption is said first
  }

  void ReadChunkBody(s::Chunk::Reader c) {
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

  TunerEvent ReadTuner(s::TunerEvent::Reader t, const Event& ev) {
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

  void ReadFooter(s::Footer::Reader f) {
    ReadFooterBody(f);
    SameRecording(f.getRecordingId());  // last: the footer's own miscounts are said first
  }

  void ReadFooterBody(s::Footer::Reader f) {
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

  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint32_t>& p) const {
      return std::hash<uint64_t>()(p.first * 31 + p.second);
    }
  };

  std::span<const uint8_t> bytes_;  // whole: the file
  int fd_ = -1;                     // streaming: the file, read frame by frame
  uint64_t size_ = 0;
  std::vector<uint8_t> head_buf_, frame_buf_;
  std::string owned_name_;
  std::string_view name_;
  std::vector<Event>* events_out_ = nullptr;
  std::vector<TunerEvent>* tuners_out_ = nullptr;
  uint64_t event_count_ = 0;
  uint32_t version_ = kFormatVersion;  // the preamble's
  uint64_t streamed_ = 0;       // bytes the last streamed chunk built, released at Next
  uint64_t kept_in_chunk_ = 0;  // of a chunk's charges, what is kept (correlation pages)
  bool done_ = false;
  uint64_t pos_ = 0;
  uint64_t frame_index_ = 0;
  uint64_t cut_offset_ = 0, cut_have_ = 0, cut_need_ = 0;
  std::string where_;
  uint64_t limit_;
  uint64_t trace_budget_ = 0;
  uint64_t built_ = 0;
  uint64_t chunk_built_ = 0;
  uint64_t chunk_budget_ = 0;
  uint64_t chunk_payload_ = 0;
  Footer counts_;
  CorrelationSet launched_;
  std::unordered_map<std::pair<uint64_t, uint32_t>, size_t, PairHash> open_calls_;
};

}  // namespace detail

Result<Trace> ParseTrace(std::span<const uint8_t> bytes, std::string_view name,
                         const ReadLimits& limits) {
  try {
    detail::Parser p(bytes, name, limits);
    return p.Run();
  } catch (const std::bad_alloc&) {
    // Only under a limit raised past what this machine has (RERACE_MAX_TRACE_MB).
    return Error{fmt::format("{}: out of memory while reading the trace (limit {} MiB); lower "
                             "RERACE_MAX_TRACE_MB or use a machine with more memory",
                             name, limits.max_memory_bytes >> 20),
                 kExitDataError};
  }
}

Result<ReadLimits> DefaultReadLimits() {
  ReadLimits l;
  const char* env = std::getenv("RERACE_MAX_TRACE_MB");
  if (env == nullptr || *env == 0) return l;
  const std::string v = env;
  uint64_t mb = 0;
  bool ok = v.size() <= 9;
  for (char c : v) ok = ok && c >= '0' && c <= '9';
  if (ok) mb = std::strtoull(v.c_str(), nullptr, 10);
  if (!ok || mb == 0)
    return Error{fmt::format("RERACE_MAX_TRACE_MB='{}': expected a whole number of megabytes "
                             "from 1 to 999999999",
                             v),
                 kExitUsage};
  l.max_memory_bytes = mb << 20;
  return l;
}

namespace {
struct Closer {
  int fd;
  ~Closer() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens a trace file: a regular file (66 otherwise) whose first bytes are the magic (65).
// Returns its size; `fd` is open on success.
Result<uint64_t> OpenTraceFile(const std::string& path, Closer& closer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Error{fmt::format("{}: cannot open the trace: {}", path, std::strerror(errno)),
                 kExitNoInput};
  }
  closer.fd = fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return Error{fmt::format("{}: cannot stat the trace: {}", path, std::strerror(errno)),
                 kExitNoInput};
  if (!S_ISREG(st.st_mode))
    return Error{fmt::format("{}: not a regular file ({}); expected a trace file (.rrt)", path,
                             S_ISDIR(st.st_mode)    ? "a directory"
                             : S_ISCHR(st.st_mode)  ? "a character device"
                             : S_ISFIFO(st.st_mode) ? "a pipe; save it to a file first"
                                                    : "a special file"),
                 kExitNoInput};
  const auto size = static_cast<uint64_t>(st.st_size);
  // The magic first: a file that is not a trace is refused before it is read.
  char magic[8] = {};
  const ssize_t got = ::pread(fd, magic, sizeof magic, 0);
  if (got < 0)
    return Error{fmt::format("{}: read failed: {}", path, std::strerror(errno)), kExitNoInput};
  if (static_cast<size_t>(got) < kMagic.size() ||
      std::memcmp(magic, kMagic.data(), kMagic.size()) != 0)
    return Error{fmt::format("{}: byte 0: bad magic; expected \"RRTRACE\\n\" (not a rerace "
                             "trace)",
                             path),
                 kExitDataError};
  return size;
}
}  // namespace

Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, const ReadLimits& limits) {
  Closer closer{-1};
  auto opened = OpenTraceFile(path, closer);
  if (!opened) return opened.error();
  const int fd = closer.fd;
  const uint64_t size = *opened;
  if (size > limits.max_memory_bytes)
    return Error{fmt::format("{}: a file of {} MiB; this rerace reads traces of at most {} MiB "
                             "(set RERACE_MAX_TRACE_MB to raise the limit)",
                             path, size >> 20, limits.max_memory_bytes >> 20),
                 kExitDataError};
  std::vector<uint8_t> bytes;
  try {
    bytes.resize(size);
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory for a file of {} MiB (limit {} MiB); lower "
                             "RERACE_MAX_TRACE_MB or use a machine with more memory",
                             path, size >> 20, limits.max_memory_bytes >> 20),
                 kExitDataError};
  }
  uint64_t have = 0;
  while (have < size) {
    const ssize_t n = ::pread(fd, bytes.data() + have, size - have, static_cast<off_t>(have));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Error{fmt::format("{}: read failed at byte {}: {}", path, have, std::strerror(errno)),
                   kExitNoInput};
    if (n == 0) break;  // shrank while we read: what is there is what was written
    have += static_cast<uint64_t>(n);
  }
  bytes.resize(have);
  return bytes;
}

Result<Trace> ReadTrace(const std::string& path, const ReadLimits& limits) {
  auto bytes = ReadFileBytes(path, limits);
  if (!bytes) return bytes.error();
  return ParseTrace(*bytes, path, limits);
}

Result<Trace> ReadTrace(const std::string& path) {
  auto limits = DefaultReadLimits();
  if (!limits) return limits.error();
  return ReadTrace(path, *limits);
}

TraceStream::TraceStream(std::unique_ptr<detail::Parser> parser) : parser_(std::move(parser)) {}
TraceStream::~TraceStream() = default;
TraceStream::TraceStream(TraceStream&&) noexcept = default;
TraceStream& TraceStream::operator=(TraceStream&&) noexcept = default;

Result<TraceStream> TraceStream::Open(const std::string& path, const ReadLimits& limits) {
  Closer closer{-1};
  auto size = OpenTraceFile(path, closer);
  if (!size) return size.error();
  try {
    auto p = std::make_unique<detail::Parser>(closer.fd, *size, path, limits);
    closer.fd = -1;  // the parser closes it
    if (auto b = p->Guarded([&] { p->Begin(); }); !b) return b.error();
    return TraceStream(std::move(p));
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory while reading the trace", path), kExitDataError};
  }
}

Result<TraceStream> TraceStream::Open(const std::string& path) {
  auto limits = DefaultReadLimits();
  if (!limits) return limits.error();
  return Open(path, *limits);
}

Result<bool> TraceStream::Next(std::vector<Event>& events, std::vector<TunerEvent>& tuners) {
  try {
    return parser_->Next(events, tuners);
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory while reading the trace", parser_->name()),
                 kExitDataError};
  }
}

const Trace& TraceStream::trace() const { return parser_->trace_; }

Result<Trace> ForEachChunk(const std::string& path, const ChunkVisitor& visit) {
  auto stream = TraceStream::Open(path);
  if (!stream) return stream.error();
  std::vector<Event> events;
  std::vector<TunerEvent> tuners;
  while (true) {
    auto more = stream->Next(events, tuners);
    if (!more) return more.error();
    if (!*more) break;
    if (auto v = visit(stream->trace(), events, tuners); !v) return v.error();
  }
  return std::move(stream->parser_->trace_);  // the stream ends here
}

Result<std::vector<FrameInfo>> ListFrames(std::span<const uint8_t> bytes, std::string_view name) {
  std::vector<FrameInfo> out;
  if (bytes.size() < kPreambleBytes || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0)
    return Error{fmt::format("{}: byte 0: bad magic; expected \"RRTRACE\\n\"", name)};
  uint64_t pos = kPreambleBytes;
  while (pos + kFrameHeaderBytes <= bytes.size()) {
    const uint32_t len = GetLe32(bytes.data() + pos);
    if (bytes.size() - pos - kFrameHeaderBytes < len) break;
    out.push_back({pos, len, bytes[pos + 4]});
    pos += kFrameHeaderBytes + len;
  }
  return out;
}

}  // namespace rerace::traces
