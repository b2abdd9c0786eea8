// recorder/src/grammar.cc: the NVTX tuner mark grammar.
#include "rerace/recorder/grammar.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <vector>

namespace rerace::recorder {

using traces::TunerField;
using traces::TunerKind;

namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == '%' || c == '|' || c == '=' || c == 0x7f) {
      out += fmt::format("%{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

bool Unescape(std::string_view s, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return false;
    unsigned v = 0;
    auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (ec != std::errc() || p != s.data() + i + 3) return false;
    out += static_cast<char>(v);
    i += 2;
  }
  return true;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

const TunerKind kKinds[] = {TunerKind::kCallBegin, TunerKind::kCallEnd,   TunerKind::kFieldRead,
                            TunerKind::kFieldWrite, TunerKind::kBenchBegin, TunerKind::kBenchEnd,
                            TunerKind::kPreHook,   TunerKind::kPostHook,  TunerKind::kLaunch,
                            TunerKind::kError,     TunerKind::kPrune,     TunerKind::kDiskCache};
const TunerField kFields[] = {TunerField::kNone,          TunerField::kNargs,
                              TunerField::kCache,         TunerField::kRestoreCopies,
                              TunerField::kBestConfig,    TunerField::kConfigsTimings,
                              TunerField::kBenchTime};

}  // namespace

bool IsThreadMark(std::string_view text) {
  return text.substr(0, kThreadPrefix.size()) == kThreadPrefix;
}

bool IsLockMark(std::string_view text) { return text.substr(0, kLockPrefix.size()) == kLockPrefix; }

Result<std::string> ParseThreadMark(std::string_view text) {
  const std::string_view body = text.substr(kThreadPrefix.size());
  std::string name;
  if (body.substr(0, 5) != "name=" || !Unescape(body.substr(5), name) || name.empty())
    return Error{fmt::format("thread mark '{}': expected 'name=...'", text.substr(0, 120)),
                 kExitDataError};
  return name;
}

Result<LockMark> ParseLockMark(std::string_view text) {
  LockMark m;
  bool kind = false, lock = false;
  for (std::string_view field : Split(text.substr(kLockPrefix.size()), ' ')) {
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view k = field.substr(0, eq), v = field.substr(eq + 1);
    if (k == "kind") {
      kind = v == "acquire" || v == "release";
      m.kind = v == "release" ? traces::LockKind::kRelease : traces::LockKind::kAcquire;
    } else if (k == "lock") {
      std::string_view hex = v.substr(0, 2) == "0x" ? v.substr(2) : v;
      auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), m.lock, 16);
      lock = ec == std::errc() && p == hex.data() + hex.size();
    } else if (k == "name") {
      if (!Unescape(v, m.name)) lock = false;
    }
  }
  if (!kind || !lock)
    return Error{fmt::format("lock mark '{}': expected kind=acquire|release and lock=0x...",
                             text.substr(0, 120)),
                 kExitDataError};
  return m;
}

bool IsTunerMark(std::string_view text) { return text.substr(0, kTunerPrefix.size()) == kTunerPrefix; }

std::string EncodeTunerMark(const TunerMark& m) {
  const traces::TunerEvent& e = m.event;
  std::string out(kTunerPrefix);
  out += fmt::format("kind={} tuner={:#x}", traces::TunerKindName(e.kind), e.tuner);
  if (!m.tuner_class.empty()) out += " class=" + Escape(m.tuner_class);
  if (!m.kernel.empty()) out += " kernel=" + Escape(m.kernel);
  if (e.field != TunerField::kNone) out += fmt::format(" field={}", traces::TunerFieldName(e.field));
  if (!e.key.empty()) out += " key=" + Escape(e.key);
  if (e.config >= 0) out += fmt::format(" config={}", e.config);
  if (!e.detail.empty()) out += " detail=" + Escape(e.detail);
  auto list = [&](const char* name, const std::vector<std::string>& v) {
    if (v.empty()) return;
    out += fmt::format(" {}=", name);
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "|" : "") + Escape(v[i]);
  };
  list("configs", e.configs);
  list("args", e.arg_names);
  if (!e.restore_value.empty()) out += fmt::format(" restore={}", fmt::join(e.restore_value, ","));
  if (!e.reset_to_zero.empty()) out += fmt::format(" reset={}", fmt::join(e.reset_to_zero, ","));
  if (!e.timings_ms.empty()) out += fmt::format(" timings={}", fmt::join(e.timings_ms, ","));
  if (e.repetitions != 0) out += fmt::format(" reps={}", e.repetitions);
  if (!e.error_type.empty()) out += " etype=" + Escape(e.error_type);
  if (!e.error_message.empty()) out += " emsg=" + Escape(e.error_message);
  if (!e.error_where.empty()) out += " ewhere=" + Escape(e.error_where);
  return out;
}

