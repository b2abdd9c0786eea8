// traces/src/synth.cc: writes a scenario as the trace a recorder would write.
#include "rerace/traces/synth.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>

#include "rerace/base/output_file.h"
#include "rerace/traces/writer.h"

namespace rerace::traces {

namespace {

// splitmix64: a tiny portable generator for synthetic durations (traces/ depends on nothing
// of ours, so it does not borrow sim's Prng).
uint64_t Mix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A duration around `mean`: mean * (0.5 .. 1.5), integer only.
uint64_t Around(uint64_t& rng, uint64_t mean) {
  return mean / 2 + (Mix(rng) % (mean + 1));
}

int IndexOf(const std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

// A JSON string literal (traces/ has no JSON library: the metadata is written by hand).
std::string Quoted(const std::string& v) {
  std::string out = "\"";
  for (const char ch : v) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string Where(const std::string& module, const std::string& qualname) {
  return fmt::format("{{\"module\":{},\"qualname\":{}}}", Quoted(module), Quoted(qualname));
}

std::string Token(uint64_t v) { return fmt::format("\"{:#x}\"", v); }

// rerace_probe.identity(tuner) of tuner object `self` whose original (itself, or the tuner a
// shallow copy was made of) is `original`: the copy holds the original's cache dict, configs
// and hooks, which act on the original.
std::string ProbeIdentity(const Scenario& s, uint64_t self, uint64_t original) {
  std::string hooks;
  if (!s.restore_value.empty() || !s.reset_to_zero.empty()) {
    hooks = fmt::format("\"pre_hook\":{{\"obj\":{},\"tuner\":{}}}", Token(original + 0x30),
                        Token(original));
    if (!s.restore_value.empty())
      hooks += fmt::format(",\"post_hook\":{{\"obj\":{},\"tuner\":{}}}",
                           Token(original + 0x40), Token(original));
  }
  return fmt::format("{{\"self\":{},\"fields\":{{\"cache\":{},\"configs\":{}}},\"hooks\":{{{}}}}}",
                     Token(self), Token(original + 0x10), Token(original + 0x20), hooks);
}

// rerace_probe.metadata(tuner) for tuner `kernel` of the scenario (recorder/python/rerace_probe,
// METADATA_VERSION 1, or 2 with --identity): what the probe writes in a tuner's first
// call-begin detail. No "python" entry: a synthetic trace does not say which interpreter ran it
// (the engines then assume, and say so, as for recordings of older probes).
std::string ProbeMetadata(const Scenario& s, const std::string& kernel, uint64_t self = 0,
                          uint64_t original = 0) {
  const bool fla = !s.fla_version.empty();
  const std::string& cls = s.tuner_class;
  const size_t dot = cls.rfind('.');
  const std::string cls_module = dot == std::string::npos ? "" : cls.substr(0, dot);
  const std::string cls_name = dot == std::string::npos ? cls : cls.substr(dot + 1);
  std::vector<std::string> keys;
  for (const auto& k : s.key_names) keys.push_back(Quoted(k));
  const std::string triton_run = Where("triton.runtime.autotuner", "Autotuner.run");
  std::string out = fmt::format(
      "{{\"v\":{},\"kernel\":{},\"keys\":[{}],\"class\":{},\"triton\":{},\"fla\":{},\"run\":{}",
      s.identity ? 2 : 1, Where(s.kernel_module, kernel), fmt::join(keys, ","), Where(cls_module, cls_name),
      Quoted(s.triton_version), fla ? Quoted(s.fla_version) : "null",
      fla ? Where("fla.ops.utils.cache", "CachedAutotuner.run") : triton_run);
  // Where Triton's run resolves, for a subclass (FLA's calls it through super().run()).
  if (cls != "triton.runtime.autotuner.Autotuner") out += ",\"autotuner_run\":" + triton_run;
  out += ",\"bench\":" + Where("triton.runtime.autotuner", "Autotuner._bench");
  if (!s.restore_value.empty() || !s.reset_to_zero.empty()) {
    const std::string owner = fla ? "fla.ops.utils.cache" : "triton.runtime.autotuner";
    const std::string init = fla ? "CachedAutotuner.__init__" : "Autotuner.__init__";
    const auto hook = [&](const char* name) {
      return fmt::format("\"{}\":{{\"module\":{},\"qualname\":{},\"user_defined\":false}}", name,
                         Quoted(owner), Quoted(init + ".<locals>._" + name));
    };
    out += ",\"hooks\":{" + hook("pre_hook");
    if (!s.restore_value.empty()) out += "," + hook("post_hook");
    out += "}";
  }
  if (s.identity) out += ",\"identity\":" + ProbeIdentity(s, self, original);
  return out + "}";
}

}  // namespace

Result<void> ValidateScenario(const Scenario& s) {
  auto bad = [](std::string m) { return Error{std::move(m), kExitUsage}; };
  if (s.threads == 0 || s.threads > 4096) return bad("scenario: threads must be 1..4096");
  if (s.tuners == 0 || s.tuners > 256) return bad("scenario: tuners must be 1..256");
  if (s.configs == 0 || s.configs > 1024) return bad("scenario: configs must be 1..1024");
  if (s.calls_per_thread > 10000) return bad("scenario: calls per thread must be at most 10000");
  if (s.keys.empty()) return bad("scenario: at least one key value is needed");
  if (s.arg_names.empty()) return bad("scenario: at least one argument name is needed");
  if (s.repetitions == 0 || s.repetitions > 10000)
    return bad("scenario: repetitions must be 1..10000");
  if (s.gpus == 0 || s.gpus > 1024) return bad("scenario: gpus must be 1..1024");
  if (s.bench_ns == 0 || s.kernel_ns == 0) return bad("scenario: durations must be positive");
  if (!s.fla_version.empty() && s.tuner_class != kFlaTunerClass)
    return bad(fmt::format("scenario: --fla {} records FLA's tuner class {}, not {}",
                           s.fla_version, kFlaTunerClass, s.tuner_class));
  if (s.bench_ns > kMaxSynthKernelNs || s.kernel_ns > kMaxSynthKernelNs)
    return bad(fmt::format("scenario: durations must be at most {} ns (the reader refuses "
                           "kernels of more than an hour)",
                           kMaxSynthKernelNs));
  if (s.other_launches > 1'000'000) return bad("scenario: other launches must be at most 1000000");
  // The trace's size is the product of the parameters: bound it, not each alone.
  const uint64_t per_call = static_cast<uint64_t>(s.configs) * (2 + 4ull * s.repetitions) + 4;
  const uint64_t per_thread = 2ull * s.other_launches + s.calls_per_thread * per_call;
  const uint64_t events = s.threads * per_thread;
  if (events > kMaxSynthEvents)
    return bad(fmt::format("scenario: {} threads x ({} other launches x 2 + {} calls x ({} configs "
                           "x (2 + 4 x {} repetitions) + 4)) = {} events; at most {}",
                           s.threads, s.other_launches, s.calls_per_thread, s.configs,
                           s.repetitions, events, kMaxSynthEvents));
  for (const auto& n : s.restore_value)
    if (IndexOf(s.arg_names, n) < 0)
      return bad(fmt::format("scenario: restore_value names '{}', which is not an argument ({})",
                             n, fmt::join(s.arg_names, ", ")));
  if (s.probe_metadata || s.copies || s.identity || !s.fla_version.empty())
    for (const auto& n : s.key_names)
      if (IndexOf(s.arg_names, n) < 0)
        return bad(fmt::format("scenario: the key names '{}', which is not an argument ({})", n,
                               fmt::join(s.arg_names, ", ")));
  for (const auto& n : s.reset_to_zero)
    if (IndexOf(s.arg_names, n) < 0)
      return bad(fmt::format("scenario: reset_to_zero names '{}', which is not an argument ({})",
                             n, fmt::join(s.arg_names, ", ")));
  return {};
}

std::vector<std::string> SynthCommand(const Scenario& s) {
  std::vector<std::string> c = {"rerace", "synth"};
  auto add = [&c](const char* flag, const std::string& value) {
    c.push_back(fmt::format("--{}={}", flag, value));
  };
  auto add_list = [&c](const char* flag, const std::vector<std::string>& values) {
    if (values.empty()) return;
    c.push_back(fmt::format("--{}", flag));
    c.insert(c.end(), values.begin(), values.end());
  };
  add("threads", std::to_string(s.threads));
  add("tuners", std::to_string(s.tuners));
  add("configs", std::to_string(s.configs));
  add("calls", std::to_string(s.calls_per_thread));
  add_list("keys", s.keys);
  add_list("args", s.arg_names);
  add_list("restore-value", s.restore_value);
  add_list("reset-to-zero", s.reset_to_zero);
  add("reps", std::to_string(s.repetitions));
  add("bench-ns", std::to_string(s.bench_ns));
  add("kernel-ns", std::to_string(s.kernel_ns));
  add("other-launches", std::to_string(s.other_launches));
  add("gpus", std::to_string(s.gpus));
  add("seed", std::to_string(s.seed));
  add("tuner-class", s.tuner_class);
  // Only when set, so that the traces of earlier scenarios keep their bytes.
  if (s.probe_metadata && s.fla_version.empty()) c.push_back("--probe-metadata");
  if (s.kernel_module != "__main__") add("kernel-module", s.kernel_module);
  if (s.key_names != std::vector<std::string>{"N"}) add_list("key-names", s.key_names);
  if (s.triton_version != "3.6.0") add("triton-version", s.triton_version);
  if (!s.fla_version.empty()) add("fla", s.fla_version);
  if (s.copies) c.push_back("--copies");
  if (s.identity) c.push_back("--identity");
  return c;
}

namespace {
Result<void> WriteScenario(const Scenario& s, const std::string& path);
}  // namespace

// Written as rerace/base/output_file.h says: a regular file under a temporary name and renamed
// (a failed write leaves no partial trace behind), a device or FIFO in place.
Result<void> Synthesize(const Scenario& s, const std::string& path) {
  if (auto v = ValidateScenario(s); !v) return v;
  auto place = OutputPlace::Open(path);
  if (!place) return place.error();
  const std::string& tmp = place->write_path();
  auto named = [&](Error e) {
    if (tmp != path)
      for (size_t at; (at = e.message.find(tmp)) != std::string::npos;)
        e.message.replace(at, tmp.size(), path);
    return e;
  };
  if (auto r = WriteScenario(s, tmp); !r) return named(r.error());
  return place->Commit();
}

namespace {
Result<void> WriteScenario(const Scenario& s, const std::string& path) {
  Header h;
  h.recorder_version = "rerace-synth";
  h.host = "synthetic";
  h.pid = 1;
  h.command_line = SynthCommand(s);
  // The same scenario, the same bytes: the recording id is a hash of the command (FNV-1a).
  h.recording_id = 1469598103934665603ull;
  for (const std::string& arg : h.command_line)
    for (const char ch : arg) h.recording_id = (h.recording_id ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
  h.recording_id |= 1;
  h.start_cpu_ns = 1'000'000'000;
  for (uint32_t g = 0; g < s.gpus; ++g) {
    h.gpus.push_back({g, "Synthetic GPU", fmt::format("GPU-synthetic-{}", g), 80ull << 30});
    h.clock_pairs.push_back({g, h.start_cpu_ns, h.start_cpu_ns});
  }
  h.tuner_classes = {s.tuner_class};
  auto w = TraceWriter::Create(path, h);
  if (!w) return w.error();
  TraceWriter& tw = **w;

  uint64_t rng = s.seed;
  const bool metadata = s.probe_metadata || s.copies || s.identity || !s.fla_version.empty();
  std::set<uint64_t> described;  // tuners whose metadata was written
  const uint32_t cls = tw.String(s.tuner_class);
  std::vector<uint32_t> kernels;
  std::vector<std::string> configs;
  for (uint32_t c = 0; c < s.configs; ++c)
    configs.push_back(fmt::format("BLOCK_N: {}, num_warps: {}, num_stages: {}", 32u << (c % 4),
                                  2u << (c / 4 % 3), 1 + c % 2));
  // Benchmark time per (tuner, config): what every thread measures, give or take noise.
  std::vector<std::vector<uint64_t>> bench(s.tuners);
  for (uint32_t t = 0; t < s.tuners; ++t) {
    kernels.push_back(tw.String(t == 0 ? "l2norm_fwd_kernel" : fmt::format("tuned_kernel_{}", t)));
    for (uint32_t c = 0; c < s.configs; ++c) bench[t].push_back(Around(rng, s.bench_ns));
  }
  const uint32_t other = tw.String("elementwise_kernel");
  std::vector<uint32_t> restore_idx, reset_idx;
  for (const auto& n : s.restore_value) restore_idx.push_back(static_cast<uint32_t>(IndexOf(s.arg_names, n)));
  for (const auto& n : s.reset_to_zero) reset_idx.push_back(static_cast<uint32_t>(IndexOf(s.arg_names, n)));

  // Each thread's events as a list of steps; then the threads advance one step each in turn.
  struct Step {
    std::function<void(uint32_t thread, uint64_t cpu)> emit;
  };
  std::vector<std::vector<Step>> steps(s.threads);
  uint32_t correlation = 1;
  std::vector<uint32_t> ids;
  for (uint32_t t = 0; t < s.threads; ++t)
    ids.push_back(tw.AddThread(1000 + t, fmt::format("ThreadPoolExecutor-0_{}", t)));

  for (uint32_t t = 0; t < s.threads; ++t) {
    const uint32_t device = t % s.gpus;
    const uint64_t stream = 7 + t;  // each thread its own stream, as torch's pool threads do
    auto launch = [&tw, &steps, t, device, stream, &correlation](uint32_t kernel, uint64_t dur, uint32_t grid) {
      const uint32_t corr = correlation++;
      LaunchShape sh;
      sh.kernel = kernel;
      sh.device = device;
      sh.stream = stream;
      sh.grid[0] = grid;
      sh.block[0] = 128;
      const uint32_t shape = tw.Shape(sh);
      steps[t].push_back({[&tw, shape, corr, dur](uint32_t th, uint64_t cpu) {
        tw.AppendLaunch(th, cpu, shape, corr);
        tw.AppendActivity(th, cpu + 3000, corr, cpu + 5000, cpu + 5000 + dur);
      }});
    };
    auto tuner = [&tw, &steps, t](TunerEvent e) {
      steps[t].push_back({[&tw, e](uint32_t th, uint64_t cpu) { tw.AppendTuner(th, cpu, e); }});
    };
    for (uint32_t o = 0; o < s.other_launches; ++o) launch(other, Around(rng, s.kernel_ns), 64);
    for (uint32_t call = 0; call < s.calls_per_thread; ++call) {
      // Thread t's call i tunes kernel (t + i) mod tuners, as it uses key (t + i) mod keys: with
      // as many threads as tuners, every tuner is called even with one call per thread.
      const uint32_t tn = (t + call) % s.tuners;
      const std::string& value = s.keys[(t + call) % s.keys.size()];
      // The probe writes Triton's key tuple (autotuner.py:216-222): the key arguments' values.
      const std::string key = metadata ? "(" + value + ",)" : value;
      TunerEvent base;
      const uint64_t original = 0x7f0000001000ull + tn * 0x100;
      // A copy per thread and tuner: objects of their own, past the originals'.
      base.tuner = s.copies ? 0x7f0000200000ull + (uint64_t{t} * s.tuners + tn) * 0x100 : original;
      base.tuner_class = cls;
      base.kernel = kernels[tn];
      base.key = key;
      TunerEvent begin = base;
      begin.kind = TunerKind::kCallBegin;
      begin.configs = configs;
      begin.arg_names = s.arg_names;
      begin.restore_value = restore_idx;
      begin.reset_to_zero = reset_idx;
      if (metadata) {
        // The probe describes a tuner at its first call, in the order the calls happened.
        const std::string meta =
            ProbeMetadata(s, tn == 0 ? "l2norm_fwd_kernel" : fmt::format("tuned_kernel_{}", tn),
                          base.tuner, original);
        steps[t].push_back({[&tw, begin, meta, &described](uint32_t th, uint64_t cpu) {
          TunerEvent e = begin;
          if (described.insert(e.tuner).second) e.detail = meta;
          tw.AppendTuner(th, cpu, e);
        }});
      } else {
        tuner(begin);
      }
      for (uint32_t c = 0; c < s.configs; ++c) {
        TunerEvent bb = base;
        bb.kind = TunerKind::kBenchBegin;
        bb.config = static_cast<int32_t>(c);
        tuner(bb);
        for (uint32_t r = 0; r < s.repetitions; ++r) {
          TunerEvent pre = base;
          pre.kind = TunerKind::kPreHook;
          pre.config = static_cast<int32_t>(c);
          tuner(pre);
          launch(kernels[tn], bench[tn][c] + Mix(rng) % 512, 256);
          TunerEvent post = pre;
          post.kind = TunerKind::kPostHook;
          tuner(post);
        }
        TunerEvent be = base;
        be.kind = TunerKind::kBenchEnd;
        be.config = static_cast<int32_t>(c);
        const double ms = static_cast<double>(bench[tn][c]) / 1e6;
        be.timings_ms = {ms, ms * 0.97, ms * 1.04};
        be.repetitions = s.repetitions;
        tuner(be);
      }
      const auto best = static_cast<int32_t>(
          std::min_element(bench[tn].begin(), bench[tn].end()) - bench[tn].begin());
      TunerEvent fl = base;
      fl.kind = TunerKind::kLaunch;
      fl.config = best;
      tuner(fl);
      launch(kernels[tn], Around(rng, s.kernel_ns), 256);
      TunerEvent end = base;
      end.kind = TunerKind::kCallEnd;
      end.config = best;
      tuner(end);
    }
  }
  // Threads advance one step each in turn; the CPU clock moves 2 us per step.
  uint64_t cpu = h.start_cpu_ns + 10'000;
  size_t longest = 0;
  for (const auto& v : steps) longest = std::max(longest, v.size());
  for (size_t i = 0; i < longest; ++i) {
    for (uint32_t t = 0; t < s.threads; ++t) {
      if (i >= steps[t].size()) continue;
      steps[t][i].emit(ids[t], cpu);
      cpu += 2000;
    }
    if (tw.pending_events() >= 4096) {
      if (auto r = tw.Flush(); !r) return r;
    }
  }
  Footer f;
  for (uint32_t g = 0; g < s.gpus; ++g) f.end_clock_pairs.push_back({g, cpu, cpu});
  return tw.Finish(f);
}
}  // namespace

}  // namespace rerace::traces
