// rerace/replay/model/text.h: printf-style formatting into a string, for the reports that were
// printed with printf (the same conversions, so the same bytes), the command reports' small
// helpers, and JsonEscape, for every JSON rerace writes.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <string>

namespace rerace::replay {

// `s` as the inside of a JSON string: quotes, backslashes and control characters escaped,
// invalid UTF-8 replaced by U+FFFD.
std::string JsonEscape(const std::string& s);

// `s` as a JSON string with its quotes; JsonOrNull gives `null` for an empty `s` (a value that
// is absent is null in every JSON rerace writes, never "": docs/JSON.md).
std::string JsonString(const std::string& s);
std::string JsonOrNull(const std::string& s);

// The version of the JSON every command writes (docs/JSON.md, docs/schema/rerace.schema.json):
// each top-level object opens with "schema_version" and "command".
inline constexpr int kJsonSchemaVersion = 1;
// `{"schema_version":1,"command":"<command>",` : the opening of a command's top-level object.
std::string JsonHeader(const char* command);

}  // namespace rerace::replay

namespace rerace::replay::detail {

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string Sprintf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  return out;
}

// A path as a report shows it: relative to the current directory when it lies below it (what
// the user can type there, the same bytes in every checkout), else as given.
inline std::string ShownPath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec || path.empty() || path.front() != '/') return path;
  const std::filesystem::path rel = std::filesystem::path(path).lexically_relative(cwd);
  if (rel.empty() || rel.begin()->string() == "..") return path;
  return rel.string();
}

}  // namespace rerace::replay::detail
