// replay/model/src/text.cc: JsonEscape and the JSON helpers, for every JSON rerace writes (the model's cost, the
// engine's program, the reports).
#include "rerace/replay/model/text.h"

#include <fmt/format.h>

#include "rerace/base/utf8.h"

namespace rerace::replay {

std::string JsonEscape(const std::string& raw) {
  const std::string s = ValidUtf8(raw);  // JSON text is UTF-8: invalid bytes become U+FFFD
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += ch;
    }
  }
  return out;
}

std::string JsonString(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }

std::string JsonOrNull(const std::string& s) { return s.empty() ? "null" : JsonString(s); }

std::string JsonHeader(const char* command) {
  return fmt::format("{{\"schema_version\":{},\"command\":\"{}\",", kJsonSchemaVersion, command);
}

}  // namespace rerace::replay
