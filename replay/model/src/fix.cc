// replay/model/src/fix.cc: named fixes and the fix description language.
#include "rerace/replay/model/fix.h"

#include <fmt/format.h>

#include <set>

#include "rerace/base/named_fix.h"

namespace rerace::replay {

const char* FieldName(Field f) {
  switch (f) {
    case Field::kNargs: return "nargs";
    case Field::kCache: return "cache";
    case Field::kRestoreCopies: return "restore_copies";
    case Field::kBestConfig: return "best_config";
    case Field::kConfigsTimings: return "configs_timings";
    case Field::kBenchTime: return "bench_time";
  }
  return "?";
}

const char* RegionName(Region r) {
  switch (r) {
    case Region::kRun: return "run";
    case Region::kBenchmark: return "benchmark";
    case Region::kBench: return "bench";
    case Region::kHooks: return "hooks";
    case Region::kCache: return "cache";
  }
  return "?";
}

std::string Fix::LockFor(Region r) const {
  for (const auto& [region, lock] : locks)
    if (region == r) return lock;
  return "";
}

namespace {
// What each named fix (rerace/base/named_fix.h) does to the model.
bool ApplyNamed(const std::string& n, Fix& f) {
  const NamedFix* named = FindNamedFix(n);
  if (named == nullptr) return false;
  switch (named->id) {
    case NamedFixId::kNone:
      break;
    case NamedFixId::kLockRun:
      f.locks.push_back({Region::kRun, "global autotune lock"});
      break;
    case NamedFixId::kTlsNargs:
      f.thread_local_fields.insert(Field::kNargs);
      break;
    case NamedFixId::kCallLocal:
      f.thread_local_fields.insert(Field::kNargs);
      f.thread_local_fields.insert(Field::kRestoreCopies);
      break;
    case NamedFixId::kLockKeyFuture:
      f.per_key_future = true;
      break;
    case NamedFixId::kPerThreadTuner:
      f.per_thread_tuner = true;
      break;
    case NamedFixId::kPrewarm:
      f.prewarm = true;
      break;
    case NamedFixId::kOwnerThread:
      f.owner_thread = true;
      break;
    case NamedFixId::kTlsState:  // fixes/tls_state.py: both per-call fields thread-local
      f.thread_local_fields.insert(Field::kNargs);
      f.thread_local_fields.insert(Field::kRestoreCopies);
      break;
    case NamedFixId::kLockKeyEvent:  // fixes/lock_key_event.py
      f.per_key_event = true;
      break;
  }
  return true;
}

bool ParseField(const std::string& s, Field& out) {
  for (Field f : {Field::kNargs, Field::kCache, Field::kRestoreCopies, Field::kBestConfig,
                  Field::kConfigsTimings, Field::kBenchTime})
    if (s == FieldName(f)) {
      out = f;
      return true;
    }
  return false;
}

bool ParseRegion(const std::string& s, Region& out) {
  for (Region r : {Region::kRun, Region::kBenchmark, Region::kBench, Region::kHooks, Region::kCache})
    if (s == RegionName(r)) {
      out = r;
      return true;
    }
  return false;
}

// Every part between separators, empty ones included ("a;;b" is three parts, "" is one): an
// empty part is an error the caller names, never a silent "none".
std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

Result<Fix> ParseDescription(const std::string& text) {
  Fix f;
  f.name = text;
  auto usage = [&](const std::string& what) {
    return Error{fmt::format("fix '{}': {}; a description looks like "
                             "'local=nargs,restore_copies;lock=run:G,hooks:H;future;per-thread;"
                             "prewarm;owner' (fields: nargs, cache, restore_copies, best_config, "
                             "configs_timings, bench_time; regions: run, benchmark, bench, hooks, "
                             "cache)",
                             text, what),
                 kExitUsage};
  };
  std::set<std::string> heads;
  for (const std::string& part : Split(text, ';')) {
    if (part.empty())
      return usage("an empty part (a ';' with nothing before or after it)");
    const size_t eq = part.find('=');
    const std::string head = part.substr(0, eq);
    const std::string body = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (!heads.insert(head).second) return usage(fmt::format("'{}' appears twice", head));
    const bool takes_list = head == "local" || head == "lock";
    if (takes_list && eq == std::string::npos)
      return usage(fmt::format("'{}' needs a list: {}=...", head, head));
    if (!takes_list && eq != std::string::npos)
      return usage(fmt::format("'{}' takes no value, found '{}'", head, part));
    if (head == "local") {
      for (const std::string& name : Split(body, ',')) {
        Field fl;
        if (name.empty()) return usage("local= names an empty field; expected local=FIELD[,FIELD]");
        if (!ParseField(name, fl)) return usage(fmt::format("unknown field '{}'", name));
        if (!f.thread_local_fields.insert(fl).second)
          return usage(fmt::format("field '{}' appears twice", name));
      }
    } else if (head == "lock") {
      for (const std::string& item : Split(body, ',')) {
        const size_t colon = item.find(':');
        Region r;
        if (item.empty())
          return usage("lock= names an empty region; expected lock=REGION or REGION:NAME");
        if (!ParseRegion(item.substr(0, colon), r))
          return usage(fmt::format("unknown region '{}'", item.substr(0, colon)));
        if (colon != std::string::npos && colon + 1 == item.size())
          return usage(fmt::format("lock={} names no lock after ':'; expected {}:NAME or {}",
                                   item, item.substr(0, colon), item.substr(0, colon)));
        if (!f.LockFor(r).empty())
          return usage(fmt::format("region '{}' is locked twice", RegionName(r)));
        f.locks.push_back({r, colon == std::string::npos ? std::string("lock ") + RegionName(r)
                                                          : item.substr(colon + 1)});
      }
    } else if (head == "future") {
      f.per_key_future = true;
    } else if (head == "per-thread") {
      f.per_thread_tuner = true;
    } else if (head == "prewarm") {
      f.prewarm = true;
    } else if (head == "owner") {
      f.owner_thread = true;
    } else {
      return usage(fmt::format("unknown part '{}'", head));
    }
  }
  return f;
}
}  // namespace

const std::vector<std::string>& FixNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const NamedFix& n : kNamedFixes) v.push_back(n.name);
    return v;
  }();
  return names;
}

