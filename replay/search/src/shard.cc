// replay/search/src/shard.cc: --shard K/N and the merge of sharded fuzz results (see
// rerace/replay/search/shard.h).
#include "rerace/replay/search/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>

namespace rerace::replay {

namespace {

// A string field of a fuzz result: "" where it is absent or null (schema 1 writes null for what
// a result lacks; older results left the key out or wrote "").
std::string Text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? std::string() : it->get<std::string>();
}

constexpr uint64_t kMaxShards = 1'000'000'000'000ull;  // the command line's largest count

// A whole number in decimal digits only (no sign, space or exponent), in [min, max].
bool IsCount(const std::string& text, uint64_t min, uint64_t max) {
  if (text.empty()) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && p == text.data() + text.size() && v >= min && v <= max;
}

}  // namespace

Result<Shard> ParseShard(const std::string& s) {
  if (s.empty()) return Shard{};
  std::string spec = s;
  std::string from;  // --shard auto: which variables gave K and N, for an error that names them
  if (spec == "auto" || spec.rfind("auto/", 0) == 0) {
    const char* idx_name = "JOB_COMPLETION_INDEX";
    const char* idx = std::getenv(idx_name);
    if (!idx || !*idx) idx = std::getenv(idx_name = "SLURM_ARRAY_TASK_ID");
    const char* cnt_name = "SLURM_ARRAY_TASK_COUNT";
    const char* cnt = std::getenv(cnt_name);
    if (!cnt || !*cnt) cnt = std::getenv(cnt_name = "RERACE_SHARDS");
    std::string count = spec.size() > 5 ? spec.substr(5) : (cnt ? cnt : "");
    if (!idx || !*idx || count.empty())
      return Error{"--shard auto: the index comes from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID "
                   "and the count from SLURM_ARRAY_TASK_COUNT, RERACE_SHARDS or --shard auto/N; "
                   "some are not set",
                   kExitUsage};
    from = fmt::format(" (K from {}='{}', N from {})", idx_name, idx,
                       spec.size() > 5 ? std::string("--shard auto/N")
                                       : fmt::format("{}='{}'", cnt_name, count));
    spec = std::string(idx) + "/" + count;
  }
  Shard sh;
  const size_t slash = spec.find('/');
  try {
    if (slash == std::string::npos) throw 0;
    if (!IsCount(spec.substr(0, slash), 0, kMaxShards) ||
        !IsCount(spec.substr(slash + 1), 1, kMaxShards))
      throw 0;
    size_t a = 0, b = 0;
    sh.index = std::stoull(spec.substr(0, slash), &a);
    sh.count = std::stoull(spec.substr(slash + 1), &b);
    if (a != slash || b != spec.size() - slash - 1) throw 0;
  } catch (...) {
    return Error{fmt::format("--shard '{}'{}: expected K/N (0 <= K < N) or auto", s, from), kExitUsage};
  }
  if (sh.count == 0 || sh.index >= sh.count)
    return Error{fmt::format("--shard '{}'{}: expected 0 <= K < N", s, from), kExitUsage};
  return sh;
}

