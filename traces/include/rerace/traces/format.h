// rerace/traces/format.h: the on-disk framing of a trace and its version.
//
// NB: kFormatVersion must be bumped on ANY change to traces/schema/trace.capnp or to the
// framing below, and the reader taught what it still reads. A reader meeting another version
// names both in its error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rerace::traces {

// 2: the recording identifier in the header, every chunk and the footer (a header of one
//    recording with the chunks of another is refused). 1: without it; still read.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestFormatVersion = 1;  // the oldest version this reader reads
inline constexpr std::string_view kMagic = "RRTRACE\n";  // 8 bytes
inline constexpr size_t kPreambleBytes = 16;             // magic, version, reserved
inline constexpr size_t kFrameHeaderBytes = 12;          // length, kind, 3 zero, crc32c

enum class FrameKind : uint8_t { kHeader = 1, kChunk = 2, kFooter = 3 };

// Limits the reader enforces on hostile input.
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;      // one frame's payload
inline constexpr uint64_t kMaxUnpackedWordsPerByte = 64;   // packed expansion allowed
inline constexpr uint64_t kMaxChunkWords = 16u << 20;      // 128 MiB unpacked, absolute
inline constexpr int kNestingLimit = 8;                    // the schema nests 3 deep

// What the reader builds in memory (strings, events, tuner transitions...) is bounded too, since
// Cap'n Proto's traversal limit bounds only its own work: a list of null text pointers costs
// the file an eighth of a byte per element and rerace a std::string each.
//   per chunk: kChunkBuildSlackBytes + kMaxBuiltBytesPerByte x the frame's payload
//   per trace: kTraceBuildSlackBytes + kMaxBuiltBytesPerByte x the file size, and never more
//              than ReadLimits::max_memory_bytes (kDefaultMaxTraceMemoryBytes unless the user
//              raises it with RERACE_MAX_TRACE_MB)
// Measured on the sample traces (docs/PERFORMANCE.md): at most 9.4 bytes built per byte of frame.
inline constexpr uint64_t kMaxBuiltBytesPerByte = 64;
inline constexpr uint64_t kChunkBuildSlackBytes = 64u << 10;
inline constexpr uint64_t kTraceBuildSlackBytes = 16u << 20;
inline constexpr uint64_t kDefaultMaxTraceMemoryBytes = 1024ull << 20;
// Recorded values beyond these are corrupt, not slow kernels: a kernel or a benchmark timing of
// more than an hour, a timing that is not a finite number >= 0.
inline constexpr uint64_t kMaxKernelNs = 3'600'000'000'000ull;
inline constexpr double kMaxTimingMs = 3'600'000.0;
// do_bench's repetitions of one config: replay scales a timing by them (an hour x 1M fits 63 bits).
inline constexpr uint32_t kMaxRepetitions = 1'000'000;

// CRC-32C (Castagnoli) of a byte range, as stored in each frame header.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace rerace::traces
