// replay/model/src/timing_order.cc: the order a recording's timing shows between calls of
// different threads (SerialCalls, OrderFromTiming; model/program.h).
#include "rerace/replay/model/program.h"

#include <algorithm>

namespace rerace::replay {

std::vector<std::pair<uint32_t, uint32_t>> SerialCalls(const Program& p) {
  // Each thread's calls in its program order.
  std::vector<std::vector<uint32_t>> calls(p.threads.size());
  for (size_t t = 0; t < p.threads.size(); ++t)
    for (const Op& op : p.threads[t].ops)
      if (op.kind == Op::Kind::kTunerCall) calls[t].push_back(op.call);
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (size_t t = 0; t < calls.size(); ++t)
    for (uint32_t b : calls[t])
      for (size_t u = 0; u < calls.size(); ++u) {
        if (u == t) continue;
        // u's latest call that ended before b began: its earlier calls come before it anyway.
        uint32_t latest = UINT32_MAX;
        for (uint32_t a : calls[u])
          if (p.calls[a].end_seq != UINT64_MAX && p.calls[a].end_seq < p.calls[b].begin_seq)
            latest = a;
        if (latest != UINT32_MAX) out.emplace_back(latest, b);
      }
  return out;
}

size_t OrderFromTiming(Program& p) {
  const auto pairs = SerialCalls(p);
  // Added to the order the recorded synchronization already gives (program.h).
  p.call_after.resize(p.calls.size());
  for (const auto& [a, b] : pairs) {
    auto& after = p.call_after[b];
    if (std::find(after.begin(), after.end(), a) == after.end()) after.push_back(a);
  }
  return pairs.size();
}

}  // namespace rerace::replay
