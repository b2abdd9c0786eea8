// traces/src/parser.h: the trace reader's parser (private to traces): its state, and where each
// part of its work lives: frames.cc the file's layout (preamble, frames, checksums, a cut
// end); parser.cc the reading loop, whole or streamed, and decoding each frame under the memory
// bounds; records.cc every "must" of the schema, record by record. reader.cc is the public face.
#pragma once

#include <fmt/format.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "correlation_set.h"
#include "rerace/traces/format.h"
#include "rerace/traces/reader.h"
#include "trace.capnp.h"

namespace rerace::traces::detail {

namespace s = schema;

inline uint32_t GetLe32(const uint8_t* p) {
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
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  Result<Trace> Run();

  // Streaming: the next chunk's events (Event::tuner indexes `tuners`); false once the footer
  // or the end has been read.
  Result<bool> Next(std::vector<Event>& events, std::vector<TunerEvent>& tuners);

  // Preamble and header frame.
  void Begin();

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
  bool Step();

  // `n` bytes of the file at `at`: in memory, or read into `buf` (nullptr when the file ends
  // sooner: it shrank while being read).
  const uint8_t* Fetch(uint64_t at, size_t n, std::vector<uint8_t>& buf);

  FrameStatus NextFrame(Frame& f);

  Trace trace_;
  std::string_view name() const { return name_; }

 private:
  // frames.cc
  FrameStatus Cut(uint64_t at, uint64_t have, uint64_t need);
  void Preamble();

  // parser.cc
  template <typename T, typename F>
  void Decode(const Frame& f, F&& body);
  [[noreturn]] void Fail(std::string_view what);
  // Counts `bytes` of memory about to be built from the current frame; stops the read when the
  // frame or the whole trace would build more than its bound (format.h).
  void Charge(uint64_t bytes);
  std::string Text(capnp::Text::Reader t);

  // records.cc
  void CheckString(uint32_t id, std::string_view field);
  bool KnownGpu(uint32_t device) const;
  std::vector<ClockPair> ClockPairs(capnp::List<s::ClockPair>::Reader l, std::string_view field);
  void ReadHeader(s::Header::Reader h, const Frame&);
  // From format 2 every chunk and the footer name the header's recording: frames of two
  // recordings put together (a splice) are refused.
  void SameRecording(uint64_t id);
  void ReadChunk(s::Chunk::Reader c);
  void ReadChunkBody(s::Chunk::Reader c);
  TunerEvent ReadTuner(s::TunerEvent::Reader t, const Event& ev);
  void ReadFooter(s::Footer::Reader f);
  void ReadFooterBody(s::Footer::Reader f);

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

}  // namespace rerace::traces::detail
