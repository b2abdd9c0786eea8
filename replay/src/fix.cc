// replay/src/fix.cc: named fixes and the fix description language.
#include "rerace/replay/fix.h"

#include <fmt/format.h>

#include <sstream>

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
struct Named {
  const char* name;
  const char* stands_for;
};
const Named kNamed[] = {
    {"none", "the autotuner as shipped (Triton 3.6)"},
    {"lock-run", "one global lock around Autotuner.run"},
    {"tls-nargs", "self.nargs thread-local, as proposed in triton-lang/triton issue 11494"},
    {"call-local", "per-call state passed explicitly (nargs, restore_copies), the design of an "
                   "unmerged upstream Triton branch ('call-local'; no PR number confirmed)"},
    {"lock-key-future", "a lock plus a per-key future for cache population, as in Triton PR 8437"},
    {"per-thread-tuner", "each thread its own copy of the autotuner"},
    {"prewarm", "tune every key serially before the threads start"},
    {"owner-thread", "one thread per GPU owns tuning and launches; the others send it work"},
};

bool ApplyNamed(const std::string& n, Fix& f) {
  if (n == "none") return true;
  if (n == "lock-run") {
    f.locks.push_back({Region::kRun, "global autotune lock"});
  } else if (n == "tls-nargs") {
    f.thread_local_fields.insert(Field::kNargs);
  } else if (n == "call-local") {
    f.thread_local_fields.insert(Field::kNargs);
    f.thread_local_fields.insert(Field::kRestoreCopies);
  } else if (n == "lock-key-future") {
    f.per_key_future = true;
  } else if (n == "per-thread-tuner") {
    f.per_thread_tuner = true;
  } else if (n == "prewarm") {
    f.prewarm = true;
  } else if (n == "owner-thread") {
    f.owner_thread = true;
  } else {
    return false;
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

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
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
  for (const std::string& part : Split(text, ';')) {
    const size_t eq = part.find('=');
    const std::string head = part.substr(0, eq);
    const std::string body = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (head == "local") {
      for (const std::string& name : Split(body, ',')) {
        Field fl;
        if (!ParseField(name, fl)) return usage(fmt::format("unknown field '{}'", name));
        f.thread_local_fields.insert(fl);
      }
    } else if (head == "lock") {
      for (const std::string& item : Split(body, ',')) {
        const size_t colon = item.find(':');
        Region r;
        if (!ParseRegion(item.substr(0, colon), r))
          return usage(fmt::format("unknown region '{}'", item.substr(0, colon)));
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
    for (const Named& n : kNamed) v.push_back(n.name);
    return v;
  }();
  return names;
}

std::string DescribeFixes() {
  std::string out;
  for (const Named& n : kNamed) out += fmt::format("  {:<17} {}\n", n.name, n.stands_for);
  return out;
}

Result<Fix> ParseFix(const std::string& text) {
  if (text.find('=') != std::string::npos || text.find(';') != std::string::npos ||
      text == "future" || text == "per-thread" || text == "owner")
    return ParseDescription(text);
  Fix f;
  f.name = text.empty() ? "none" : text;
  for (const std::string& n : Split(text, '+')) {
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
