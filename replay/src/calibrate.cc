// replay/src/calibrate.cc: the virtual GPU and CPU's calibration (see calibrate.h).
#include "calibrate.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

namespace rerace::replay::detail {

using namespace rerace::traces;

// Devices on which the recording shows GPU work of two streams running at once.
std::set<uint32_t> OverlappingDevices(const Trace& trace) {
  std::unordered_map<uint32_t, std::pair<uint32_t, uint64_t>> where;  // correlation → device, stream
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::kLaunch) {
      const LaunchShape& sh = trace.shapes[e.shape];
      where[e.correlation] = {sh.device, sh.stream};
    } else if (e.kind == EventKind::kMemOp) {
      where[e.correlation] = {e.device, e.stream};
    }
  }
  std::map<uint32_t, std::vector<GpuInterval>> by_device;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::kActivity || e.gpu_start_ns == 0 || e.gpu_end_ns <= e.gpu_start_ns) continue;
    const auto it = where.find(e.correlation);
    if (it == where.end()) continue;
    by_device[it->second.first].push_back(GpuInterval{e.gpu_start_ns, e.gpu_end_ns, it->second.second});
  }
  return OverlapsOf(std::move(by_device));
}

std::set<uint32_t> OverlapsOf(std::map<uint32_t, std::vector<GpuInterval>> by_device) {
  std::set<uint32_t> out;
  for (auto& [device, list] : by_device) {
    std::sort(list.begin(), list.end(), [](const GpuInterval& a, const GpuInterval& b) {
      return a.start != b.start ? a.start < b.start : a.stream < b.stream;
    });
    uint64_t end = 0, stream = 0;
    for (const GpuInterval& i : list) {
      if (i.start < end && i.stream != stream) {
        out.insert(device);
        break;
      }
      if (i.end > end) {
        end = i.end;
        stream = i.stream;
      }
    }
  }
  return out;
}

namespace {
std::vector<size_t> CallOps(const ThreadProgram& tp) {
  std::vector<size_t> out;
  for (size_t i = 0; i < tp.ops.size(); ++i)
    if (tp.ops[i].kind == Op::Kind::kTunerCall) out.push_back(i);
  return out;
}
}  // namespace

Program CompleteFailedWorkers(const Program& p, uint32_t* completed) {
  *completed = 0;
  size_t donor = SIZE_MAX, most = 0;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    const ThreadProgram& tp = p.threads[t];
    if (!tp.worker || !tp.failures.empty()) continue;
    const size_t n = CallOps(tp).size();
    if (n > most) most = n, donor = t;
  }
  if (donor == SIZE_MAX) return p;
  const ThreadProgram& from = p.threads[donor];
  const std::vector<size_t> from_calls = CallOps(from);
  Program out = p;
  for (ThreadProgram& tp : out.threads) {
    if (!tp.worker || tp.failures.empty()) continue;
    const std::vector<size_t> calls = CallOps(tp);
    if (calls.empty() || calls.size() > from_calls.size()) continue;
    const size_t after = from_calls[calls.size() - 1] + 1;  // the donor's rest
    if (after >= from.ops.size()) continue;
    bool same = true;
    for (size_t i = 0; i < calls.size() && same; ++i)
      same = p.calls[tp.ops[calls[i]].call].kernel == p.calls[from.ops[from_calls[i]].call].kernel;
    if (!same) continue;
    // Its ops up to the call it failed in, then the donor's after its call of the same rank.
    tp.ops.resize(calls.back() + 1);
    tp.ops.insert(tp.ops.end(), from.ops.begin() + static_cast<std::ptrdiff_t>(after), from.ops.end());
    ++*completed;
  }
  return out;
}

