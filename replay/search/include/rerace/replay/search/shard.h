// replay/search/include/rerace/replay/search/shard.h: a fuzz campaign split over N jobs and joined again.
//
// Shard K of N runs the campaign's runs i with i mod N == K (replay/campaign.h: offset K,
// stride N), so N jobs cover the seeds once. Each job's `fuzz --json` result names its shard;
// MergeFuzzResults joins them: runs add up, a failure is kept once per signature (the lowest
// seed whose schedule fails first with it, so the merge does not depend on input order), and
// a shard given twice is refused, a missing one reported.
//
//   auto shard = ParseShard("auto/8");  // K from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID
//   auto merged = MergeFuzzResults({"0.json", "1.json"});
//   std::string json = FuzzJson(merged->traces, merged->shard_label);
//
// Reads the environment (ParseShard) and files (MergeFuzzResults); no seeded randomness.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/replay/report/fuzz_report.h"

namespace rerace::replay {

struct Shard {
  uint64_t index = 0;
  uint64_t count = 1;
};

// "" (the whole campaign), "K/N" (0 <= K < N, digits only), "auto" (K from
// JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID, N from SLURM_ARRAY_TASK_COUNT or RERACE_SHARDS)
// or "auto/N". Errors are usage errors naming `spec`.
[[nodiscard]] Result<Shard> ParseShard(const std::string& spec);

struct MergedFuzz {
  std::vector<FuzzTrace> traces;  // by trace, what was checked and strategy
  std::string shard_label;        // "merged 0/2 1/2": the shards given, sorted
  std::vector<std::string> missing;  // shards K/N of a count N given that are not there (64 at most)
  bool any_failure = false;
  std::optional<Error> error;  // the first trace a fuzz run could not fuzz, with its code
};
// Joins `fuzz --json` results. A file that cannot be read is exit 66, one that is not a fuzz
// result 65, the same file or shard twice 64.
[[nodiscard]] Result<MergedFuzz> MergeFuzzResults(const std::vector<std::string>& inputs);
// The error for `missing` shards (exit 66), said after the merged result is printed.
Error MissingShardsError(const std::vector<std::string>& missing);

}  // namespace rerace::replay