Result<TunerMark> ParseTunerMark(std::string_view text) {
  auto bad = [&](std::string what) {
    return Error{fmt::format("tuner mark '{}': {}", text.substr(0, 120), what), kExitDataError};
  };
  if (!IsTunerMark(text)) return bad("expected the prefix 'rerace:tuner '");
  TunerMark m;
  traces::TunerEvent& e = m.event;
  bool have_kind = false;
  std::string value;
  for (std::string_view field : Split(text.substr(kTunerPrefix.size()), ' ')) {
    if (field.empty()) continue;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return bad(fmt::format("field '{}' has no '='", field));
    const std::string_view k = field.substr(0, eq);
    const std::string_view raw = field.substr(eq + 1);
    if (!Unescape(raw, value)) return bad(fmt::format("bad %-escape in {}", k));
    auto number = [&](auto& out, int base = 10) -> bool {
      std::string_view v = raw;
      if (base == 16 && v.substr(0, 2) == "0x") v.remove_prefix(2);
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
      return ec == std::errc() && p == v.data() + v.size();
    };
    if (k == "kind") {
      for (TunerKind tk : kKinds)
        if (value == traces::TunerKindName(tk)) {
          e.kind = tk;
          have_kind = true;
        }
      if (!have_kind) return bad(fmt::format("unknown kind '{}'", value));
    } else if (k == "tuner") {
      if (!(raw.substr(0, 2) == "0x" ? number(e.tuner, 16) : number(e.tuner)))
        return bad("tuner: expected a number");
    } else if (k == "class") {
      m.tuner_class = value;
    } else if (k == "kernel") {
      m.kernel = value;
    } else if (k == "field") {
      bool ok = false;
      for (TunerField f : kFields)
        if (value == traces::TunerFieldName(f)) {
          e.field = f;
          ok = true;
        }
      if (!ok) return bad(fmt::format("unknown field '{}'", value));
    } else if (k == "key") {
      e.key = value;
    } else if (k == "config") {
      if (!number(e.config) || e.config < -1) return bad("config: expected an index");
    } else if (k == "detail") {
      e.detail = value;
    } else if (k == "configs" || k == "args") {
      auto& out = k == "configs" ? e.configs : e.arg_names;
      for (std::string_view item : Split(raw, '|')) {
        std::string s;
        if (!Unescape(item, s)) return bad(fmt::format("bad %-escape in {}", k));
        out.push_back(std::move(s));
      }
    } else if (k == "restore" || k == "reset") {
      auto& out = k == "restore" ? e.restore_value : e.reset_to_zero;
      for (std::string_view item : Split(raw, ',')) {
        uint32_t v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (ec != std::errc() || p != item.data() + item.size())
          return bad(fmt::format("{}: expected indices", k));
        out.push_back(v);
      }
    } else if (k == "timings") {
      for (std::string_view item : Split(raw, ',')) {
        const std::string s(item);
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (end != s.c_str() + s.size()) return bad("timings: expected numbers");
        e.timings_ms.push_back(d);
      }
    } else if (k == "reps") {
      if (!number(e.repetitions)) return bad("reps: expected a count");
    } else if (k == "etype") {
      e.error_type = value;
    } else if (k == "emsg") {
      e.error_message = value;
    } else if (k == "ewhere") {
      e.error_where = value;
    }  // unknown keys: a newer probe; ignored
  }
  if (!have_kind) return bad("no kind=");
  for (uint32_t i : e.restore_value)
    if (i >= e.arg_names.size()) return bad(fmt::format("restore index {} out of range of args", i));
  for (uint32_t i : e.reset_to_zero)
    if (i >= e.arg_names.size()) return bad(fmt::format("reset index {} out of range of args", i));
  return m;
}

}  // namespace rerace::recorder
