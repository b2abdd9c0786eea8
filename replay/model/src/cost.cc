// replay/model/src/cost.cc: a run's terms in words, and a fix's cost line.
#include "rerace/replay/model/cost.h"

#include <fmt/format.h>

#include <algorithm>

#include "rerace/replay/model/result.h"
#include "rerace/replay/model/text.h"

namespace rerace::replay {

namespace {
double Ms(Nanos n) { return static_cast<double>(n) / 1e6; }
}  // namespace

std::vector<CostTerm> DominantTerms(const StepCost& c, size_t n) {
  std::vector<CostTerm> all;
  if (c.tuning_ns)
    all.push_back({"tuning", c.tuning_ns,
                   fmt::format("tuning: {} x {:.0f} configs x {:.3f} ms", c.tunings,
                               static_cast<double>(c.configs) / std::max<double>(c.tunings, 1),
                               Ms(c.tuning_ns) / static_cast<double>(std::max<uint64_t>(c.configs, 1)))});
  if (c.blocked_ns)
    all.push_back({"blocked", c.blocked_ns,
                   fmt::format("{} blocked on other threads (locks, futures, an owner) for {:.3f} "
                               "ms of its {:.3f} ms",
                               c.critical, Ms(c.blocked_ns), Ms(c.critical_ns))});
  if (c.kernel_ns)
    all.push_back({"kernels", c.kernel_ns,
                   fmt::format("kernels: {} x {:.3f} ms", c.launches,
                               Ms(c.kernel_ns) / static_cast<double>(std::max<uint64_t>(c.launches, 1)))});
  if (c.cpu_ns)
    all.push_back({"cpu", c.cpu_ns,
                   fmt::format("recorded CPU time between events: {} spans, {:.3f} ms", c.cpu_spans,
                               Ms(c.cpu_ns))});
  if (c.gil_wait_ns)
    all.push_back({"gil", c.gil_wait_ns, fmt::format("waiting for the GIL: {:.3f} ms", Ms(c.gil_wait_ns))});
  if (c.context_wait_ns)
    all.push_back({"context", c.context_wait_ns,
                   fmt::format("trials waiting for the device's context (other threads' "
                               "cudaMalloc, cudaFree, device synchronizations): {:.3f} ms",
                               Ms(c.context_wait_ns))});
  if (c.cold_ns)
    all.push_back({"cold", c.cold_ns,
                   fmt::format("the process's cold start in its first trial (runtime start, kernel "
                               "loading), as recorded: {:.3f} ms",
                               Ms(c.cold_ns))});
  if (c.trial_contention_ns)
    all.push_back({"contention", c.trial_contention_ns,
                   fmt::format("trials slowed by other threads' trials at once (host contention: the "
                               "GIL, the driver's locks; +{:.1f}% per doubling of the trials at once, {}): "
                               "{:.3f} ms",
                               static_cast<double>(c.trial_contention_ppm) / 1e4,
                               c.trial_contention_from == "recording" ? "fitted from this recording"
                                                                      : "as measured on the H200",
                               Ms(c.trial_contention_ns))});
  if (c.gpu_queue_ns)
    all.push_back({"gpu-queue", c.gpu_queue_ns,
                   fmt::format("kernels queued behind other threads' on the GPU: {:.3f} ms",
                               Ms(c.gpu_queue_ns))});
  std::stable_sort(all.begin(), all.end(), [](const CostTerm& a, const CostTerm& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
  });
  if (all.size() > n) all.resize(n);
  return all;
}

std::string Baseline::Words() const {
  if (kind == "serial") return "the stock code on the serial schedule (threads one after another)";
  if (kind == "recorded") return "the stock code in the recorded interleaving";
  return "none";
}

std::string FormatCost(const FixCost& c) {
  if (!c.unpriced.empty()) return fmt::format("cost: not priced: {}", c.unpriced);
  const std::string by =
      c.priced_by == "model"
          ? " (priced by the C++ model of the same fix, the calibrated virtual GPU and CPU: the "
            "real-code engine runs only the recorded kernels)"
      : c.priced_by == "price-as"
          ? fmt::format(" (priced by the C++ model of '{}', which --price-as declares the patch "
                        "implements, on the calibrated virtual GPU and CPU: the patch's own code "
                        "is not priced, only what it was declared to do)",
                        c.price_as)
          : "";
  if (!c.priced)
    return fmt::format("cost: none: with {} the timed schedule fails ({}), so it has no step "
                       "time{}",
                       c.fix, c.failure, by);
  std::string terms;
  for (const CostTerm& t : DominantTerms(c.terms, 3)) terms += (terms.empty() ? "" : "; ") + t.words;
  const std::string because = terms.empty() ? "" : fmt::format(", because {}", terms);
  std::string against;
  if (c.baseline.kind.empty()) {
    against = fmt::format("no baseline: the stock code fails on the serial schedule and in the "
                          "recorded interleaving ({})",
                          c.baseline.failure);
  } else if (c.fix == "none") {
    against = fmt::format("on the timed schedule; {} takes {:.3f} ms", c.baseline.Words(), Ms(c.baseline.ns));
  } else {
    const double pct = (c.Ratio() - 1.0) * 100.0;
    against = fmt::format("on the timed schedule, {:.1f}% {} than the baseline, {} ({:.3f} ms)",
                          std::abs(pct), pct >= 0 ? "more" : "less", c.baseline.Words(),
                          Ms(c.baseline.ns));
  }
  const std::string completed =
      c.completed_workers == 0
          ? ""
          : fmt::format(" ({} workers that failed in the recording are priced with the rest of the "
                        "step of a worker that completed it)",
                        c.completed_workers);
  return fmt::format("cost: with {} the step takes {:.3f} ms in simulation{}{} {}{}", c.fix,
                     Ms(c.step_ns), by, completed, against, because);
}

std::string CostJson(const FixCost& c) {
  std::string terms;
  for (const CostTerm& t : DominantTerms(c.terms, 3))
    terms += fmt::format("{}{{\"term\":{},\"ms\":{:.3f},\"words\":{}}}", terms.empty() ? "" : ",",
                         JsonString(t.name), Ms(t.ns), JsonString(t.words));
  // What was not priced is null, never 0 or "" (docs/JSON.md).
  return fmt::format(
      "{{\"fix\":{},\"step_ms\":{},\"failure\":{},\"baseline\":{{\"kind\":\"{}\",\"ms\":{}}},"
      "\"ratio\":{},\"completed_workers\":{},\"cold_ms\":{:.3f},\"contention\":{{\"per_doubling\":{:.3f},"
      "\"from\":{},\"ms\":{:.3f}}},\"terms\":[{}],\"priced_by\":{},\"price_as\":{},\"unpriced\":{}}}",
      JsonString(c.fix), c.priced ? fmt::format("{:.3f}", Ms(c.step_ns)) : "null",
      c.priced ? "null" : JsonString(c.failure), c.baseline.kind.empty() ? "none" : c.baseline.kind,
      c.baseline.kind.empty() ? "null" : fmt::format("{:.3f}", Ms(c.baseline.ns)),
      c.priced && !c.baseline.kind.empty() ? fmt::format("{:.3f}", c.Ratio()) : "null",
      c.completed_workers, Ms(c.terms.cold_ns), static_cast<double>(c.terms.trial_contention_ppm) / 1e6,
      JsonOrNull(c.terms.trial_contention_from), Ms(c.terms.trial_contention_ns), terms,
      c.unpriced.empty() ? JsonString(c.priced_by.empty() ? "engine" : c.priced_by) : "null",
      JsonOrNull(c.price_as), JsonOrNull(c.unpriced));
}

}  // namespace rerace::replay