std::string DescribeFixes() {
  std::string out;
  for (const NamedFix& n : kNamedFixes) out += fmt::format("  {:<17} {}\n", n.name, n.stands_for);
  return out;
}

Result<Fix> ParseFix(const std::string& text) {
  // Messages quote the text: a control character in it (a newline) would break the one line.
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      std::string shown;
      for (char ch : text) {
        const auto u = static_cast<unsigned char>(ch);
        shown += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, ch);
      }
      return Error{fmt::format("fix '{}': control character \\x{:02x} at byte {}; expected a fix "
                               "name or description in printable text",
                               shown, c, i),
                   kExitUsage};
    }
  }
  if (text.empty())
    return Error{fmt::format("empty fix: expected one of {} (joined with '+'), or a description "
                             "such as 'local=nargs;lock=hooks'",
                             fmt::join(FixNames(), ", ")),
                 kExitUsage};
  if (text.find('=') != std::string::npos || text.find(';') != std::string::npos ||
      text == "future" || text == "per-thread" || text == "owner")
    return ParseDescription(text);
  Fix f;
  f.name = text;
  const std::vector<std::string> names = Split(text, '+');
  std::set<std::string> seen;
  for (const std::string& n : names) {
    if (n.empty())
      return Error{fmt::format("fix '{}': an empty name (a '+' with nothing before or after it); "
                               "expected names joined with '+', such as 'tls-nargs+lock-run'",
                               text),
                   kExitUsage};
    if (!seen.insert(n).second)
      return Error{fmt::format("fix '{}': '{}' appears twice", text, n), kExitUsage};
    if (n == "none" && names.size() > 1)
      return Error{fmt::format("fix '{}': 'none' joined with other fixes; expected 'none' alone",
                               text),
                   kExitUsage};
    if (!ApplyNamed(n, f)) {
      return Error{fmt::format("unknown fix '{}': expected one of {} (joined with '+'), or a "
                               "description such as 'local=nargs;lock=hooks'",
                               n, fmt::join(FixNames(), ", ")),
                   kExitUsage};
    }
  }
  return f;
}

}  // namespace rerace::replay