Result<MergedFuzz> MergeFuzzResults(const std::vector<std::string>& inputs) {
  // Results of the same trace and fix from several shards: runs add up, failures are kept
  // once per signature (the lowest seed wins, so the merge does not depend on input order).
  std::map<std::tuple<std::string, std::string, std::string>, FuzzTrace> merged;
  // Races per result, once per object and pair of source lines (as fuzz keeps them); of the
  // same race seen in several shards, the least JSON text is kept, whatever the input order.
  std::map<std::tuple<std::string, std::string, std::string>, std::map<std::string, std::string>> races;
  std::vector<std::string> shards;
  std::map<std::string, std::string> shard_file;  // "K/N" → the input that holds it
  std::set<std::string> seen_files;
  for (const std::string& in : inputs) {
    std::ifstream f(in);
    if (!f) return Error{fmt::format("{}: cannot open: {}", in, std::strerror(errno)), kExitNoInput};
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(f);
      if (j.value("rerace_fuzz", 0) != 1) throw std::runtime_error("not a 'rerace fuzz --json' result (rerace_fuzz: 1)");
      const std::string shard = Text(j, "shard");
      // The same shard twice would count its runs and failures twice.
      std::error_code ec;
      const std::string canonical = std::filesystem::weakly_canonical(in, ec).string();
      if (auto [it, fresh] = seen_files.insert(ec ? in : canonical); !fresh)
        return Error{fmt::format("merge: {} is given twice: each result must be merged once", in),
                   kExitUsage};
      if (auto [it, fresh] = shard_file.try_emplace(shard, in); !fresh && !shard.empty())
        return Error{fmt::format("merge: {} and {} are both shard '{}': each shard must be "
                                        "merged once",
                                        it->second, in, shard),
                   kExitUsage};
      shards.push_back(shard);
      for (const auto& t : j.at("traces")) {
        // Results of different patches (by content) or engines are never merged into one.
        std::vector<std::pair<std::string, std::string>> patches;
        if (t.contains("patches"))
          for (const auto& p : t.at("patches"))
            patches.emplace_back(p.at("file").get<std::string>(), p.at("sha256").get<std::string>());
        const std::string engine = t.value("engine", std::string("model"));
        std::string checked = t.at("fix").get<std::string>() + "|" + engine;
        for (const auto& [file, sha] : patches) checked += "|" + file + "|" + sha;
        const auto key = std::make_tuple(t.at("trace").get<std::string>(), checked,
                                         t.at("strategy").get<std::string>());
        FuzzTrace& m = merged[key];
        if (t.contains("races") && !t.at("races").is_null())
          for (const auto& r : t.at("races")) {
            const std::string id = r.at("object").get<std::string>() + "|" +
                                   r.at("first").at("label").get<std::string>() + "|" +
                                   r.at("second").at("label").get<std::string>();
            auto [it, fresh] = races[key].try_emplace(id, r.dump());
            if (!fresh && r.dump() < it->second) it->second = r.dump();
          }
        m.trace = t.at("trace");
        m.fix = t.at("fix");
        m.strategy = t.at("strategy");
        m.model = Text(t, "model");
        m.engine = engine;
        m.patches = patches;
        m.runs += t.at("runs").get<uint64_t>();
        m.in_process += t.value("runs_in_one_process", uint64_t{0});
        m.unconfirmed += t.value("unconfirmed", uint64_t{0});
        if (!Text(t, "error").empty() && m.error.empty()) {
          m.error = t.at("error").get<std::string>();
          m.error_code = t.contains("exit_code") && t.at("exit_code").is_number() ? t.at("exit_code").get<int>() : kExitDataError;
        }
        m.failing += t.at("failing").get<uint64_t>();
        for (const auto& x : t.at("failures")) {
          FuzzFailure ff;
          ff.signature = x.at("failure");
          ff.seed = x.at("seed");
          ff.schedule = Text(x, "schedule");
          ff.schedule_file = Text(x, "schedule_file");
          ff.thread_name = Text(x, "thread_name");
          ff.type = Text(x, "type");
          ff.message = Text(x, "message");
          ff.words = Text(x, "words");
          ff.silent = x.value("silent", false);
          ff.first = x.value("first", true);
          auto it = std::find_if(m.failures.begin(), m.failures.end(),
                                 [&](const FuzzFailure& y) { return y.signature == ff.signature; });
          if (it == m.failures.end()) m.failures.push_back(std::move(ff));
          // As one fuzz run keeps it: the lowest seed whose schedule fails first with it, else
          // the lowest seed.
          else if (std::make_pair(!ff.first, ff.seed) < std::make_pair(!it->first, it->seed))
            *it = std::move(ff);
        }
      }
    } catch (const std::exception& e) {
      return Error{fmt::format("{}: {}", in, e.what()), kExitDataError};
    }
  }
  // Every shard K/N of a count N must be there: a missing one is seeds never run.
  std::vector<std::string> missing;
  std::map<uint64_t, std::set<uint64_t>> by_count;
  for (const std::string& sh : shards) {
    const size_t slash = sh.find('/');
    if (sh.empty() || slash == std::string::npos) continue;
    try {
      by_count[std::stoull(sh.substr(slash + 1))].insert(std::stoull(sh.substr(0, slash)));
    } catch (...) {
      return Error{fmt::format("merge: shard '{}' is not K/N", sh), kExitDataError};
    }
  }
  for (const auto& [count, have] : by_count)
    for (uint64_t k = 0; k < count && missing.size() < 64; ++k)
      if (!have.count(k)) missing.push_back(fmt::format("{}/{}", k, count));
  MergedFuzz result;
  result.missing = std::move(missing);
  for (auto& [k, t] : merged) {
    std::sort(t.failures.begin(), t.failures.end(), FailureBefore);
    if (races.count(k)) {
      std::vector<std::string> list;
      for (const auto& [id, text] : races[k]) list.push_back(text);
      t.races_json = "[" + fmt::format("{}", fmt::join(list, ",")) + "]";
    }
    result.any_failure |= !t.failures.empty();
    if (!t.error.empty() && !result.error) result.error = Error{t.error, t.error_code};
    result.traces.push_back(std::move(t));
  }
  std::sort(shards.begin(), shards.end());
  result.shard_label = fmt::format("merged {}", fmt::join(shards, " "));
  return result;
}

Error MissingShardsError(const std::vector<std::string>& missing) {
  return {fmt::format("merge: shard{} {} {} missing: the merged result covers only the shards "
                      "given (failures found there are in the output above)",
                      missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
                      missing.size() == 1 ? "is" : "are"),
          kExitNoInput};
}

}  // namespace rerace::replay
