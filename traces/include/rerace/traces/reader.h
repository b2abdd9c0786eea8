// rerace/traces/reader.h: reads and validates a trace, bounded on hostile input.
//
// The reader treats every file as someone else's crash: it checks the magic, the version
// (naming both when they differ), every frame's length and CRC, Cap'n Proto's traversal and
// nesting limits (set from the frame size: memory stays proportional to the file), and every
// "must" of the schema: ids that name declared threads, strings and shapes, correlation ids
// that match launches, sequence numbers, counts in the footer. A file cut anywhere after its
// header reads up to its last whole chunk and says "truncated after N events".
//
// Errors are one line: the file, the frame (chunk) and its byte offset, what was found and
// what was expected; exit code 65 (66 when the file cannot be opened). Cap'n Proto exceptions
// are caught here and never escape.
//
// Safe to call from any thread; no shared state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/traces/trace.h"

namespace rerace::traces {

Result<Trace> ReadTrace(const std::string& path);
// The bytes of a file (exit code 66 when it cannot be opened).
Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path);
// Parses a trace already in memory; `name` stands for the file in messages.
Result<Trace> ParseTrace(std::span<const uint8_t> bytes, std::string_view name);

// One frame's position, for `rerace show --frames` and `capnp decode`.
struct FrameInfo {
  uint64_t offset = 0;       // of the frame header
  uint32_t payload_bytes = 0;
  uint8_t kind = 0;
};
// Lists the frames of a file without decoding them (stops at the first cut frame).
Result<std::vector<FrameInfo>> ListFrames(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace rerace::traces