// The virtual CPU's calibration: each config's trial time from the least contended recorded
// benchmark of the same tuner, key and config (else tuner and config); each call's own CPU
// time from the least of its tuner's calls; the GIL from the tuner classes and the probe.
void Calibrate(Program& p, std::vector<std::vector<std::pair<Nanos, Nanos>>> bench_seen,
               const std::vector<Nanos>& call_cpu, const std::vector<BenchInterval>& benches) {
  for (TunerCall& c : p.calls) c.time_budgeted = c.tuner_class.rfind("rerace.kernels.", 0) != 0;
  // Trials that synchronize the whole device run one repetition at a time per device (the
  // virtual GPU's Context): a recorded trial that overlapped others of its device took its own
  // time times the mean number of such trials running during it (itself included), which is
  // divided out (at least its GPU work).
  auto serial = [&](const BenchInterval& b) {
    const TunerCall& c = p.calls[b.call];
    return c.trial_device_sync && !c.time_budgeted && b.end > b.begin;
  };
  for (const BenchInterval& b : benches) {
    if (!serial(b)) continue;
    long double shared = 0;
    for (const BenchInterval& o : benches)
      if (serial(o) && p.calls[o.call].device == p.calls[b.call].device)
        shared += static_cast<long double>(std::max(b.begin, o.begin) < std::min(b.end, o.end)
                                               ? std::min(b.end, o.end) - std::max(b.begin, o.begin)
                                               : 0);
    auto& [wall, gpu] = bench_seen[b.call][b.config];
    const long double mean = shared / static_cast<long double>(b.end - b.begin);
    if (mean > 1) wall = std::max(gpu, static_cast<Nanos>(static_cast<long double>(wall) / mean));
  }
  std::map<std::tuple<uint64_t, std::string, size_t>, std::pair<Nanos, Nanos>> by_key;
  std::map<std::pair<uint64_t, size_t>, std::pair<Nanos, Nanos>> by_config;
  std::map<uint64_t, Nanos> least_call;
  auto keep = [](auto& m, const auto& k, std::pair<Nanos, Nanos> v) {
    auto [it, fresh] = m.try_emplace(k, v);
    if (!fresh && v.first < it->second.first) it->second = v;
  };
  for (size_t ci = 0; ci < p.calls.size(); ++ci) {
    const TunerCall& c = p.calls[ci];
    for (size_t i = 0; i < bench_seen[ci].size(); ++i) {
      if (bench_seen[ci][i].first == 0) continue;
      keep(by_key, std::tuple{c.tuner, c.key, i}, bench_seen[ci][i]);
      keep(by_config, std::pair{c.tuner, i}, bench_seen[ci][i]);
    }
    if (call_cpu[ci] != UINT64_MAX) {
      auto [it, fresh] = least_call.try_emplace(c.tuner, call_cpu[ci]);
      if (!fresh) it->second = std::min(it->second, call_cpu[ci]);
    }
  }
  for (TunerCall& c : p.calls) {
    c.trial_gpu_ns.assign(c.configs.size(), 0);
    c.trial_cpu_ns.assign(c.configs.size(), 0);
    for (size_t i = 0; i < c.configs.size(); ++i) {
      auto k = by_key.find({c.tuner, c.key, i});
      std::pair<Nanos, Nanos> v{0, 0};
      if (k != by_key.end()) {
        v = k->second;
      } else if (auto f = by_config.find({c.tuner, i}); f != by_config.end()) {
        v = f->second;
      }
      c.trial_gpu_ns[i] = v.second;
      c.trial_cpu_ns[i] = v.first > v.second ? v.first - v.second : 0;
    }
    if (auto it = least_call.find(c.tuner); it != least_call.end()) c.call_cpu_ns = it->second;
    // The first trial of a process is cold (CUDA and Triton's runtime start, allocation of
    // do_bench's buffers): a config whose CPU time exceeds three times the median of the
    // call's configs is taken at the median.
    std::vector<Nanos> sorted = c.trial_cpu_ns;
    std::sort(sorted.begin(), sorted.end());
    const Nanos median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    for (Nanos& n : c.trial_cpu_ns)
      if (median != 0 && n > 3 * median) n = median;
  }
  for (const std::string& cls : p.tuner_classes)
    if (cls.rfind("rerace.kernels.", 0) != 0) p.gil = true;
  for (const auto& [tuner, text] : p.tuner_meta) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object() && j.contains("gil") && j["gil"].is_boolean() && !j["gil"].get<bool>())
      p.gil = false;
    if (j.is_object() && j.contains("cache_results") && j["cache_results"].is_boolean() &&
        j["cache_results"].get<bool>())
      p.cache_results.insert(tuner);
  }
}
}  // namespace rerace::replay::detail
