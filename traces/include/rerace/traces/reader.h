// rerace/traces/reader.h: reads and validates a trace, bounded on hostile input.
//
// The reader treats every file as someone else's crash: it checks the magic, the version
// (naming both when they differ), every frame's length and CRC, Cap'n Proto's traversal and
// nesting limits (set from the frame size: memory stays proportional to the file), and every
// "must" of the schema: ids that name declared threads, strings and shapes, correlation ids
// that match launches, sequence numbers, counts in the footer. A file cut anywhere after its
// header reads up to its last whole chunk and says "truncated after N events".
//
// Memory is bounded by the file: what the reader builds per chunk and per trace is at most a
// fixed multiple of the bytes it came from, and never more than ReadLimits::max_memory_bytes
// (format.h); beyond it the read stops with exit 65. Only a regular file whose first bytes are
// the magic is read at all, and only up to that limit.
//
// Errors are one line: the file, the frame (chunk) and its byte offset, what was found and
// what was expected; exit code 65 (66 when the file cannot be opened). Cap'n Proto exceptions
// are caught here and never escape.
//
// Safe to call from any thread; no shared state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/traces/format.h"
#include "rerace/traces/trace.h"

namespace rerace::traces {

// The absolute bounds of one read. The user raises them with the environment variable
// RERACE_MAX_TRACE_MB (megabytes of memory the reader may build, and of file it reads).
struct ReadLimits {
  uint64_t max_memory_bytes = kDefaultMaxTraceMemoryBytes;
};
// kDefaultMaxTraceMemoryBytes, or RERACE_MAX_TRACE_MB when set (exit 64 when that is not a
// whole number of megabytes >= 1).
Result<ReadLimits> DefaultReadLimits();

// Reads with DefaultReadLimits().
Result<Trace> ReadTrace(const std::string& path);
Result<Trace> ReadTrace(const std::string& path, const ReadLimits& limits);
// The bytes of a trace file: a regular file (66 when it cannot be opened or is not a regular
// file), beginning with the magic (65), of at most limits.max_memory_bytes (65).
Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path,
                                           const ReadLimits& limits = ReadLimits{});
// Parses a trace already in memory; `name` stands for the file in messages.
Result<Trace> ParseTrace(std::span<const uint8_t> bytes, std::string_view name,
                         const ReadLimits& limits = ReadLimits{});

namespace detail {
class Parser;
}

// What ForEachChunk hands its visitor for each chunk: what has been read so far (as
// TraceStream::trace() gives it), the chunk's events and its tuner transitions (as
// TraceStream::Next gives them). An error it returns stops the read and is ForEachChunk's.
using ChunkVisitor = std::function<Result<void>(const Trace& so_far, const std::vector<Event>& events,
                                                const std::vector<TunerEvent>& tuners)>;

// A trace read chunk by chunk: the events are handed out a chunk at a time and never held all
// at once, with every check ReadTrace makes (frames, CRCs, ids, sequence numbers, the footer's
// counts; the same one-line errors, exit 65). What it keeps (header, strings, launch shapes,
// threads, the launches' correlation ids as a bitmap) and one chunk's events are bounded by
// ReadLimits::max_memory_bytes and by the file's size as ReadTrace's are; the file itself is
// not limited by size (it is never in memory).
//
//   auto s = TraceStream::Open(path);
//   std::vector<Event> ev; std::vector<TunerEvent> tu;
//   while (true) { auto more = s->Next(ev, tu); if (!more) ...error; if (!*more) break; ... }
//   s->trace().truncated ...
// ForEachChunk (below) is that loop.
class TraceStream {
 public:
  static Result<TraceStream> Open(const std::string& path, const ReadLimits& limits);
  static Result<TraceStream> Open(const std::string& path);  // DefaultReadLimits()
  ~TraceStream();
  TraceStream(TraceStream&&) noexcept;
  TraceStream& operator=(TraceStream&&) noexcept;

  // The next chunk's events into `events` (seq, thread... as ReadTrace gives them), and its
  // tuner transitions into `tuners` (Event::tuner indexes `tuners`, not the whole trace's);
  // both cleared first. False once the footer or the end of the file has been read (an empty
  // chunk gives true and no events).
  Result<bool> Next(std::vector<Event>& events, std::vector<TunerEvent>& tuners);
  // What has been read so far, without events and tuner_events: header, strings, shapes and
  // threads (as declared up to the last chunk read), event_count, chunks; once Next has said
  // false, the footer and truncated / truncation as ReadTrace gives them.
  const Trace& trace() const;

 private:
  friend Result<Trace> ForEachChunk(const std::string& path, const ChunkVisitor& visit);
  explicit TraceStream(std::unique_ptr<detail::Parser> parser);
  std::unique_ptr<detail::Parser> parser_;
};

// Opens the trace at `path` as a TraceStream (DefaultReadLimits()) and hands every chunk to
// `visit`, in file order (an empty chunk too). Returns what the stream read, without events
// (TraceStream::trace() once Next has said false: footer, truncated / truncation), or the first
// error: Open's or Next's as they give it (one line; 66 when the file cannot be opened, 65 for
// a bad trace), or the one `visit` returned.
//
//   auto read = ForEachChunk(path, [&](const Trace& so_far, const std::vector<Event>& events,
//                                      const std::vector<TunerEvent>& tuners) -> Result<void> {
//     for (const Event& e : events) ...;
//     return {};
//   });
//   if (!read) return read.error();
[[nodiscard]] Result<Trace> ForEachChunk(const std::string& path, const ChunkVisitor& visit);

// One frame's position, for `rerace show --frames` and `capnp decode`.
struct FrameInfo {
  uint64_t offset = 0;       // of the frame header
  uint32_t payload_bytes = 0;
  uint8_t kind = 0;
};
// Lists the frames of a file without decoding them (stops at the first cut frame).
Result<std::vector<FrameInfo>> ListFrames(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace rerace::traces
