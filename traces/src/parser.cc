// traces/src/parser.cc: the parser's reading loop, the whole file or streamed chunk by chunk,
// and the decoding of each frame by Cap'n Proto under deliberate limits (traversal, nesting,
// the memory a frame and the whole trace may build: format.h).
#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <fmt/format.h>
#include <kj/io.h>
#include <unistd.h>

#include <algorithm>

#include "parser.h"

namespace rerace::traces::detail {

namespace {

uint64_t StrCost(size_t n) { return sizeof(std::string) + n; }

}  // namespace

Parser::~Parser() {
  if (fd_ >= 0) ::close(fd_);
}

Result<Trace> Parser::Run() {
  if (auto b = Guarded([&] { Begin(); }); !b) return b.error();
  for (bool more = true; more;) {
    auto r = Guarded([&] { more = Step(); });
    if (!r) return r.error();
  }
  trace_.built_bytes = built_;
  trace_.event_count = event_count_;
  return std::move(trace_);
}

Result<bool> Parser::Next(std::vector<Event>& events, std::vector<TunerEvent>& tuners) {
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

void Parser::Begin() {
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

bool Parser::Step() {
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

template <typename T, typename F>
void Parser::Decode(const Frame& f, F&& body) {
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

void Parser::Fail(std::string_view what) { throw Bad{fmt::format("{}: {}", where_, what)}; }

void Parser::Charge(uint64_t bytes) {
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

std::string Parser::Text(capnp::Text::Reader t) {
  Charge(StrCost(t.size()));
  return std::string(t.cStr());
}

}  // namespace rerace::traces::detail
