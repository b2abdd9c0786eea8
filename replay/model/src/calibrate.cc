// replay/model/src/calibrate.cc: the virtual GPU and CPU's calibration (see calibrate.h).
#include "rerace/replay/model/calibrate.h"

#include <algorithm>
#include <cmath>
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

namespace {
// The mean number of `benches` for which `same` holds running during `b` (itself included).
template <typename Same>
double MeanOverlap(const BenchInterval& b, const std::vector<BenchInterval>& benches, Same same) {
  long double shared = 0;
  for (const BenchInterval& o : benches)
    if (same(o) && std::max(b.begin, o.begin) < std::min(b.end, o.end))
      shared += static_cast<long double>(std::min(b.end, o.end) - std::max(b.begin, o.begin));
  return static_cast<double>(shared / static_cast<long double>(b.end - b.begin));
}

// A trial ran alone when under this mean number of trials ran during it (itself included).
constexpr double kAloneBelow = 1.25;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Python trials that run for a time budget share the host under the GIL (Program::
// trial_contention_ppm): the contention is fitted where the recording has trials of one kernel
// and config both alone (a mean of under 1.25 such trials running, itself included) and with
// others (1.75 or more): per (kernel, config), (median wall with others / median wall alone - 1)
// / log2(median number running); the median over them (TrialContentionFactor). Else the H200
// figure. Each recorded trial's wall is then divided by the contention it ran under.
void FitTrialContention(Program& p, std::vector<std::vector<std::pair<Nanos, Nanos>>>& bench_seen,
                        const std::vector<BenchInterval>& benches) {
  if (!p.gil) return;
  auto budgeted = [&](const BenchInterval& b) { return p.calls[b.call].time_budgeted && b.end > b.begin; };
  struct Side {
    std::vector<double> wall, running;
  };
  std::map<std::pair<std::string, size_t>, std::pair<Side, Side>> groups;  // (kernel, config) → alone, with others
  std::vector<double> running(benches.size(), 0);
  for (size_t i = 0; i < benches.size(); ++i) {
    const BenchInterval& b = benches[i];
    if (!budgeted(b)) continue;
    running[i] = MeanOverlap(b, benches, budgeted);
    const Nanos wall = bench_seen[b.call][b.config].first;
    if (wall == 0) continue;
    auto& [alone, others] = groups[{p.calls[b.call].kernel, b.config}];
    Side* side = running[i] < kAloneBelow ? &alone : running[i] >= 1.75 ? &others : nullptr;
    if (side == nullptr) continue;
    side->wall.push_back(static_cast<double>(wall));
    side->running.push_back(running[i]);
  }
  if (std::none_of(running.begin(), running.end(), [](double r) { return r > 0; })) return;
  std::vector<double> fits;
  for (const auto& [where, sides] : groups) {
    const auto& [alone, others] = sides;
    if (alone.wall.empty() || others.wall.empty()) continue;
    fits.push_back((Median(others.wall) / Median(alone.wall) - 1) / std::log2(Median(others.running)));
  }
  const double fit = fits.empty() ? kTrialContentionH200 : std::clamp(Median(fits), 0.0, 1.0);
  p.trial_contention_ppm = static_cast<uint32_t>(std::lround(fit * 1e6));
  p.trial_contention_from = fits.empty() ? "H200" : "recording";
  for (size_t i = 0; i < benches.size(); ++i) {
    if (running[i] <= 1) continue;
    auto& [wall, gpu] = bench_seen[benches[i].call][benches[i].config];
    const double factor = TrialContentionFactor(p.trial_contention_ppm, running[i]);
    wall = std::max(gpu, static_cast<Nanos>(static_cast<double>(wall) / factor));
  }
}
}  // namespace

// The virtual CPU's calibration: each config's trial time from the recorded benchmarks of the
// same tuner, key and config (else tuner and config): the least contended for trials of a fixed
// repetition count, the median (once each is divided by the contention it ran under) for
// time-budgeted ones; each call's own CPU time from the least of its tuner's calls; the GIL
// from the tuner classes and the probe.
void Calibrate(Program& p, std::vector<std::vector<std::pair<Nanos, Nanos>>> bench_seen,
               const std::vector<Nanos>& call_cpu, const std::vector<BenchInterval>& benches) {
  for (TunerCall& c : p.calls) c.time_budgeted = c.tuner_class.rfind("rerace.kernels.", 0) != 0;
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
  // Trials that synchronize the whole device run one repetition at a time per device (the
  // virtual GPU's Context): a recorded trial that overlapped others of its device took its own
  // time times the mean number of such trials running during it (itself included), which is
  // divided out (at least its GPU work).
  auto serial = [&](const BenchInterval& b) {
    const TunerCall& c = p.calls[b.call];
    return c.trial_device_sync && !c.time_budgeted && b.end > b.begin;
  };
  // Such trials also contend (the driver's locks): the H200 figure (FitTrialContention fits
  // Python trials' where it can), and each wall is divided by it too.
  FitTrialContention(p, bench_seen, benches);
  if (p.trial_contention_ppm == 0 && std::any_of(benches.begin(), benches.end(), serial)) {
    p.trial_contention_ppm = static_cast<uint32_t>(std::lround(kTrialContentionH200 * 1e6));
    p.trial_contention_from = "H200";
  }
  // Which samples ran with others (not alone, kAloneBelow): their walls are estimates, divided
  // out below.
  std::vector<std::vector<bool>> shared(bench_seen.size());
  for (size_t ci = 0; ci < bench_seen.size(); ++ci) shared[ci].assign(bench_seen[ci].size(), false);
  for (const BenchInterval& b : benches) {
    if (!serial(b)) continue;
    const uint32_t device = p.calls[b.call].device;
    const double mean =
        MeanOverlap(b, benches, [&](const BenchInterval& o) { return serial(o) && p.calls[o.call].device == device; });
    auto& [wall, gpu] = bench_seen[b.call][b.config];
    const double by = mean * TrialContentionFactor(p.trial_contention_ppm, mean);
    if (mean > 1) {
      // Its GPU work too: the other trials' kernels shared the device with it (the H200's
      // per-thread-tuner: a matmul trial's kernels timed 2.9-3.6 ms with 8 trials at once,
      // over the 1.8-2.1 ms that its wall divided out gave).
      gpu = static_cast<Nanos>(static_cast<double>(gpu) / mean);
      wall = std::max(gpu, static_cast<Nanos>(static_cast<double>(wall) / by));
    }
    shared[b.call][b.config] = mean >= kAloneBelow;
  }
  struct Sample {
    Nanos wall = 0, gpu = 0;
    bool shared = false;  // divided out of a trial that ran with others
  };
  // By kernel, key and config (the tuner objects of one kernel, per thread say, do the same
  // work), else by tuner and config index.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<Sample>> by_key;
  std::map<std::pair<uint64_t, size_t>, std::vector<Sample>> by_config;
  std::map<uint64_t, Nanos> least_call;
  for (size_t ci = 0; ci < p.calls.size(); ++ci) {
    const TunerCall& c = p.calls[ci];
    for (size_t i = 0; i < bench_seen[ci].size(); ++i) {
      if (bench_seen[ci][i].first == 0) continue;
      const Sample v{bench_seen[ci][i].first, bench_seen[ci][i].second, shared[ci][i]};
      by_key[{c.kernel, c.key, c.configs[i]}].push_back(v);
      by_config[{c.tuner, i}].push_back(v);
    }
    if (call_cpu[ci] != UINT64_MAX) {
      auto [it, fresh] = least_call.try_emplace(c.tuner, call_cpu[ci]);
      if (!fresh) it->second = std::min(it->second, call_cpu[ci]);
    }
  }
  // Time-budgeted trials: the median of the samples by wall (of an even count, the mean of the
  // middle two; the first recorded among equals). Trials of a fixed repetition count: the least
  // of the samples that ran alone, whose walls can only be too long (interference); else the
  // mean of the samples divided out of trials that ran with others. Each of those is its
  // trial's share of the time the trials held the device together, too long for a cheap config
  // that waited behind dear ones and too short for a dear one, so the least of them is biased
  // low and the median is off with the mix, while the mean keeps the recorded total (the H200's
  // per-thread-tuner: the least summed to 20 % under the recording's serialized trials, the
  // median 5-7 % over).
  auto pick = [](std::vector<Sample> v, bool median) {
    std::stable_sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.wall < b.wall; });
    if (!median) {
      for (const Sample& s : v)
        if (!s.shared) return s;
      Sample mean{0, 0, true};
      for (const Sample& s : v) mean.wall += s.wall, mean.gpu += s.gpu;
      mean.wall /= v.size();
      mean.gpu /= v.size();
      return mean;
    }
    const Sample& lo = v[(v.size() - 1) / 2];
    const Sample& hi = v[v.size() / 2];
    return Sample{(lo.wall + hi.wall) / 2, (lo.gpu + hi.gpu) / 2, lo.shared || hi.shared};
  };
  std::vector<Nanos> medians(p.calls.size(), 0);
  for (size_t ci = 0; ci < p.calls.size(); ++ci) {
    TunerCall& c = p.calls[ci];
    c.trial_gpu_ns.assign(c.configs.size(), 0);
    c.trial_cpu_ns.assign(c.configs.size(), 0);
    for (size_t i = 0; i < c.configs.size(); ++i) {
      auto k = by_key.find({c.kernel, c.key, c.configs[i]});
      Sample v;
      if (k != by_key.end()) {
        v = pick(k->second, c.time_budgeted);
      } else if (auto f = by_config.find({c.tuner, i}); f != by_config.end()) {
        v = pick(f->second, c.time_budgeted);
      }
      c.trial_gpu_ns[i] = v.gpu;
      c.trial_cpu_ns[i] = v.wall > v.gpu ? v.wall - v.gpu : 0;
    }
    if (auto it = least_call.find(c.tuner); it != least_call.end()) c.call_cpu_ns = it->second;
    // Cold trials (the process's start of CUDA, of Triton's runtime and launcher, lazy loading
    // of kernels, do_bench's first buffers): a config whose CPU time exceeds three times the
    // median of the call's configs is taken at the median; the process pays its cold start once
    // (Program::cold_ns, below).
    std::vector<Nanos> sorted = c.trial_cpu_ns;
    std::sort(sorted.begin(), sorted.end());
    medians[ci] = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    for (Nanos& n : c.trial_cpu_ns)
      if (medians[ci] != 0 && n > 3 * medians[ci]) n = medians[ci];
  }
  // The cold start: what the process's first recorded trial took beyond its call's median,
  // when it was cold.
  const BenchInterval* first = nullptr;
  for (const BenchInterval& b : benches)
    if (first == nullptr || b.begin < first->begin) first = &b;
  if (first != nullptr) {
    const auto& [wall, gpu] = bench_seen[first->call][first->config];
    const Nanos cpu = wall > gpu ? wall - gpu : 0;
    const Nanos median = medians[first->call];
    if (median != 0 && cpu > 3 * median) p.cold_ns = cpu - median;
  }
}
}  // namespace rerace::replay::detail
