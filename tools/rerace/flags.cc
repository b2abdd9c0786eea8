// tools/rerace/flags.cc: validators for numeric and structured flags (see flags.h).
#include "flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace rerace::tools::flags {

std::string CheckCount(const std::string& text, uint64_t min, uint64_t max) {
  const std::string expected = fmt::format("expected a whole number from {} to {}", min, max);
  if (text.empty()) return fmt::format("'' is empty; {}", expected);
  for (char c : text)
    if (c < '0' || c > '9') return fmt::format("'{}' is not a number in digits; {}", text, expected);
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < min || v > max)
    return fmt::format("'{}' is out of range; {}", text, expected);
  return "";
}

CLI::Validator Count(uint64_t min, uint64_t max) {
  return CLI::Validator([min, max](std::string& s) { return CheckCount(s, min, max); }, "");
}

Result<double> ParseDuration(const std::string& s) {
  auto bad = [&](const std::string& why) {
    return Error{fmt::format("'{}': {}; expected a duration such as 90s, 10m or 1h (from {:g} s to "
                             "{:g} days)",
                             s, why, kMinSeconds, kMaxSeconds / 86400),
                 kExitUsage};
  };
  size_t digits = 0;
  while (digits < s.size() && ((s[digits] >= '0' && s[digits] <= '9') || s[digits] == '.')) ++digits;
  if (digits == 0) return bad("no number");
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + digits, v);
  if (ec != std::errc() || p != s.data() + digits || !std::isfinite(v)) return bad("not a number");
  const std::string unit = s.substr(digits);
  double mul = 0;
  if (unit.empty() || unit == "s") mul = 1;
  else if (unit == "ms") mul = 1e-3;
  else if (unit == "m" || unit == "min") mul = 60;
  else if (unit == "h") mul = 3600;
  else return bad(fmt::format("unknown unit '{}'", unit));
  const double seconds = v * mul;
  if (seconds < kMinSeconds) return bad("too short to run anything");
  if (seconds > kMaxSeconds) return bad("too long");
  return seconds;
}

CLI::Validator Duration() {
  return CLI::Validator(
      [](std::string& s) {
        auto d = ParseDuration(s);
        return d ? std::string() : d.error().message;
      },
      "");
}

CLI::Validator FileName() {
  return CLI::Validator(
      [](std::string& s) { return s.empty() ? std::string("'' names no file") : std::string(); }, "");
}

CLI::Validator ShardSpec() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const std::string expected = "expected K/N (0 <= K < N, digits only), auto or auto/N";
        const size_t slash = s.find('/');
        const std::string head = s.substr(0, slash);
        const std::string tail = slash == std::string::npos ? "" : s.substr(slash + 1);
        if (head == "auto") {
          if (slash == std::string::npos || CheckCount(tail, 1, kMaxRuns).empty()) return "";
          return fmt::format("'{}': {}", s, expected);
        }
        if (slash == std::string::npos || !CheckCount(head, 0, kMaxRuns).empty() ||
            !CheckCount(tail, 1, kMaxRuns).empty() ||
            std::strtoull(head.c_str(), nullptr, 10) >= std::strtoull(tail.c_str(), nullptr, 10))
          return fmt::format("'{}': {}", s, expected);
        return "";
      },
      "");
}

}  // namespace rerace::tools::flags
