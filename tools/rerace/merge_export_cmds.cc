// tools/rerace/merge_export_cmds.cc: `rerace merge` (joins sharded fuzz results) and
// `rerace export` (a recorded trace as a Perfetto timeline); whether to colour reports.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "flags.h"
#include "output.h"
#include "rerace/base/result.h"
#include "rerace/base/output_file.h"
#include "rerace/replay/report/fuzz_report.h"
#include "rerace/replay/search/shard.h"
#include "rerace/replay/report/timeline.h"
#include "rerace/traces/reader.h"

namespace rerace::tools {

bool UseColour() {
  const char* no = std::getenv("NO_COLOR");
  return isatty(1) && (no == nullptr || *no == 0);
}

namespace {

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string junit;
};

int RunMerge(const MergeArgs& a) {
  if (auto same = RefuseOutputIsInput("--junit", a.junit, a.inputs); !same) return ReportError(same.error());
  auto merged = replay::MergeFuzzResults(a.inputs);
  if (!merged) return ReportError(merged.error());
  std::printf("%s\n", replay::FuzzJson(merged->traces, merged->shard_label).c_str());
  if (!a.junit.empty())
    if (auto w = WriteFileAtomically(a.junit, replay::FuzzJunit(merged->traces, QuotedProgram())); !w)
      return ReportError(w.error());
  if (!merged->missing.empty()) return ReportError(replay::MissingShardsError(merged->missing));
  if (merged->error) return ReportError(*merged->error);
  return merged->any_failure ? kExitFound : kExitOk;
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
  ms->add_option("--junit", m->junit, "Also write the merged JUnit XML report")
      ->check(flags::FileName());
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
