// sim/src/schedule.cc: the schedule's line and file forms.
#include "rerace/sim/schedule.h"

#include "rerace/base/output_file.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rerace::sim {

std::vector<ThreadId> Schedule::Expand() const {
  std::vector<ThreadId> out;
  out.reserve(steps_);
  for (const Run& r : runs_) out.insert(out.end(), r.count, r.thread);
  return out;
}

std::string Schedule::Encode() const {
  std::string out(kScheduleFormat);
  out += ':';
  bool first = true;
  for (const Run& r : runs_) {
    if (!first) out += '.';
    first = false;
    out += std::to_string(r.thread);
    if (r.count > 1) {
      out += '*';
      out += std::to_string(r.count);
    }
  }
  return out;
}

namespace {
// The longest schedule a line may give (about 1.1e12 steps; a replay is thousands).
constexpr uint64_t kMaxSteps = uint64_t{1} << 40;

// Parses a decimal number at s[pos...]; advances pos.
bool ParseNumber(std::string_view s, size_t& pos, uint64_t& out) {
  const char* begin = s.data() + pos;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(begin, end, out);
  if (ec != std::errc() || p == begin) return false;
  pos += static_cast<size_t>(p - begin);
  return true;
}
}  // namespace

Result<Schedule> Schedule::Parse(std::string_view line, std::string_view where) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' '))
    line.remove_suffix(1);
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return Error{fmt::format("{}: not a rerace schedule: expected '{}:' followed by steps", where,
                             kScheduleFormat)};
  }
  const std::string_view version = line.substr(0, colon);
  if (version != kScheduleFormat) {
    std::string shown;  // quoted in a one-line message: no control characters
    for (char ch : version.substr(0, 16)) {
      const auto c = static_cast<unsigned char>(ch);
      shown += c >= 0x20 && c < 0x7f ? std::string(1, ch) : fmt::format("\\x{:02x}", c);
    }
    return Error{fmt::format("{}: schedule format '{}' is not supported: this rerace reads '{}'",
                             where, shown, kScheduleFormat)};
  }
  Schedule s;
  std::string_view body = line.substr(colon + 1);
  size_t pos = 0;
  while (pos < body.size()) {
    uint64_t thread = 0;
    uint64_t count = 1;
    const size_t start = pos;
    if (!ParseNumber(body, pos, thread) || thread >= kNoThread) {
      return Error{fmt::format("{}: byte {}: expected a thread id", where, colon + 1 + start)};
    }
    size_t at = start;  // where the step's count is: its repeat count, else its thread id
    if (pos < body.size() && body[pos] == '*') {
      at = ++pos;
      if (!ParseNumber(body, pos, count) || count == 0) {
        return Error{fmt::format("{}: byte {}: expected a positive repeat count after '*'", where,
                                 colon + 1 + pos)};
      }
    }
    // The whole schedule is bounded, not each count: adjacent runs of one thread merge, and the
    // merged count must encode to a line that parses again.
    if (count > kMaxSteps - s.steps_) {
      return Error{fmt::format("{}: byte {}: the schedule runs past {} steps", where, colon + 1 + at,
                               kMaxSteps)};
    }
    if (pos < body.size()) {
      if (body[pos] != '.') {
        const auto c = static_cast<unsigned char>(body[pos]);
        return Error{fmt::format("{}: byte {}: expected '.' between steps, found {}", where,
                                 colon + 1 + pos,
                                 c >= 0x20 && c < 0x7f ? fmt::format("'{}'", body[pos])
                                                       : fmt::format("byte 0x{:02x}", c))};
      }
      ++pos;
      if (pos == body.size()) {
        return Error{fmt::format("{}: byte {}: the schedule ends with '.'", where, colon + pos)};
      }
    }
    const ThreadId t = static_cast<ThreadId>(thread);
    if (!s.runs_.empty() && s.runs_.back().thread == t) {
      s.runs_.back().count += count;
    } else {
      s.runs_.push_back({t, count});
    }
    s.steps_ += count;
  }
  return s;
}

Result<void> Schedule::Save(const std::string& path,
                            const std::vector<std::pair<std::string, std::string>>& meta) const {
  // Written as rerace/base/output_file.h says: a regular file under a temporary name and
  // renamed (a failed write leaves no partial schedule), a device or FIFO in place.
  std::string text = "# rerace schedule\n";
  for (const auto& [k, v] : meta) text += "# " + k + ": " + v + '\n';
  text += Encode() + '\n';
  auto w = WriteOutput(path, text);
  if (!w) return Error{fmt::format("{}: cannot write the schedule: {}", path,
                                   w.error().message.substr(w.error().message.rfind(": ") + 2)),
                       w.error().exit_code};
  return {};
}

Result<Schedule> Schedule::Load(const std::string& path) {
  // Only a regular file of plausible size is read: /dev/zero or a pipe would never end a line.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Error{fmt::format("{}: cannot open the schedule: {}", path, std::strerror(errno)),
                 kExitNoInput};
  }
  if (!S_ISREG(st.st_mode)) {
    return Error{fmt::format("{}: not a regular file; expected a schedule file ('# rerace "
                             "schedule' and a '{}:...' line)",
                             path, kScheduleFormat),
                 kExitNoInput};
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxScheduleFileBytes) {
    return Error{fmt::format("{}: a file of {} bytes; a schedule file is at most {} bytes", path,
                             st.st_size, kMaxScheduleFileBytes)};
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return Error{fmt::format("{}: cannot open the schedule: {}", path, std::strerror(errno)),
                 kExitNoInput};
  }
  std::string line;
  size_t lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    return Parse(line, fmt::format("{}:{}", path, lineno));
  }
  return Error{fmt::format("{}: no schedule line found (expected '{}:...')", path,
                           kScheduleFormat)};
}

}  // namespace rerace::sim
