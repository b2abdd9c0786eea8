// tools/rerace/merge_export_cmds.cc: `rerace merge` (joins sharded fuzz results) and
// `rerace export` (a recorded trace as a Perfetto timeline); the report colouring.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "output.h"
#include "rerace/base/result.h"
#include "rerace/base/output_file.h"
#include "rerace/replay/timeline.h"
#include "rerace/traces/reader.h"

namespace rerace::tools {

bool UseColour() {
  const char* no = std::getenv("NO_COLOR");
  return isatty(1) && (no == nullptr || *no == 0);
}

std::string Colour(const std::string& report) {
  if (!UseColour()) return report;
  std::string out;
  size_t pos = 0;
  while (pos < report.size()) {
    size_t nl = report.find('\n', pos);
    if (nl == std::string::npos) nl = report.size();
    const std::string line = report.substr(pos, nl - pos);
    if (line.rfind("FAILED", 0) == 0 || line.find("FAILS") != std::string::npos)
      out += "\033[1;31m" + line + "\033[0m";
    else if (line.rfind("ok:", 0) == 0 || line.find(" holds ") != std::string::npos)
      out += "\033[1;32m" + line + "\033[0m";
    else if (line.rfind("warning:", 0) == 0 || line.rfind("also:", 0) == 0)
      out += "\033[33m" + line + "\033[0m";
    else
      out += line;
    if (nl < report.size()) out += '\n';
    pos = nl + 1;
  }
  return out;
}

Result<void> WriteFile(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, text);
}

namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string junit;
};

int RunMerge(const MergeArgs& a) {
  if (auto same = RefuseOutputIsInput("--junit", a.junit, a.inputs); !same) return ReportError(same.error());
  // Results of the same trace and fix from several shards: runs add up, failures are kept
  // once per signature (the lowest seed wins, so the merge does not depend on input order).
  std::map<std::tuple<std::string, std::string, std::string>, FuzzTrace> merged;
  // Races per result, once per object and pair of source lines (as fuzz keeps them); of the
  // same race seen in several shards, the least JSON text is kept, whatever the input order.
  std::map<std::tuple<std::string, std::string, std::string>, std::map<std::string, std::string>> races;
  std::vector<std::string> shards;
  std::map<std::string, std::string> shard_file;  // "K/N" → the input that holds it
  std::set<std::string> seen_files;
  for (const std::string& in : a.inputs) {
    std::ifstream f(in);
    if (!f) return ReportError({fmt::format("{}: cannot open: {}", in, std::strerror(errno)), kExitNoInput});
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(f);
      if (j.value("rerace_fuzz", 0) != 1) throw std::runtime_error("not a 'rerace fuzz --json' result (rerace_fuzz: 1)");
      const std::string shard = j.value("shard", "");
      // The same shard twice would count its runs and failures twice.
      std::error_code ec;
      const std::string canonical = std::filesystem::weakly_canonical(in, ec).string();
      if (auto [it, fresh] = seen_files.insert(ec ? in : canonical); !fresh)
        return ReportError({fmt::format("merge: {} is given twice: each result must be merged once", in),
                            kExitUsage});
      if (auto [it, fresh] = shard_file.try_emplace(shard, in); !fresh && !shard.empty())
        return ReportError({fmt::format("merge: {} and {} are both shard '{}': each shard must be "
                                        "merged once",
                                        it->second, in, shard),
                            kExitUsage});
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
        if (t.contains("races"))
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
        m.model = t.value("model", "");
        m.engine = engine;
        m.patches = patches;
        m.runs += t.at("runs").get<uint64_t>();
        m.failing += t.at("failing").get<uint64_t>();
        for (const auto& x : t.at("failures")) {
          FuzzFailure ff;
          ff.signature = x.at("failure");
          ff.seed = x.at("seed");
          ff.schedule = x.value("schedule", "");
          ff.schedule_file = x.value("schedule_file", "");
          ff.thread_name = x.value("thread_name", "");
          ff.type = x.value("type", "");
          ff.message = x.value("message", "");
          ff.words = x.value("words", "");
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
      return ReportError({fmt::format("{}: {}", in, e.what()), kExitDataError});
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
      return ReportError({fmt::format("merge: shard '{}' is not K/N", sh), kExitDataError});
    }
  }
  for (const auto& [count, have] : by_count)
    for (uint64_t k = 0; k < count && missing.size() < 64; ++k)
      if (!have.count(k)) missing.push_back(fmt::format("{}/{}", k, count));
  std::vector<FuzzTrace> all;
  bool any = false;
  for (auto& [k, t] : merged) {
    std::sort(t.failures.begin(), t.failures.end(), FailureBefore);
    if (races.count(k)) {
      std::vector<std::string> list;
      for (const auto& [id, text] : races[k]) list.push_back(text);
      t.races_json = "[" + fmt::format("{}", fmt::join(list, ",")) + "]";
    }
    any |= !t.failures.empty();
    all.push_back(std::move(t));
  }
  std::sort(shards.begin(), shards.end());
  std::printf("%s\n", FuzzJson(all, fmt::format("merged {}", fmt::join(shards, " "))).c_str());
  if (!a.junit.empty())
    if (auto w = WriteFile(a.junit, FuzzJunit(all)); !w) return ReportError(w.error());
  if (!missing.empty())
    return ReportError({fmt::format("merge: shard{} {} {} missing: the merged result covers only the "
                                    "shards given (failures found there are in the output above)",
                                    missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), missing.size() == 1 ? "is" : "are"),
                        kExitNoInput});
  return any ? kExitFound : kExitOk;
}

struct ExportArgs {
  std::string trace;
  std::string output;
};

int RunExport(const ExportArgs& a) {
  // Streamed: the trace is read twice, chunk by chunk, and the text written as it is made.
  if (auto same = RefuseOutputIsInput("-o", a.output, {a.trace}); !same) return ReportError(same.error());
  traces::Trace read;
  auto bytes = replay::WriteTraceTimeline(a.trace, a.output, &read);
  if (!bytes) return ReportError(bytes.error());
  if (read.truncated)
    std::fprintf(stderr, "warning: TRUNCATED trace %s: %s; the timeline ends at the cut\n",
                 a.trace.c_str(), read.truncation.c_str());
  std::fprintf(stderr, "rerace: wrote %s (%llu bytes): open it in ui.perfetto.dev or chrome://tracing\n",
               a.output.c_str(), static_cast<unsigned long long>(*bytes));
  return kExitOk;
}

}  // namespace

void RegisterMergeExport(CLI::App& app, CommandTable& table) {
  auto m = std::make_shared<MergeArgs>();
  CLI::App* ms = app.add_subcommand(
      "merge", "Join the --json results of sharded fuzz runs into one (printed as JSON); exit 1 "
               "when any shard found a failure. Each shard K/N must be given once: the same shard "
               "twice is refused (exit 64), a missing one reported (exit 66)");
  ms->add_option("results", m->inputs, "fuzz --json files")->required();
  ms->add_option("--junit", m->junit, "Also write the merged JUnit XML report");
  table.Add(ms, [m] { return RunMerge(*m); });

  auto e = std::make_shared<ExportArgs>();
  CLI::App* es = app.add_subcommand(
      "export", "Write a recorded trace as a timeline for ui.perfetto.dev / chrome://tracing: host "
                "threads with launches and tuner transitions, GPU streams with kernels");
  es->add_option("trace", e->trace, "Trace file")->required();
  es->add_option("-o,--output", e->output, "Timeline file (.json)")->required();
  table.Add(es, [e] { return RunExport(*e); });
}

}  // namespace rerace::tools
