// traces/src/reader.cc: the reader's public face (reader.h): reading a trace whole or as a
// stream of chunks, opening the file, the memory limit from RERACE_MAX_TRACE_MB, and the frame
// listing. The parsing itself is detail::Parser (parser.h).
#include "rerace/traces/reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "parser.h"
#include "rerace/traces/format.h"

namespace rerace::traces {

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
    const uint32_t len = detail::GetLe32(bytes.data() + pos);
    if (bytes.size() - pos - kFrameHeaderBytes < len) break;
    out.push_back({pos, len, bytes[pos + 4]});
    pos += kFrameHeaderBytes + len;
  }
  return out;
}

}  // namespace rerace::traces
